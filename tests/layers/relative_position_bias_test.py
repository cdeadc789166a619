"""`RelativePositionBias` and unscaled, biased attention against T5's own.

The reference is Hugging Face's torch `T5Attention` (transformers and torch
are test dependencies), run by `t5_reference.py` in a process of its own
(importing it after TensorFlow crashes): its bucket of every relative
position, its `compute_bias`, and whole attention layers whose weights we
copy, bidirectional (encoder) and causal (decoder), with padding.
"""

import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.layers import (
    MultiHeadAttention,
    RelativePositionBias,
    ScaledDotProductAttention,
    SelfAttention,
)
from tests.layers import t5_reference
from tests.test_case import (
    EAGER_AND_XLA,
    PRECISION_TOLERANCE,
    assert_config_round_trip,
    compile_function,
    gradients,
    to_numpy,
    to_tensor,
)

T5_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    """T5's numbers (see `t5_reference`), computed once per module."""
    path = tmp_path_factory.mktemp("t5") / "reference.npz"
    script = Path(t5_reference.__file__)
    subprocess.run([sys.executable, str(script), str(path)], check=True, timeout=600)
    with np.load(path) as arrays:
        return dict(arrays)


BUCKET_CASES = [
    (buckets, distance, bidirectional)
    for buckets, distance in t5_reference.BUCKETS
    for bidirectional in (True, False)
    if not (bidirectional and buckets < 4)
]


@pytest.mark.large
@pytest.mark.parametrize("num_buckets,max_distance,bidirectional", BUCKET_CASES)
def test_buckets_are_t5s_for_every_relative_position(num_buckets, max_distance,
                                                     bidirectional, t5):
    layer = RelativePositionBias(2, num_buckets, max_distance, bidirectional)
    expected = t5[f"buckets/{num_buckets}/{max_distance}/{bidirectional}"]
    # One query at position 1500 over keys 0 .. 3000: relative -1500 .. 1500.
    ours = to_numpy(layer.relative_buckets(1, 3001, 1500))[0]
    np.testing.assert_array_equal(ours, expected)


def ours_from(t5, case):
    """Our unscaled `MultiHeadAttention` and `RelativePositionBias` with the
    weights of T5's attention of `case`."""
    heads, d_kv, buckets, max_distance, decoder, _ = t5_reference.CASES[case]
    dim = t5_reference.D_MODEL
    attention = MultiHeadAttention(heads, d_kv, use_bias=False, scale=1.0)
    attention.build((None, None, dim), (None, None, dim))

    def kernel(name):  # torch (H * d_kv, D) -> ours (D, H, d_kv)
        return t5[f"{case}/{name}"].T.reshape(dim, heads, d_kv)

    attention.query_dense.kernel.assign(kernel("q"))
    attention.key_dense.kernel.assign(kernel("k"))
    attention.value_dense.kernel.assign(kernel("v"))
    attention.output_dense.kernel.assign(t5[f"{case}/o"].T.reshape(heads, d_kv, dim))
    bias = RelativePositionBias(heads, buckets, max_distance, bidirectional=not decoder)
    bias.build()
    bias.embeddings.assign(t5[f"{case}/table"])
    return attention, bias


PADDED_CASES = [name for name in t5_reference.CASES if name != "decoder_unpadded"]


@pytest.mark.parametrize("case", PADDED_CASES)
def test_equals_transformers_t5_attention_with_padding(case, t5):
    attention, bias_layer = ours_from(t5, case)
    x, padding = t5[f"{case}/x"], t5[f"{case}/padding"]
    length = x.shape[1]  # 30: beyond the exact buckets, logarithmic ones are used
    bias = bias_layer(query_length=length, key_length=length)
    np.testing.assert_array_equal(to_numpy(bias), t5[f"{case}/bias"])
    decoder = t5_reference.CASES[case][4]
    out = to_numpy(attention(x, x, query_mask=padding, value_mask=padding,
                             use_causal_mask=decoder, attention_bias=bias))
    # Padded query rows: T5 attends from them, we give them nothing.
    expected = t5[f"{case}/output"]
    np.testing.assert_allclose(out[padding], expected[padding], atol=T5_TOLERANCE)
    assert not out[~padding].any()


@pytest.mark.parametrize("implementation", ["blocked", "fused"])
def test_t5_attention_on_the_blocked_and_fused_paths(implementation, t5):
    case = "decoder_small"
    exact, bias_layer = ours_from(t5, case)
    attention = MultiHeadAttention(4, 4, use_bias=False, scale=1.0,
                                   implementation=implementation, query_block_size=8)
    attention.build((None, None, 12), (None, None, 12))
    attention.set_weights(exact.get_weights())
    x, padding = t5[f"{case}/x"], t5[f"{case}/padding"]
    out = to_numpy(attention(x, x, query_mask=padding, value_mask=padding,
                             use_causal_mask=True,
                             attention_bias=bias_layer(query_length=30, key_length=30)))
    np.testing.assert_allclose(out[padding], t5[f"{case}/output"][padding],
                               atol=T5_TOLERANCE)


@pytest.mark.parametrize("compiled", EAGER_AND_XLA)
def test_cached_decoding_with_bias_rows_equals_t5_and_the_full_call(compiled, t5):
    """A decode step over the cache with the bias rows of its positions
    (`query_offset=cache_update_index`) gives the full causal call's rows,
    which are T5's."""
    case = "decoder_unpadded"
    attention, bias_layer = ours_from(t5, case)
    x = t5[f"{case}/x"]
    batch, length = x.shape[:2]
    full = to_numpy(attention(
        x, x, use_causal_mask=True,
        attention_bias=bias_layer(query_length=length, key_length=length),
    ))
    np.testing.assert_allclose(full, t5[f"{case}/output"], atol=T5_TOLERANCE)

    def step(token, cache, index):
        bias = bias_layer(query_length=1, key_length=length, query_offset=index)
        out, cache, _ = attention.call_cached(token, cache, index, attention_bias=bias)
        return out, cache

    if compiled:
        step = compile_function(step, jit_compile=True) or step
    cache = attention.init_cache(batch, length)
    outputs = []
    for i in range(length):
        out, cache = step(to_tensor(x[:, i : i + 1]), cache, np.int32(i))
        outputs.append(to_numpy(out))
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, atol=1e-5)


@pytest.mark.parametrize("case", ["encoder_small", "decoder_unpadded"])
def test_bias_equals_t5_compute_bias_at_an_offset(case, t5):
    _, layer = ours_from(t5, case)
    for offset in t5_reference.OFFSETS:
        ours = layer(query_length=3, key_length=70, query_offset=offset)
        np.testing.assert_array_equal(to_numpy(ours), t5[f"{case}/bias_at_{offset}"])


def test_gradient_reaches_the_table_through_attention(rng):
    """T5 learns its table: the loss has a gradient on it, through every
    layer that shares the bias."""
    bias_layer = RelativePositionBias(2, num_buckets=8, max_distance=16)
    first = MultiHeadAttention(2, 4, scale=1.0)
    second = MultiHeadAttention(2, 4, scale=1.0)
    x = to_tensor(rng.normal(size=(2, 5, 8)).astype("float32"))

    def forward(x):
        bias = bias_layer(query_length=5, key_length=5)
        h = first(x, x, attention_bias=bias)
        return second(h, h, attention_bias=bias) ** 2

    forward(x)
    grads = gradients(forward, [x], bias_layer.trainable_weights)
    table_gradient = to_numpy(grads[1])
    assert table_gradient.shape == (8, 2)
    assert np.isfinite(table_gradient).all() and np.abs(table_gradient).max() > 0


@pytest.mark.same_path_on("jax", reason=(
    "Keras' saving, the same on every backend; on JAX the layer saved under TensorFlow gives "
    "its outputs in tests/layers/cross_backend_test.py"))
def test_functional_model_saves_and_loads_with_identical_outputs(rng, tmp_path):
    """In a functional model the lengths come from the sequence itself."""
    x = keras.Input((None, 8))
    bias = RelativePositionBias(2, num_buckets=8, max_distance=16,
                                embeddings_initializer="random_normal")(
        query_length=x, key_length=x)
    assert tuple(bias.shape) == (1, 2, None, None)
    y = SelfAttention(num_heads=2, scale=1.0, use_causal_mask=True)(x, attention_bias=bias)
    model = keras.Model(x, y)
    inputs = rng.normal(size=(2, 6, 8)).astype("float32")
    expected = to_numpy(model(inputs))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(to_numpy(loaded(inputs)), expected)
    assert to_numpy(loaded(rng.normal(size=(2, 9, 8)).astype("float32"))).shape == (2, 9, 8)
    xla = compile_function(lambda a: loaded(a), True)
    if xla is not None:
        np.testing.assert_allclose(to_numpy(xla(to_tensor(inputs))), expected, atol=1e-5)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_config_round_trip(bidirectional):
    assert_config_round_trip(
        RelativePositionBias,
        {"num_heads": 3, "num_buckets": 16, "max_distance": 50,
         "bidirectional": bidirectional, "embeddings_initializer": "zeros"},
    )
    layer = RelativePositionBias(3, 16, 50, bidirectional)
    assert RelativePositionBias.from_config(layer.get_config()).get_config() == (
        layer.get_config()
    )


@pytest.mark.same_path_on("jax", reason=(
    "Keras' int8 Embedding and its saving, the same code on every backend; on JAX int8 "
    "tables generate in tests/models/seq2seq_model_test.py::"
    "test_a_quantized_model_round_trips_through_a_keras_file"))
def test_quantized_table_gives_nearly_the_same_bias_and_saves(rng, tmp_path):
    x = keras.Input((None, 8))
    bias_layer = RelativePositionBias(4, num_buckets=8, max_distance=16,
                                      embeddings_initializer="random_normal")
    y = MultiHeadAttention(4, 2, scale=1.0)(
        x, x, attention_bias=bias_layer(query_length=x, key_length=x))
    model = keras.Model(x, y)
    inputs = rng.normal(size=(2, 6, 8)).astype("float32")
    before = to_numpy(bias_layer(query_length=6, key_length=9, query_offset=2))
    expected = to_numpy(model(inputs))
    model.quantize("int8")
    assert bias_layer.relative_attention_bias.quantization_mode == "int8"
    after = to_numpy(bias_layer(query_length=6, key_length=9, query_offset=2))
    assert after.shape == (1, 4, 6, 9)
    np.testing.assert_allclose(after, before, atol=0.02)
    quantized = to_numpy(model(inputs))
    np.testing.assert_allclose(quantized, expected, atol=0.05)
    path = str(tmp_path / "quantized.keras")
    model.save(path)
    np.testing.assert_array_equal(to_numpy(keras.models.load_model(path)(inputs)), quantized)


@pytest.mark.parametrize("implementation", ["auto", "blocked", "fused"])
@pytest.mark.parametrize("policy", sorted(PRECISION_TOLERANCE))
def test_mixed_precision_attention_with_bias_is_finite_and_close(policy, implementation,
                                                                 rng):
    x = 3 * rng.normal(size=(2, 7, 8)).astype("float32")
    padding = np.arange(7)[None] < np.array([7, 3])[:, None]
    outputs = []
    for dtype in ("float32", policy):
        keras.utils.set_random_seed(0)
        bias_layer = RelativePositionBias(2, 8, 16, bidirectional=False,
                                          embeddings_initializer="random_normal",
                                          dtype=dtype)
        attention = MultiHeadAttention(2, 4, scale=1.0, dtype=dtype, query_block_size=2,
                                       implementation=implementation)
        bias = bias_layer(query_length=7, key_length=7)
        outputs.append(to_numpy(ops.cast(attention(
            x, x, query_mask=padding, value_mask=padding, use_causal_mask=True,
            attention_bias=bias), "float32")))
    assert np.isfinite(outputs[1]).all()
    tolerance = 3 * PRECISION_TOLERANCE[policy]
    np.testing.assert_allclose(outputs[1], outputs[0], atol=tolerance, rtol=tolerance)


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        ({"num_heads": 0}, r"num_heads.*Received: num_heads=0"),
        ({"num_heads": 2, "num_buckets": 3}, r"num_buckets.*Received: num_buckets=3"),
        ({"num_heads": 2, "num_buckets": 1, "bidirectional": False},
         r"Received: num_buckets=1"),
        ({"num_heads": 2, "num_buckets": 32, "max_distance": 8},
         r"max_distance.*Received: max_distance=8"),
        ({"num_heads": 2, "max_distance": 0}, r"Received: max_distance=0"),
        ({"num_heads": 2, "bidirectional": "yes"}, r"Received: bidirectional='yes'"),
    ],
)
def test_invalid_arguments(kwargs, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        RelativePositionBias(**kwargs)


def test_attention_bias_is_refused_where_it_does_not_fit(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    attention = MultiHeadAttention(2, 4)
    with pytest.raises(ValueError, match=r"float tensor.*Received: attention_bias.dtype=bool"):
        attention(x, x, attention_bias=np.ones((5, 5), bool))
    with pytest.raises(ValueError, match=r"broadcastable.*shape=\(1, 3, 5, 5\)"):
        attention(x, x, attention_bias=np.zeros((1, 3, 5, 5), "float32"))
    with pytest.raises(ValueError, match=r"Received: attention_bias.shape=\(1, 1, 2, 5, 5\)"):
        attention(x, x, attention_bias=np.zeros((1, 1, 2, 5, 5), "float32"))
    with pytest.raises(ValueError, match=r"Received: attention_bias.shape=\(2, 4\)"):
        attention(x, x[:, :4], attention_bias=np.zeros((2, 4), "float32"))
    with pytest.raises(ValueError, match=r"ScaledDotProductAttention.*takes no `attention_bias`"):
        ScaledDotProductAttention()(x, x, attention_bias=np.zeros((5, 5), "float32"))
    cache = attention.init_cache(2, 5)
    with pytest.raises(ValueError, match=r"Received: attention_bias.shape=\(1, 2, 1, 4\)"):
        attention.call_cached(x[:, :1], cache, 0,
                              attention_bias=np.zeros((1, 2, 1, 4), "float32"))
