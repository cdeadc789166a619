import numpy as np
import pytest

from keras_attention import data

RECORDS = [
    {"story": ["Mary went home.", "John moved to the garden.", "Mary left."],
     "question": "Where is Mary?"},
    {"story": ["Sandra went to the kitchen!"], "question": "Where is Sandra?"},
]


def word_tokenizer():
    return data.train_tokenizer(data.story_texts(RECORDS) * 3, 40, lowercase=True,
                                model_type="word")


def test_story_texts_space_punctuation_for_a_word_tokenizer():
    assert data.story_texts(RECORDS)[:2] == ["Mary went home .", "John moved to the garden ."]
    tokenizer = word_tokenizer()
    pieces = [tokenizer.id_to_token(int(i)) for i in tokenizer("mary went home .")]
    assert pieces == ["▁mary", "▁went", "▁home", "▁."]


def test_encode_stories_keeps_the_last_sentences_in_order_padded_at_the_end():
    tokenizer = word_tokenizer()
    arrays = data.encode_stories(RECORDS, tokenizer, max_memories=2)
    story, question = arrays["story"], arrays["question"]
    assert story.dtype == question.dtype == np.int32
    assert story.shape[:2] == (2, 2) and question.shape[0] == 2
    first = [int(i) for i in tokenizer("John moved to the garden .")]
    np.testing.assert_array_equal(story[0, 0, : len(first)], first)
    assert not story[0, 0, len(first):].any()
    assert story[1, 0].any() and not story[1, 1].any()  # one sentence, one padding slot
    words = [int(i) for i in tokenizer("Where is Sandra ?")]
    np.testing.assert_array_equal(question[1, : len(words)], words)
    cut = data.encode_stories(RECORDS, tokenizer, max_memories=5, max_words=2)
    assert cut["story"].shape[2] == 2 and cut["story"].shape[1] == 3


def test_story_source_round_trip():
    for record in RECORDS:
        assert data.story_from_source(data.story_source(record)) == record
    assert data.story_from_source("Mary went home. Where is Mary?") == {
        "story": ["Mary went home."], "question": "Where is Mary?"}
    assert data.story_from_source("| Where?") == {"story": [], "question": "Where?"}


@pytest.mark.parametrize("pad_to_multiple", [None, 8])
def test_make_dataset_knows_its_number_of_batches(pad_to_multiple):
    """The cardinality is the batch count that iterating gives (progress
    bars then count steps from the first epoch on)."""
    from keras_attention.data import make_dataset, make_date_pairs, train_tokenizer

    pairs = make_date_pairs(300, seed=4)
    tokenizer = train_tokenizer([t for pair in pairs for t in pair], 120)
    dataset = make_dataset(pairs, tokenizer, tokenizer, batch_size=16, max_source_length=40,
                           max_target_length=16, bucket_boundaries=(8, 12, 16, 24),
                           pad_to_multiple=pad_to_multiple)
    sizes = [int(labels.shape[0]) for _, labels in dataset]
    assert int(dataset.cardinality()) == len(sizes) > 300 // 16
    assert sum(sizes) == (16 * len(sizes) if pad_to_multiple else 300)
    assert len([_ for _ in dataset]) == len(sizes)  # a second epoch, from the cache


@pytest.mark.parametrize("pad_to_multiple", [None, 8])
def test_make_dataset_packs_every_token_once(pad_to_multiple):
    from keras_attention.data import make_dataset, make_date_pairs, tokenize_pairs, train_tokenizer

    pairs = make_date_pairs(200, seed=5)
    tokenizer = train_tokenizer([t for pair in pairs for t in pair], 120)
    kwargs = dict(max_source_length=40, max_target_length=24)
    dataset = make_dataset(pairs, tokenizer, tokenizer, batch_size=8, pack=True,
                           pad_to_multiple=pad_to_multiple, **kwargs)
    batches = list(dataset.as_numpy_iterator())
    assert int(dataset.cardinality()) == len(batches)
    inputs, labels = batches[0]
    assert sorted(inputs) == ["decoder_segment_ids", "decoder_token_ids",
                              "encoder_segment_ids", "encoder_token_ids"]
    assert labels.shape[1] == 24 and inputs["encoder_token_ids"].shape[1] == 40
    assert inputs["decoder_segment_ids"].max() > 1  # several examples in a row
    examples = list(tokenize_pairs(pairs, tokenizer, tokenizer, 40, 24).as_numpy_iterator())
    label_tokens = sorted(int(t) for _, y in examples for t in y)
    packed_tokens = sorted(int(t) for _, y in batches for t in y.reshape(-1) if t)
    assert packed_tokens == label_tokens  # every label once, padding labels 0
    rows = sum(len(y) for _, y in batches)
    per_batch = [int(x["decoder_segment_ids"].max(axis=1).sum()) for x, _ in batches]
    assert sum(per_batch) == 200 and rows < 200 / 2
    # `batch_size` still counts examples: about 8 per batch, in fewer rows.
    assert abs(np.mean(per_batch) - 8) < 2 and len(batches[0][1]) < 8
    if pad_to_multiple:  # one shape: the last batch filled with rows of padding
        assert len({y.shape for _, y in batches}) == 1 and labels.shape[1] == 24
