import numpy as np
import pytest

from keras_attention.layers.sentence_encoding import SentenceEncoding, sentence_mask
from tests.test_case import to_numpy

pytestmark = pytest.mark.keras_ops_only

STORY = np.array([[[4, 5, 6], [7, 0, 0], [0, 0, 0]]], "int32")  # (1, 3, 3)


def test_sum_words_weights_the_real_words_only():
    layer = SentenceEncoding(10, 2, pad_token_id=0)
    ids, word_mask = layer.ids_and_word_mask(STORY)
    words = np.arange(18, dtype="float32").reshape(1, 3, 3, 2) + 1.0  # no zero rows
    weights = np.array([[1.0, 1.0], [2.0, 0.5], [3.0, -1.0]], "float32")  # (J, dim)
    out = to_numpy(layer.sum_words(words, word_mask, weights))
    real = (STORY != 0)[..., None]
    np.testing.assert_allclose(out, (words * weights * real).sum(-2))
    np.testing.assert_array_equal(out[0, 2], [0.0, 0.0])
    plain = to_numpy(layer.sum_words(words, word_mask))
    np.testing.assert_allclose(plain, (words * real).sum(-2))
    assert to_numpy(ids).dtype == np.int32


def test_masks_and_output_shape():
    layer = SentenceEncoding(10, 4, pad_token_id=7)
    np.testing.assert_array_equal(
        to_numpy(sentence_mask(STORY, 0)), [[True, True, False]]
    )
    # Sentences of only the pad id (here 7) are masked; 0 is a word.
    np.testing.assert_array_equal(
        to_numpy(layer.compute_mask(np.array([[[7, 7], [0, 7]]]))), [[False, True]]
    )
    assert layer.compute_mask(np.array([[7, 1]])) is None  # one sentence: no mask
    assert layer.compute_output_shape((2, 3, 5)) == (2, 3, 4)
    assert layer.get_config()["pad_token_id"] == 7


def test_invalid_args():
    with pytest.raises(ValueError, match=r"vocab_size.*Received: vocab_size=0"):
        SentenceEncoding(0, 4)
    with pytest.raises(ValueError, match=r"pad_token_id.*Received: pad_token_id=True"):
        SentenceEncoding(10, 4, pad_token_id=True)
    with pytest.raises(ValueError, match=r"token_ids.*Received: token_ids.shape=\(2,\)"):
        SentenceEncoding.check_token_ids_shape((2,))
