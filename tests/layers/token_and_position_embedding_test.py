import keras
import numpy as np
import pytest

from keras_attention.layers import TokenAndPositionEmbedding
from keras_attention.layers.token_and_position_embedding import (
    LearnedPositionEmbedding,
    SinusoidalPositionEncoding,
    rotary_position_encoding,
)


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
