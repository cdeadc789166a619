"""Checks against the data at hand: empty splits, vocabularies SentencePiece cannot train."""

import pytest

from keras_attention import data
from keras_attention.recipes import checks


def test_an_empty_split_is_refused_naming_its_setting():
    assert checks.check_split("test", [1], "test_fraction", 0.1) == [1]
    with pytest.raises(ValueError, match=r"The test split holds no examples.*`test_fraction`. "
                                         r"Received: test_fraction=0.001"):
        checks.check_split("test", [], "test_fraction", 0.001)


@pytest.mark.tf_only("SentencePiece training through tf.data")
def test_vocabulary_sizes_the_tokenizer_cannot_train_are_a_value_error():
    texts = [s for s, _ in data.make_date_pairs(100, seed=0)]
    with pytest.raises(ValueError, match=r"`vocabulary_size` must be more than the 4 special "
                                         r"tokens. Received: vocabulary_size=1"):
        checks.train_tokenizer(texts, 1)
    with pytest.raises(ValueError, match=r"`vocabulary_size` must be at least (\d+) for this "
                                         r"data.*Received: vocabulary_size=20") as error:
        checks.train_tokenizer(texts, 20)
    needed = int(error.value.args[0].split("at least ")[1].split()[0])
    assert checks.train_tokenizer(texts, needed).vocabulary_size() == needed  # the least is enough
    words = [" ".join(e["story"]) for e in data.make_stories(20, seed=0)]
    assert checks.train_tokenizer(words, 5, lowercase=True, model_type="word") \
        .vocabulary_size() == 5
