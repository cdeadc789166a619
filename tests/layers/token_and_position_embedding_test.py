import keras
import numpy as np
import pytest

from keras_attention.layers import TokenAndPositionEmbedding


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
    np.testing.assert_allclose(x[0, 0], 2.0 * layer.token_embedding.embeddings.numpy()[1], atol=1e-6)


def test_invalid_args():
    with pytest.raises(ValueError, match=r"max_length.*Received: max_length=None"):
        TokenAndPositionEmbedding(10, 4, position="learned")
    with pytest.raises(ValueError, match=r"position.*Received: position='rope'"):
        TokenAndPositionEmbedding(10, 4, position="rope")
    with pytest.raises(ValueError, match=r"token_ids.*Received: token_ids.shape=\(2, 3, 1\)"):
        TokenAndPositionEmbedding(10, 4)(np.ones((2, 3, 1), "int32"))
