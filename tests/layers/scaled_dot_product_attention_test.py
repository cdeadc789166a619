import numpy as np
import pytest

from keras_attention.layers import ScaledDotProductAttention
from tests.test_case import run_layer_test

pytestmark = pytest.mark.keras_ops_only


def test_layer_behaviors(rng, tmp_path):
    run_layer_test(
        ScaledDotProductAttention,
        {"dropout": 0.1, "seed": 3},
        {
            "query": rng.normal(size=(2, 3, 4)).astype("float32"),
            "value": rng.normal(size=(2, 5, 6)).astype("float32"),
            "key": rng.normal(size=(2, 5, 4)).astype("float32"),
        },
        expected_output_shape=(2, 3, 6),
        expected_scores_shape=(2, 3, 5),
        tmp_dir=tmp_path,
    )


def test_correctness_against_numpy(rng):
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k = rng.normal(size=(2, 5, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 6)).astype("float32")
    logits = np.einsum("btd,bsd->bts", q, k) / 2.0  # sqrt(4)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    out, scores = ScaledDotProductAttention()(
        q, v, k, return_attention_scores=True
    )
    np.testing.assert_allclose(scores, weights, atol=1e-6)
    np.testing.assert_allclose(out, weights @ v, atol=1e-5)


def test_dropout_is_active_only_in_training(rng):
    layer = ScaledDotProductAttention(dropout=0.5, seed=1)
    q = rng.normal(size=(2, 6, 4)).astype("float32")
    inference = layer(q, q)
    np.testing.assert_array_equal(inference, layer(q, q, training=False))
    assert not np.allclose(layer(q, q, training=True), inference)


def test_invalid_args():
    with pytest.raises(ValueError, match=r"dropout.*Received: dropout=1.0"):
        ScaledDotProductAttention(dropout=1.0)
    with pytest.raises(ValueError, match=r"dropout.*Received: dropout=-0.1"):
        ScaledDotProductAttention(dropout=-0.1)
    layer = ScaledDotProductAttention()
    with pytest.raises(ValueError, match=r"same last dimension.*Received"):
        layer(np.ones((1, 2, 4)), np.ones((1, 3, 5)))
