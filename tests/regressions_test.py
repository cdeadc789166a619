"""Regression tests named after the upstream defects they guard against.

See ../shared/reference/reliability.md (R1-R13) and anchors.md for evidence.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import layers, masks
from tests.layers.factories import DIM, FACTORIES, empty_row_output
from tests.test_case import copy_layer, keras_mask, with_keras_mask

POLICIES = ["float32", "mixed_float16", "mixed_bfloat16"]


def inputs(rng, batch=2, target=3, source=4, scale=1.0):
    q = (scale * rng.normal(size=(batch, target, DIM))).astype("float32")
    v = (scale * rng.normal(size=(batch, source, DIM))).astype("float32")
    return q, v


def mask_with_empty_rows():
    """(2, 3, 4): example 1 has every key masked; example 0 row 2 too."""
    mask = np.ones((2, 3, 4), bool)
    mask[0, :, 3] = False
    mask[0, 2] = False
    mask[1] = False
    return mask


def all_paths(layer, q, v, mask):
    """Outputs of one layer through every code path, as NumPy arrays."""

    def call(**kw):
        return layer(q, v, attention_mask=mask, **kw)

    paths = {"eager": call(), "eager_with_scores": call(return_attention_scores=True)[0]}
    paths["graph"] = tf.function(lambda: call())()
    paths["xla"] = tf.function(lambda: call(), jit_compile=True)()
    paths["xla_with_scores"] = tf.function(
        lambda: call(return_attention_scores=True), jit_compile=True
    )()[0]
    return {k: np.asarray(v, "float32") for k, v in paths.items()}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", list(FACTORIES))
def test_keras_21149_fully_masked_rows_identical_on_every_path(name, policy, rng):
    """Keras MHA gives a masked row the mean of the values on its fused path and
    zero on its scores path (reliability R4); ours gives zero on every path."""
    q, v = inputs(rng)
    mask = mask_with_empty_rows()
    reference = FACTORIES[name]()
    reference(q, v)
    layer = copy_layer(reference, [q, v], dtype=policy)
    with_dropout = FACTORIES[name](dropout=0.5, seed=1, dtype=policy)
    with_dropout(q, v)
    with_dropout.set_weights(reference.get_weights())
    expected_empty = empty_row_output(layer)
    results = all_paths(layer, q, v, mask)
    results["dropout_at_inference"] = np.asarray(
        with_dropout(q, v, attention_mask=mask, training=False), "float32"
    )
    empty = ~mask.any(-1)
    for path, out in results.items():
        assert np.isfinite(out).all(), path
        np.testing.assert_array_equal(
            out[empty], np.broadcast_to(expected_empty, out[empty].shape), err_msg=path
        )
        # Rows with visible keys agree to rounding (kernels may fuse
        # differently between eager, graph and XLA): under a mixed policy,
        # a few units in the last place of the 16-bit output (bfloat16 has
        # 8 significant bits: 2 ulp at 2.0 is 0.03; eager rounds every op to
        # bfloat16 where XLA keeps fused ops in float32, which moved one
        # luong_general output by 0.02).
        atol, rtol = (1e-5, 1e-7) if policy == "float32" else (3e-2, 2**-6)
        np.testing.assert_allclose(out, results["eager"], atol=atol, rtol=rtol, err_msg=path)
    _, weights = layer(q, v, attention_mask=mask, return_attention_scores=True)
    weights = np.asarray(weights)
    if weights.ndim == 4:
        weights = weights.transpose(0, 2, 3, 1)  # (B, T, S, H)
        assert (weights[~mask] == 0).all() and (weights[empty] == 0).all()
    else:
        assert (weights[~mask] == 0).all() and (weights[empty] == 0).all()


@pytest.mark.parametrize("name", list(FACTORIES))
def test_r3_mixed_float16_fully_masked_rows_have_finite_gradients(name, rng):
    """keras Attention/AdditiveAttention return NaN forward and backward under
    mixed_float16 when every key is masked (reliability R3)."""
    q, v = inputs(rng, scale=3.0)
    layer = FACTORIES[name](dtype="mixed_float16")
    q, v = tf.constant(q), tf.constant(v)
    with tf.GradientTape() as tape:
        tape.watch([q, v])
        out = layer(q, v, attention_mask=mask_with_empty_rows())
        loss = tf.reduce_sum(tf.cast(out, "float32"))
    grads = tape.gradient(loss, [q, v] + layer.trainable_variables)
    assert np.isfinite(np.asarray(out, "float32")).all()
    for grad in grads:
        assert np.isfinite(np.asarray(grad, "float32")).all()


@pytest.mark.parametrize("scale", [100.0, 1000.0])
@pytest.mark.parametrize("name", ["scaled_dot_product", "luong_dot", "multi_head"])
def test_r5_mixed_float16_large_inputs_do_not_overflow(name, scale, rng):
    """Keras' fused MHA computes Q.K^T in float16 before scaling: NaN at x100
    (reliability R5). Our logits are float32 and queries are scaled first."""
    q, v = inputs(rng, scale=scale)
    reference = FACTORIES[name]()
    expected = np.asarray(reference(q, v))
    assert np.isfinite(expected).all()
    out = np.asarray(copy_layer(reference, [q, v], dtype="mixed_float16")(q, v), "float32")
    assert np.isfinite(out).all()


@pytest.mark.parametrize("name", list(FACTORIES))
def test_r1_mask_not_stripped_when_one_memory_feeds_three_layers(name, rng):
    """Keras MHA removes the Keras mask from its inputs, so the next layer that
    reads the same memory attends to padding (reliability R1)."""
    q, v = inputs(rng, batch=2, target=3, source=6)
    memory_mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]], bool)
    stack = [FACTORIES[name]() for _ in range(3)]

    def run(values):
        memory = with_keras_mask(values, memory_mask)
        x = q
        for layer in stack:
            x = layer(x, memory)
        assert keras_mask(memory) is not None
        return np.asarray(x)

    clean = run(v)
    garbage = v.copy()
    garbage[~memory_mask] = 1e4
    np.testing.assert_allclose(run(garbage), clean, atol=1e-5)
    garbage[~memory_mask] = np.nan
    np.testing.assert_allclose(run(garbage), clean, atol=1e-5)


def test_r1_functional_model_three_cross_attentions_share_masked_memory(rng):
    """The same check in a functional model fed by `Embedding(mask_zero=True)`."""
    tokens = keras.Input((None,), dtype="int32")
    queries = keras.Input((3, DIM))
    memory = keras.layers.Embedding(20, DIM, mask_zero=True)(tokens)
    x = queries
    for _ in range(3):
        x = layers.MultiHeadAttention(2, 4)(x, memory)
    model = keras.Model([tokens, queries], x)
    source = np.array([[5, 6, 7, 0, 0], [3, 0, 0, 0, 0]])
    padded_more = np.pad(source, ((0, 0), (0, 3)))
    q = rng.normal(size=(2, 3, DIM)).astype("float32")
    np.testing.assert_allclose(
        model([padded_more, q]), model([source, q]), atol=1e-6
    )


@pytest.mark.parametrize("name", list(FACTORIES))
def test_r6_causal_decode_step_is_not_aligned_top_left(name, rng):
    """Keras aligns `use_causal_mask` top-left when T != S, so a one-token
    decode step sees only key 0 (reliability R6). Ours refuses the ambiguous
    call, and an offset mask reproduces the last row of the full pass."""
    x = rng.normal(size=(2, 5, DIM)).astype("float32")
    layer = FACTORIES[name]()
    full = np.asarray(layer(x, x, use_causal_mask=True))
    with pytest.raises(ValueError, match=r"use_causal_mask.*offset.*Received: query.shape"):
        layer(x[:, -1:], x, use_causal_mask=True)
    step = layer(x[:, -1:], x, attention_mask=masks.causal_mask(1, 5, offset=4))
    np.testing.assert_allclose(np.asarray(step)[:, 0], full[:, -1], atol=1e-5)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_r9_additive_float_mask_is_refused_not_inverted(name, rng):
    """Keras MHA accepts a 0/-1e9 additive mask and applies it inverted."""
    q, v = inputs(rng)
    additive = np.where(mask_with_empty_rows(), 0.0, -1e9).astype("float32")
    with pytest.raises(ValueError, match=r"additive.*Received: attention_mask with dtype float32"):
        FACTORIES[name]()(q, v, attention_mask=additive)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_keras_pr_15390_nan_in_masked_values_does_not_leak(name, rng):
    q, v = inputs(rng)
    mask = mask_with_empty_rows()
    layer = FACTORIES[name]()
    clean = np.asarray(layer(q, v, attention_mask=mask))
    poisoned = v.copy()
    poisoned[0, 3] = np.nan  # key 3 of example 0 is masked for every query
    poisoned[1] = np.inf  # example 1 has no visible key at all
    np.testing.assert_array_equal(np.asarray(layer(q, poisoned, attention_mask=mask)), clean)


@pytest.mark.parametrize("name", ["multi_head", "bahdanau", "scaled_dot_product"])
def test_keras_23038_no_future_leak_on_any_path(name, rng):
    """Keras MHA once dropped the causal mask on its dropout and scores paths."""
    x = rng.normal(size=(2, 5, DIM)).astype("float32")
    layer = FACTORIES[name](dropout=0.3, seed=2)
    for training in (False, True):
        _, w = layer(x, x, use_causal_mask=True, return_attention_scores=True,
                     training=training)
        w = np.asarray(w)
        future = ~np.tril(np.ones((5, 5), bool))
        assert (w[..., future] == 0).all()


def test_keras_17655_implicit_mask_honoured_in_compiled_model(rng):
    """Implicit masks reach our layers inside `fit`/`predict` with XLA."""
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, DIM, mask_zero=True)(tokens)
    y = layers.SelfAttention(2, use_causal_mask=True)(x)
    model = keras.Model(tokens, y)
    model.compile(jit_compile=True)
    source = np.array([[5, 6, 7, 0], [3, 4, 0, 0]])
    more_padding = np.pad(source, ((0, 0), (0, 4)))
    eager = np.asarray(model(source))
    compiled = model.predict(more_padding, verbose=0)[:, :4]
    real = source > 0
    np.testing.assert_allclose(compiled[real], eager[real], atol=1e-5)
