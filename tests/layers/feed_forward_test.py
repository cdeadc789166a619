import math

import keras
import numpy as np
import pytest

from keras_attention.layers import FeedForward
from keras_attention.layers.feed_forward import (
    gelu_approximate,
    get_activation,
    residual,
)
from tests.layers.hf_reference import run_torch, set_dense
from tests.test_case import OTHER_CONFIGURATIONS_ON_JAX, run_layer_test, to_numpy

pytestmark = pytest.mark.keras_ops_only


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


@pytest.mark.parametrize(
    "init_kwargs",
    [
        pytest.param({"activation": "gelu_approximate", "gated": True}, id="geglu",
                     marks=pytest.mark.slow_on("jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
        pytest.param({"activation": "silu", "gated": True, "use_bias": False}, id="swiglu"),
    ],
)
def test_gated_layer_behaviors(init_kwargs, rng, tmp_path):
    run_layer_test(
        FeedForward,
        {"intermediate_dim": 16, "dropout": 0.1, **init_kwargs},
        {"inputs": rng.normal(size=(2, 3, 4)).astype("float32")},
        expected_output_shape=(2, 3, 4),
        tmp_dir=tmp_path,
        position_wise=True,
    )


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_approximate", "swish", "silu"])
def test_gated_correctness(activation, rng):
    reference = {
        "relu": lambda x: np.maximum(x, 0),
        "gelu": lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / np.sqrt(2))),
        "gelu_approximate": _gelu_tanh,
        "swish": lambda x: x / (1 + np.exp(-x)),
        "silu": lambda x: x / (1 + np.exp(-x)),
    }[activation]
    layer = FeedForward(8, activation=activation, gated=True,
                        bias_initializer="random_normal")
    x = rng.normal(size=(1, 2, 3)).astype("float32")
    y = to_numpy(layer(x))
    w1, b1 = to_numpy(layer.hidden.kernel), to_numpy(layer.hidden.bias)
    v, c = to_numpy(layer.hidden_linear.kernel), to_numpy(layer.hidden_linear.bias)
    w2, b2 = to_numpy(layer.projection.kernel), to_numpy(layer.projection.bias)
    expected = (reference(x @ w1 + b1) * (x @ v + c)) @ w2 + b2
    np.testing.assert_allclose(y, expected, atol=1e-5)


def test_use_bias_false_makes_no_biases():
    layer = FeedForward(8, gated=True, use_bias=False)
    layer.build((None, 3, 4))
    assert [w.path.split("/")[-1] for w in layer.weights] == ["kernel"] * 3


def test_config_names_the_new_options():
    config = FeedForward(8, activation="gelu_approximate", gated=True,
                         use_bias=False).get_config()
    assert config["activation"] == "gelu_approximate"
    assert (config["gated"], config["use_bias"]) == (True, False)
    again = FeedForward.from_config(config)
    assert again.activation is gelu_approximate and again.gated and not again.use_bias


def test_invalid_new_args():
    with pytest.raises(ValueError, match=r"activation.*Received: activation='geglu'"):
        FeedForward(4, activation="geglu")
    with pytest.raises(TypeError, match=r"Received: gated='yes'"):
        FeedForward(4, gated="yes")
    with pytest.raises(TypeError, match=r"Received: use_bias=None"):
        FeedForward(4, use_bias=None)


def _t5_config(**kwargs):
    from transformers import T5Config

    return T5Config(d_model=8, d_ff=16, dropout_rate=0.0, **kwargs)


@pytest.mark.parametrize(
    "feed_forward_proj, activation, gated",
    [("relu", "relu", False), ("gated-gelu", "gelu_approximate", True),
     ("gated-silu", "silu", True)],
)
def test_matches_transformers_t5(feed_forward_proj, activation, gated, rng):
    """T5 v1.0 (`T5DenseActDense`) and v1.1 / flan-T5
    (`T5DenseGatedActDense`, "gelu_new") with copied weights."""
    from transformers.models.t5.modeling_t5 import T5DenseActDense, T5DenseGatedActDense

    config = _t5_config(feed_forward_proj=feed_forward_proj)
    torch_layer = (T5DenseGatedActDense if gated else T5DenseActDense)(config)
    layer = FeedForward(16, activation=activation, gated=gated, use_bias=False)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    layer.build(x.shape)
    if gated:
        set_dense(layer.hidden, torch_layer.wi_0)
        set_dense(layer.hidden_linear, torch_layer.wi_1)
    else:
        set_dense(layer.hidden, torch_layer.wi)
    set_dense(layer.projection, torch_layer.wo)
    np.testing.assert_allclose(to_numpy(layer(x)), run_torch(torch_layer, x), atol=1e-5)


@pytest.mark.parametrize("activation", ["gelu", "swish", "relu"])
def test_matches_transformers_bart_and_marian_activations(activation, rng):
    """`ACT2FN[name]` of `transformers` (BART "gelu", Marian "swish")."""
    from transformers.activations import ACT2FN

    x = rng.normal(scale=3.0, size=(4, 7)).astype("float32")
    ours = to_numpy(get_activation(activation)(x))
    np.testing.assert_allclose(ours, run_torch(ACT2FN[activation], x), atol=1e-6)
    gelu_new = run_torch(ACT2FN["gelu_new"], x)
    np.testing.assert_allclose(to_numpy(gelu_approximate(x)), gelu_new, atol=1e-6)
