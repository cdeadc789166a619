"""The fused implementation equals the exact one; the chooser picks by rule.

Runs under KERAS_BACKEND=tensorflow, jax and torch (CPU kernels of
`keras.ops.dot_product_attention`: TensorFlow's einsum path, JAX's XLA path,
torch's SDPA); on JAX the layer x mask grids run in part (`grid`).
Tolerances: outputs 1e-5 absolute (float32 rounding of a different summation
order); gradients 1e-5 times the largest entry of the exact gradient (a
weight's gradient sums over every position).
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import layers, masks
from keras_attention.layers.attention_implementations import (
    AUTO_BLOCK_MIN_SCORES,
    choose_implementation,
    default_device,
)
from tests.layers.factories import empty_row_output
from tests.test_case import (
    FIT_JIT_COMPILE,
    IMPLEMENTATION_TOLERANCE,
    OTHER_CONFIGURATIONS_ON_JAX,
    PRECISION_TOLERANCE,
    gradients,
    run_layer_test,
    to_numpy,
    to_tensor,
)

B, T, S, DIM = 2, 6, 6, 8
DECODE_T, DECODE_S = 3, 7

FUSABLE = {
    "scaled_dot_product": lambda **kw: layers.ScaledDotProductAttention(**kw),
    "multi_head": lambda **kw: layers.MultiHeadAttention(
        2, 4, bias_initializer="random_normal", **kw
    ),
    "grouped_query": lambda **kw: layers.MultiHeadAttention(
        4, 2, num_key_value_heads=2, bias_initializer="random_normal", **kw
    ),
    "multi_query": lambda **kw: layers.MultiHeadAttention(
        4, 2, num_key_value_heads=1, value_dim=3, **kw
    ),
    "rotary": lambda **kw: layers.MultiHeadAttention(2, 4, rotary=True, **kw),
    "self_attention": lambda **kw: layers.SelfAttention(num_heads=2, **kw),
}


def key_padding(lengths, length):
    return np.arange(length)[None] < np.asarray(lengths)[:, None]


def mask_cases():
    """name -> (query length, key length, call kwargs, NaN-filled key
    positions `(b, s)` or None). Query padding also pads the keys (it is
    self-attention), as a Keras mask on `x` does."""
    empty_rows = np.ones((B, T, S), bool)
    empty_rows[0, 2] = False  # a fully masked query row
    empty_rows[1, :, 4:] = False  # keys no query may use
    two_d = np.tril(np.ones((T, S), bool), 1)
    return {
        "none": (T, S, {}, None),
        "key_padding": (T, S, {"value_mask": key_padding([S, 3], S)}, None),
        "query_padding": (
            T, S,
            {"query_mask": key_padding([T, 4], T), "value_mask": key_padding([T, 4], S)},
            None,
        ),
        "causal": (T, S, {"use_causal_mask": True}, None),
        "causal_padding": (
            T, S,
            {"use_causal_mask": True, "query_mask": key_padding([T, 2], T),
             "value_mask": key_padding([T, 2], S)},
            None,
        ),
        "decode_step": (
            DECODE_T, DECODE_S,
            {"attention_mask": masks.causal_mask(
                DECODE_T, DECODE_S, offset=DECODE_S - DECODE_T)},
            None,
        ),
        "fully_masked_rows": (T, S, {"attention_mask": empty_rows}, None),
        "explicit_2d": (T, S, {"attention_mask": two_d}, None),
        "explicit_3d": (T, S, {"attention_mask": empty_rows.astype("int32")}, None),
        "nan_in_padding": (
            T, S,
            {"query_mask": key_padding([T, 3], T), "value_mask": key_padding([T, 3], S)},
            (1, slice(3, None)),
        ),
    }


CASES = mask_cases()
SELF_ONLY = {"decode_step"}  # SelfAttention attends to its own sequence


def call(layer, query, value, kwargs):
    if isinstance(layer, layers.SelfAttention):
        kwargs = dict(kwargs)
        padding = kwargs.pop("query_mask", None)
        if padding is None:
            padding = kwargs.pop("value_mask", None)
        kwargs.pop("value_mask", None)
        if padding is not None:
            kwargs["x_mask"] = padding
        return layer(query, **kwargs)
    return layer(query, value, **kwargs)


def twins(name, **kwargs):
    """Exact and fused layers with the same weights."""
    keras.utils.set_random_seed(0)
    exact = FUSABLE[name](implementation="exact", **kwargs)
    fused = FUSABLE[name](implementation="fused", **kwargs)
    return exact, fused


def case_inputs(case, seed=1):
    query_length, key_length, kwargs, nan_at = CASES[case]
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(B, query_length, DIM)).astype("float32")
    value = rng.normal(size=(B, key_length, DIM)).astype("float32")
    if nan_at is not None:  # stored in padded queries, keys and values
        query[nan_at] = np.nan
        value[nan_at] = np.nan
    return query, value, kwargs


def output_and_gradients(layer, query, value, kwargs, jit_on_jax=False):
    def loss_terms(q, v):
        out = ops.cast(call(layer, q, v, kwargs), "float32")
        return out * ops.sin(out)

    q, v = to_tensor(query), to_tensor(value)
    out = to_numpy(ops.cast(call(layer, q, v, kwargs), "float32"))
    return out, gradients(loss_terms, [q, v], layer.trainable_weights, jit_on_jax)


def build_pair(exact, fused, query, value, kwargs):
    call(exact, query, value, kwargs)
    call(fused, query, value, kwargs)
    fused.set_weights(exact.get_weights())


# The layer x mask case grids below run whole under TensorFlow and torch. On
# JAX, whose XLA program is the fused kernel there and whose CPU picks the
# blocked path under "auto", every case runs on the grouped-query layer (its
# key and value heads reach the kernel in groups) and every layer runs the
# case of `ON_JAX_FOR_EVERY_LAYER` (causal, with padding): each cell
# differentiates both paths op by op (on JAX a compile per op and shapes),
# and the layers share the kernel call of a case
# (keras_attention/layers/attention_implementations.py).
ON_JAX_FOR_EVERY_LAYER = ("causal_padding",)
GRID_ON_TENSORFLOW = pytest.mark.slow_on(
    "jax", reason="on JAX the grouped-query layer runs every mask case and every layer the "
                  "case 'causal_padding'; TensorFlow and torch run the whole grid")


def grid(pairs):
    """`pairs` of (layer, case) as parameters, the cells JAX leaves out
    marked (`GRID_ON_TENSORFLOW`)."""
    return [
        pytest.param(name, case, marks=() if name == "grouped_query"
                     or case in ON_JAX_FOR_EVERY_LAYER else GRID_ON_TENSORFLOW)
        for name, case in pairs
    ]


PAIRS = [
    (name, case)
    for name in FUSABLE
    for case in CASES
    if not (name == "self_attention" and case in SELF_ONLY)
]


@pytest.mark.parametrize("name,case", grid(PAIRS))
def test_fused_outputs_and_gradients_equal_the_exact_path(name, case):
    query, value, kwargs = case_inputs(case)
    exact, fused = twins(name)
    build_pair(exact, fused, query, value, kwargs)
    (out_a, grads_a), (out_b, grads_b) = [
        output_and_gradients(layer, query, value, kwargs) for layer in (exact, fused)
    ]
    assert np.isfinite(out_b).all(), "NaN in padding reached the fused output"
    np.testing.assert_allclose(out_b, out_a, atol=IMPLEMENTATION_TOLERANCE)
    for a, b in zip(grads_a, grads_b):
        if a is None:
            assert b is None
            continue
        a, b = to_numpy(a), to_numpy(b)
        assert np.isfinite(b).all(), "non-finite fused gradient"
        scale = max(1.0, float(np.abs(a).max()))
        np.testing.assert_allclose(b, a, atol=1e-5 * scale)


@pytest.mark.parametrize("name", ["scaled_dot_product", "multi_head", "multi_query"])
def test_fused_fully_masked_row_is_exactly_zero_context(name):
    query, value, kwargs = case_inputs("fully_masked_rows")
    exact, fused = twins(name)
    build_pair(exact, fused, query, value, kwargs)
    out = to_numpy(call(fused, query, value, kwargs))
    # Keras' fused kernel alone would give the mean of the values here.
    np.testing.assert_array_equal(
        out[0, 2], np.broadcast_to(empty_row_output(fused), out[0, 2].shape)
    )


@pytest.mark.parametrize("name", sorted(FUSABLE))
def test_fused_output_equals_the_output_with_scores(name):
    """A call returning the weights runs the exact path (documented
    fall-back); both outputs agree within the implementation tolerance."""
    query, value, kwargs = case_inputs("causal_padding")
    _, fused = twins(name)
    plain = to_numpy(call(fused, query, value, kwargs))
    scored, weights = call(fused, query, value, dict(kwargs, return_attention_scores=True))
    np.testing.assert_allclose(to_numpy(scored), plain, atol=IMPLEMENTATION_TOLERANCE)
    assert np.isfinite(to_numpy(weights)).all()


@pytest.mark.parametrize("policy", sorted(PRECISION_TOLERANCE))
@pytest.mark.parametrize("name", ["scaled_dot_product", "grouped_query", "self_attention"])
def test_fused_path_under_mixed_precision(name, policy):
    query, value, kwargs = case_inputs("causal_padding")
    query, value = 3 * query, 3 * value  # logits large enough to matter
    exact, _ = twins(name)
    call(exact, query, value, kwargs)
    keras.utils.set_random_seed(0)
    mixed = FUSABLE[name](implementation="fused", dtype=policy)
    call(mixed, query, value, kwargs)
    mixed.set_weights(exact.get_weights())
    expected = to_numpy(call(exact, query, value, kwargs))
    # Gradients compiled as `fit` compiles them (JAX's CPU refused float16 heads there).
    out, grads = output_and_gradients(mixed, query, value, kwargs, jit_on_jax=True)
    assert np.isfinite(out).all(), policy
    # Absolute and relative: the outputs reach ~7, where one bfloat16 ulp is 0.03.
    tolerance = 3 * PRECISION_TOLERANCE[policy]
    np.testing.assert_allclose(out, expected, atol=tolerance, rtol=tolerance)
    for grad in grads:
        if grad is not None:
            assert np.isfinite(to_numpy(grad).astype("float32")).all(), policy
    # The padded query row of example 1 is fully masked: exactly the bias.
    np.testing.assert_array_equal(
        out[1, 3], np.broadcast_to(empty_row_output(mixed), out[1, 3].shape)
    )


@pytest.mark.parametrize("policy", sorted(PRECISION_TOLERANCE))
def test_fused_path_trains_and_predicts_compiled_under_mixed_precision(policy):
    """`fit` and `predict` compile the fused path under both policies: on
    JAX's CPU, float16 heads made XLA refuse JAX's float32-logits algorithm
    ("The precision 'F16_F16_F32' is not supported by dot_general on CPU")
    at compile time, so no compiled call ran. Causal self-attention takes
    the kernel's `is_causal` path, padded cross-attention the masked one."""
    keras.utils.set_random_seed(0)
    x = keras.Input((T, DIM))
    memory = keras.Input((S, DIM))
    causal = layers.SelfAttention(num_heads=2, implementation="fused", dtype=policy)
    cross = layers.MultiHeadAttention(2, 4, implementation="fused", dtype=policy)
    hidden = causal(x, use_causal_mask=True)
    model = keras.Model([x, memory], cross(hidden, memory, value_mask=memory_padding(memory)))
    model.compile(optimizer="sgd", loss="mse", jit_compile=FIT_JIT_COMPILE)
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=(B, T, DIM)).astype("float32"),
              rng.normal(size=(B, S, DIM)).astype("float32")]
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    history = model.fit(inputs, inputs[0], batch_size=B, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0]), policy
    assert all(not np.array_equal(b, to_numpy(w))
               for b, w in zip(before, model.trainable_weights))
    predicted = model.predict(inputs, batch_size=B, verbose=0)
    eager = to_numpy(ops.cast(model(inputs), "float32"))
    np.testing.assert_allclose(predicted.astype("float32"), eager,
                               atol=PRECISION_TOLERANCE[policy])


def memory_padding(memory):
    """Keys 4 and 5 of every example are padding, as a symbolic mask."""
    return ops.logical_and(ops.less(ops.arange(S), 4)[None],
                           ops.ones_like(memory[..., 0], "bool"))


def test_fused_dropout_in_training_runs_the_exact_path():
    query, value, kwargs = case_inputs("causal")
    layer = layers.MultiHeadAttention(2, 4, dropout=0.5, seed=3, implementation="fused")
    assert layer._implementation_of_call(query, value, False, True) == "exact"
    assert layer._implementation_of_call(query, value, False, False) == "fused"
    assert layer._implementation_of_call(query, value, True, False) == "exact"
    trained = to_numpy(layer(query, value, training=True, **kwargs))
    inferred = to_numpy(layer(query, value, training=False, **kwargs))
    assert not np.allclose(trained, inferred)  # dropout did act


# ------------------------------------------------- exact path's gradient
FLASH_GRADIENT_CASES = ("none", "causal", "causal_padding", "fully_masked_rows",
                        "nan_in_padding", "decode_step")


@pytest.mark.parametrize("case", FLASH_GRADIENT_CASES)
@pytest.mark.parametrize("name", ["multi_head", "grouped_query", "rotary"])
def test_the_exact_paths_flash_gradient_equals_the_softmax_gradient(name, case, monkeypatch):
    """The exact path of scaled dot-product heads keeps its weights for
    FlashAttention's gradient (`attention_core.flash_attention`,
    `keep_weights=True`); asking for the weights takes the plain path,
    differentiated through the softmax: the same outputs and gradients,
    and the same exact zeros and finite values where rows are masked."""
    from keras_attention.layers import attention_core

    taken = []
    flash_attention = attention_core.flash_attention

    def spy(*args, **kwargs):
        taken.append(kwargs.get("keep_weights"))
        return flash_attention(*args, **kwargs)

    monkeypatch.setattr(attention_core, "flash_attention", spy)
    query, value, kwargs = case_inputs(case)
    keras.utils.set_random_seed(0)
    layer = FUSABLE[name](implementation="exact")

    def output_only(q, v):
        return ops.cast(call(layer, q, v, dict(kwargs, training=True)), "float32")

    def output_beside_scores(q, v):
        output, _ = call(layer, q, v, dict(kwargs, return_attention_scores=True,
                                           training=True))
        return ops.cast(output, "float32")

    results = []
    for fn in (output_only, output_beside_scores):
        q, v = to_tensor(query), to_tensor(value)
        out = to_numpy(fn(q, v))
        grads = gradients(lambda q, v, fn=fn: fn(q, v) * ops.sin(fn(q, v)), [q, v],
                          layer.trainable_weights)
        results.append((out, [to_numpy(g) for g in grads]))
    assert taken and all(taken), "the exact path did not keep its weights"
    (out_flash, grads_flash), (out_plain, grads_plain) = results
    np.testing.assert_allclose(out_flash, out_plain, atol=IMPLEMENTATION_TOLERANCE)
    for flash, plain in zip(grads_flash, grads_plain):
        assert np.isfinite(flash).all()
        scale = max(1.0, float(np.abs(plain).max()))
        np.testing.assert_allclose(flash, plain, atol=1e-5 * scale)


def test_only_training_without_dropout_takes_the_flash_core(monkeypatch):
    """Dropped-out weights are not FlashAttention's: training with dropout
    differentiates through the softmax (no flash core), as inference does
    (plain ops, which TensorFlow compiles and runs faster)."""
    from keras_attention.layers import attention_core

    calls = []
    flash_attention = attention_core.flash_attention
    monkeypatch.setattr(attention_core, "flash_attention",
                        lambda *a, **k: calls.append(1) or flash_attention(*a, **k))
    layer = layers.MultiHeadAttention(2, 4, dropout=0.5, implementation="exact")
    query, value, _ = case_inputs("none")
    layer(query, value, training=True)
    assert calls == []
    layer = layers.MultiHeadAttention(2, 4, implementation="exact")
    layer(query, value, training=False)
    layer(query, value)
    assert calls == []
    layer(query, value, training=True)
    assert calls == [1]


# ---------------------------------------------------------------- chooser
def choose(requested="auto", **overrides):
    arguments = dict(
        backend="jax", device="cpu", dtype="float32", query_length=256,
        key_length=256, scores_requested=False, dropout_active=False,
        score_is_scaled_dot=True, query_block_size="auto",
    )
    arguments.update(overrides)
    return choose_implementation(requested, **arguments)


def test_chooser_auto_rules():
    # JAX's and TensorFlow's CPU: exact below 2048 x 2048 scores (whose
    # flash gradient keeps the weights), blocked from there; torch's CPU:
    # its fused kernel for scaled dot products.
    for backend in ("tensorflow", "jax"):
        assert choose(backend=backend) == "exact"
    assert choose(backend="torch") == "fused"
    assert choose(backend="torch", query_length=4096, key_length=4096) == "fused"
    assert choose(backend="torch", score_is_scaled_dot=False) == "exact"
    assert choose(backend="torch", dropout_active=True) == "exact"
    assert choose(backend="torch", query_length=2048, key_length=2048,
                  score_is_scaled_dot=False) == "blocked"
    assert choose(backend="torch", query_block_size=64, query_length=65) == "blocked"
    assert choose(backend="torch", query_block_size=64, query_length=64) == "fused"
    assert choose(query_length=1, key_length=9) == "exact"
    assert choose(query_block_size=None) == "exact"
    assert choose(query_length=None) == "exact"
    assert choose(score_is_scaled_dot=False) == "exact"
    assert choose(scores_requested=True) == "exact"
    for backend in ("tensorflow", "jax"):
        long = {"backend": backend, "query_length": 2048, "key_length": 2048}
        assert choose(**long) == "blocked"  # CPU, long
        assert choose(**long, score_is_scaled_dot=False) == "blocked"
        assert choose(backend=backend, query_length=2048, key_length=2047) == "exact"
        assert choose(backend=backend, query_length=None) == "exact"  # unknown length
        assert choose(**long, query_block_size=None) == "exact"
        assert choose(backend=backend, query_block_size=64, query_length=65) == "blocked"
        assert choose(backend=backend, query_block_size=64, query_length=64) == "exact"
    assert 2048 * 2048 == AUTO_BLOCK_MIN_SCORES
    for backend in ("jax", "torch"):
        for device in ("gpu", "tpu"):
            assert choose(backend=backend, device=device) == "fused"
            assert choose(backend=backend, device=device, dtype="bfloat16") == "fused"
            assert choose(backend=backend, device=device, scores_requested=True) == "exact"
            assert choose(backend=backend, device=device, dropout_active=True) == "exact"
            assert choose(backend=backend, device=device, score_is_scaled_dot=False) == "exact"
    # TensorFlow's dot_product_attention is no fused kernel.
    assert choose(backend="tensorflow", device="gpu") == "exact"
    assert choose(backend="tensorflow", device="gpu", query_length=4096,
                  key_length=4096) == "blocked"


def test_chooser_explicit_requests_and_fallbacks():
    assert choose("exact", device="gpu") == "exact"
    assert choose("exact", query_length=4096, key_length=4096) == "exact"
    assert choose("fused") == "fused"
    assert choose("fused", scores_requested=True) == "exact"
    assert choose("fused", dropout_active=True) == "exact"
    assert choose("blocked") == "blocked"
    assert choose("blocked", query_length=None) == "exact"
    assert choose("blocked", scores_requested=True) == "exact"
    for requested in ("auto", "blocked", "fused"):
        assert choose(requested, key_length=0) == "exact"  # every row fully masked
        assert choose(requested, query_length=0) == "exact"  # empty output
    with pytest.raises(ValueError, match=r"implementation.*Received: implementation='fused'"):
        choose("fused", score_is_scaled_dot=False)


def test_default_device_names_a_device_kind():
    assert default_device() in ("cpu", "gpu", "tpu")


# ----------------------------------------------------- arguments, configs
@pytest.mark.parametrize(
    "make",
    [
        lambda: layers.BahdanauAttention(4, implementation="fused"),
        lambda: layers.LuongAttention("general", implementation="fused"),
        lambda: layers.SelfAttention(num_heads=2, score="additive", implementation="fused"),
    ],
    ids=["bahdanau", "luong", "self_attention_additive"],
)
def test_fused_is_refused_for_other_scores(make):
    with pytest.raises(ValueError, match=r"implementation.*Received: implementation='fused'"):
        make()


@pytest.mark.parametrize(
    "make",
    [
        lambda value: layers.MultiHeadAttention(2, 4, implementation=value),
        lambda value: layers.ScaledDotProductAttention(implementation=value),
        lambda value: layers.BahdanauAttention(4, implementation=value),
        lambda value: layers.TransformerEncoderBlock(8, 2, implementation=value),
        lambda value: layers.TransformerDecoderBlock(8, 2, implementation=value),
    ],
)
def test_bad_implementation_is_refused(make):
    with pytest.raises(ValueError, match=r"implementation.*Received: implementation='flash'"):
        make("flash")
    with pytest.raises(ValueError, match=r"Received: implementation=None"):
        make(None)


@pytest.mark.parametrize("block", [layers.TransformerEncoderBlock, layers.TransformerDecoderBlock])
def test_blocks_pass_implementation_to_their_attention(block):
    layer = block(num_heads=2, intermediate_dim=8, implementation="fused")
    x = np.random.default_rng(0).normal(size=(2, 4, 8)).astype("float32")
    if block is layers.TransformerDecoderBlock:
        layer(x, x)
        assert layer.cross_attention.implementation == "fused"
    else:
        layer(x)
    assert layer.self_attention.implementation == "fused"
    assert layer.get_config()["implementation"] == "fused"
    assert block.from_config(layer.get_config()).implementation == "fused"


def test_blocks_with_fused_attention_equal_exact_blocks():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    memory = rng.normal(size=(2, 7, 8)).astype("float32")
    padding = key_padding([7, 4], 7)
    keras.utils.set_random_seed(0)
    exact = layers.TransformerDecoderBlock(16, 2, implementation="exact")
    fused = layers.TransformerDecoderBlock(16, 2, implementation="fused")
    exact(x, memory, memory_mask=padding)
    fused(x, memory, memory_mask=padding)
    fused.set_weights(exact.get_weights())
    np.testing.assert_allclose(
        to_numpy(fused(x, memory, memory_mask=padding)),
        to_numpy(exact(x, memory, memory_mask=padding)),
        atol=IMPLEMENTATION_TOLERANCE,
    )


QUERY = np.random.default_rng(7).normal(size=(2, 4, 8)).astype("float32")
VALUE = np.random.default_rng(8).normal(size=(2, 5, 8)).astype("float32")

LAYER_TESTS = {
    "multi_head_fused": (
        layers.MultiHeadAttention, {"num_heads": 2, "key_dim": 4, "implementation": "fused"},
        {"query": QUERY, "value": VALUE}, {}, (2, 4, 8), (2, 2, 4, 5), False,
    ),
    "multi_head_blocked": (
        layers.MultiHeadAttention,
        {"num_heads": 2, "key_dim": 4, "implementation": "blocked", "query_block_size": 2},
        {"query": QUERY, "value": VALUE}, {}, (2, 4, 8), (2, 2, 4, 5), False,
    ),
    "scaled_dot_fused": (
        layers.ScaledDotProductAttention, {"implementation": "fused"},
        {"query": QUERY, "value": VALUE}, {}, (2, 4, 8), (2, 4, 5), False,
    ),
    "self_attention_fused_causal": (
        layers.SelfAttention, {"num_heads": 2, "implementation": "fused", "use_causal_mask": True},
        {"x": QUERY}, {}, (2, 4, 8), (2, 2, 4, 4), False,
    ),
    "bahdanau_exact": (
        layers.BahdanauAttention, {"units": 4, "implementation": "exact"},
        {"query": QUERY, "value": VALUE}, {}, (2, 4, 8), (2, 4, 5), False,
    ),
    "luong_blocked": (
        layers.LuongAttention, {"score": "general", "implementation": "blocked"},
        {"query": QUERY, "value": VALUE}, {}, (2, 4, 8), (2, 4, 5), False,
    ),
    "encoder_fused": (
        layers.TransformerEncoderBlock,
        {"num_heads": 2, "intermediate_dim": 16, "implementation": "fused"},
        {"x": QUERY}, {}, (2, 4, 8), (2, 2, 4, 4), True,
    ),
    "decoder_fused": (
        layers.TransformerDecoderBlock,
        {"num_heads": 2, "intermediate_dim": 16, "implementation": "fused"},
        {"x": QUERY, "memory": VALUE}, {}, (2, 4, 8), [(2, 2, 4, 4), (2, 2, 4, 5)], True,
    ),
}


# On JAX run_layer_test checks the fused kernel in multi-head attention, causal
# self-attention and a decoder block, and the blocked flash core.
IMPLEMENTATIONS_ON_JAX = ("multi_head_fused", "multi_head_blocked",
                          "self_attention_fused_causal", "decoder_fused")


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name in IMPLEMENTATIONS_ON_JAX else pytest.mark.slow_on(
        "jax", reason=OTHER_CONFIGURATIONS_ON_JAX))
    for name in sorted(LAYER_TESTS)
])
def test_layer_behaviors_with_an_implementation(name, tmp_path):
    """Config and `.keras` round trips keep `implementation`; every
    structural and numerical check of `run_layer_test` holds on that path."""
    cls, init_kwargs, inputs, call_kwargs, out_shape, scores_shape, position_wise = (
        LAYER_TESTS[name]
    )
    assert cls(**init_kwargs).get_config()["implementation"] == init_kwargs["implementation"]
    run_layer_test(
        cls,
        init_kwargs,
        inputs,
        call_kwargs,
        expected_output_shape=out_shape,
        expected_scores_shape=scores_shape,
        tmp_dir=tmp_path,
        position_wise=position_wise,
    )


@pytest.mark.parametrize("implementation", ["blocked", "fused"])
def test_empty_memory_and_empty_queries_on_every_implementation(implementation):
    layer = FUSABLE["multi_head"](implementation=implementation)

    def ones(*shape):
        return np.ones(shape, "float32")

    no_keys = to_numpy(layer(ones(2, 3, DIM), ones(2, 0, DIM)))
    np.testing.assert_array_equal(no_keys, np.broadcast_to(empty_row_output(layer), no_keys.shape))
    assert tuple(layer(ones(2, 0, DIM), ones(2, 4, DIM)).shape) == (2, 0, DIM)


# -------------------------------------------------- attention bias, scale
BIASED = ["multi_head", "grouped_query", "multi_query", "rotary", "self_attention"]
BIAS_CASES = ["none", "key_padding", "causal_padding", "decode_step",
              "fully_masked_rows", "nan_in_padding"]


def biased_twins(name, implementation):
    """An exact layer and one of `implementation`, both with T5's scale
    (1.0), the same weights."""
    keras.utils.set_random_seed(0)
    exact = FUSABLE[name](implementation="exact", scale=1.0)
    other = FUSABLE[name](implementation=implementation, scale=1.0,
                          query_block_size=2)
    return exact, other


def bias_of(case, heads, seed=2, shape=None):
    query_length, key_length = CASES[case][:2]
    rng = np.random.default_rng(seed)
    shape = shape or (1, heads, query_length, key_length)
    return rng.normal(size=shape).astype("float32")


def biased_output_and_gradients(layer, query, value, bias, kwargs):
    def loss_terms(q, v, b):
        out = ops.cast(call(layer, q, v, dict(kwargs, attention_bias=b)), "float32")
        return out * ops.sin(out)

    q, v, b = to_tensor(query), to_tensor(value), to_tensor(bias)
    out = to_numpy(ops.cast(call(layer, q, v, dict(kwargs, attention_bias=b)), "float32"))
    return out, gradients(loss_terms, [q, v, b], layer.trainable_weights)


BIAS_PAIRS = [
    (name, case) for name in BIASED for case in BIAS_CASES
    if not (name == "self_attention" and case in SELF_ONLY)
]


@pytest.mark.parametrize("implementation", ["blocked", "fused"])
@pytest.mark.parametrize("name,case", grid(BIAS_PAIRS))
def test_bias_and_scale_on_blocked_and_fused_equal_the_exact_path(
    name, case, implementation
):
    """Outputs and gradients (inputs, weights and the bias itself) of the
    blocked (flash core, blocks of 2 queries) and fused paths equal the
    exact path's, with a bias of shape (1, H, T, S) and scale 1.0."""
    query, value, kwargs = case_inputs(case)
    exact, other = biased_twins(name, implementation)
    build_pair(exact, other, query, value, kwargs)
    bias = 3 * bias_of(case, exact.num_heads)  # large enough to change weights
    (out_a, grads_a), (out_b, grads_b) = [
        biased_output_and_gradients(layer, query, value, bias, kwargs)
        for layer in (exact, other)
    ]
    assert np.isfinite(out_b).all()
    np.testing.assert_allclose(out_b, out_a, atol=IMPLEMENTATION_TOLERANCE)
    assert grads_a[2] is not None and np.abs(to_numpy(grads_a[2])).max() > 0
    for a, b in zip(grads_a, grads_b):
        if a is None:
            assert b is None
            continue
        a, b = to_numpy(a), to_numpy(b)
        assert np.isfinite(b).all(), f"non-finite {implementation} gradient"
        scale = max(1.0, float(np.abs(a).max()))
        np.testing.assert_allclose(b, a, atol=1e-5 * scale)


@pytest.mark.parametrize("implementation", ["exact", "blocked", "fused"])
@pytest.mark.parametrize(
    "shape", [(T, S), (2, T, S), (B, 1, T, S), (1, 2, 1, S), (B, 2, T, 1)],
    ids=["ts", "hts", "b1ts", "1h1s", "bht1"],
)
def test_bias_broadcasts_and_its_gradient_has_its_shape(shape, implementation):
    query, value, kwargs = case_inputs("causal_padding")
    exact, other = biased_twins("multi_head", implementation)
    build_pair(exact, other, query, value, kwargs)
    bias = bias_of("causal_padding", 2, shape=shape)
    full = np.broadcast_to(bias, (B, 2, T, S)).copy()
    out_full, grads_full = biased_output_and_gradients(exact, query, value, full, kwargs)
    out, grads = biased_output_and_gradients(other, query, value, bias, kwargs)
    np.testing.assert_allclose(out, out_full, atol=IMPLEMENTATION_TOLERANCE)
    d_bias = to_numpy(grads[2])
    assert d_bias.shape == shape
    # The gradient of a broadcast bias sums that of the full bias.
    expected = to_numpy(grads_full[2])
    axes = tuple(i for i, n in enumerate((1,) * (4 - len(shape)) + shape) if n == 1)
    expected = expected.sum(axis=axes, keepdims=True).reshape(shape)
    np.testing.assert_allclose(d_bias, expected, atol=1e-5)


@pytest.mark.parametrize("implementation", ["exact", "blocked", "fused"])
def test_bias_keeps_the_mask_rule(implementation):
    """A bias is not a mask: masked keys keep weight 0 whatever their bias
    (+30 here), a fully masked row still outputs exactly the output bias,
    and a bias of zeros changes nothing."""
    query, value, kwargs = case_inputs("fully_masked_rows")
    exact, other = biased_twins("multi_head", implementation)
    build_pair(exact, other, query, value, kwargs)
    mask = np.asarray(kwargs["attention_mask"])
    bias = np.where(mask[:, None], 0.0, 30.0).astype("float32")  # (B, 1, T, S)
    plain = to_numpy(call(other, query, value, kwargs))
    biased = to_numpy(call(other, query, value, dict(kwargs, attention_bias=bias)))
    np.testing.assert_allclose(biased, plain, atol=IMPLEMENTATION_TOLERANCE)
    np.testing.assert_array_equal(
        biased[0, 2], np.broadcast_to(empty_row_output(other), biased[0, 2].shape)
    )
    zeros = np.zeros((1, 1, T, S), "float32")
    np.testing.assert_allclose(
        to_numpy(call(other, query, value, dict(kwargs, attention_bias=zeros))),
        plain, atol=IMPLEMENTATION_TOLERANCE,
    )


def test_chooser_picks_exact_for_a_bias_under_auto_only():
    for backend, device in (("jax", "cpu"), ("jax", "gpu"), ("torch", "gpu"),
                            ("tensorflow", "cpu")):
        assert choose(backend=backend, device=device, biased=True) == "exact"
        assert choose(backend=backend, device=device, biased=True,
                      query_length=4096, key_length=4096) == "exact"
    assert choose("blocked", biased=True) == "blocked"
    assert choose("fused", biased=True) == "fused"
    layer = layers.MultiHeadAttention(2, 4)
    query, value, _ = case_inputs("none")
    assert layer._implementation_of_call(query, value, False, False, biased=True) == "exact"


@pytest.mark.parametrize("implementation", ["exact", "blocked", "fused"])
@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
def test_scale_is_honoured_by_every_implementation(scale, implementation):
    """`scale=s` is `query * s` before the dot products: the layer with
    `scale=s` equals the default layer (1/sqrt(key_dim)) whose query kernel
    and bias are multiplied by `s * sqrt(key_dim)`."""
    query, value, kwargs = case_inputs("causal_padding")
    keras.utils.set_random_seed(0)
    reference = layers.MultiHeadAttention(
        2, 4, bias_initializer="random_normal", implementation="exact"
    )
    scaled = layers.MultiHeadAttention(
        2, 4, bias_initializer="random_normal", implementation=implementation,
        scale=scale, query_block_size=2,
    )
    build_pair(reference, scaled, query, value, kwargs)
    factor = 1.0 if scale is None else scale * np.sqrt(4)
    reference.query_dense.kernel.assign(to_numpy(reference.query_kernel) * factor)
    reference.query_dense.bias.assign(to_numpy(reference.query_bias) * factor)
    np.testing.assert_allclose(
        to_numpy(call(scaled, query, value, kwargs)),
        to_numpy(call(reference, query, value, kwargs)),
        atol=IMPLEMENTATION_TOLERANCE,
    )
