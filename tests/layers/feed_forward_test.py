import numpy as np
import pytest

from keras_attention.layers import FeedForward
from keras_attention.layers.feed_forward import residual
from tests.test_case import run_layer_test


def test_layer_behaviors(rng, tmp_path):
    run_layer_test(
        FeedForward,
        {"intermediate_dim": 16, "activation": "gelu", "dropout": 0.1},
        {"inputs": rng.normal(size=(2, 3, 4)).astype("float32")},
        expected_output_shape=(2, 3, 4),
        tmp_dir=tmp_path,
        position_wise=True,
    )


def test_correctness(rng):
    layer = FeedForward(8)
    x = rng.normal(size=(1, 2, 3)).astype("float32")
    y = layer(x)
    w1, b1 = layer.hidden.kernel.numpy(), layer.hidden.bias.numpy()
    w2, b2 = layer.projection.kernel.numpy(), layer.projection.bias.numpy()
    np.testing.assert_allclose(y, np.maximum(x @ w1 + b1, 0) @ w2 + b2, atol=1e-5)


def test_residual_pre_and_post_norm():
    def double(z):
        return 2 * z

    def norm(z):
        return z + 100

    def identity(z, training=None):
        return z

    assert residual(1.0, double, norm, identity, True, None) == 1.0 + 2 * 101
    assert residual(1.0, double, norm, identity, False, None) == 1.0 + 2 + 100


def test_invalid_args():
    with pytest.raises(ValueError, match=r"intermediate_dim.*Received: intermediate_dim=0"):
        FeedForward(0)
    with pytest.raises(ValueError, match=r"dropout.*Received: dropout=2"):
        FeedForward(4, dropout=2)
