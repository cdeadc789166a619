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
