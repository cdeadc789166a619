import keras
import numpy as np
import pytest

from keras_attention.layers import MemoryHop
from keras_attention.models import LinearStart
from tests.test_case import (
    OTHER_CONFIGURATIONS_ON_JAX,
    numpy_softmax,
    run_layer_test,
)

pytestmark = pytest.mark.keras_ops_only


def hop_inputs(rng):
    return {"state": rng.normal(size=(2, 4)).astype("float32"),
            "values": rng.normal(size=(2, 3, 4)).astype("float32"),
            "keys": rng.normal(size=(2, 3, 4)).astype("float32")}


@pytest.mark.parametrize("linear_start", [
    False,
    pytest.param(True, marks=pytest.mark.slow_on("jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
])
def test_layer_behaviors(rng, tmp_path, linear_start):
    run_layer_test(
        MemoryHop,
        {"linear_start": linear_start},
        hop_inputs(rng),
        expected_output_shape=(2, 4),
        expected_scores_shape=(2, 1, 3),
        mask_inputs=False,
        tmp_dir=tmp_path,
    )


def test_softmax_and_linear_reads_follow_the_paper(rng):
    x = hop_inputs(rng)
    scores = np.einsum("bd,bmd->bm", x["state"], x["keys"])
    softmax_read = np.einsum("bm,bmd->bd", numpy_softmax(scores), x["values"])
    linear_read = np.einsum("bm,bmd->bd", scores, x["values"])
    hop = MemoryHop()
    np.testing.assert_allclose(hop(*x.values()), x["state"] + softmax_read, atol=1e-5)
    linear = MemoryHop(linear_start=True)
    np.testing.assert_allclose(linear(*x.values()), x["state"] + linear_read, atol=1e-5)
    linear.softmax_on.assign(1.0)
    np.testing.assert_allclose(linear(*x.values()), x["state"] + softmax_read, atol=1e-5)


def test_padding_memories_are_not_read(rng):
    x = hop_inputs(rng)
    mask = np.array([[True, True, False], [True, False, False]])
    for linear_start in (False, True):
        hop = MemoryHop(linear_start=linear_start)
        masked = hop(*x.values(), mask=[None, mask, mask])
        garbage = {k: v.copy() for k, v in x.items()}
        garbage["values"][~mask] = 1e4
        garbage["keys"][~mask] = -1e4
        np.testing.assert_allclose(hop(*garbage.values(), mask=[None, mask, mask]), masked,
                                   atol=1e-4)


def test_linear_start_callback_switches_every_hop_once():
    hops = [MemoryHop(linear_start=True) for _ in range(2)]
    state = keras.Input((4,))
    memories = keras.Input((3, 4))
    out = hops[1](hops[0](state, memories, memories), memories, memories)
    model = keras.Model([state, memories], out)
    callback = LinearStart(patience=2)
    callback.set_model(model)
    for epoch, loss in enumerate([3.0, 2.0, 2.5]):
        callback.on_epoch_end(epoch, {"val_loss": loss})
    assert [float(h.softmax_on.numpy()) for h in hops] == [0.0, 0.0]
    callback.on_epoch_end(3, {"val_loss": 2.1})
    assert [float(h.softmax_on.numpy()) for h in hops] == [1.0, 1.0]
    assert callback.switched_at == 4
    with pytest.raises(ValueError, match=r"patience.*Received: patience=0"):
        LinearStart(patience=0)


def test_invalid_args():
    with pytest.raises(TypeError, match=r"linear_start.*Received: linear_start='yes'"):
        MemoryHop(linear_start="yes")
