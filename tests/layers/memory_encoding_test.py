import keras
import numpy as np
import pytest

from keras_attention.layers import MemoryEncoding
from tests.stories import STORY
from tests.test_case import run_layer_test

pytestmark = pytest.mark.keras_ops_only


def position_weights(length, dim):
    """The paper's l_kj for a sentence of `length` words: (length, dim)."""
    j = np.arange(1, length + 1)[:, None] / length
    k = np.arange(1, dim + 1)[None, :] / dim
    return (1 - j) - k * (1 - 2 * j)


def test_layer_behaviors(tmp_path):
    run_layer_test(
        MemoryEncoding,
        {"vocab_size": 12, "dim": 4, "max_memories": 5},
        {"token_ids": STORY},
        expected_output_shape=(2, 3, 4),
        mask_inputs=False,
        tmp_dir=tmp_path,
    )


def test_matches_the_paper_equations():
    layer = MemoryEncoding(12, 4, max_memories=5)
    out = np.asarray(layer(STORY))
    table = layer.embeddings.numpy()
    temporal = layer.temporal_embeddings.numpy()
    for b, story in enumerate(STORY):
        real = [i for i, s in enumerate(story) if s.any()]
        for i in real:
            words = story[i][story[i] != 0]
            expected = (position_weights(len(words), 4) * table[words]).sum(0)
            recency = len([r for r in real if r > i])
            np.testing.assert_allclose(out[b, i], expected + temporal[recency], atol=1e-6)
        for i in set(range(3)) - set(real):
            np.testing.assert_array_equal(out[b, i], 0.0)
    np.testing.assert_array_equal(np.asarray(layer.compute_mask(STORY)), STORY.any(-1))


def test_question_has_no_temporal_encoding_and_bag_of_words_option():
    layer = MemoryEncoding(12, 4, position_encoding=False)
    question = np.array([[4, 5, 0]])
    out = np.asarray(layer(question))[0]
    table = layer.embeddings.numpy()
    np.testing.assert_allclose(out, table[4] + table[5], atol=1e-6)
    assert layer.compute_mask(question) is None


def test_old_sentences_share_the_last_temporal_row():
    layer = MemoryEncoding(12, 4, max_memories=2, position_encoding=False)
    story = np.array([[[4], [4], [4], [4]]])
    out = np.asarray(layer(story))[0]
    temporal = layer.temporal_embeddings.numpy()
    np.testing.assert_allclose(out[3] - out[2], temporal[0] - temporal[1], atol=1e-6)
    np.testing.assert_allclose(out[0], out[1], atol=1e-6)  # recency 3 and 2 -> row 1


def test_temporal_noise_only_in_training_and_only_pushes_back():
    layer = MemoryEncoding(12, 4, max_memories=50, temporal_noise=0.5, seed=3,
                           position_encoding=False)
    story = np.tile(np.array([[[4], [5], [6], [0]]]), (64, 1, 1))
    np.testing.assert_array_equal(layer(story), layer(story, training=False))
    recency = np.asarray(layer._recency(keras.ops.convert_to_tensor(story.any(-1)), training=True))
    clean = np.asarray(layer._recency(keras.ops.convert_to_tensor(story.any(-1)), training=False))
    assert (recency >= clean).all() and (recency > clean).any()
    # Order is kept: an earlier sentence is never more recent than a later one.
    assert (np.diff(recency[:, :3], axis=1) <= 0).all()
    assert (recency[:, 3] == 0).all()  # padding slot


def test_invalid_args():
    with pytest.raises(ValueError, match=r"dim.*Received: dim=0"):
        MemoryEncoding(10, 0)
    with pytest.raises(ValueError, match=r"temporal_noise.*Received: temporal_noise=1.5"):
        MemoryEncoding(10, 4, temporal_noise=1.5)
    with pytest.raises(ValueError, match=r"temporal_noise.*temporal_encoding"):
        MemoryEncoding(10, 4, temporal_noise=0.1, temporal_encoding=False)
    with pytest.raises(TypeError, match=r"position_encoding.*Received: position_encoding=1"):
        MemoryEncoding(10, 4, position_encoding=1)
    with pytest.raises(ValueError, match=r"token_ids.*Received: token_ids.shape=\(2,\)"):
        MemoryEncoding(10, 4)(np.array([1, 2]))
    with pytest.raises(ValueError, match=r"token_ids.*Received: token_ids.shape=\(None, 2, 3, 4\)"):
        keras.Sequential([keras.Input((2, 3, 4), dtype="int32"), MemoryEncoding(10, 4)])
