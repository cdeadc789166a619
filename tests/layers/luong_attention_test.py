import numpy as np
import pytest

from keras_attention.layers import LuongAttention
from tests.test_case import OTHER_CONFIGURATIONS_ON_JAX, run_layer_test
from tests.test_case import numpy_softmax as softmax

pytestmark = pytest.mark.keras_ops_only


@pytest.mark.parametrize(
    "init_kwargs",
    [pytest.param({"score": "dot"}, id="dot", marks=pytest.mark.slow_on(
        "jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
     pytest.param({"score": "general", "dropout": 0.2, "seed": 1}, id="general"),
     pytest.param({"score": "concat", "units": 5}, id="concat")],
)
def test_layer_behaviors(init_kwargs, rng, tmp_path):
    key_dim = 4 if init_kwargs["score"] == "dot" else 3
    run_layer_test(
        LuongAttention,
        init_kwargs,
        {
            "query": rng.normal(size=(2, 3, 4)).astype("float32"),
            "value": rng.normal(size=(2, 5, 6)).astype("float32"),
            "key": rng.normal(size=(2, 5, key_dim)).astype("float32"),
        },
        expected_output_shape=(2, 3, 6),
        expected_scores_shape=(2, 3, 5),
        tmp_dir=tmp_path,
    )


def test_dot_score_is_unscaled_dot_product(rng):
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 4)).astype("float32")
    out, w = LuongAttention("dot")(q, v, return_attention_scores=True)
    expected = softmax(np.einsum("btd,bsd->bts", q, v))
    np.testing.assert_allclose(w, expected, atol=1e-6)
    np.testing.assert_allclose(out, expected @ v, atol=1e-5)


def test_general_score_is_q_W_k(rng):
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 3)).astype("float32")
    layer = LuongAttention("general")
    _, w = layer(q, k, return_attention_scores=True)
    kernel = layer.kernel.numpy()
    assert kernel.shape == (4, 3)
    logits = np.einsum("btd,de,bse->bts", q, kernel, k)
    np.testing.assert_allclose(w, softmax(logits), atol=1e-6)


def test_concat_score_is_v_tanh_W_concat(rng):
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 3)).astype("float32")
    layer = LuongAttention("concat", units=7)
    _, w = layer(q, k, return_attention_scores=True)
    kernel, v = layer.kernel.numpy(), layer.score_vector.numpy()
    assert kernel.shape == (4 + 3, 7) and v.shape == (7,)
    pairs = np.concatenate(  # [h_t; h_s] for every (t, s)
        [
            np.broadcast_to(q[:, :, None, :], (2, 3, 5, 4)),
            np.broadcast_to(k[:, None, :, :], (2, 3, 5, 3)),
        ],
        axis=-1,
    )
    logits = np.tanh(pairs @ kernel) @ v
    np.testing.assert_allclose(w, softmax(logits), atol=1e-5)


def test_concat_units_default_to_query_size(rng):
    layer = LuongAttention("concat")
    layer(np.ones((1, 2, 6), "float32"), np.ones((1, 3, 4), "float32"))
    assert layer.kernel.shape == (10, 6)


def test_invalid_args():
    with pytest.raises(ValueError, match=r"score.*Received: score='luong-general'"):
        LuongAttention("luong-general")
    with pytest.raises(ValueError, match=r"units.*only used by.*Received: units=4"):
        LuongAttention("dot", units=4)
    with pytest.raises(ValueError, match=r"units.*positive integer.*Received: units=0"):
        LuongAttention("concat", units=0)
    with pytest.raises(ValueError, match=r"score='dot'.*Received: query.shape"):
        LuongAttention("dot")(np.ones((1, 2, 4)), np.ones((1, 3, 5)))
