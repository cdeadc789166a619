"""What a Hugging Face `tokenizer.json` holds, in the form our tokenizers read.

Folders saved by `transformers` 5 hold `tokenizer.json` only (no
`vocab.json` / `merges.txt`, no `spiece.model`). Two of its models are read:

- **BPE** (BART's byte-level BPE): `bpe_vocabulary_and_merges(data)` gives
  the `{token: id}` vocabulary and the merge rules (`"a b"` strings) that
  `vocab.json` and `merges.txt` hold;
- **Unigram** (SentencePiece models: T5): `unigram_sentencepiece_model(data)`
  gives the serialized SentencePiece model (`spiece.model`'s bytes) of its
  pieces, scores, normalization (the precompiled character map) and
  whitespace handling (`▁` prefix, runs of spaces), and the added tokens
  after the pieces (T5's sentinels), which are not pieces of the model.

Anything else (another model type, a normalizer or pre-tokenizer that
changes the tokens in a way the SentencePiece or BPE reading cannot
reproduce) is refused in one line naming the field, never approximated.

Example:

>>> data = {"model": {"type": "WordPiece", "vocab": {}}}
>>> bpe_vocabulary_and_merges(data)
Traceback (most recent call last):
...
ValueError: tokenizer.json: `model.type` must be 'BPE' (a byte-level BPE, as BART's). \
Received: model.type='WordPiece'
"""

import base64
import re
import struct

from keras_attention.pretrained.checkpoint import read_json

FILE = "tokenizer.json"
SPIECE_UNDERLINE = "\u2581"
# SentencePiece's piece types and model type (sentencepiece_model.proto).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _BYTE = 1, 2, 3, 4, 6
_UNIGRAM = 1
_BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")


def read(folder):
    """The JSON object of `folder`'s `tokenizer.json` (one-line errors
    naming the file; only a plain file inside the folder is read)."""
    return read_json(folder, FILE)


def _refuse(field, expected, received):
    raise ValueError(f"{FILE}: `{field}` must be {expected}. Received: {field}={received!r}")


def _model(data, model_type, expected):
    model = data.get("model")
    if not isinstance(model, dict):
        _refuse("model", "an object", model)
    if model.get("type") != model_type:
        _refuse("model.type", expected, model.get("type"))
    return model


def _parts(component, key):
    """The components of a `Sequence` (or the one component) of
    `normalizer` / `pre_tokenizer`, as a list."""
    if component is None:
        return []
    if component.get("type") == "Sequence":
        return list(component.get(key) or [])
    return [component]


def _added_tokens(data):
    """`{id: token}` of `added_tokens`."""
    added = data.get("added_tokens") or []
    if not isinstance(added, list) or not all(
            isinstance(t, dict) and isinstance(t.get("id"), int)
            and isinstance(t.get("content"), str) for t in added):
        _refuse("added_tokens", "a list of {id, content} objects", added)
    return {t["id"]: t["content"] for t in added}


# BPE ------------------------------------------------------------------------


def bpe_vocabulary_and_merges(data):
    """`({token: id}, ["a b", ...])` of a byte-level BPE `tokenizer.json`.

    Args:
        data: the file's JSON object (`read(folder)`).

    Raises:
        ValueError: naming the field, for another model, a pre-tokenizer
            other than byte-level without a prefix space, a normalizer, or
            malformed vocabulary and merges.
    """
    model = _model(data, "BPE", "'BPE' (a byte-level BPE, as BART's)")
    if data.get("normalizer") is not None:
        _refuse("normalizer", "null (BART's byte-level BPE normalizes nothing)",
                data["normalizer"].get("type"))
    pre = _parts(data.get("pre_tokenizer"), "pretokenizers")
    if [p.get("type") for p in pre] != ["ByteLevel"]:
        _refuse("pre_tokenizer", "one ByteLevel pre-tokenizer", [p.get("type") for p in pre])
    if pre[0].get("add_prefix_space"):
        _refuse("pre_tokenizer.add_prefix_space", "false (BART's)", True)
    for field in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(field):
            _refuse(f"model.{field}", "unset (plain byte-level BPE)", model[field])
    vocabulary = model.get("vocab")
    if not isinstance(vocabulary, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in vocabulary.items()):
        _refuse("model.vocab", "an object {token: id}", type(vocabulary).__name__)
    vocabulary = dict(vocabulary)
    for token_id, token in _added_tokens(data).items():
        if vocabulary.setdefault(token, token_id) != token_id:
            _refuse("added_tokens", f"ids agreeing with model.vocab ({token!r}: "
                    f"{vocabulary[token]})", {token: token_id})
    return vocabulary, [_merge(rule) for rule in model.get("merges") or []]


def _merge(rule):
    """`"a b"` of a merge rule saved as `"a b"` or as `["a", "b"]`."""
    if isinstance(rule, str) and len(rule.split(" ")) == 2:
        return rule
    if (isinstance(rule, list) and len(rule) == 2 and all(isinstance(p, str) and " " not in p
                                                          for p in rule)):
        return f"{rule[0]} {rule[1]}"
    _refuse("model.merges", "a list of 'a b' strings or [a, b] pairs", rule)


# Unigram ---------------------------------------------------------------------


def unigram_sentencepiece_model(data):
    """`(model, added)` of a Unigram `tokenizer.json`: `model` the bytes of
    the SentencePiece model of its pieces, `added` the `{id: token}` of
    added tokens after the last piece (T5's sentinels `<extra_id_N>`).

    Args:
        data: the file's JSON object (`read(folder)`).

    Raises:
        ValueError: naming the field, for another model, a normalizer or
            pre-tokenizer SentencePiece does not apply, or malformed pieces.
    """
    model = _model(data, "Unigram", "'Unigram' (a SentencePiece model, as T5's)")
    pieces = model.get("vocab")
    if not isinstance(pieces, list) or not pieces or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
            and isinstance(p[1], (int, float)) for p in pieces):
        _refuse("model.vocab", "a non-empty list of [piece, score] pairs",
                type(pieces).__name__)
    added = _added_tokens(data)
    count = len(pieces)
    while count > 1 and added.get(count - 1) == pieces[count - 1][0] and (
            re.fullmatch(r"<extra_id_\d+>", pieces[count - 1][0])):
        count -= 1  # the sentinels some converters list as pieces too
    unk_id = model.get("unk_id")
    if not isinstance(unk_id, int) or not 0 <= unk_id < count:
        _refuse("model.unk_id", f"the id of a piece (0 to {count - 1})", unk_id)
    normalizer = _normalizer_spec(data.get("normalizer"))
    add_prefix, split_spaces = _whitespace(data.get("pre_tokenizer"))
    byte_fallback = bool(model.get("byte_fallback"))
    types = [_piece_type(i, piece, unk_id, added, byte_fallback)
             for i, (piece, _) in enumerate(pieces[:count])]
    spec = _trainer_spec(pieces[:count], types, unk_id, byte_fallback)
    remove_extra = split_spaces or normalizer.pop("remove_extra_whitespaces")
    normalizer_spec = (_string(1, normalizer["name"]) + _bytes(2, normalizer["charsmap"])
                       + _varint_field(3, add_prefix) + _varint_field(4, remove_extra)
                       + _varint_field(5, True))
    proto = b"".join(
        _bytes(1, _string(1, piece) + _float(2, score) + _varint_field(3, kind))
        for (piece, score), kind in zip(pieces[:count], types)
    ) + _bytes(2, spec) + _bytes(3, normalizer_spec)
    after = {i: token for i, token in added.items() if i >= count}
    return proto, after


def _piece_type(index, piece, unk_id, added, byte_fallback):
    if index == unk_id:
        return _UNKNOWN
    if byte_fallback and _BYTE_PIECE.fullmatch(piece):
        return _BYTE
    if added.get(index) == piece:
        return _CONTROL if re.fullmatch(r"<[^<>\s]+>", piece) else _USER_DEFINED
    return _NORMAL


def _trainer_spec(pieces, types, unk_id, byte_fallback):
    """model type, vocabulary size and the special ids (-1 where absent)."""
    ids = {piece: i for i, (piece, _) in enumerate(pieces)}
    special = [ids[name] if name in ids and types[ids[name]] == _CONTROL else -1
               for name in ("<s>", "</s>", "<pad>")]
    return (_varint_field(3, _UNIGRAM) + _varint_field(4, len(pieces))
            + _varint_field(35, byte_fallback) + _varint_field(40, unk_id)
            + b"".join(_varint_field(field, value)
                       for field, value in zip((41, 42, 43), special)))


def _normalizer_spec(normalizer):
    """`{"name", "charsmap", "remove_extra_whitespaces"}` of the
    normalizers SentencePiece applies: its precompiled character map and the
    collapsing of runs of spaces."""
    spec = {"name": "identity", "charsmap": b"", "remove_extra_whitespaces": False}
    for part in _parts(normalizer, "normalizers"):
        kind = part.get("type")
        if kind == "Precompiled":
            charsmap = part.get("precompiled_charsmap") or ""
            try:
                spec.update(name="nmt_nfkc", charsmap=base64.b64decode(charsmap, validate=True))
            except (ValueError, TypeError):
                _refuse("normalizer.precompiled_charsmap", "base64", str(charsmap)[:40])
        elif kind == "Replace" and (part.get("pattern") or {}).get("Regex") == " {2,}" and (
                part.get("content") == " "):
            spec["remove_extra_whitespaces"] = True
        elif kind == "Strip":
            continue  # the ends' spaces, which SentencePiece's prefix handling drops too
        else:
            _refuse("normalizer", "Precompiled, Replace(' {2,}', ' ') or Strip (what "
                    "SentencePiece applies)", kind)
    return spec


def _whitespace(pre_tokenizer):
    """`(add_dummy_prefix, split_on_whitespace)` of a Metaspace pre-tokenizer
    (after an optional WhitespaceSplit)."""
    parts = _parts(pre_tokenizer, "pretokenizers")
    kinds = [p.get("type") for p in parts]
    if kinds not in (["Metaspace"], ["WhitespaceSplit", "Metaspace"]):
        _refuse("pre_tokenizer", "Metaspace, after an optional WhitespaceSplit (SentencePiece's "
                "whitespace)", kinds)
    metaspace = parts[-1]
    if metaspace.get("replacement", SPIECE_UNDERLINE) != SPIECE_UNDERLINE:
        _refuse("pre_tokenizer.replacement", repr(SPIECE_UNDERLINE), metaspace["replacement"])
    scheme = metaspace.get("prepend_scheme")
    if scheme is None:  # the older form
        scheme = "always" if metaspace.get("add_prefix_space", True) else "never"
    if scheme not in ("always", "first", "never"):
        _refuse("pre_tokenizer.prepend_scheme", "'always', 'first' or 'never'", scheme)
    return scheme != "never", kinds[0] == "WhitespaceSplit"


# Protocol buffer wire format, for the few fields of a SentencePiece model.


def _varint(value):
    value &= (1 << 64) - 1  # negative int32 values take ten bytes
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint_field(field, value):
    return _varint(field << 3) + _varint(int(value))


def _bytes(field, value):
    return _varint(field << 3 | 2) + _varint(len(value)) + value


def _string(field, value):
    return _bytes(field, value.encode("utf-8"))


def _float(field, value):
    return _varint(field << 3 | 5) + struct.pack("<f", value)


__all__ = ["FILE", "bpe_vocabulary_and_merges", "read", "unigram_sentencepiece_model"]
