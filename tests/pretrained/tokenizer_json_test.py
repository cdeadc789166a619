"""`tokenizer_json`: what transformers 5's `tokenizer.json` holds, read
exactly (the SentencePiece model rebuilt from a Unigram one, byte-level BPE
vocabulary and merges) or refused naming the field. The tokenizers built on
it are compared with `transformers`' in tokenizers_test.py."""

import json

import pytest
import sentencepiece

from keras_attention.pretrained import tokenizer_json, tokenizers
from tests.pretrained.tokenizers_test import (  # noqa: F401 (fixtures)
    TEXTS,
    bart_folder,
    bart_json_folder,
    fairseq_tokenizer,
    t5_folder,
    t5_json_folder,
)

pytestmark = pytest.mark.backend_independent("tokenizer files in Python")


def test_the_unigram_model_is_the_sentencepiece_model_it_came_from(
        t5_folder, t5_json_folder):  # noqa: F811
    """Pieces, scores, piece kinds and the ids of every text, as the
    `spiece.model` that transformers turned into the `tokenizer.json`."""
    model, added = tokenizer_json.unigram_sentencepiece_model(
        tokenizer_json.read(t5_json_folder))
    rebuilt = sentencepiece.SentencePieceProcessor(model_proto=model)
    original = sentencepiece.SentencePieceProcessor(model_file=str(t5_folder / "spiece.model"))
    assert rebuilt.get_piece_size() == original.get_piece_size() == 60
    for i in range(60):
        assert rebuilt.id_to_piece(i) == original.id_to_piece(i)
        assert rebuilt.get_score(i) == pytest.approx(original.get_score(i))
        assert (rebuilt.is_control(i), rebuilt.is_unknown(i)) == (
            original.is_control(i), original.is_unknown(i))
    assert (rebuilt.pad_id(), rebuilt.eos_id(), rebuilt.unk_id(), rebuilt.bos_id()) == (
        original.pad_id(), original.eos_id(), original.unk_id(), original.bos_id())
    for text in TEXTS + ["  two  spaces  ", "ｆｕｌｌｗｉｄｔｈ ①", "\u00e9 e\u0301"]:
        assert rebuilt.encode(text) == original.encode(text), text[:40]
    assert added == {160 - 1 - n: f"<extra_id_{n}>" for n in range(100)}


def test_bpe_merges_saved_as_pairs_or_strings_read_the_same(bart_json_folder):  # noqa: F811
    data = tokenizer_json.read(bart_json_folder)
    vocabulary, merges = tokenizer_json.bpe_vocabulary_and_merges(data)
    data["model"]["merges"] = [" ".join(rule) if isinstance(rule, list) else rule
                               for rule in data["model"]["merges"]]
    assert tokenizer_json.bpe_vocabulary_and_merges(data) == (vocabulary, merges)
    assert all(len(rule.split(" ")) == 2 for rule in merges) and merges
    assert vocabulary["<s>"] == 0 and vocabulary["</s>"] == 2


def _edited(folder, tmp_path, edit):
    """A copy of `folder`'s tokenizer.json changed by `edit(data)`."""
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    edit(data)
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("family,edit,message", [
    ("bart", lambda d: d["model"].update(type="WordPiece"),
     r"`model.type` must be 'BPE'.*Received: model.type='WordPiece'"),
    ("bart", lambda d: d["pre_tokenizer"].update(add_prefix_space=True),
     r"`pre_tokenizer.add_prefix_space` must be false"),
    ("bart", lambda d: d.update(normalizer={"type": "Lowercase"}),
     r"`normalizer` must be null.*Received: normalizer='Lowercase'"),
    ("bart", lambda d: d["model"].update(merges=[["a", "b", "c"]]),
     r"`model.merges` must be .*Received: model.merges=\['a', 'b', 'c'\]"),
    ("t5", lambda d: d["model"].update(type="BPE"),
     r"`model.type` must be 'Unigram'.*Received: model.type='BPE'"),
    ("t5", lambda d: d.update(normalizer={"type": "Lowercase"}),
     r"`normalizer` must be Precompiled.*Received: normalizer='Lowercase'"),
    ("t5", lambda d: d.update(pre_tokenizer={"type": "Whitespace"}),
     r"`pre_tokenizer` must be Metaspace.*Received: pre_tokenizer=\['Whitespace'\]"),
    ("t5", lambda d: d["model"].update(unk_id=10**6),
     r"`model.unk_id` must be the id of a piece.*Received: model.unk_id=1000000"),
    ("t5", lambda d: d["added_tokens"].append({"id": 500, "content": "<new>"}),
     r"`added_tokens` after the 60 pieces must be T5's sentinels"),
])
def test_a_tokenizer_json_we_cannot_read_right_is_refused_naming_the_field(
        family, edit, message, request, tmp_path):
    folder = _edited(request.getfixturevalue(f"{family}_json_folder"), tmp_path, edit)
    tokenizer_class = {"bart": tokenizers.BartTokenizer, "t5": tokenizers.T5Tokenizer}[family]
    with pytest.raises(ValueError, match=message):
        tokenizer_class.from_folder(folder)


@pytest.fixture(scope="module")
def nllb_json_folder(tmp_path_factory):
    """NLLB's tokenizer (a SentencePiece BPE model) saved by transformers 5."""
    folder = tmp_path_factory.mktemp("nllb")
    fairseq_tokenizer(tmp_path_factory.mktemp("nllb_spm"), "nllb").save_pretrained(str(folder))
    return folder


def test_the_bpe_model_merges_as_the_tokenizers_library_does(nllb_json_folder):
    """The SentencePiece BPE model rebuilt from NLLB's tokenizer.json gives
    the ids the `tokenizers` library gives (the template's ids aside; texts
    not ending in a space, which the file keeps as a `▁` and SentencePiece
    drops: graph_tokenizers_test)."""
    data = tokenizer_json.read(nllb_json_folder)
    model, added = tokenizer_json.bpe_sentencepiece_model(data)
    rebuilt = sentencepiece.SentencePieceProcessor(model_proto=model)
    assert rebuilt.get_piece_size() == len(data["model"]["vocab"]) and added
    theirs = tokenizers.FastTokenizer.from_folder(nllb_json_folder)
    before, after = tokenizer_json.template_ids(data)
    for text in TEXTS + ["Größe, Straße, Äpfel", "Hallo,  Welt!"]:
        text = text.rstrip()
        ids = theirs.tokenize([text])[0]
        assert ids[len(before):len(ids) - len(after)] == rebuilt.encode(text), text[:40]
    assert tokenizer_json.keeps_trailing_space(data)
    assert tokenizer_json.decoder_strips_first_space(data)


def _swap_first_merges(data):
    merges = data["model"]["merges"]
    merges.insert(1, merges.pop(0))
    data["model"]["merges"] = merges + [merges[1]]


@pytest.mark.parametrize("edit,message", [
    (lambda d: d["model"]["vocab"].update(zzz=10**6),
     r"`model.vocab` must be an object \{piece: id\} of the ids 0 to its size - 1"),
    (lambda d: d["model"]["merges"].append(["q", "zzz"]),
     r"`model.merges` must be merges of pieces making a piece. Received: model.merges='q zzz'"),
    (lambda d: d["model"]["merges"].pop(0),
     r"`model.merges` must be every pair of pieces making a piece. "
     r"Received: model.merges='missing "),
    (_swap_first_merges, r"`model.merges` must be the merges making one piece next to each"),
    (lambda d: d["model"].update(type="WordPiece"),
     r"`model.type` must be 'BPE'. Received: model.type='WordPiece'"),
])
def test_a_bpe_model_sentencepiece_would_merge_otherwise_is_refused(
        nllb_json_folder, tmp_path, edit, message):
    folder = _edited(nllb_json_folder, tmp_path, edit)
    with pytest.raises(ValueError, match=message):
        tokenizer_json.bpe_sentencepiece_model(tokenizer_json.read(folder))


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.update(post_processor={"type": "RobertaProcessing"}),
     r"`post_processor.type` must be 'TemplateProcessing'. "
     r"Received: post_processor.type='RobertaProcessing'"),
    (lambda d: d["post_processor"].update(single=[{"Sequence": {"id": "A"}},
                                                  {"Sequence": {"id": "B"}}]),
     r"`post_processor.single` must be one sequence between special tokens"),
    (lambda d: d["post_processor"].update(special_tokens={}),
     r"`post_processor.special_tokens` must be the ids of each special token of the template"),
    (lambda d: d.update(decoder={"type": "ByteLevel"}),
     r"`decoder` must be a Metaspace decoder of '\u2581'. Received: decoder='ByteLevel'"),
])
def test_a_template_or_decoder_the_graph_cannot_follow_is_refused(
        nllb_json_folder, tmp_path, edit, message):
    data = tokenizer_json.read(_edited(nllb_json_folder, tmp_path, edit))
    with pytest.raises(ValueError, match=message):
        tokenizer_json.template_ids(data)
        tokenizer_json.decoder_strips_first_space(data)


def test_a_piece_listed_twice_is_refused(t5_json_folder, tmp_path):  # noqa: F811
    def twice(data):
        data["model"]["vocab"][10] = list(data["model"]["vocab"][9])

    data = tokenizer_json.read(_edited(t5_json_folder, tmp_path, twice))
    with pytest.raises(ValueError, match=r"`model.vocab` must be pieces each listed once"):
        tokenizer_json.unigram_sentencepiece_model(data)


def test_a_run_of_spaces_replaced_by_one_metaspace_collapses_them(t5_json_folder):  # noqa: F811
    """mBART's `Replace(' {2,}', '▁')` is SentencePiece's collapsing of spaces."""
    data = tokenizer_json.read(t5_json_folder)
    data["normalizer"] = {"type": "Replace", "pattern": {"Regex": " {2,}"},
                          "content": tokenizer_json.SPIECE_UNDERLINE}
    model, _ = tokenizer_json.unigram_sentencepiece_model(data)
    rebuilt = sentencepiece.SentencePieceProcessor(model_proto=model)
    assert rebuilt.encode("a   b") == rebuilt.encode("a b")
