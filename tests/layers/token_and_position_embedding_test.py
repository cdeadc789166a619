import keras
import numpy as np
import pytest

from keras_attention.layers import TokenAndPositionEmbedding
from keras_attention.layers.token_and_position_embedding import (
    LearnedPositionEmbedding,
    SinusoidalPositionEncoding,
    rotary_position_encoding,
)
from tests.layers.hf_reference import numpy_of, randomize, run_torch
from tests.test_case import to_numpy

pytestmark = pytest.mark.keras_ops_only


@pytest.mark.parametrize("position", ["sinusoidal", "learned", "none"])
def test_round_trip_mask_and_start_index(position, tmp_path):
    layer = TokenAndPositionEmbedding(20, 8, position=position, max_length=10)
    ids = np.array([[3, 4, 5, 0], [6, 0, 0, 0]])
    x = layer(ids)
    assert tuple(x.shape) == (2, 4, 8)
    np.testing.assert_array_equal(x._keras_mask, ids != 0)
    # A decode step at position 2 equals column 2 of the full pass.
    np.testing.assert_allclose(layer(ids[:, 2:3], start_index=2)[:, 0], x[:, 2], atol=1e-6)
    revived = TokenAndPositionEmbedding.from_config(layer.get_config())
    assert revived.get_config() == layer.get_config()
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    model.save(tmp_path / "m.keras")
    np.testing.assert_array_equal(keras.saving.load_model(tmp_path / "m.keras")(ids), model(ids))


def test_embeddings_are_scaled():
    layer = TokenAndPositionEmbedding(5, 4, position="none")
    x = layer(np.array([[1]]))
    np.testing.assert_allclose(
        x[0, 0], 2.0 * layer.token_embedding.embeddings.numpy()[1], atol=1e-6
    )


def test_invalid_args():
    with pytest.raises(ValueError, match=r"max_length.*Received: max_length=None"):
        TokenAndPositionEmbedding(10, 4, position="learned")
    with pytest.raises(ValueError, match=r"position.*Received: position='rope'"):
        TokenAndPositionEmbedding(10, 4, position="rope")
    with pytest.raises(ValueError, match=r"token_ids.*Received: token_ids.shape=\(2, 3, 1\)"):
        TokenAndPositionEmbedding(10, 4)(np.ones((2, 3, 1), "int32"))


# The position layers are written with keras.ops (the core imports no keras-hub, which imports
# TensorFlow when installed); they give keras-hub's numbers and load keras-hub-era saved models.


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("start_index", [0, 7])
def test_sinusoidal_positions_equal_keras_hub(dtype, start_index):
    keras_hub = pytest.importorskip("keras_hub")
    x = np.zeros((2, 5, 9), "float32")  # odd dim: the last column is a sine
    ours = SinusoidalPositionEncoding(dtype=dtype)(x, start_index=start_index)
    theirs = keras_hub.layers.SinePositionEncoding(dtype=dtype)(x, start_index=start_index)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(keras.ops.cast(ours, "float32")),
        keras.ops.convert_to_numpy(keras.ops.cast(theirs, "float32")),
    )
    assert np.abs(keras.ops.convert_to_numpy(ours)).max() > 0.5


def test_learned_positions_equal_keras_hub():
    keras_hub = pytest.importorskip("keras_hub")
    x = np.zeros((2, 4, 6), "float32")
    ours, theirs = LearnedPositionEmbedding(10), keras_hub.layers.PositionEmbedding(10)
    ours.build(x.shape)
    theirs.build(x.shape)
    assert [w.shape for w in ours.weights] == [w.shape for w in theirs.weights] == [(10, 6)]
    ours.set_weights(theirs.get_weights())
    positions = 3 + np.arange(4, dtype="int32")
    np.testing.assert_array_equal(ours(x, positions=positions), theirs(x, positions=positions))
    np.testing.assert_array_equal(ours(x, positions=positions)[1, 0], theirs.get_weights()[0][3])


@pytest.mark.parametrize("position", ["sinusoidal", "learned"])
def test_model_saved_with_keras_hub_positions_loads_unchanged(position, tmp_path):
    """A `.keras` file written when the layer held keras-hub's layers loads into ours."""
    keras_hub = pytest.importorskip("keras_hub")
    layer = TokenAndPositionEmbedding(20, 8, position=position, max_length=10)
    layer.position_encoding = (
        keras_hub.layers.SinePositionEncoding(name="position_encoding")
        if position == "sinusoidal"
        else keras_hub.layers.PositionEmbedding(10, name="position_embedding")
    )
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    ids = np.array([[3, 4, 5, 0], [6, 7, 0, 0]])
    model.save(tmp_path / "keras_hub_era.keras")
    loaded = keras.saving.load_model(tmp_path / "keras_hub_era.keras")
    revived = loaded.layers[1].position_encoding
    assert not type(revived).__module__.startswith("keras_hub")
    np.testing.assert_array_equal(loaded(ids), model(ids))


def test_position_layers_validate_and_serialize():
    with pytest.raises(ValueError, match="Received: max_wavelength=0"):
        SinusoidalPositionEncoding(max_wavelength=0)
    with pytest.raises(ValueError, match="Received: sequence_length=None"):
        LearnedPositionEmbedding(None)
    layer = LearnedPositionEmbedding(7, initializer="zeros")
    revived = LearnedPositionEmbedding.from_config(layer.get_config())
    assert revived.get_config() == layer.get_config()
    assert SinusoidalPositionEncoding(100).get_config()["max_wavelength"] == 100


@pytest.mark.parametrize("shape, start_index", [((2, 5, 3, 8), 0), ((2, 4, 2, 3, 6), 7)])
def test_rotary_position_encoding_equals_keras_hub(shape, start_index):
    import keras_hub

    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    ours = rotary_position_encoding(x, start_index)
    theirs = keras_hub.layers.RotaryEmbedding()(x, start_index=start_index)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-5)
    assert np.asarray(ours).dtype == np.float32


@pytest.mark.parametrize("position", ["sinusoidal", "learned"])
def test_positions_restart_in_packed_rows(position):
    layer = TokenAndPositionEmbedding(20, 8, position=position, max_length=10)
    alone_a = layer(np.array([[3, 4, 5]]))
    alone_b = layer(np.array([[6, 7]]))
    packed = layer(np.array([[3, 4, 5, 6, 7, 0]]), positions=np.array([[0, 1, 2, 0, 1, 0]]))
    np.testing.assert_array_equal(packed[:, :3], alone_a)
    np.testing.assert_array_equal(packed[:, 3:5], alone_b)
    default = layer(np.array([[3, 4, 5, 6, 7, 0]]))
    assert not np.allclose(default[:, 3:5], alone_b)  # without positions, no restart


@pytest.mark.parametrize("dim", [8, 9])
@pytest.mark.parametrize("start_index", [0, 5])
def test_sinusoidal_halves_match_transformers_marian(dim, start_index):
    from transformers.models.marian.modeling_marian import (
        MarianSinusoidalPositionalEmbedding,
    )

    table = MarianSinusoidalPositionalEmbedding(32, dim).create_weight().numpy()
    x = np.zeros((2, 6, dim), "float32")
    ours = SinusoidalPositionEncoding(layout="halves")(x, start_index=start_index)
    np.testing.assert_allclose(ours, np.broadcast_to(table[start_index:start_index + 6], x.shape),
                               atol=1e-5)
    restarting = np.array([[0, 1, 2, 0, 1, 2]] * 2)
    packed = SinusoidalPositionEncoding(layout="halves")(x, positions=restarting)
    np.testing.assert_allclose(packed[0, 3:], table[:3], atol=1e-5)


@pytest.mark.parametrize("dim", [8, 9])
@pytest.mark.parametrize("start_index", [0, 5])
def test_sinusoidal_fairseq_match_transformers_m2m100(dim, start_index):
    from transformers.models.m2m_100.modeling_m2m_100 import (
        M2M100SinusoidalPositionalEmbedding,
    )

    table = M2M100SinusoidalPositionalEmbedding.get_embedding(32, dim).numpy()
    x = np.zeros((2, 6, dim), "float32")
    ours = SinusoidalPositionEncoding(layout="fairseq")(x, start_index=start_index)
    np.testing.assert_allclose(ours, np.broadcast_to(table[start_index:start_index + 6], x.shape),
                               atol=1e-5)
    # M2M100 counts positions from pad + 1 (pad id 1: the first token at row 2).
    layer = TokenAndPositionEmbedding(10, dim, position="sinusoidal_fairseq", pad_token_id=1,
                                      position_offset=2, scale_embeddings=False)
    tokens = np.array([[3, 4, 5]])
    embedded = keras.ops.convert_to_numpy(layer(tokens))
    expected = keras.ops.convert_to_numpy(layer.token_embedding(tokens)) + table[2:5]
    np.testing.assert_allclose(embedded, expected, atol=1e-5)


def test_sinusoidal_fairseq_needs_four_features():
    with pytest.raises(ValueError, match=r"`dim` must be 4 or more.*Received: dim=3"):
        TokenAndPositionEmbedding(10, 3, position="sinusoidal_fairseq")
    with pytest.raises(ValueError, match=r"`inputs.shape\[-1\]` must be 4 or more.*"
                                         r"Received: inputs.shape\[-1\]=2"):
        SinusoidalPositionEncoding(layout="fairseq")(np.zeros((1, 2, 2), "float32"))


def _bart_embeddings(vocab, dim, max_length, scale):
    from transformers.models.bart.modeling_bart import (
        BartLearnedPositionalEmbedding,
        BartScaledWordEmbedding,
    )

    tokens = randomize(BartScaledWordEmbedding(vocab, dim, 1, embed_scale=scale))
    positions = randomize(BartLearnedPositionalEmbedding(max_length, dim), seed=1)
    return tokens, positions


@pytest.mark.parametrize("scale_embeddings", [True, False])
def test_learned_positions_with_an_offset_match_transformers_bart(scale_embeddings):
    """BART's `embed_tokens(ids) * embed_scale + embed_positions(ids)` (a
    table of `max_position_embeddings + 2` rows, read at position + 2), in a
    full pass and at a decode step."""
    tokens, positions = _bart_embeddings(20, 8, 10, np.sqrt(8) if scale_embeddings else 1.0)
    layer = TokenAndPositionEmbedding(
        20, 8, position="learned", max_length=10, pad_token_id=1,
        scale_embeddings=scale_embeddings, position_offset=2,
    )
    ids = np.array([[0, 5, 6, 2], [0, 7, 2, 1]])
    layer.build(ids.shape)
    layer.token_embedding.embeddings.assign(numpy_of(tokens.weight))
    layer.position_encoding.embedding.embeddings.assign(numpy_of(positions.weight))
    assert tuple(layer.position_encoding.position_embeddings.shape) == (12, 8)
    expected = run_torch(tokens, ids) + run_torch(positions, ids)
    np.testing.assert_allclose(layer(ids), expected, atol=1e-5)
    step = run_torch(tokens, ids[:, 2:3]) + run_torch(positions, ids[:, 2:3], cache_length=2)
    np.testing.assert_allclose(layer(ids[:, 2:3], start_index=2), step, atol=1e-5)


def test_marian_embeddings_match_transformers():
    """Marian: `embed_tokens(ids) * sqrt(d) + sinusoidal(positions)`."""
    from transformers.models.marian.modeling_marian import (
        MarianSinusoidalPositionalEmbedding,
    )

    table = MarianSinusoidalPositionalEmbedding(16, 8).create_weight().numpy()
    layer = TokenAndPositionEmbedding(20, 8, position="sinusoidal_halves", pad_token_id=19)
    ids = np.array([[3, 4, 5, 0], [6, 0, 19, 19]])
    x = to_numpy(layer(ids))
    tokens = to_numpy(layer.token_embedding.embeddings)[ids]
    np.testing.assert_allclose(x, tokens * np.sqrt(8) + table[:4], atol=1e-5)
    np.testing.assert_array_equal(to_numpy(layer.compute_mask(ids)), ids != 19)


def test_logits_are_tied_to_the_token_table(rng):
    layer = TokenAndPositionEmbedding(12, 4)
    layer(np.array([[1, 2]]))
    hidden = rng.normal(size=(2, 3, 4)).astype("float32")
    expected = hidden @ to_numpy(layer.token_embedding.embeddings).T
    np.testing.assert_allclose(layer.logits(hidden), expected, atol=1e-5)


def test_new_options_validate_and_serialize(tmp_path):
    with pytest.raises(TypeError, match=r"Received: scale_embeddings='no'"):
        TokenAndPositionEmbedding(10, 4, scale_embeddings="no")
    with pytest.raises(ValueError, match=r"position_offset.*Received: position_offset=-2"):
        TokenAndPositionEmbedding(10, 4, position_offset=-2)
    with pytest.raises(ValueError, match=r"layout.*Received: layout='split'"):
        SinusoidalPositionEncoding(layout="split")
    layer = TokenAndPositionEmbedding(10, 4, position="sinusoidal_halves",
                                      scale_embeddings=False, position_offset=3)
    config = layer.get_config()
    assert (config["scale_embeddings"], config["position_offset"]) == (False, 3)
    assert TokenAndPositionEmbedding.from_config(config).get_config() == config
    ids = np.array([[3, 4, 5, 0]])
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    model.save(tmp_path / "m.keras")
    np.testing.assert_array_equal(keras.saving.load_model(tmp_path / "m.keras")(ids), model(ids))
    # The offset shifts the positions: token 0 is encoded at position 3.
    table = to_numpy(layer.token_embedding.embeddings)
    position_3 = to_numpy(layer.position_encoding(np.zeros((1, 1, 4)), start_index=3))
    np.testing.assert_allclose(to_numpy(layer(ids))[0, 0], table[3] + position_3[0, 0],
                               atol=1e-5)


def test_a_shared_token_table(rng):
    source = TokenAndPositionEmbedding(12, 4, position="learned", max_length=8)
    target = TokenAndPositionEmbedding(12, 4, position="learned", max_length=8,
                                       token_embedding=source.token_embedding)
    ids = np.array([[1, 2, 3]])
    source(ids)
    target(ids)
    assert target.token_embedding is source.token_embedding
    assert len(source.weights) == len(target.weights) == 2
    assert "token_embedding" not in target.get_config()
    with pytest.raises(ValueError, match=r"token_embedding.*\(12, 8\).*Received"):
        TokenAndPositionEmbedding(12, 8, token_embedding=source.token_embedding)


def test_learned_positions_refuse_sequences_longer_than_the_table():
    """Issue 22: a gather past the learned table used to be clamped (XLA,
    JAX) or zero (TensorFlow on GPU), silently, or a TensorFlow error; now
    one ValueError names `token_ids` and `max_length`."""
    embed = TokenAndPositionEmbedding(10, 4, "learned", max_length=6, position_offset=2)
    assert embed(np.ones((1, 6), "int32")).shape == (1, 6, 4)
    assert embed(np.ones((1, 2), "int32"), start_index=4).shape == (1, 2, 4)
    with pytest.raises(ValueError, match=r"`token_ids` may hold at most 6 positions "
                                         r".*max_length=6\).*Received: token_ids of length 7"):
        embed(np.ones((1, 7), "int32"))
    with pytest.raises(ValueError, match=r"max_length=6, from start_index=5\)"
                                         r".*Received: token_ids of length 7"):
        embed(np.ones((1, 2), "int32"), start_index=5)
    # Sinusoidal positions have no table, so no limit.
    sinusoidal = TokenAndPositionEmbedding(10, 4, max_length=6)
    assert sinusoidal(np.ones((1, 9), "int32")).shape == (1, 9, 4)


def test_learned_positions_refuse_long_sequences_of_lengths_known_only_at_run_time():
    """TensorFlow graph with unknown lengths: an assertion with the same
    words (a plain graph used to raise "indices[6] = 6 is not in [0, 6)"
    on CPU); JAX's jit knows the length when it traces: a ValueError."""
    embed = TokenAndPositionEmbedding(10, 4, "learned", max_length=6)
    long_ids = np.ones((1, 7), "int32")
    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        call = tf.function(embed, input_signature=[tf.TensorSpec((None, None), tf.int32)])
        assert call(np.ones((2, 6), "int32")).shape == (2, 6, 4)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"`token_ids` may hold at most 6 positions"):
            call(long_ids)
    elif backend == "jax":
        import jax

        with pytest.raises(ValueError, match=r"`token_ids` may hold at most 6 positions"):
            jax.jit(embed)(long_ids)
    else:
        pytest.skip("torch runs eagerly: the length is always known")


def test_mask_start_false_keeps_the_first_position():
    """A decoder input starts with its start token, even where its id is the
    pad id (Marian, T5); the option is in the config."""
    layer = TokenAndPositionEmbedding(20, 8, pad_token_id=19, mask_start=False)
    ids = np.array([[19, 4, 5, 19], [19, 19, 19, 19]])
    np.testing.assert_array_equal(to_numpy(layer.compute_mask(ids)),
                                  [[1, 1, 1, 0], [1, 0, 0, 0]])
    assert TokenAndPositionEmbedding.from_config(layer.get_config()).mask_start is False
    with pytest.raises(TypeError, match="mask_start"):
        TokenAndPositionEmbedding(20, 8, mask_start="no")
