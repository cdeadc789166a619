"""Property tests (hypothesis) over random shapes, masks and inputs."""

import functools

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_attention import layers, masks
from tests.layers.factories import DIM, FACTORIES

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
FLOATS = st.floats(-3, 3, width=32)


@functools.cache
def built(name):
    """One built layer per factory: no retracing per example."""
    layer = FACTORIES[name]()
    layer(np.zeros((1, 1, DIM), "float32"), np.zeros((1, 1, DIM), "float32"))
    return layer


@functools.cache
def built_self_attention(score):
    layer = layers.SelfAttention(num_heads=2, score=score)
    layer(np.zeros((1, 1, DIM), "float32"))
    return layer


@st.composite
def cases(draw, square=False):
    batch = draw(st.integers(1, 3))
    target = draw(st.integers(1, 6))
    source = target if square else draw(st.integers(1, 6))
    q = draw(hnp.arrays("float32", (batch, target, DIM), elements=FLOATS))
    v = draw(hnp.arrays("float32", (batch, source, DIM), elements=FLOATS))
    mask = draw(hnp.arrays(bool, (batch, target, source)))
    return q, v, mask


def per_head(weights):
    """Weights as `(B, T, S, H)` whatever the layer."""
    weights = np.asarray(weights)
    if weights.ndim == 3:
        return weights[..., None]
    return weights.transpose(0, 2, 3, 1)


# The properties run under TensorFlow and torch. On JAX, where eager ops
# compile once per op and shape, every example of new shapes compiles again;
# there the layers' numbers are checked against TensorFlow's instead, masks
# and NaN behind them included.
PROPERTY_ON_TENSORFLOW = pytest.mark.slow_on(
    "jax", reason="a compile per example's shapes; JAX's outputs and scores equal "
                  "TensorFlow's for every layer, with implicit and causal masks and with NaN "
                  "in masked keys (tests/layers/cross_backend_test.py), and run_layer_test "
                  "checks there that NaN in padding changes no other row")


@PROPERTY_ON_TENSORFLOW
@pytest.mark.parametrize("name", list(FACTORIES))
@SETTINGS
@given(case=cases())
def test_weights_are_a_distribution_over_unmasked_keys(name, case):
    q, v, mask = case
    out, weights = built(name)(q, v, attention_mask=mask, return_attention_scores=True)
    weights = per_head(weights)
    assert np.isfinite(np.asarray(out)).all()
    assert (weights[~mask] == 0.0).all()  # exactly 0 on masked keys
    rows = mask.any(-1)
    np.testing.assert_allclose(weights.sum(2)[rows], 1.0, atol=1e-5)
    assert (weights.sum(2)[~rows] == 0.0).all()  # fully masked rows: all 0


@PROPERTY_ON_TENSORFLOW
@pytest.mark.parametrize("score", ["scaled_dot", "dot", "general", "additive"])
@SETTINGS
@given(case=cases(square=True), seed=st.integers(0, 2**16))
def test_self_attention_is_permutation_equivariant(score, case, seed):
    x, _, _ = case
    perm = np.random.default_rng(seed).permutation(x.shape[1])
    layer = built_self_attention(score)
    np.testing.assert_allclose(
        np.asarray(layer(x[:, perm])), np.asarray(layer(x))[:, perm], atol=1e-5
    )


@PROPERTY_ON_TENSORFLOW
@pytest.mark.parametrize("name", list(FACTORIES))
@SETTINGS
@given(case=cases())
def test_batch_independence_even_with_nan_in_another_example(name, case):
    q, v, mask = case
    layer = built(name)
    alone = [np.asarray(layer(q[i : i + 1], v[i : i + 1], attention_mask=mask[i : i + 1]))
             for i in range(q.shape[0])]
    poisoned = q.copy()
    poisoned[0] = np.nan
    together = np.asarray(layer(poisoned, v, attention_mask=mask))
    for i in range(1, q.shape[0]):
        np.testing.assert_allclose(together[i], alone[i][0], atol=1e-5)


@PROPERTY_ON_TENSORFLOW
@pytest.mark.parametrize("name", list(FACTORIES))
@SETTINGS
@given(case=cases(), extra=st.integers(1, 3), garbage=st.sampled_from([1e4, -1e4, np.nan, np.inf]))
def test_padding_invariance_masked_keys_holding_garbage(name, case, extra, garbage):
    q, v, mask = case
    layer = built(name)
    expected = np.asarray(layer(q, v, attention_mask=mask))
    padded_v = np.concatenate([v, np.full(v.shape[:1] + (extra, DIM), garbage, "float32")], 1)
    padded_mask = np.concatenate([mask, np.zeros(mask.shape[:2] + (extra,), bool)], -1)
    out = np.asarray(layer(q, padded_v, attention_mask=padded_mask))
    # Equal up to float32 rounding: more keys may change XLA's summation order (JAX: values
    # near 3 differed by 6 ulps); garbage leaking in would be off by orders of magnitude.
    np.testing.assert_allclose(out, expected, atol=1e-6, rtol=2e-6)


@PROPERTY_ON_TENSORFLOW
@pytest.mark.parametrize("name", list(FACTORIES))
@SETTINGS
@given(case=cases(square=True), data=st.data())
def test_causality_future_changes_do_not_reach_the_past(name, case, data):
    x, _, _ = case
    length = x.shape[1]
    cut = data.draw(st.integers(0, length - 1))
    layer = built(name)
    expected = np.asarray(layer(x, x, use_causal_mask=True))
    changed = x.copy()
    changed[:, cut:] = data.draw(hnp.arrays("float32", changed[:, cut:].shape, elements=FLOATS))
    out = np.asarray(layer(changed, changed, use_causal_mask=True))
    np.testing.assert_allclose(out[:, :cut], expected[:, :cut], atol=1e-5)


@PROPERTY_ON_TENSORFLOW
@SETTINGS
@given(case=cases())
def test_three_layers_reading_one_masked_memory_all_mask(case):
    """One masked memory read by three attention layers in a row: appending
    garbage keys that the mask hides changes nothing in any of them."""
    from tests.test_case import with_keras_mask

    q, v, _ = case
    key_mask = np.ones(v.shape[:2], bool)
    key_mask[:, -1] = False
    stack = [built(n) for n in ("bahdanau", "multi_head", "luong_general")]

    def run(values, mask):
        memory = with_keras_mask(values, mask)
        x = q
        for layer in stack:
            x = layer(x, memory)
        return np.asarray(x)

    garbage = np.concatenate([v, np.full((v.shape[0], 2, DIM), 1e4, "float32")], 1)
    garbage_mask = np.concatenate([key_mask, np.zeros((v.shape[0], 2), bool)], 1)
    np.testing.assert_allclose(run(garbage, garbage_mask), run(v, key_mask), atol=1e-5)


def test_mask_module_agrees_with_implicit_masks(rng):
    """Keras implicit masks and the explicit padding mask give equal outputs."""
    from tests.test_case import with_keras_mask

    q = rng.normal(size=(2, 3, DIM)).astype("float32")
    v = rng.normal(size=(2, 4, DIM)).astype("float32")
    key_mask = np.array([[1, 1, 0, 0], [1, 1, 1, 0]], bool)
    for name in FACTORIES:
        layer = built(name)
        implicit = layer(q, with_keras_mask(v, key_mask))
        explicit = layer(q, v, attention_mask=masks.padding_mask(key_mask=key_mask, query_length=3))
        np.testing.assert_array_equal(np.asarray(implicit), np.asarray(explicit))
