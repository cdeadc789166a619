import numpy as np
import pytest

from keras_attention.layers import BahdanauAttention
from tests.test_case import OTHER_CONFIGURATIONS_ON_JAX, run_layer_test
from tests.test_case import numpy_softmax as softmax

pytestmark = pytest.mark.keras_ops_only


@pytest.mark.parametrize("normalize", [
    pytest.param(False, marks=pytest.mark.slow_on("jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
    True,
])
def test_layer_behaviors(normalize, rng, tmp_path):
    run_layer_test(
        BahdanauAttention,
        {"units": 8, "normalize": normalize, "dropout": 0.1, "seed": 2},
        {
            "query": rng.normal(size=(2, 3, 4)).astype("float32"),
            "value": rng.normal(size=(2, 5, 6)).astype("float32"),
        },
        expected_output_shape=(2, 3, 6),
        expected_scores_shape=(2, 3, 5),
        tmp_dir=tmp_path,
    )


def test_score_is_v_tanh_Wq_plus_Uk(rng):
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 6)).astype("float32")
    v = rng.normal(size=(2, 5, 2)).astype("float32")
    layer = BahdanauAttention(units=8)
    out, w = layer(q, v, k, return_attention_scores=True)
    W, U, vec = (x.numpy() for x in (layer.query_kernel, layer.key_kernel, layer.score_vector))
    assert W.shape == (4, 8) and U.shape == (6, 8) and vec.shape == (8,)
    logits = np.tanh((q @ W)[:, :, None] + (k @ U)[:, None]) @ vec
    np.testing.assert_allclose(w, softmax(logits), atol=1e-6)
    np.testing.assert_allclose(out, softmax(logits) @ v, atol=1e-5)


def test_normalized_score_uses_weight_norm_and_bias(rng):
    q = rng.normal(size=(1, 2, 3)).astype("float32")
    k = rng.normal(size=(1, 4, 3)).astype("float32")
    layer = BahdanauAttention(units=5, normalize=True)
    layer(q, k)
    layer.score_bias.assign(rng.normal(size=(5,)).astype("float32"))
    layer.score_gain.assign(2.5)
    _, w = layer(q, k, return_attention_scores=True)
    W, U, vec = (x.numpy() for x in (layer.query_kernel, layer.key_kernel, layer.score_vector))
    b = layer.score_bias.numpy()
    normed = 2.5 * vec / np.linalg.norm(vec)
    logits = np.tanh((q @ W)[:, :, None] + (k @ U)[:, None] + b) @ normed
    np.testing.assert_allclose(w, softmax(logits), atol=1e-6)


def test_differs_from_keras_additive_attention_by_owning_projections():
    layer = BahdanauAttention(units=3)
    layer(np.ones((1, 2, 4), "float32"), np.ones((1, 3, 5), "float32"))
    names = sorted(w.path for w in layer.weights)
    assert names == [
        f"{layer.name}/key/kernel", f"{layer.name}/query/kernel", f"{layer.name}/score_vector"
    ]
    assert layer.query_kernel.shape == (4, 3) and layer.key_kernel.shape == (5, 3)


def test_accepts_numpy_integers():
    assert BahdanauAttention(units=np.int64(4)).units == 4


@pytest.mark.parametrize("units", [0, -1, 2.5, True, "8", None])
def test_invalid_units(units):
    with pytest.raises(ValueError, match=r"`units`.*positive integer.*Received: units="):
        BahdanauAttention(units=units)


def test_invalid_normalize():
    with pytest.raises(TypeError, match=r"normalize.*Received: normalize='yes'"):
        BahdanauAttention(units=2, normalize="yes")
