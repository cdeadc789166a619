"""What a Hugging Face `tokenizer.json` holds, in the form our tokenizers read.

Folders saved by `transformers` 5 hold `tokenizer.json` only (no
`vocab.json` / `merges.txt`, no `spiece.model`). Three of its models are read:

- **BPE** (BART's byte-level BPE): `bpe_vocabulary_and_merges(data)` gives
  the `{token: id}` vocabulary and the merge rules (`"a b"` strings) that
  `vocab.json` and `merges.txt` hold;
- **Unigram** (SentencePiece models: T5): `unigram_sentencepiece_model(data)`
  gives the serialized SentencePiece model (`spiece.model`'s bytes) of its
  pieces, scores, normalization (the precompiled character map) and
  whitespace handling (`▁` prefix, runs of spaces), and the added tokens
  after the pieces (T5's sentinels), which are not pieces of the model;
- **SentencePiece BPE** (NLLB's): `bpe_sentencepiece_model(data)`, the same
  for a BPE model with SentencePiece's whitespace, each piece scored by the
  rank of the merge making it.

The other way, `from_sentencepiece(proto)` writes the `tokenizer.json` of a
SentencePiece Unigram model (a recipe run's `.spm`), built with the
`tokenizers` package, whose `transformers` tokenizer gives the model's ids
and texts (the export of recipe runs, `export.huggingface`).

For the serving graph of such a file: `template_ids` (the special ids around
a text), `added_tokens` (matched in a text before the model),
`keeps_trailing_space` and `decoder_strips_first_space` (where the file's
whitespace handling differs from SentencePiece's).

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
_UNIGRAM, _BPE = 1, 2
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
    return _sentencepiece_model(data, pieces[:count], model.get("unk_id"), _UNIGRAM)


def bpe_sentencepiece_model(data):
    """`(model, added)` of a SentencePiece BPE model saved as a BPE
    `tokenizer.json` with SentencePiece's whitespace (NLLB's), as
    `unigram_sentencepiece_model`: each piece's score is minus the rank of
    the first merge making it, so SentencePiece merges in the file's order.

    Raises:
        ValueError: naming the field, for a file whose merges SentencePiece
            would not apply in the same order: ids with gaps, a merge of
            pieces outside the vocabulary, the merges making one piece apart
            in the list, or a pair of pieces making another piece that is not
            a merge (every one is, in a file converted from SentencePiece).
    """
    model = _model(data, "BPE", "'BPE'")
    vocabulary = model.get("vocab")
    if not isinstance(vocabulary, dict) or sorted(vocabulary.values()) != list(
            range(len(vocabulary))) or not vocabulary:
        _refuse("model.vocab", "an object {piece: id} of the ids 0 to its size - 1",
                type(vocabulary).__name__)
    merges = [_merge(rule).split(" ") for rule in model.get("merges") or []]
    first, last = {}, {}  # the ranks of the first and last merges making each piece
    for index, (left, right) in enumerate(merges):
        made = left + right
        if not {left, right, made} <= vocabulary.keys():
            _refuse("model.merges", "merges of pieces making a piece", f"{left} {right}")
        if made in last and last[made] != index - 1:
            _refuse("model.merges", "the merges making one piece next to each other",
                    f"{left} {right}")
        first.setdefault(made, index)
        last[made] = index
    pairs = {(a, b) for a, b in merges}
    for piece in vocabulary:
        for cut in range(1, len(piece)):
            if piece[:cut] in vocabulary and piece[cut:] in vocabulary and (
                    (piece[:cut], piece[cut:]) not in pairs):
                _refuse("model.merges", "every pair of pieces making a piece",
                        f"missing {piece[:cut]} {piece[cut:]}")
    pieces = [[piece, -float(first.get(piece, 0))]
              for piece in sorted(vocabulary, key=vocabulary.get)]
    return _sentencepiece_model(data, pieces, vocabulary.get(model.get("unk_token")), _BPE)


def _sentencepiece_model(data, pieces, unk_id, model_type):
    """`(model, added)`: the SentencePiece model of `pieces` (`[piece,
    score]` in id order) with the file's normalizer and whitespace."""
    seen = set()
    for piece, _ in pieces:
        if piece in seen:
            _refuse("model.vocab", "pieces each listed once (a SentencePiece model holds each "
                    "piece once)", piece)
        seen.add(piece)
    count = len(pieces)
    if not isinstance(unk_id, int) or not 0 <= unk_id < count:
        _refuse("model.unk_id", f"the id of a piece (0 to {count - 1})", unk_id)
    added = _added_tokens(data)
    normalizer = _normalizer_spec(data.get("normalizer"))
    add_prefix, split_spaces = _whitespace(data.get("pre_tokenizer"))
    byte_fallback = bool(data["model"].get("byte_fallback"))
    types = [_piece_type(i, piece, unk_id, added, byte_fallback)
             for i, (piece, _) in enumerate(pieces)]
    spec = _trainer_spec(pieces, types, unk_id, byte_fallback, model_type)
    remove_extra = split_spaces or normalizer.pop("remove_extra_whitespaces")
    normalizer_spec = (_string(1, normalizer["name"]) + _bytes(2, normalizer["charsmap"])
                       + _varint_field(3, add_prefix) + _varint_field(4, remove_extra)
                       + _varint_field(5, True))
    proto = b"".join(
        _bytes(1, _string(1, piece) + _float(2, score) + _varint_field(3, kind))
        for (piece, score), kind in zip(pieces, types)
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


def _trainer_spec(pieces, types, unk_id, byte_fallback, model_type):
    """model type, vocabulary size and the special ids (-1 where absent)."""
    ids = {piece: i for i, (piece, _) in enumerate(pieces)}
    special = [ids[name] if name in ids and types[ids[name]] == _CONTROL else -1
               for name in ("<s>", "</s>", "<pad>")]
    return (_varint_field(3, model_type) + _varint_field(4, len(pieces))
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
                part.get("content") in (" ", SPIECE_UNDERLINE)):
            # A run of spaces as one space, or as one `▁` (mBART's), which
            # the Metaspace pre-tokenizer splits on as on a space.
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


def keeps_trailing_space(data):
    """Whether a text ending in spaces gets one `▁` piece for them (a
    Metaspace pre-tokenizer with no right `Strip` normalizer and no
    `WhitespaceSplit` before it: Pegasus's, not mBART's). SentencePiece
    drops them."""
    stripped = any(part.get("type") == "Strip" and part.get("strip_right", True)
                   for part in _parts(data.get("normalizer"), "normalizers"))
    split = [p.get("type") for p in _parts(data.get("pre_tokenizer"), "pretokenizers")][:1] == [
        "WhitespaceSplit"]
    return not (stripped or split)


def decoder_strips_first_space(data):
    """Whether the file's Metaspace decoder drops the space of the first
    piece (it turns `▁` into spaces and keeps every other one, where
    SentencePiece drops all leading spaces).

    Raises:
        ValueError: naming `decoder`, for another decoder.
    """
    decoder = data.get("decoder")
    if not isinstance(decoder, dict) or decoder.get("type") != "Metaspace" or decoder.get(
            "replacement", SPIECE_UNDERLINE) != SPIECE_UNDERLINE:
        _refuse("decoder", "a Metaspace decoder of '\u2581'",
                decoder.get("type") if isinstance(decoder, dict) else decoder)
    scheme = decoder.get("prepend_scheme")
    if scheme is None:  # the older form
        return bool(decoder.get("add_prefix_space", True))
    return scheme != "never"


def added_tokens(data):
    """`[(content, id, lstrip, rstrip)]` of `added_tokens`: the texts the
    tokenizer matches in its input before its model (special tokens, language
    codes), with whether each takes the spaces to its left / right."""
    _added_tokens(data)  # checks the form
    return [(t["content"], t["id"], bool(t.get("lstrip")), bool(t.get("rstrip")))
            for t in data.get("added_tokens") or []]


def template_ids(data):
    """`(before, after)`: the ids the file's post-processor puts around a
    single text (a `TemplateProcessing`'s `single`: mBART's `X </s> en_XX`,
    NLLB's `eng_Latn X </s>`, Pegasus's `X </s>`).

    Raises:
        ValueError: naming `post_processor`, for another post-processor or a
            template of several sequences.
    """
    processor = data.get("post_processor")
    if not isinstance(processor, dict) or processor.get("type") != "TemplateProcessing":
        _refuse("post_processor.type", "'TemplateProcessing'",
                processor.get("type") if isinstance(processor, dict) else processor)
    single = processor.get("single")
    sequences = [i for i, part in enumerate(single or []) if "Sequence" in part]
    if not isinstance(single, list) or len(sequences) != 1:
        _refuse("post_processor.single", "one sequence between special tokens", single)
    special = processor.get("special_tokens") or {}
    parts = []
    for part in single:
        if "Sequence" in part:
            continue
        name = (part.get("SpecialToken") or {}).get("id")
        ids = (special.get(name) or {}).get("ids")
        if not (isinstance(ids, list) and all(isinstance(i, int) for i in ids)):
            _refuse("post_processor.special_tokens", "the ids of each special token of the "
                    "template", name)
        parts.append(ids)
    split = sequences[0]
    return [i for ids in parts[:split] for i in ids], [i for ids in parts[split:] for i in ids]


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


__all__ = ["FILE", "added_tokens", "bpe_sentencepiece_model", "bpe_vocabulary_and_merges",
           "decoder_strips_first_space", "keeps_trailing_space", "read", "template_ids",
           "unigram_sentencepiece_model"]


def from_sentencepiece(proto, order=None):
    """The `tokenizer.json` text of a serialized SentencePiece Unigram model
    (`proto`: bytes), its pieces numbered as in the model or, with `order`
    (a permutation of the piece ids), piece `order[i]` as id `i` (the
    tokens of a checkpoint renumbered: `bart.renumber_tokens`): its pieces
    and scores, its normalization (the
    precompiled character map, runs of spaces as one, no space at either
    end), SentencePiece's `▁` whitespace, its control and unknown pieces as
    special tokens, and no template (no special token is added to a text,
    as our recipes' sources have none). Built with the `tokenizers` package.

    Raises:
        ValueError: for a model that is not Unigram, or without the
            whitespace handling SentencePiece trains by default.
    """
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import Unigram

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(proto)
    trainer, normalizer = model.trainer_spec, model.normalizer_spec
    if trainer.model_type != _UNIGRAM:
        _refuse("model.type", "a SentencePiece Unigram model", trainer.model_type)
    if not normalizer.add_dummy_prefix or not normalizer.remove_extra_whitespaces:
        _refuse("normalizer", "SentencePiece's default whitespace (a dummy prefix, runs of "
                "spaces removed)", normalizer.name)
    order = list(range(len(model.pieces))) if order is None else [int(i) for i in order]
    if sorted(order) != list(range(len(model.pieces))):
        raise ValueError(f"Argument `order` must be a permutation of the {len(model.pieces)} "
                         f"piece ids. Received: order of {len(order)} ids")
    pieces = [(model.pieces[i].piece, model.pieces[i].score) for i in order]
    tokenizer = Tokenizer(Unigram(pieces, order.index(trainer.unk_id), trainer.byte_fallback))
    steps = [normalizers.Strip(left=True, right=True),
             normalizers.Replace(Regex(" {2,}"), " ")]
    if normalizer.precompiled_charsmap:
        steps.insert(0, normalizers.Precompiled(normalizer.precompiled_charsmap))
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPIECE_UNDERLINE,
                                                       prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement=SPIECE_UNDERLINE,
                                           prepend_scheme="always")
    special = [model.pieces[i].piece for i in order
               if model.pieces[i].type in (_CONTROL, _UNKNOWN)]
    tokenizer.add_special_tokens([AddedToken(piece, normalized=False) for piece in special])
    return tokenizer.to_str()
