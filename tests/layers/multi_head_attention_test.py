import keras
import numpy as np
import pytest

from keras_attention.layers import MultiHeadAttention
from tests.test_case import (
    EAGER_AND_XLA,
    OTHER_CONFIGURATIONS_ON_JAX,
    compile_function,
    run_layer_test,
)
from tests.test_case import numpy_softmax as softmax

pytestmark = pytest.mark.keras_ops_only


def reference(layer, q, v, k, bias=0.0):
    """NumPy multi-head attention with key/value heads repeated per group
    (queries times `layer.scale`, default 1/sqrt(key_dim); plus `bias`)."""
    heads, kv_heads = layer.num_heads, layer.num_key_value_heads or layer.num_heads

    def get(w):
        return None if w is None else w.numpy()

    wq, bq = get(layer.query_kernel), get(layer.query_bias)
    wk, bk = get(layer.key_kernel), get(layer.key_bias)
    wv, bv = get(layer.value_kernel), get(layer.value_bias)
    wo, bo = get(layer.output_kernel), get(layer.output_bias)
    qh = np.einsum("btd,dhk->bthk", q, wq) + (0 if bq is None else bq)
    kh = np.einsum("bsd,dhk->bshk", k, wk) + (0 if bk is None else bk)
    vh = np.einsum("bsd,dhk->bshk", v, wv) + (0 if bv is None else bv)
    group = heads // kv_heads
    kh, vh = np.repeat(kh, group, axis=2), np.repeat(vh, group, axis=2)
    scale = 1 / np.sqrt(layer.key_dim) if layer.scale is None else layer.scale
    logits = np.einsum("bthk,bshk->bhts", qh, kh) * scale + bias
    weights = softmax(logits)
    context = np.einsum("bhts,bshk->bthk", weights, vh)
    out = np.einsum("bthk,hko->bto", context, wo) + (0 if bo is None else bo)
    return out, weights


CONFIGS = {
    "mha": {"num_heads": 2, "key_dim": 3},
    "gqa": {"num_heads": 4, "key_dim": 3, "num_key_value_heads": 2, "dropout": 0.1, "seed": 0},
    "mqa": {"num_heads": 4, "key_dim": 2, "num_key_value_heads": 1, "value_dim": 5},
    "no_bias_out_dim": {"num_heads": 2, "key_dim": 3, "use_bias": False, "output_dim": 7},
    "unscaled": {"num_heads": 2, "key_dim": 3, "scale": 1.0, "use_bias": False},
    "given_scale": {"num_heads": 4, "key_dim": 3, "num_key_value_heads": 2, "scale": 0.25},
}


# On JAX run_layer_test checks the grouped configurations: "gqa" (with dropout)
# and "mqa" (one key and value head, its own value size).
ON_JAX = ("gqa", "mqa")


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name in ON_JAX else pytest.mark.slow_on(
        "jax", reason=OTHER_CONFIGURATIONS_ON_JAX))
    for name in CONFIGS
])
def test_layer_behaviors(name, rng, tmp_path):
    init_kwargs = CONFIGS[name]
    run_layer_test(
        MultiHeadAttention,
        init_kwargs,
        {
            "query": rng.normal(size=(2, 3, 4)).astype("float32"),
            "value": rng.normal(size=(2, 5, 6)).astype("float32"),
        },
        expected_output_shape=(2, 3, init_kwargs.get("output_dim", 4)),
        expected_scores_shape=(2, init_kwargs["num_heads"], 3, 5),
        tmp_dir=tmp_path,
    )


def test_causal_self_attention_behaviors(rng, tmp_path):
    run_layer_test(
        MultiHeadAttention,
        {"num_heads": 2, "key_dim": 4},
        {
            "query": rng.normal(size=(2, 5, 8)).astype("float32"),
            "value": rng.normal(size=(2, 5, 8)).astype("float32"),
        },
        call_kwargs={"use_causal_mask": True},
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=(2, 2, 5, 5),
        tmp_dir=tmp_path,
    )


@pytest.mark.parametrize("name", list(CONFIGS))
def test_correctness_against_numpy(name, rng):
    layer = MultiHeadAttention(**CONFIGS[name], bias_initializer="random_normal")
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 6)).astype("float32")
    k = rng.normal(size=(2, 5, 3)).astype("float32")
    out, w = layer(q, v, k, return_attention_scores=True)
    expected_out, expected_w = reference(layer, q, v, k)
    np.testing.assert_allclose(w, expected_w, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, atol=1e-5)


def test_grouped_query_equals_full_heads_with_shared_kv(rng):
    """GQA with K heads == MHA whose key/value heads are copied per group."""
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 4)).astype("float32")
    gqa = MultiHeadAttention(4, 3, num_key_value_heads=2)
    full = MultiHeadAttention(4, 3)
    gqa(q, v), full(q, v)
    for name in ("query_kernel", "query_bias", "output_kernel", "output_bias"):
        getattr(full, name).assign(getattr(gqa, name))
    for name in ("key_kernel", "value_kernel"):
        getattr(full, name).assign(np.repeat(getattr(gqa, name).numpy(), 2, axis=1))
    for name in ("key_bias", "value_bias"):
        getattr(full, name).assign(np.repeat(getattr(gqa, name).numpy(), 2, axis=0))
    np.testing.assert_allclose(gqa(q, v), full(q, v), atol=1e-6)
    assert gqa.key_kernel.shape == (4, 2, 3)


def test_fully_masked_row_output_is_output_bias(rng):
    layer = MultiHeadAttention(2, 3, bias_initializer="random_normal")
    q = rng.normal(size=(1, 2, 4)).astype("float32")
    v = rng.normal(size=(1, 3, 4)).astype("float32")
    mask = np.array([[[True, False, True], [False, False, False]]])
    out, w = layer(q, v, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_array_equal(np.asarray(w)[0, :, 1], 0.0)
    np.testing.assert_array_equal(np.asarray(out)[0, 1], layer.output_bias.numpy())


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"num_heads": 0, "key_dim": 2}, r"num_heads.*Received: num_heads=0"),
        ({"num_heads": 2.0, "key_dim": 2}, r"num_heads.*Received: num_heads=2.0"),
        ({"num_heads": True, "key_dim": 2}, r"num_heads.*Received: num_heads=True"),
        ({"num_heads": 2, "key_dim": -1}, r"key_dim.*Received: key_dim=-1"),
        ({"num_heads": 2, "key_dim": None}, r"key_dim.*Received: key_dim=None"),
        ({"num_heads": 2, "key_dim": 2, "value_dim": 0}, r"value_dim.*Received: value_dim=0"),
        ({"num_heads": 4, "key_dim": 2, "num_key_value_heads": 3},
         r"num_key_value_heads.*divide.*Received: num_key_value_heads=3"),
        ({"num_heads": 2, "key_dim": 2, "dropout": 1.5}, r"dropout.*Received: dropout=1.5"),
        ({"num_heads": 2, "key_dim": 2, "use_bias": 1}, r"use_bias.*Received: use_bias=1"),
        ({"num_heads": 2, "key_dim": 2, "scale": 0}, r"scale.*Received: scale=0"),
        ({"num_heads": 2, "key_dim": 2, "scale": -1.0}, r"scale.*Received: scale=-1.0"),
        ({"num_heads": 2, "key_dim": 2, "scale": True}, r"scale.*Received: scale=True"),
        ({"num_heads": 2, "key_dim": 2, "scale": "1"}, r"scale.*Received: scale='1'"),
        ({"num_heads": 2, "key_dim": 2, "scale": float("inf")},
         r"scale.*Received: scale=inf"),
    ],
)
def test_invalid_args(kwargs, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        MultiHeadAttention(**kwargs)


def decode_step_by_step(layer, x, compiled=False):
    cache = layer.init_cache(x.shape[0], x.shape[1])

    def step(token, cache, index):
        out, cache, _ = layer.call_cached(token, cache, index)
        return out, cache

    if compiled:
        step = compile_function(step, jit_compile=True) or step
    outputs = []
    for i in range(x.shape[1]):
        out, cache = step(x[:, i : i + 1], cache, np.int32(i))
        outputs.append(np.asarray(out))
    return np.concatenate(outputs, axis=1), cache


@pytest.mark.parametrize("compiled", EAGER_AND_XLA)
@pytest.mark.parametrize(
    "config",
    [{"num_heads": 2, "key_dim": 4}, {"num_heads": 4, "key_dim": 2, "num_key_value_heads": 2,
                                      "rotary": True}],
    ids=["mha", "gqa_rotary"],
)
def test_cache_call_is_correct(config, compiled, rng):
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    layer = MultiHeadAttention(**config)
    full = np.asarray(layer(x, x, use_causal_mask=True))
    stepped, cache = decode_step_by_step(layer, x, compiled)
    np.testing.assert_allclose(stepped, full, atol=1e-5)
    keys, values = layer.compute_cache(x)
    np.testing.assert_allclose(cache[0], keys, atol=1e-6)
    np.testing.assert_allclose(cache[1], values, atol=1e-6)


def test_rotary_is_relative(rng):
    """With RoPE, shifting every position by the same amount leaves the
    attention weights unchanged."""
    layer = MultiHeadAttention(2, 4, rotary=True)
    x = rng.normal(size=(1, 5, 8)).astype("float32")
    layer(x, x)
    q, k = layer._query_heads(x, 0), layer._key_heads(x, 0)
    q3, k3 = layer._query_heads(x, 3), layer._key_heads(x, 3)
    np.testing.assert_allclose(layer._head_logits(q, k), layer._head_logits(q3, k3), atol=1e-4)
    assert not np.allclose(layer(x, x), MultiHeadAttention(2, 4)(x, x))


def test_cross_attention_cache_equals_plain_call(rng):
    q = rng.normal(size=(2, 3, 8)).astype("float32")
    memory = rng.normal(size=(2, 5, 6)).astype("float32")
    mask = np.ones((2, 3, 5), bool)
    mask[1, :, 3:] = False
    layer = MultiHeadAttention(2, 4)
    expected, expected_scores = layer(q, memory, attention_mask=mask, return_attention_scores=True)
    out, cache, scores = layer.call_cached(
        q, memory_cache=layer.compute_cache(memory), attention_mask=mask
    )
    assert cache is None
    np.testing.assert_allclose(out, expected, atol=1e-6)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-6)


@pytest.mark.parametrize("options", [{}, {"num_key_value_heads": 1}, {"rotary": True}],
                         ids=["plain", "grouped", "rotary"])
def test_a_memory_cache_of_the_sources_serves_their_beams(rng, options):
    """A memory cache of `B` sources and a query of `B * R` rows (R beams
    each, consecutive): each row attends to its source's memory, as the
    cache of the memory tiled over the rows would (the mask per source or
    per row; a bias or rotary queries go through the tiled cache)."""
    beams, sources = 3, 2
    q = rng.normal(size=(sources * beams, 2, 8)).astype("float32")
    memory = rng.normal(size=(sources, 5, 6)).astype("float32")
    mask = np.ones((sources, 2, 5), bool)
    mask[1, :, 3:] = False
    layer = MultiHeadAttention(2, 4, **options)
    layer(q[:sources], memory)
    tiled_cache = layer.compute_cache(np.repeat(memory, beams, axis=0))
    expected, _, expected_scores = layer.call_cached(
        q, memory_cache=tiled_cache, attention_mask=np.repeat(mask, beams, axis=0),
        cache_update_index=4)
    for row_mask in (mask, np.repeat(mask, beams, axis=0)):
        out, cache, scores = layer.call_cached(
            q, memory_cache=layer.compute_cache(memory), attention_mask=row_mask,
            cache_update_index=4)
        assert cache is None and tuple(scores.shape) == (sources * beams, 2, 2, 5)
        np.testing.assert_allclose(out, expected, atol=1e-5)
        np.testing.assert_allclose(scores, expected_scores, atol=1e-6)
    bias = rng.normal(size=(sources * beams, 2, 2, 5)).astype("float32")
    with_bias, _, _ = layer.call_cached(q, memory_cache=layer.compute_cache(memory),
                                        attention_bias=bias)
    np.testing.assert_allclose(with_bias, layer.call_cached(
        q, memory_cache=tiled_cache, attention_bias=bias)[0], atol=1e-5)
    with pytest.raises(ValueError, match=r"A `memory_cache` of B sources serves a query of "
                                         r"B \* R rows .*Received: 5 query rows for a "
                                         r"memory_cache of 2 sources"):
        layer.call_cached(q[:5], memory_cache=layer.compute_cache(memory))


def test_invalid_cache_and_index(rng):
    layer = MultiHeadAttention(2, 4)
    x = rng.normal(size=(2, 1, 8)).astype("float32")
    layer(x, x)
    cache = layer.init_cache(2, 4)
    with pytest.raises(ValueError,
                       match=r"cache_update_index.*out of range.*Received: cache_update_index=4"):
        layer.call_cached(x, cache, 4)
    with pytest.raises(ValueError, match=r"cache_update_index.*Received: cache_update_index=-1"):
        layer.call_cached(x, cache, -1)
    with pytest.raises(ValueError, match=r"`cache` must be a pair.*Received: cache shapes"):
        layer.call_cached(x, (cache[0][:, :, :1], cache[1]), 0)
    with pytest.raises(ValueError, match=r"`cache` must be a pair.*Received: cache shapes"):
        layer.call_cached(x, MultiHeadAttention(4, 4).init_cache(2, 4), 0)
    with pytest.raises(ValueError, match=r"key_dim.*even.*Received: key_dim=3"):
        MultiHeadAttention(2, 3, rotary=True)(x, x)


# ------------------------------------------------ Keras' arguments, Keras' meaning
def keras_twin(ours, query, value, **kwargs):
    """A `keras.layers.MultiHeadAttention` with our layer's weights."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("use_bias", "value_dim")}
    theirs = keras.layers.MultiHeadAttention(
        ours.num_heads, ours.key_dim, value_dim=ours.value_dim,
        use_bias=ours.use_bias, **kwargs,
    )
    theirs(query, value)
    names = ["query", "key", "value", "output"] + (["gate"] if ours.use_gate else [])
    for name in names:
        source = getattr(ours, f"{name}_dense")
        target = getattr(theirs, f"{name}_dense" if name != "gate" else "_gate_dense")
        assert target.kernel.shape == source.kernel.shape, name
        target.kernel.assign(source.kernel)
        if ours.use_bias:
            target.bias.assign(source.bias)
    return theirs


KERAS_ARGUMENTS = {
    "plain": ({}, {}),
    "use_gate": ({"use_gate": True}, {}),
    "output_shape_int": ({"output_shape": 6}, {}),
    "output_shape_tuple": ({"output_shape": (3, 2)}, {}),
    "sliding_window": ({"sliding_window": 2}, {}),
    "causal_sliding_window": ({"sliding_window": 3}, {"use_causal_mask": True}),
    # (value_dim == key_dim: Keras' layer fails on JAX otherwise, its fused
    # kernel needing equal head sizes.)
    "gate_window_no_bias": ({"use_gate": True, "sliding_window": 1, "use_bias": False}, {}),
}


@pytest.mark.parametrize("implementation", ["exact", "blocked", "fused"])
@pytest.mark.parametrize("name", list(KERAS_ARGUMENTS))
def test_keras_arguments_match_keras_multi_head_attention(name, implementation, rng):
    layer_kwargs, call_kwargs = KERAS_ARGUMENTS[name]
    query = rng.normal(size=(2, 6, 8)).astype("float32")
    value = query if call_kwargs else rng.normal(size=(2, 6, 10)).astype("float32")
    ours = MultiHeadAttention(
        2, 4, bias_initializer="random_normal", implementation=implementation,
        query_block_size=4, **layer_kwargs,
    )
    ours(query, value)
    theirs = keras_twin(ours, query, value, **layer_kwargs)
    np.testing.assert_allclose(
        np.asarray(ours(query, value, **call_kwargs)),
        np.asarray(theirs(query, value, **call_kwargs)),
        atol=1e-5,
    )


def test_sliding_window_with_a_longer_source_is_top_left_as_keras(rng):
    query = rng.normal(size=(1, 3, 8)).astype("float32")
    value = rng.normal(size=(1, 7, 8)).astype("float32")
    ours = MultiHeadAttention(2, 4, sliding_window=2)
    ours(query, value)
    _, scores = ours(query, value, return_attention_scores=True)
    visible = np.asarray(scores)[0, 0] > 0
    np.testing.assert_array_equal(
        visible, np.abs(np.arange(3)[:, None] - np.arange(7)[None]) < 2
    )
    theirs = keras_twin(ours, query, value, sliding_window=2)
    np.testing.assert_allclose(
        np.asarray(ours(query, value)), np.asarray(theirs(query, value)), atol=1e-5
    )


def test_projections_are_keras_sublayers_with_keras_names(rng):
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    layer = MultiHeadAttention(4, 2, num_key_value_heads=2, use_gate=True, name="mha")
    layer(x, x)
    assert [w.path for w in layer.weights] == [
        f"mha/{name}/{kind}"
        for name in ("query", "key", "value", "gate", "attention_output")
        for kind in ("kernel", "bias")
    ]
    assert all(
        isinstance(d, keras.layers.EinsumDense)
        for d in (layer.query_dense, layer.key_dense, layer.value_dense,
                  layer.gate_dense, layer.output_dense)
    )
    assert layer.key_kernel.shape == (8, 2, 2) and layer.output_kernel.shape == (4, 2, 8)


def test_constraints_and_regularizers_reach_the_projections(rng):
    x = rng.normal(size=(4, 3, 8)).astype("float32")
    y = rng.normal(size=(4, 3, 8)).astype("float32")
    inputs = keras.Input((3, 8))
    layer = MultiHeadAttention(
        2, 4, kernel_constraint="non_neg", kernel_regularizer="l2",
        activity_regularizer="l1", name="mha",
    )
    model = keras.Model(inputs, layer(inputs, inputs))
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    model.fit(x, y, epochs=2, verbose=0)
    for dense in (layer.query_dense, layer.key_dense, layer.value_dense, layer.output_dense):
        assert dense.kernel_constraint is layer.kernel_constraint
        assert (np.asarray(dense.kernel) >= 0).all(), dense.name
    layer(x, x)
    assert len(layer.losses) == 4 + 4  # a kernel and an activity term per projection


def test_dtype_policy_maps_reach_the_projections(rng):
    policies = keras.dtype_policies.DTypePolicyMap(default_policy="float32")
    policies["mha/value"] = "bfloat16"
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    layer = MultiHeadAttention(2, 4, dtype=policies, name="mha")
    layer(x, x)
    assert layer.value_dense.compute_dtype == "bfloat16"
    assert layer.query_dense.compute_dtype == "float32"


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"attention_axes": (2,)}, r"sequence axis.*compat.keras.MultiHeadAttention.*"
         r"Received: attention_axes=\(2,\)"),
        ({"flash_attention": True}, r"implementation=.*Received: flash_attention=True"),
        ({"output_shape": 4, "output_dim": 4}, r"not both.*Received: output_shape=4"),
        ({"output_shape": (3, 0)}, r"positive ints.*Received: output_shape=\(3, 0\)"),
        ({"sliding_window": 0}, r"sliding_window.*Received"),
    ],
)
def test_keras_arguments_we_refuse_or_check(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        MultiHeadAttention(2, 4, **kwargs)
    with pytest.raises(TypeError, match=r"use_gate.*Received: use_gate='yes'"):
        MultiHeadAttention(2, 4, use_gate="yes")


def test_sequence_axis_is_accepted_as_attention_axes():
    assert MultiHeadAttention(2, 4, attention_axes=1).get_config()["attention_axes"] is None


@pytest.mark.parametrize("chunk", [1, 2], ids=["one_position", "two_positions"])
@pytest.mark.parametrize(
    "kwargs",
    [{"use_gate": True}, {"sliding_window": 2}, {"use_gate": True, "sliding_window": 3,
                                                 "num_key_value_heads": 1}],
    ids=["use_gate", "sliding_window", "both_gqa"],
)
def test_cached_decoding_applies_gate_and_sliding_window(kwargs, chunk, rng):
    """call_cached == the causal full call: the gate from each new query,
    the window `|p - j| < sliding_window` at `p = cache_update_index + i`."""
    layer = MultiHeadAttention(2, 4, bias_initializer="random_normal", **kwargs)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    full, full_scores = layer(x, x, use_causal_mask=True, return_attention_scores=True)
    cache, outputs, scores = layer.init_cache(2, 6), [], []
    for start in range(0, 6, chunk):
        output, cache, score = layer.call_cached(x[:, start:start + chunk], cache, start)
        outputs.append(np.asarray(output))
        scores.append(np.asarray(score))
    np.testing.assert_allclose(np.concatenate(outputs, 1), np.asarray(full), atol=2e-5)
    np.testing.assert_allclose(np.concatenate(scores, 2), np.asarray(full_scores), atol=2e-5)
    if "sliding_window" in kwargs:
        width = kwargs["sliding_window"]
        assert not np.concatenate(scores, 2)[:, :, 5, : 6 - width].any()


def test_cross_attention_cache_applies_the_gate(rng):
    layer = MultiHeadAttention(2, 4, use_gate=True)
    x, memory = (rng.normal(size=(2, n, 8)).astype("float32") for n in (3, 5))
    full = layer(x, memory)
    output, no_cache, _ = layer.call_cached(x, memory_cache=layer.compute_cache(memory))
    assert no_cache is None
    np.testing.assert_allclose(np.asarray(output), np.asarray(full), atol=2e-5)


def test_keras_arguments_round_trip_through_config(rng):
    layer = MultiHeadAttention(
        2, 4, output_shape=(3, 2), use_gate=True, sliding_window=2,
        kernel_regularizer="l2", kernel_constraint="non_neg",
    )
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    restored = MultiHeadAttention.from_config(layer.get_config())
    layer(x, x), restored(x, x)
    restored.set_weights(layer.get_weights())
    assert restored(x, x).shape == (2, 3, 3, 2)
    np.testing.assert_allclose(np.asarray(restored(x, x)), np.asarray(layer(x, x)), atol=1e-6)


@pytest.mark.parametrize("causal", [
    pytest.param(False, id="bidirectional", marks=pytest.mark.slow_on(
        "jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
    pytest.param(True, id="causal"),
])
def test_attention_bias_behaviors(causal, rng, tmp_path):
    """A float bias as a call argument: config, `.keras`, functional, graph,
    XLA, implicit masks and mixed precision, as every option."""
    run_layer_test(
        MultiHeadAttention,
        {"num_heads": 2, "key_dim": 4, "scale": 1.0},
        {
            "query": rng.normal(size=(2, 5, 8)).astype("float32"),
            "value": rng.normal(size=(2, 5, 8)).astype("float32"),
        },
        call_kwargs={
            "use_causal_mask": causal,
            "attention_bias": rng.normal(size=(1, 2, 5, 5)).astype("float32"),
        },
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=(2, 2, 5, 5),
        tmp_dir=tmp_path,
    )


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize(
    "shape", [(3, 5), (1, 5), (4, 3, 5), (2, 1, 3, 5), (1, 4, 1, 5)],
    ids=["ts", "1s", "hts", "b1ts", "1h1s"],
)
def test_attention_bias_against_numpy(name, shape, rng):
    layer = MultiHeadAttention(**CONFIGS[name], bias_initializer="random_normal")
    heads = layer.num_heads
    shape = tuple(heads if n == 4 else n for n in shape)  # the head axis
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 6)).astype("float32")
    bias = 2 * rng.normal(size=shape).astype("float32")
    mask = np.ones((2, 3, 5), bool)
    mask[1, :, 3:] = False
    out, w = layer(q, v, attention_mask=mask, attention_bias=bias,
                   return_attention_scores=True)
    full_bias = np.where(mask[:, None], bias, -np.inf)
    expected_out, expected_w = reference(layer, q, v, v, full_bias)
    np.testing.assert_allclose(w, expected_w, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, atol=1e-5)


def test_attention_bias_in_cross_attention_call_cached_equals_the_full_call(rng):
    layer = MultiHeadAttention(4, 2, num_key_value_heads=2, scale=1.0)
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    memory = rng.normal(size=(2, 6, 8)).astype("float32")
    bias = rng.normal(size=(1, 4, 3, 6)).astype("float32")
    full = np.asarray(layer(x, memory, attention_bias=bias))
    for i in range(3):
        out, _, _ = layer.call_cached(
            x[:, i : i + 1], memory_cache=layer.compute_cache(memory),
            attention_bias=bias[:, :, i : i + 1],
        )
        np.testing.assert_allclose(np.asarray(out)[:, 0], full[:, i], atol=1e-5)
