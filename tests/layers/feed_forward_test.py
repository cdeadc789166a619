import keras
import numpy as np
import pytest

from keras_attention.layers import FeedForward
from keras_attention.layers.feed_forward import residual
from tests.test_case import run_layer_test, to_numpy


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


def test_regularizers_and_constraints_reach_both_dense_layers(rng, tmp_path):
    layer = FeedForward(8, kernel_regularizer=keras.regularizers.L2(0.1),
                        bias_regularizer="l1", kernel_constraint="non_neg",
                        bias_constraint=keras.constraints.MaxNorm(0.5))
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    layer(x)
    for dense in (layer.hidden, layer.projection):
        assert dense.kernel_regularizer.l2 == pytest.approx(0.1)
        assert isinstance(dense.bias_regularizer, keras.regularizers.L1)
        assert isinstance(dense.kernel_constraint, keras.constraints.NonNeg)
        assert isinstance(dense.bias_constraint, keras.constraints.MaxNorm)
    expected = 0.1 * sum(float(np.sum(d.kernel.numpy() ** 2)) for d in (layer.hidden,
                                                                         layer.projection))
    expected += 0.01 * sum(float(np.sum(np.abs(d.bias.numpy())))
                           for d in (layer.hidden, layer.projection))
    assert len(layer.losses) == 4
    np.testing.assert_allclose(float(sum(layer.losses)), expected, rtol=1e-5)
    # A training step applies the constraint: no negative kernel entry.
    model = keras.Sequential([keras.Input((3, 4)), layer])
    model.compile("sgd", "mse")
    model.fit(x, rng.normal(size=(2, 3, 4)).astype("float32"), epochs=1, verbose=0)
    assert (layer.hidden.kernel.numpy() >= 0).all()
    assert (layer.projection.kernel.numpy() >= 0).all()
    restored = FeedForward.from_config(layer.get_config())
    restored(x)
    assert restored.projection.kernel_regularizer.l2 == pytest.approx(0.1)
    assert isinstance(restored.hidden.bias_constraint, keras.constraints.MaxNorm)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(model(x)), atol=1e-6)
    assert isinstance(loaded.layers[0].hidden.kernel_constraint, keras.constraints.NonNeg)


def test_invalid_regularizer_names_the_argument():
    with pytest.raises(ValueError, match=r"regularizer"):
        FeedForward(4, kernel_regularizer="no_such_regularizer")


def test_initializers_reach_both_dense_layers_and_the_config():
    layer = FeedForward(8, kernel_initializer="ones", bias_initializer="ones")
    layer.build((1, 2, 4))
    for dense in (layer.hidden, layer.projection):
        np.testing.assert_array_equal(to_numpy(dense.kernel), 1.0)
        np.testing.assert_array_equal(to_numpy(dense.bias), 1.0)
    again = FeedForward.from_config(layer.get_config())
    assert isinstance(again.kernel_initializer, keras.initializers.Ones)
    default = FeedForward(8)
    assert isinstance(default.kernel_initializer, keras.initializers.GlorotUniform)
    assert isinstance(default.bias_initializer, keras.initializers.Zeros)
