"""`model.quantize` on the weight-owning layers: int8 / float8 / int4 kernels,
outputs near float32 (and equal to Keras' `MultiHeadAttention` quantized the
same way), `.keras` round trips, files saved before the projections were
sublayers, and layers that refuse (raw weights) with an error."""

import pathlib
import warnings

import keras
import numpy as np
import pytest

from keras_attention import layers
from tests.test_case import dtype_of, to_numpy

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures"
# On JAX the int8 and float8 cases run (JAX rounds float8 its own way); int4
# packs its nibbles with the same keras.ops code as int8's path plus Keras'
# own packing, checked on TensorFlow.
MODES = ("int8", "float8", pytest.param("int4", marks=pytest.mark.same_path_on("jax", reason=(
    "int4 packs its nibbles with Keras' own code over the int8 path, run on TensorFlow; "
    "JAX runs int8 and float8 quantized calls"))))
# Old files: their variables are mapped onto the sublayers in Python
# (load_own_variables), the same on every backend; that a file saved under
# TensorFlow gives its outputs on JAX and torch is tests/layers/cross_backend_test.py's.
OLD_FILES_ON_TENSORFLOW = pytest.mark.same_path_on("jax", reason=(
    "Python maps an old file's variables, the same on every backend; JAX loads old files in "
    "test_additive_and_luong_files_saved_with_raw_kernels_still_load, and files saved under "
    "TensorFlow in tests/layers/cross_backend_test.py"))
# Largest error allowed, as a fraction of the largest float32 output, on this
# deep stack of small layers (dims 8-32: few values per quantization scale);
# measured on six initial draws (seeds 0-5, TensorFlow): int8 1.8-6.2%,
# float8 9-31% (28% on JAX for seed 0: its float8 rounding differs), int4
# 19-34%. float8 is Keras' delayed-scaling
# training mode (its scales are calibrated by training; uncalibrated, it
# keeps 3 mantissa bits), int4 has 16 levels.
TOLERANCE = {"int8": 0.08, "float8": 0.4, "int4": 0.4}


def quantize_quietly(model, mode, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dropout, LayerNormalization: nothing to do
        model.quantize(mode, **kwargs)


def transformer_model():
    """A model with each weight-owning Transformer layer."""
    keras.utils.set_random_seed(0)
    x_in = keras.Input((5, 16), name="x")
    m_in = keras.Input((6, 12), name="memory")
    h = layers.MultiHeadAttention(4, 8, num_key_value_heads=2, name="gqa")(x_in, m_in)
    h = layers.MultiHeadAttention(2, 8, use_gate=True, sliding_window=2, name="gated")(h, h)
    h = layers.SelfAttention(num_heads=2, name="self_attention")(h)
    h = layers.TransformerEncoderBlock(num_heads=2, intermediate_dim=32, name="encoder")(h)
    h = layers.TransformerDecoderBlock(num_heads=2, intermediate_dim=32, name="decoder")(h, m_in)
    h = layers.FeedForward(32, name="ffn")(h)
    return keras.Model([x_in, m_in], h)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=(2, 5, 16)).astype("float32"),
        rng.normal(size=(2, 6, 12)).astype("float32"),
    ]


def projection_kernels(model):
    return {w.path: w for w in model.weights if w.path.endswith("/kernel")}


@pytest.mark.parametrize("mode", [
    pytest.param("int8", marks=pytest.mark.same_path_on("jax", reason=(
        "which projections quantize is Python, the same on every backend (the float8 case "
        "counts them on JAX); JAX's int8 outputs equal Keras' in "
        "test_quantized_outputs_equal_keras_multi_head_attention[int8], and a whole int8 "
        "model generates there in tests/models/seq2seq_model_test.py::"
        "test_a_quantized_model_round_trips_through_a_keras_file"))),
    *MODES[1:],
])
def test_quantize_reaches_every_projection_and_stays_near_float(mode):
    model = transformer_model()
    x = inputs()
    expected = to_numpy(model(x))
    quantize_quietly(model, mode)
    kernels = projection_kernels(model)
    assert len(kernels) == 4 + 5 + 4 + 6 + 10 + 2  # every Dense / EinsumDense
    for path, kernel in kernels.items():
        if mode == "float8":  # Keras' float8 keeps the kernel, adds scales
            assert f"{path}_scale" in {w.path for w in model.weights}, path
        else:
            assert kernel.dtype == "int8", path  # int4 is packed in int8
    out = to_numpy(model(x))
    scale = np.abs(expected).max()
    print(mode, "error / scale:", np.abs(out - expected).max() / scale)
    assert np.abs(out - expected).max() <= TOLERANCE[mode] * scale
    assert np.abs(out - expected).max() > 0  # something was quantized


@pytest.mark.same_path_on("jax", reason=(
    "the `.keras` round trip of quantized variables is Keras' saving, the same on every "
    "backend: TensorFlow runs it; on JAX the quantized outputs of this model are "
    "test_quantize_reaches_every_projection_and_stays_near_float's, and files saved under "
    "TensorFlow load in test_additive_and_luong_files_saved_with_raw_kernels_still_load and "
    "tests/layers/cross_backend_test.py"))
@pytest.mark.parametrize("mode", MODES)
def test_quantized_model_round_trips_through_keras_file(mode, tmp_path):
    model = transformer_model()
    quantize_quietly(model, mode)
    x = inputs()
    expected = to_numpy(model(x))
    model.save(tmp_path / "quantized.keras")
    loaded = keras.saving.load_model(tmp_path / "quantized.keras")
    np.testing.assert_allclose(to_numpy(loaded(x)), expected, atol=1e-6)
    assert {w.path: w.dtype for w in loaded.weights} == {
        w.path: w.dtype for w in model.weights
    }


@pytest.mark.parametrize("mode", MODES)
def test_quantized_outputs_equal_keras_multi_head_attention(mode):
    """Same weights, same quantization: the same output as Keras' layer."""
    rng = np.random.default_rng(1)
    query = rng.normal(size=(2, 5, 16)).astype("float32")
    value = rng.normal(size=(2, 7, 12)).astype("float32")
    ours = layers.MultiHeadAttention(4, 8, bias_initializer="random_normal")
    theirs = keras.layers.MultiHeadAttention(4, 8)
    ours(query, value), theirs(query, value)
    for name in ("query", "key", "value", "output"):
        source = getattr(ours, f"{name}_dense")
        target = getattr(theirs, f"{name}_dense")
        target.kernel.assign(source.kernel)
        target.bias.assign(source.bias)
    ours.quantize(mode)
    for dense in (theirs.query_dense, theirs.key_dense, theirs.value_dense,
                  theirs.output_dense):
        dense.quantize(mode)
    np.testing.assert_allclose(
        to_numpy(ours(query, value)), to_numpy(theirs(query, value)), atol=1e-4
    )


def test_layer_quantize_needs_a_built_layer():
    with pytest.raises(ValueError, match=r"isn't yet built"):
        layers.MultiHeadAttention(2, 4).quantize("int8")


@OLD_FILES_ON_TENSORFLOW
def test_files_saved_with_raw_kernels_still_load():
    """`raw_weights_model.keras` was saved by the code that held the
    projections as the layers' own variables (kernels `(D, H, d)`)."""
    model = keras.saving.load_model(FIXTURES / "raw_weights_model.keras")
    saved = np.load(FIXTURES / "raw_weights_model_io.npz")
    out = to_numpy(model([saved["x"], saved["memory"]]))
    np.testing.assert_allclose(out, saved["y"], atol=1e-5)
    paths = {w.path for w in model.weights}
    assert "gqa/query/kernel" in paths and "encoder/self_attention/key/kernel" in paths


@pytest.mark.same_path_on("jax", reason=(
    "Python maps a raw-weights file onto the sublayers, the same on every backend; JAX loads "
    "old files in test_additive_and_luong_files_saved_with_raw_kernels_still_load"))
def test_raw_weights_file_maps_onto_the_sublayers_in_order(tmp_path):
    """The shim puts each old own variable into its sublayer (checked
    variable by variable against a file written in the old layout)."""
    layer = layers.MultiHeadAttention(2, 3, value_dim=4, name="attention")
    x = np.ones((1, 2, 5), "float32")
    layer(x, x)
    old = [
        ("query_kernel", layer.query_dense.kernel), ("query_bias", layer.query_dense.bias),
        ("key_kernel", layer.key_dense.kernel), ("key_bias", layer.key_dense.bias),
        ("value_kernel", layer.value_dense.kernel), ("value_bias", layer.value_dense.bias),
        ("output_kernel", layer.output_dense.kernel),
        ("output_bias", layer.output_dense.bias),
    ]
    rng = np.random.default_rng(0)
    values = [rng.normal(size=v.shape).astype("float32") for _, v in old]
    store = {str(i): value for i, value in enumerate(values)}
    layer.load_own_variables(store)
    for (name, variable), value in zip(old, values):
        np.testing.assert_array_equal(to_numpy(variable), value, err_msg=name)


def rnn_attention_model(attention):
    query = keras.Input((3, 6))
    value = keras.Input((4, 6))
    out = attention(query, value)
    return keras.Model([query, value], keras.layers.Dense(2, name="head")(out))


def test_layers_with_raw_kernels_refuse_quantization():
    model = rnn_attention_model(layers.LuongAttention(score="concat", name="raw"))
    with pytest.raises(ValueError, match=r"Layer 'raw' .* cannot be quantized.*filters"):
        quantize_quietly(model, "int8")
    # The alternative the error names: leave the layer out.
    quantize_quietly(model, "int8", filters=lambda layer: layer.name != "raw")
    assert model.get_layer("head").kernel.dtype == "int8"


def additive_and_luong_model():
    keras.utils.set_random_seed(0)
    query, value = keras.Input((3, 6)), keras.Input((4, 5))
    outputs = [
        layers.BahdanauAttention(8, name="additive")(query, value),
        layers.BahdanauAttention(8, normalize=True, name="normalized")(query, value),
        layers.LuongAttention(score="general", name="general")(query, value),
    ]
    return keras.Model([query, value], keras.layers.Concatenate()(outputs))


@pytest.mark.same_path_on("jax", reason=(
    "which projections quantize is Python and the round trip is Keras' saving, the same on "
    "every backend; JAX's int8 projections equal Keras' in "
    "test_quantized_outputs_equal_keras_multi_head_attention[int8] and the RNN decoder's "
    "quantize in test_rnn_decoder_quantizes_its_projections_and_loads_the_raw_layout"))
def test_additive_and_luong_projections_quantize_and_round_trip(tmp_path):
    model = additive_and_luong_model()
    rng = np.random.default_rng(0)
    x = [rng.normal(size=(2, 3, 6)).astype("float32"),
         rng.normal(size=(2, 4, 5)).astype("float32")]
    expected = to_numpy(model(x))
    quantize_quietly(model, "int8")
    kernels = projection_kernels(model)
    assert sorted(kernels) == [
        "additive/key/kernel", "additive/query/kernel", "general/query/kernel",
        "normalized/key/kernel", "normalized/query/kernel",
    ]
    assert all(kernel.dtype == "int8" for kernel in kernels.values())
    out = to_numpy(model(x))
    assert 0 < np.abs(out - expected).max() <= TOLERANCE["int8"] * np.abs(expected).max()
    model.save(tmp_path / "quantized.keras")
    loaded = keras.saving.load_model(tmp_path / "quantized.keras")
    np.testing.assert_allclose(to_numpy(loaded(x)), out, atol=1e-6)


def test_additive_and_luong_files_saved_with_raw_kernels_still_load():
    model = keras.saving.load_model(FIXTURES / "raw_weights_rnn_attention.keras")
    saved = np.load(FIXTURES / "raw_weights_rnn_attention_io.npz")
    out = to_numpy(model([saved["query"], saved["value"]]))
    np.testing.assert_allclose(out, saved["y"], atol=1e-5)


# Embedding tables quantized to int8 (per-row scales): largest error as a
# fraction of the largest float output; measured 0.4% to 0.7%.
TABLE_TOLERANCE = 0.02


def tables_fixture():
    """`raw_tables_model.keras` (saved when the tables were own variables),
    its inputs and the outputs it gave then."""
    saved = np.load(FIXTURES / "raw_tables_model_io.npz")
    inputs = {name: saved[name] for name in ("ids", "story", "question")}
    expected = [saved[name] for name in ("embedded", "memories", "question_encoding")]
    return keras.saving.load_model(FIXTURES / "raw_tables_model.keras"), inputs, expected


@OLD_FILES_ON_TENSORFLOW
def test_files_saved_with_raw_tables_still_load():
    model, inputs, expected = tables_fixture()
    for out, want in zip(model(inputs), expected):
        np.testing.assert_allclose(to_numpy(out), want, atol=1e-6)
    paths = {w.path for w in model.weights}
    assert {"embed/position_embedding/table/embeddings", "encode/word_embedding/embeddings",
            "encode/temporal_embedding/embeddings"} <= paths


@pytest.mark.same_path_on("jax", reason=(
    "Keras' int8 Embedding and its saving, the same code on every backend; on JAX a shared, "
    "tied model quantizes to int8, reloads and generates in tests/models/seq2seq_model_test.py::"
    "test_a_quantized_model_round_trips_through_a_keras_file"))
def test_embedding_tables_quantize_to_int8_and_round_trip(tmp_path):
    model, inputs, expected = tables_fixture()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.quantize("int8")
    assert not [w for w in caught if "not quantized" in str(w.message)]
    tables = {w.path: w.dtype for w in model.weights if w.path.endswith("/embeddings")}
    assert len(tables) == 4 and set(tables.values()) == {"int8"}, tables
    quantized = [to_numpy(out) for out in model(inputs)]
    for out, want in zip(quantized, expected):
        assert np.abs(out - want).max() <= TABLE_TOLERANCE * np.abs(want).max()
    assert not np.array_equal(quantized[1], expected[1]), "the tables changed"
    path = tmp_path / "tables_int8.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    for out, want in zip(loaded(inputs), quantized):
        np.testing.assert_allclose(to_numpy(out), want, atol=1e-6)
    # The masks are the layers' own, quantized or not.
    masks = [out._keras_mask for out in loaded(inputs)[:2]]
    np.testing.assert_array_equal(to_numpy(masks[0]), inputs["ids"] != 0)
    np.testing.assert_array_equal(to_numpy(masks[1]), (inputs["story"] != 0).any(-1))


@pytest.mark.same_path_on("jax", reason=(
    "Keras' int8 Embedding under our position table, the same code on every backend; on JAX "
    "a whole int8 model generates in tests/models/seq2seq_model_test.py::"
    "test_a_quantized_model_round_trips_through_a_keras_file"))
def test_position_table_quantizes_in_a_model():
    tokens = keras.Input((5,), dtype="int32")
    embedded = layers.TokenAndPositionEmbedding(
        20, 8, position="learned", max_length=5
    )(tokens)
    model = keras.Model(tokens, keras.layers.Dense(3, name="head")(embedded))
    ids = np.array([[1, 2, 3, 4, 0]])
    before = to_numpy(model(ids))
    quantize_quietly(model, "int4")
    assert dtype_of(model.get_layer("head").kernel) == "int8"  # int4 values, packed
    position = model.layers[1].position_encoding
    assert position.embedding.quantization_mode == "int4"
    assert np.abs(to_numpy(model(ids)) - before).max() <= 0.4 * np.abs(before).max()


def test_memory_hop_keeps_its_scalar_switch_in_float_with_a_warning():
    hop = layers.MemoryHop(linear_start=True, name="hop")
    hop.build((2, 4), (2, 3, 4), (2, 3, 4))
    with pytest.raises(NotImplementedError, match=r"MemoryHop.*not quantized.*scalar"):
        hop.quantize("int8")


def test_layer_quantize_of_raw_kernels_raises_naming_the_layer():
    layer = layers.LuongAttention(score="concat", name="raw")
    layer.build((2, 3, 6), (2, 4, 5))
    with pytest.raises(ValueError, match=r"Layer 'raw' \(LuongAttention\) cannot be quantized"):
        layer.quantize("int8")


@pytest.mark.same_path_on("jax", reason=(
    "which projections quantize and how an old file maps are Python, the same on every "
    "backend; JAX's int8 projections equal Keras' in "
    "test_quantized_outputs_equal_keras_multi_head_attention[int8]"))
def test_pointer_generator_quantizes_its_vocabulary_projections_and_loads_old_files():
    model = keras.saving.load_model(FIXTURES / "raw_weights_pointer_generator.keras")
    saved = np.load(FIXTURES / "raw_weights_pointer_generator_io.npz")
    x = [saved["states"], saved["memory"], saved["ids"]]
    out = to_numpy(model(x))
    np.testing.assert_allclose(out, saved["y"], atol=1e-5)
    quantize_quietly(model, "int8")
    layer = model.get_layer("pointer")
    assert layer.hidden_dense.kernel.dtype == "int8"
    assert layer.vocabulary_dense.kernel.dtype == "int8"
    quantized = to_numpy(model(x))  # log-probabilities
    assert 0 < np.abs(np.exp(quantized) - np.exp(out)).max() <= 0.05


def test_raw_weights_layout_of_a_subclass_keeps_its_own_variables_after():
    """`SelfAttention(score="general")` held the 8 projection variables and
    then its score kernel: the first go to the sublayers, the rest stay."""
    layer = layers.SelfAttention(num_heads=2, score="general")
    layer(np.ones((1, 3, 4), "float32"))
    rng = np.random.default_rng(0)
    projections = [
        variable
        for dense in (layer.query_dense, layer.key_dense, layer.value_dense,
                      layer.output_dense)
        for variable in (dense.kernel, dense.bias)
    ]
    old = projections + [layer.score_kernel]
    values = [rng.normal(size=v.shape).astype("float32") for v in old]
    layer.load_own_variables({str(i): value for i, value in enumerate(values)})
    for variable, value in zip(old, values):
        np.testing.assert_array_equal(to_numpy(variable), value, err_msg=variable.path)


def test_rnn_decoder_quantizes_its_projections_and_loads_the_raw_layout():
    decoder = layers.AttentionRNNDecoder(4, layers.BahdanauAttention(5), name="decoder")
    inputs = np.random.default_rng(0).normal(size=(2, 3, 6)).astype("float32")
    memory = np.random.default_rng(1).normal(size=(2, 4, 7)).astype("float32")
    expected = to_numpy(decoder(inputs, memory))
    # The raw layout: W_c was the decoder's one own variable.
    w_c = to_numpy(decoder.attention_kernel)
    decoder.load_own_variables({"0": w_c[::-1].copy()})
    np.testing.assert_array_equal(to_numpy(decoder.attention_kernel), w_c[::-1])
    decoder.load_own_variables({"0": w_c})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decoder.quantize("int8")
    assert decoder.attention_projection.kernel.dtype == "int8"
    assert decoder.attention.query_dense.kernel.dtype == "int8"
    out = to_numpy(decoder(inputs, memory))
    assert 0 < np.abs(out - expected).max() <= TOLERANCE["int8"] * np.abs(expected).max()


def test_rnn_decoder_file_saved_with_raw_kernels_still_loads():
    model = keras.saving.load_model(FIXTURES / "raw_weights_rnn_decoder.keras")
    saved = np.load(FIXTURES / "raw_weights_rnn_decoder_io.npz")
    out = to_numpy(model([saved["inputs"], saved["memory"]]))
    np.testing.assert_allclose(out, saved["y"], atol=1e-5)
