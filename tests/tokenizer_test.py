"""The one tokenizer contract (`keras_attention.tokenizer`): the base class,
`encode_lines`, and every tokenizer a model runs with (a recipe's
SentencePiece model, each checkpoint family's) implementing it with the ids
and strings the families gave before (`transformers`' for the checkpoints,
keras-hub's for the recipes)."""

import numpy as np
import pytest
import transformers

from keras_attention import data
from keras_attention.pretrained import families, tokenizers
from keras_attention.tokenizer import Tokenizer, encode_lines, id_rows, keep_last
from tests.pretrained.tokenizers_test import (  # noqa: F401 (fixtures)
    FAST,
    GERMAN,
    TEXTS,
    bart_folder,
    fast_folder,
    m2m100_folder,
    marian_folder,
    mbart_older_folder_files,
    nllb_older_folder_files,
    pegasus_older_folder_files,
    t5_folder,
)

pytestmark = pytest.mark.backend_independent("tokenizer files and Python tokenizers")


class _Characters(Tokenizer):
    """One id per character (1), the end token (0) appended, padded with 9."""

    pad_token_id, end_token_id = 9, 0

    def tokenize(self, texts):
        return [[1] * len(text) + [self.end_token_id] for text in texts]

    def truncate(self, token_ids, max_length):
        return keep_last(token_ids, max_length)


class _Plain(_Characters):
    """As `_Characters`, cut as the base class cuts (its first ids)."""

    truncate = Tokenizer.truncate


def test_sources_are_padded_and_cut_keeping_the_end_token():
    ids = encode_lines(_Characters(), ["ab", "", "abcdefgh"], 5)
    assert ids.dtype == np.int32
    np.testing.assert_array_equal(ids, [[1, 1, 0, 9, 9], [0, 9, 9, 9, 9], [1, 1, 1, 1, 0]])


def test_sources_are_not_cut_without_a_length():
    ids = encode_lines(_Characters(), ["abcdefgh", "a"])
    np.testing.assert_array_equal(ids, [[1] * 8 + [0], [1, 0] + [9] * 7])


def test_the_base_class_cuts_to_the_first_ids():
    np.testing.assert_array_equal(encode_lines(_Plain(), ["abcdefgh", "a"], 3),
                                  [[1, 1, 1], [1, 0, 9]])
    assert Tokenizer().truncate([5, 6, 7], 2) == [5, 6] and keep_last([5, 6, 7], 2) == [5, 7]
    assert keep_last([5, 6], 2) == [5, 6]


def test_the_base_class_names_what_a_subclass_must_implement():
    tokenizer = Tokenizer()
    for call, name in ((lambda: tokenizer.tokenize(["a"]), "tokenize"),
                       (lambda: tokenizer.detokenize([[1]]), "detokenize"),
                       (tokenizer.vocabulary_size, "vocabulary_size")):
        with pytest.raises(NotImplementedError, match=rf"Tokenizer must implement `{name}`"):
            call()
    assert _Characters().tokenize_targets(["ab"]) == [[1, 1, 0]]  # the source side by default
    assert (tokenizer.start_token_id, tokenizer.unk_token_id) == (None, None)


def test_id_rows_takes_lists_and_arrays():
    assert id_rows(np.array([3, 4])) == [[3, 4]]
    assert id_rows(np.array([[3], [4]], "int64")) == [[3], [4]]
    assert all(type(i) is int for i in id_rows(np.array([[3, 4]]))[0])


@pytest.mark.parametrize("tokenizer, max_length, pattern", [
    (object(), 4, r"`tokenizer` must be a `keras_attention.tokenizer.Tokenizer`"),
    (_Characters(), 0, r"`max_length` must be a positive int or None. Received: max_length=0"),
    (_Characters(), True, r"Received: max_length=True"),
])
def test_encode_lines_refuses_bad_arguments(tokenizer, max_length, pattern):
    with pytest.raises(ValueError, match=pattern):
        encode_lines(tokenizer, ["a"], max_length)


## The recipe's tokenizer


def test_the_recipe_tokenizer_keeps_keras_hubs_ids_and_texts():
    pairs = data.make_date_pairs(200, seed=0)
    trained = data.train_tokenizer([t for _, t in pairs], 40)
    plain = data.as_tokenizer(trained)
    assert isinstance(plain, Tokenizer) and isinstance(plain, data.SentencePieceModel)
    assert plain.vocabulary_size() == trained.vocabulary_size()
    texts = [t for _, t in pairs[:8]] + ["", "\u263a unseen"]
    assert plain.tokenize(texts) == [[int(i) for i in trained(t)] for t in texts]  # no specials
    assert (plain.pad_token_id, plain.unk_token_id, plain.start_token_id,
            plain.end_token_id) == (0, 1, 2, 3)
    ids = encode_lines(plain, texts, 6)  # cut to the first ids, padded with <pad>
    for text, row in zip(texts, ids.tolist()):
        kept = [int(i) for i in trained(text)][:6]
        assert row == kept + [0] * (ids.shape[1] - len(kept))
    # Generated rows: start, the ids, end, then anything: cut at the end token.
    generated = [[2] + row + [3, 7, 7] for row in plain.tokenize(texts)]
    theirs = [trained.detokenize(row[1:-3]) if len(row) > 4 else "" for row in generated]
    theirs = [t.numpy().decode("utf-8") if hasattr(t, "numpy") else str(t) for t in theirs]
    assert plain.detokenize(generated) == theirs
    assert plain.detokenize(generated)[:8] == texts[:8]


## The checkpoint families


def _marian(folder):
    return tokenizers.MarianTokenizer.from_folder(folder), transformers.MarianTokenizer(
        str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"))


def _bart(folder):
    return (tokenizers.BartTokenizer.from_folder(folder),
            transformers.BartTokenizer.from_pretrained(str(folder)))


def _t5(folder):
    return (tokenizers.T5Tokenizer.from_folder(folder),
            transformers.T5Tokenizer.from_pretrained(str(folder)))


def assert_the_contract(ours, theirs, texts, target=False):
    """`ours` a `Tokenizer` giving `theirs`' ids and texts (what its former
    `encode` / `decode` were checked to give), a cut row keeping its last id,
    padded with its pad id."""
    assert isinstance(ours, Tokenizer)
    assert isinstance(ours.vocabulary_size(), int) and ours.vocabulary_size() == len(theirs)
    assert (ours.pad_token_id, ours.end_token_id) == (theirs.pad_token_id, theirs.eos_token_id)
    expected = (theirs(text_target=texts) if target else theirs(texts))["input_ids"]
    ids = ours.tokenize_targets(texts) if target else ours.tokenize(texts)
    assert ids == [list(row) for row in expected]
    assert ours.detokenize(expected) == theirs.batch_decode(expected, skip_special_tokens=True)
    longest = max(ids, key=len)
    cut = encode_lines(ours, texts, 4)
    assert cut.shape == (len(texts), 4) and cut[ids.index(longest), -1] == longest[-1]
    assert ours.pad_token_id in cut[[len(row) < 4 for row in ids]]


@pytest.mark.parametrize("family", ["marian", "bart", "t5"])
def test_each_checkpoint_tokenizer_is_a_tokenizer(family, request):
    folder = request.getfixturevalue(f"{family}_folder")
    ours, theirs = {"marian": _marian, "bart": _bart, "t5": _t5}[family](folder)
    assert_the_contract(ours, theirs, TEXTS)
    if family == "marian":  # its target side: `target.spm`
        assert_the_contract(ours, theirs, GERMAN[:5] + TEXTS[:3], target=True)
        assert ours.tokenize_targets(GERMAN[:1]) != ours.tokenize(GERMAN[:1])
    assert ours.start_token_id == (theirs.bos_token_id if family == "bart" else None)
    assert ours.unk_token_id == theirs.unk_token_id


def test_a_tokenizer_json_tokenizer_is_a_tokenizer(fast_folder):  # noqa: F811
    name, folder = fast_folder
    ours = tokenizers.FastTokenizer.from_folder(folder)
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert_the_contract(ours, theirs, TEXTS + GERMAN[:3])
    assert ours.unk_token_id == theirs.unk_token_id


def test_m2m100s_own_files_make_a_tokenizer(m2m100_folder):  # noqa: F811
    ours = tokenizers.M2M100Tokenizer.from_folder(m2m100_folder)
    theirs = transformers.AutoTokenizer.from_pretrained(str(m2m100_folder))
    assert_the_contract(ours, theirs, TEXTS + GERMAN[:3])
    assert (ours.start_token_id, ours.unk_token_id) == (theirs.bos_token_id, theirs.unk_token_id)


@pytest.mark.parametrize("reader, make", [
    (tokenizers.MBartSentencePieceFolder, mbart_older_folder_files),
    (tokenizers.PegasusSentencePieceFolder, pegasus_older_folder_files),
    (tokenizers.NllbSentencePieceFolder, nllb_older_folder_files)])
def test_an_older_sentencepiece_folder_reads_as_a_tokenizer(reader, make, tmp_path):
    theirs = make(tmp_path)
    assert issubclass(reader, Tokenizer)
    assert_the_contract(reader.from_folder(tmp_path), theirs, TEXTS + GERMAN[:3])


def test_every_family_reads_its_folders_as_tokenizers():
    """Each family's reader (a class, or `OneOf` classes) gives a `Tokenizer`."""
    for family in families.names_with_tokenizers():
        reader = families.FAMILIES[family].tokenizer
        classes = reader.classes if isinstance(reader, tokenizers.OneOf) else (reader,)
        assert all(issubclass(c, Tokenizer) for c in classes), family
