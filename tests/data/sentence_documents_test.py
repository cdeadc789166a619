import numpy as np
import pytest

from keras_attention.data import (
    encode_sentence_documents,
    oracle_sentence,
    oracle_sentence_index,
    oracle_sentence_indices,
)


def word_tokenizer(texts):
    """One id per word (its length + 4), as a tokenizer called on a list."""
    return [[len(word) + 4 for word in text.split()] for text in texts]


def test_tokens_carry_their_sentence_number_and_padding_zero():
    inputs, kept = encode_sentence_documents(
        ["Cats sleep. Dogs bark loudly. Birds sing.", "One."], word_tokenizer,
        max_length=10, max_sentences=5)
    assert inputs["token_ids"].dtype == np.int32 and inputs["token_ids"].shape == (2, 7)
    np.testing.assert_array_equal(inputs["sentence_ids"],
                                  [[1, 1, 2, 2, 2, 3, 3], [1, 0, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(inputs["token_ids"][0], [8, 10, 8, 8, 11, 9, 9])
    np.testing.assert_array_equal(inputs["token_ids"][1], [8, 0, 0, 0, 0, 0, 0])
    assert kept == [["Cats sleep.", "Dogs bark loudly.", "Birds sing."], ["One."]]


def test_only_whole_sentences_within_both_limits():
    document = "Cats sleep. Dogs bark loudly. Birds sing."
    inputs, kept = encode_sentence_documents([document], word_tokenizer, max_length=4,
                                             max_sentences=5)
    assert kept == [["Cats sleep."]]  # "Dogs bark loudly." would pass 4 tokens
    np.testing.assert_array_equal(inputs["sentence_ids"], [[1, 1]])
    _, kept = encode_sentence_documents([document], word_tokenizer, max_length=50,
                                        max_sentences=2)
    assert kept == [["Cats sleep.", "Dogs bark loudly."]]
    # A first sentence longer than max_length is cut, never dropped.
    inputs, kept = encode_sentence_documents(["A b c d e f. G."], word_tokenizer,
                                             max_length=3, max_sentences=2)
    assert kept == [["A b c d e f."]]
    np.testing.assert_array_equal(inputs["sentence_ids"], [[1, 1, 1]])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"`documents`.*one string"):
        encode_sentence_documents("Cats sleep.", word_tokenizer, max_length=4, max_sentences=2)
    with pytest.raises(ValueError, match=r"documents\[1\]"):
        encode_sentence_documents(["Cats.", "  "], word_tokenizer, max_length=4,
                                  max_sentences=2)
    for name, kwargs in (("max_length", dict(max_length=0, max_sentences=2)),
                         ("max_sentences", dict(max_length=4, max_sentences=-1))):
        with pytest.raises(ValueError, match=rf"`{name}`.*Received"):
            encode_sentence_documents(["Cats."], word_tokenizer, **kwargs)
    with pytest.raises(ValueError, match=r"same length"):
        oracle_sentence_indices([["a."]], [])


def test_oracle_index_is_the_sentence_closest_to_any_reference():
    sentences = ["Deep nets are popular.", "We propose sparse attention.", "It is fast."]
    assert oracle_sentence_index(sentences, ["Sparse attention makes models fast."]) == 1
    assert oracle_sentence_index(sentences, ["nothing shared", "It is fast indeed."]) == 2
    assert oracle_sentence_index([], ["x"]) == 0
    document = " ".join(sentences)
    assert oracle_sentence(document, ["It is fast indeed."]) == sentences[2]
    labels = oracle_sentence_indices([sentences, sentences[:1]],
                                     [["It is fast indeed."], ["anything"]])
    assert labels.dtype == np.int32 and labels.tolist() == [2, 0]
    with pytest.raises(ValueError, match=r"`references`"):
        oracle_sentence_index(sentences, "a string")
