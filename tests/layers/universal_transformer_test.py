import keras
import numpy as np
import pytest

from keras_attention.layers import UniversalTransformerEncoder
from keras_attention.layers.universal_transformer import sinusoid, step_signal
from tests.test_case import (
    OTHER_CONFIGURATIONS_ON_JAX,
    run_layer_test,
    to_numpy,
    with_keras_mask,
)

pytestmark = pytest.mark.keras_ops_only

PADDING = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)


@pytest.mark.parametrize(
    "init_kwargs",
    [
        pytest.param({"act": False}, id="fixed_depth", marks=pytest.mark.slow_on(
            "jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
        pytest.param({"act": True, "dropout": 0.1}, id="act"),
        pytest.param({"act": True, "norm_first": False}, id="act_post_norm",
                     marks=pytest.mark.slow_on("jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
    ],
)
def test_layer_behaviors(init_kwargs, rng, tmp_path):
    run_layer_test(
        UniversalTransformerEncoder,
        {"num_heads": 2, "intermediate_dim": 16, "max_steps": 3, **init_kwargs},
        {"x": rng.normal(size=(2, 5, 8)).astype("float32")},
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=(2, 3, 2, 5, 5),
        tmp_dir=tmp_path,
    )


def test_signals_are_the_sinusoids_of_position_and_step():
    signal = to_numpy(sinusoid(keras.ops.arange(3), 6))
    np.testing.assert_allclose(signal[0], [0, 0, 0, 1, 1, 1], atol=1e-6)
    np.testing.assert_allclose(signal[2, 0], np.sin(2.0), atol=1e-6)  # the fastest sine
    np.testing.assert_allclose(signal[2, 2], np.sin(2.0 / 10000.0), atol=1e-6)  # the slowest
    assert to_numpy(sinusoid(keras.ops.arange(2), 5)).shape == (2, 5)  # odd sizes pad
    both = to_numpy(step_signal(3, 6, 2))
    np.testing.assert_allclose(both, signal + signal[2], atol=1e-6)


def unrolled(layer, x, padding=None):
    """The fixed-depth recurrence written out with the layer's own block."""
    state = x
    for step in range(layer.max_steps):
        signal = to_numpy(step_signal(x.shape[1], x.shape[2], step))
        state = to_numpy(layer.block(state + signal[None], x_mask=padding))
    if layer.final_norm is not None:
        state = to_numpy(layer.final_norm(state))
    return state


@pytest.mark.parametrize("norm_first", [True, False])
def test_without_act_output_equals_the_unrolled_computation(norm_first, rng):
    layer = UniversalTransformerEncoder(16, 2, max_steps=4, norm_first=norm_first)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    y, steps = layer(x, return_halting=True)
    np.testing.assert_allclose(to_numpy(y), unrolled(layer, x), atol=1e-5)
    np.testing.assert_array_equal(to_numpy(steps), np.full((2, 5), 4.0))
    assert not layer.losses  # no ponder cost without ACT
    # One block, shared by the steps: the weights do not grow with the depth.
    deeper = UniversalTransformerEncoder(16, 2, max_steps=8, norm_first=norm_first)
    deeper(x)
    assert deeper.count_params() == layer.count_params()


def act_layer(halting_kernel, halting_bias, max_steps=4, ponder_cost=0.01):
    layer = UniversalTransformerEncoder(16, 2, max_steps=max_steps, act=True,
                                        ponder_cost=ponder_cost)
    layer.build((None, None, 8))
    layer.halting_unit.kernel.assign(np.asarray(halting_kernel, "float32").reshape(8, 1))
    layer.halting_unit.bias.assign(np.asarray([halting_bias], "float32"))
    return layer


def test_act_halts_easy_positions_sooner(rng):
    # The halting unit reads feature 0: positions with a large one halt at
    # once (p ~ 1), the others (p ~ 0) run to max_steps.
    x = rng.normal(size=(2, 6, 8)).astype("float32") * 0.1
    easy = np.array([[1, 0, 1, 0, 0, 1], [0, 0, 0, 1, 1, 0]], bool)
    x[..., 0] = np.where(easy, 40.0, -40.0)
    layer = act_layer(np.eye(8)[0] * 5.0, 0.0, max_steps=4)
    y, steps = layer(x, return_halting=True)
    np.testing.assert_array_equal(to_numpy(steps), np.where(easy, 1.0, 4.0))
    # An easy position's output is its state after one step (weight 1).
    first = to_numpy(layer.block(x + to_numpy(step_signal(6, 8, 0))[None]))
    np.testing.assert_allclose(to_numpy(y)[easy], to_numpy(layer.final_norm(first))[easy],
                               atol=1e-4)
    # The ponder cost is ponder_cost * mean(N + R): R = 1 for the easy
    # positions (p ~ 1 halts with remainder 1 - 0), ~1 for the hard ones.
    expected = 0.01 * np.mean(np.where(easy, 1.0 + 1.0, 4.0 + 1.0))
    np.testing.assert_allclose(float(to_numpy(layer.losses[0])), expected, atol=1e-4)


def test_act_that_never_halts_early_equals_the_unrolled_computation(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    layer = act_layer(np.zeros(8), -30.0, max_steps=3)  # p ~ 1e-13 until the last step
    fixed = UniversalTransformerEncoder(16, 2, max_steps=3)
    fixed(x)
    fixed.block.set_weights(layer.block.get_weights())
    fixed.final_norm.set_weights(layer.final_norm.get_weights())
    y, steps = layer(x, return_halting=True)
    np.testing.assert_allclose(to_numpy(y), to_numpy(fixed(x)), atol=1e-5)
    np.testing.assert_array_equal(to_numpy(steps), np.full((2, 5), 3.0))


def test_act_weights_sum_to_one_and_threshold_is_respected(rng):
    # p = sigmoid(0) = 0.5 everywhere: 0.5 + 0.5 > 0.99 halts at step 2 with
    # remainder 0.5; a threshold of 0.3 halts at step 1 (0.5 > 0.3, remainder 1).
    x = rng.normal(size=(1, 4, 8)).astype("float32")
    layer = act_layer(np.zeros(8), 0.0, max_steps=5)
    _, steps = layer(x, return_halting=True)
    np.testing.assert_array_equal(to_numpy(steps), np.full((1, 4), 2.0))
    np.testing.assert_allclose(float(to_numpy(layer.losses[0])), 0.01 * (2 + 0.5), atol=1e-6)
    eager = UniversalTransformerEncoder(16, 2, max_steps=5, act=True, halting_threshold=0.3)
    eager.build((None, None, 8))
    eager.halting_unit.kernel.assign(np.zeros((8, 1), "float32"))
    eager.halting_unit.bias.assign(np.zeros(1, "float32"))
    _, steps = eager(x, return_halting=True)
    np.testing.assert_array_equal(to_numpy(steps), np.full((1, 4), 1.0))


def test_padding_gives_zero_and_is_ignored(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    layer = UniversalTransformerEncoder(16, 2, max_steps=3, act=True)
    y, steps = layer(with_keras_mask(x, PADDING), return_halting=True)
    y, steps = to_numpy(y), to_numpy(steps)
    assert (y[~PADDING] == 0).all() and (steps[~PADDING] == 0).all()
    assert (steps[PADDING] >= 1).all()
    noisy = x.copy()
    noisy[~PADDING] = 100.0
    y2 = to_numpy(layer(noisy, x_mask=PADDING))
    np.testing.assert_allclose(y2[PADDING], y[PADDING], atol=1e-5)
    # The ponder cost averages the real positions only.
    loss = float(to_numpy(layer.losses[0]))
    layer(noisy[1:], x_mask=PADDING[1:])
    assert np.isfinite(loss)
    # A fully masked example gives zeros.
    empty = to_numpy(layer(x, x_mask=np.zeros((2, 5), bool)))
    np.testing.assert_array_equal(empty, 0.0)


def test_attention_scores_per_step_and_attention_mask(rng):
    x = rng.normal(size=(1, 4, 8)).astype("float32")
    causal = np.tril(np.ones((1, 4, 4), bool))
    layer = UniversalTransformerEncoder(16, 2, max_steps=3)
    y, scores, steps = layer(x, attention_mask=causal, return_attention_scores=True,
                             return_halting=True)
    scores = to_numpy(scores)
    assert scores.shape == (1, 3, 2, 4, 4) and to_numpy(steps).shape == (1, 4)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-5)
    assert (scores[..., ~causal[0]] == 0).all()
    # Steps differ: each sees its own timestep signal and input.
    assert not np.allclose(scores[0, 0], scores[0, 1])


@pytest.mark.large
def test_ponder_cost_is_trained_by_fit(rng):
    x = rng.normal(size=(8, 5, 8)).astype("float32")
    inputs = keras.Input((5, 8))
    layer = UniversalTransformerEncoder(16, 2, max_steps=4, act=True, ponder_cost=1.0)
    model = keras.Model(inputs, layer(inputs))
    model.compile(keras.optimizers.Adam(0.05), loss=lambda y, p: 0.0 * keras.ops.mean(p))
    before = float(to_numpy(layer.halting_unit.bias)[0])
    history = model.fit(x, x, epochs=5, batch_size=8, verbose=0)
    assert history.history["loss"][0] > 1.0  # the ponder cost alone: N + R >= 1
    # Only the ponder cost is minimised: the positions halt sooner (higher p).
    assert float(to_numpy(layer.halting_unit.bias)[0]) > before


def test_invalid_args():
    with pytest.raises(ValueError, match=r"max_steps.*Received: max_steps=0"):
        UniversalTransformerEncoder(16, 2, max_steps=0)
    with pytest.raises(ValueError, match=r"halting_threshold.*Received: halting_threshold=1.0"):
        UniversalTransformerEncoder(16, 2, halting_threshold=1.0)
    with pytest.raises(ValueError, match=r"ponder_cost.*Received: ponder_cost=-1"):
        UniversalTransformerEncoder(16, 2, ponder_cost=-1)
    with pytest.raises(TypeError, match=r"act.*Received: act=1"):
        UniversalTransformerEncoder(16, 2, act=1)
    with pytest.raises(ValueError, match=r"num_heads.*Received: num_heads=0"):
        UniversalTransformerEncoder(16, 0)
    with pytest.raises(ValueError, match=r"`x` must have shape.*Received: x.shape=\(2, 3\)"):
        UniversalTransformerEncoder(16, 2)(np.ones((2, 3), "float32"))
