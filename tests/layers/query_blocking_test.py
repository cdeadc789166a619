"""Memory-efficient attention (query blocks + recomputation) equals the exact path."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.layers.attention_implementations import block_length, block_mask
from tests.layers.factories import DIM, FACTORIES
from tests.test_case import gradients, to_numpy, to_tensor

EXTRA = {
    "rotary_self": lambda **kw: layers.MultiHeadAttention(2, 4, rotary=True, **kw),
    "self_attention": lambda **kw: layers.SelfAttention(num_heads=2, **kw),
    "self_attention_window": lambda **kw: layers.SelfAttention(
        num_heads=2, window=3, use_causal_mask=True, **kw
    ),
}
ALL = {**FACTORIES, **EXTRA}
T = S = 11  # blocks of 4: 4 + 4 + 3

# Passes on JAX but takes minutes there; the torch job runs it, and the blocked paths are
# keras.ops.
pytestmark = pytest.mark.slow_on("jax", reason="minutes of compiling; torch runs it")


def twins(name):
    """The same layer (same weights) with and without query blocks."""
    keras.utils.set_random_seed(0)
    exact = ALL[name](query_block_size=None)
    blocked = ALL[name](query_block_size=4)
    return exact, blocked


def call(layer, query, value, **kwargs):
    if isinstance(layer, layers.SelfAttention):
        if "query_mask" in kwargs:
            kwargs["x_mask"] = kwargs.pop("query_mask")
        return layer(query, **kwargs)
    if "query_mask" in kwargs:  # self-attention: the keys share the padding
        kwargs["value_mask"] = kwargs["query_mask"]
    return layer(query, value, **kwargs)


def inputs(rng):
    query = rng.normal(size=(2, T, DIM)).astype("float32")
    value = rng.normal(size=(2, S, DIM)).astype("float32")
    return query, value


def mask_cases(name):
    attention_mask = np.ones((2, T, S), bool)
    attention_mask[0, 5] = False  # a fully masked query row
    attention_mask[1, :, 7:] = False  # keys no query may use
    cases = {"none": {}, "explicit": {"attention_mask": attention_mask}}
    if name.endswith("self") or name.startswith("self"):
        cases["causal_padding"] = {
            "use_causal_mask": True,
            "query_mask": np.arange(T)[None] < np.array([[T], [6]]),
        }
    else:
        cases["causal"] = {"use_causal_mask": True}
    return cases


def output_and_gradients(layer, query, value, kwargs):
    """The float32 output and the gradients of a scalar loss for the query,
    the value and every trainable weight (on the running backend)."""

    def loss_terms(q, v):
        out = ops.cast(call(layer, q, v, **kwargs), "float32")
        return out * ops.sin(out)

    q, v = to_tensor(query), to_tensor(value)
    out = to_numpy(ops.cast(call(layer, q, v, **kwargs), "float32"))
    return out, gradients(loss_terms, [q, v], layer.trainable_weights)


@pytest.mark.parametrize("name", sorted(ALL))
def test_blocked_outputs_and_gradients_equal_the_exact_path(name):
    rng = np.random.default_rng(1)
    query, value = inputs(rng)
    exact, blocked = twins(name)
    call(exact, query, value)
    call(blocked, query, value)
    blocked.set_weights(exact.get_weights())
    for case, kwargs in mask_cases(name).items():
        (out_a, grads_a), (out_b, grads_b) = [
            output_and_gradients(layer, query, value, kwargs) for layer in (exact, blocked)
        ]
        np.testing.assert_allclose(out_b, out_a, atol=1e-5, err_msg=case)
        for a, b in zip(grads_a, grads_b):
            if a is None:
                assert b is None
                continue
            # A weight's gradient sums over every position, in another order
            # in blocks: float32 rounding there scales with the largest
            # entries (on torch: 1.7e-5 on entries of 18, luong_general).
            a, b = to_numpy(a), to_numpy(b)
            scale = max(1.0, float(np.abs(a).max()))
            np.testing.assert_allclose(b, a, atol=1e-5 * scale, err_msg=case)
        assert np.isfinite(np.asarray(out_b)).all()


@pytest.mark.tf_only("tf.function(jit_compile=True) with a tf.Variable query")
def test_blocked_path_runs_under_xla_and_keeps_nan_padding_out():
    import tensorflow as tf

    rng = np.random.default_rng(2)
    query, value = inputs(rng)
    value[1, 7:] = np.nan
    key_mask = np.arange(S)[None] < np.array([[S], [7]])
    exact, blocked = twins("multi_head")
    call(exact, query, value)
    call(blocked, query, value)
    blocked.set_weights(exact.get_weights())

    # Gradients reach the query through the recomputed blocks (a variable:
    # under tf.function, TF's recompute_grad ignores `tape.watch` on
    # function arguments, whereas model inputs come from layers anyway).
    q_var = tf.Variable(query)

    @tf.function(jit_compile=True)
    def run(layer_index, v):
        layer = (exact, blocked)[layer_index]
        with tf.GradientTape() as tape:
            out = layer(q_var, v, value_mask=key_mask)
            loss = tf.reduce_sum(out * tf.sin(out))
        return out, tape.gradient(loss, q_var)

    out_a, grad_a = run(0, tf.constant(value))
    out_b, grad_b = run(1, tf.constant(value))
    assert np.isfinite(out_b).all() and np.isfinite(grad_b).all()
    np.testing.assert_allclose(out_b, out_a, atol=1e-5)
    np.testing.assert_allclose(grad_b, grad_a, atol=1e-5)


def implementation_of(layer, length, scores=False, training=False):
    x = np.zeros((1, length, 4))
    return layer._implementation_of_call(x, x, scores, training)


def test_auto_blocks_only_long_sequences_and_never_when_scores_are_returned():
    layer = layers.BahdanauAttention(4)  # (scaled dot products block at every length on JAX)
    assert implementation_of(layer, 8) == "exact"
    assert implementation_of(layer, 2048) == "blocked"
    assert implementation_of(layer, 2048, scores=True) == "exact"
    assert block_length(layer.query_block_size) == 512
    dropped = layers.BahdanauAttention(4, dropout=0.1)
    assert implementation_of(dropped, 2048, training=True) == "exact"  # no replayable dropout
    assert implementation_of(dropped, 2048) == "blocked"
    assert implementation_of(layers.BahdanauAttention(4, query_block_size=None), 2048) == "exact"
    sized = layers.BahdanauAttention(4, query_block_size=4)
    assert implementation_of(sized, 4) == "exact" and implementation_of(sized, 5) == "blocked"


def test_query_block_size_is_validated_and_serialized():
    layer = layers.MultiHeadAttention(2, 4, query_block_size=128)
    assert layer.get_config()["query_block_size"] == 128
    assert layers.MultiHeadAttention.from_config(layer.get_config()).query_block_size == 128
    with pytest.raises(ValueError, match=r"query_block_size.*Received: query_block_size='big'"):
        layers.MultiHeadAttention(2, 4, query_block_size="big")
    with pytest.raises(ValueError, match=r"query_block_size.*Received: query_block_size=0"):
        layers.ScaledDotProductAttention(query_block_size=0)


def test_block_masks_tile_the_full_mask():
    """Every block's mask is the matching rows of the one full mask."""
    layer = layers.ScaledDotProductAttention()
    query = np.zeros((2, T, DIM), "float32")
    explicit = np.random.default_rng(3).random((2, T, S)) > 0.3
    parts = layer._mask_parts(
        query, query, query_mask=np.arange(T)[None] < np.array([[T], [6]]),
        key_mask=None, attention_mask=explicit, use_causal_mask=True,
    )
    full = np.asarray(block_mask(parts, 0, T))
    expected = explicit & np.tril(np.ones((T, S), bool))[None]
    expected[1, 6:] = False
    np.testing.assert_array_equal(full, expected)
    rows = [np.asarray(block_mask(parts, start, min(4, T - start)))
            for start in range(0, T, 4)]
    np.testing.assert_array_equal(np.concatenate(rows, axis=1), full)


def test_nan_in_one_query_block_stays_in_its_rows():
    """Blocks are chained for memory; a NaN query row must not leak into later blocks."""
    rng = np.random.default_rng(4)
    query, value = inputs(rng)
    query[0, 1] = np.nan  # first block
    exact, blocked = twins("multi_head")
    call(exact, query, value)
    call(blocked, query, value)
    blocked.set_weights(exact.get_weights())
    out_a, out_b = np.asarray(call(exact, query, value)), np.asarray(call(blocked, query, value))
    assert np.isnan(out_b[0, 1]).all()
    np.testing.assert_allclose(out_b[0, 4:], out_a[0, 4:], atol=1e-5)  # later blocks: finite, equal
    assert np.isfinite(out_b[0, 4:]).all()


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", ["multi_head", "grouped_query", "scaled_dot_product"])
def test_blocked_path_is_finite_and_close_under_mixed_precision(name, policy):
    rng = np.random.default_rng(5)
    query, value = inputs(rng)
    keras.utils.set_random_seed(0)
    exact = ALL[name](query_block_size=None, dtype=policy)
    blocked = ALL[name](query_block_size=4, dtype=policy)
    call(exact, query, value)
    call(blocked, query, value)
    blocked.set_weights(exact.get_weights())
    for case, kwargs in mask_cases(name).items():
        (out_a, grads_a), (out_b, grads_b) = [
            output_and_gradients(layer, query, value, kwargs) for layer in (exact, blocked)
        ]
        tolerance = 5e-2 if policy == "mixed_bfloat16" else 5e-3
        np.testing.assert_allclose(out_b, out_a, atol=tolerance, err_msg=case)
        for a, b in zip(grads_a, grads_b):
            b = to_numpy(b).astype("float32")
            assert np.isfinite(b).all(), case
            # Weight gradients reach tens: relative too, float16 spaces its
            # values 2**-10 apart relatively (0.03 at 44; CI saw 44.5 vs 44.44).
            np.testing.assert_allclose(b, to_numpy(a).astype("float32"),
                                       atol=10 * tolerance, rtol=tolerance, err_msg=case)


def test_dot_product_heads_take_the_flash_path_and_other_scores_remat():
    """Scaled-dot heads (MultiHeadAttention, SelfAttention,
    ScaledDotProductAttention) take the flash gradient; other scores
    (additive, general, concat) keep remat."""
    x = np.zeros((1, 3, DIM), "float32")
    flash = [ALL["multi_head"](), ALL["grouped_query"](), ALL["rotary_self"](),
             ALL["self_attention"](), ALL["self_attention_window"]()]
    remat = [
        layers.SelfAttention(num_heads=2, score="additive"),
        layers.BahdanauAttention(6),
        layers.LuongAttention("concat", units=5),
    ]
    flash.append(layers.ScaledDotProductAttention())
    for layer in flash + remat:
        call(layer, x, x)
        operands = layer._flash_operands(layer._prepare_key(x), layer._prepare_value(x))
        assert (operands is not None) == (layer in flash), layer.name
