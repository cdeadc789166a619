import numpy as np
import pytest

from keras_attention.data import (
    SentencePieceModel,
    as_tokenizer,
    load_tokenizer,
    make_dataset,
    make_date_pairs,
    never_generated_ids,
    save_tokenizer,
    special_token_ids,
    train_tokenizer,
)
from keras_attention.tokenizer import Tokenizer, encode_lines

PAIRS = make_date_pairs(300, seed=0)


@pytest.fixture
def tokenizers():
    # Function-scoped: `keras.utils.set_random_seed` (run before every test)
    # invalidates the TensorFlow resources of tokenizers made before it.
    return (train_tokenizer([s for s, _ in PAIRS], 100),
            train_tokenizer([t for _, t in PAIRS], 40))


def test_round_trip_is_lossless_and_ids_are_special(tokenizers):
    source, target = tokenizers
    ids = special_token_ids(target)
    assert ids == {"pad_token_id": 0, "start_token_id": 2, "end_token_id": 3}
    plain = as_tokenizer(target)
    assert (plain.pad_token_id, plain.unk_token_id, plain.start_token_id,
            plain.end_token_id) == (0, 1, 2, 3)
    encoded = encode_lines(plain, [t for _, t in PAIRS[:5]], 32)
    assert encoded.dtype == np.int32 and 3 not in encoded  # no end token added to sources
    with_end = np.concatenate([np.full((5, 1), 2), encoded, np.full((5, 1), 3),
                               np.full((5, 2), 9)], 1)  # start, end, and ids after it
    assert plain.detokenize(with_end) == [t for _, t in PAIRS[:5]]


def test_never_generated_ids_are_pad_unk_and_start(tokenizers):
    _, target = tokenizers
    ids = never_generated_ids(target)
    assert ids == [0, 1, 2] and all(type(i) is int for i in ids)  # JSON-able for run folders
    assert [target.id_to_token(i) for i in ids] == ["<pad>", "<unk>", "<s>"]
    unknown = encode_lines(as_tokenizer(target), ["\u263a"], 8)[0]  # a character never seen
    assert 1 in unknown.tolist()


def test_save_and_load(tokenizers, tmp_path):
    source, _ = tokenizers
    path = tmp_path / "nested" / "source.spm"
    save_tokenizer(source, str(path))
    assert not list(path.parent.glob("*.partial"))
    reloaded = load_tokenizer(str(path))
    np.testing.assert_array_equal(reloaded(PAIRS[0][0]), source(PAIRS[0][0]))
    with pytest.raises(FileNotFoundError, match="missing.spm"):
        load_tokenizer(str(tmp_path / "missing.spm"))


def test_the_plain_reader_gives_keras_hubs_ids_and_texts(tokenizers, tmp_path):
    source, target = tokenizers
    path = tmp_path / "source.spm"
    save_tokenizer(source, str(path))
    plain = SentencePieceModel(str(path))
    texts = [s for s, _ in PAIRS[:20]] + ["\u263a unseen \u00e9t\u00e9", "", "  spaced   out  "]
    assert plain.vocabulary_size() == source.vocabulary_size()
    assert plain.tokenize(texts) == [[int(i) for i in source(text)] for text in texts]
    ids = encode_lines(plain, texts, 6)
    for text, row in zip(texts, ids.tolist()):
        expected = [int(i) for i in source(text)][:6]
        assert row == expected + [0] * (ids.shape[1] - len(expected))
    ids = encode_lines(plain, texts, 32)
    theirs = [source.detokenize(row[row != 0]) for row in ids]
    assert plain.detokenize(ids) == [
        t.numpy().decode("utf-8") if hasattr(t, "numpy") else str(t) for t in theirs]
    for token in ("<pad>", "<unk>", "<s>", "</s>", "not a piece"):
        assert plain.token_to_id(token) == source.token_to_id(token)
    size = plain.vocabulary_size()
    assert [plain.id_to_token(i) for i in range(size)] == [
        source.id_to_token(i) for i in range(size)]
    for bad in (-1, size):
        with pytest.raises(ValueError, match=rf"\[0, {size - 1}\].*Received: {bad}"):
            plain.id_to_token(bad)
    assert SentencePieceModel(source.proto).proto == path.read_bytes()


def test_the_plain_reader_refuses_what_is_not_a_model(tmp_path):
    with pytest.raises(ValueError, match="`proto`.*SentencePiece.*Received: 9 bytes"):
        SentencePieceModel(b"not a spm")
    with pytest.raises(FileNotFoundError, match="missing.spm"):
        SentencePieceModel(str(tmp_path / "missing.spm"))


def test_dataset_batches_shift_targets_and_pad(tokenizers):
    source, target = tokenizers
    dataset = make_dataset(PAIRS, source, target, batch_size=16, max_source_length=12,
                           max_target_length=12, shuffle=False)
    inputs, labels = next(iter(dataset))
    decoder = inputs["decoder_token_ids"].numpy()
    labels = labels.numpy()
    assert (decoder[:, 0] == 2).all()
    np.testing.assert_array_equal(decoder[:, 1:], np.where(labels[:, :-1] == 3, 0, labels[:, :-1]))
    assert ((labels == 3).sum(1) == 1).all()
    assert inputs["encoder_token_ids"].shape[1] <= 12
    total = sum(int(batch[1].shape[0]) for batch in dataset)
    assert total == len(PAIRS)


def test_train_tokenizer_rejects_empty_input():
    with pytest.raises(ValueError, match=r"texts.*Received"):
        train_tokenizer(["", ""], 10)


def test_as_tokenizer_reads_keras_hubs_tokenizer_as_the_plain_one(tokenizers):
    source, _ = tokenizers
    plain = as_tokenizer(source)
    assert isinstance(plain, SentencePieceModel) and isinstance(plain, Tokenizer)
    assert as_tokenizer(plain) is plain
    assert plain.tokenize(["a b"]) == [[int(i) for i in source("a b")]]
    with pytest.raises(ValueError, match=r"`tokenizer` must be a .*Tokenizer.* "
                                         r"Received: tokenizer=3"):
        as_tokenizer(3)
