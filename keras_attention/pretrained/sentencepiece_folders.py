"""The `tokenizer.json` that `transformers` 5 makes from an older folder's
SentencePiece model (a folder saved by a slow tokenizer: no `tokenizer.json`).

`transformers` 5 runs these families' tokenizers from a `tokenizer.json`;
given an older folder, its tokenizer class builds that file from the
SentencePiece model. `mbart_tokenizer_json` builds the same object for
mBART (`MBartTokenizer`) and mBART-50 (`MBart50Tokenizer`) folders
(`sentencepiece.bpe.model` + `tokenizer_config.json`): fairseq's ids (`<s>`
0, `<pad>` 1, `</s>` 2, `<unk>` 3, the pieces after SentencePiece's three
special ones from 4), the language codes and `<mask>` after the pieces, the
model's precompiled normalization, and each class's whitespace handling and
template; `pegasus_tokenizer_json` for Pegasus folders (`spiece.model`).
`FastTokenizer` reads it as it reads a saved `tokenizer.json`, and its graph
twin serves it.

Example:

>>> MBART_LANGUAGE_CODES["MBartTokenizer"][:3]
('ar_AR', 'cs_CZ', 'de_DE')
"""

import base64
import struct

from keras_attention.pretrained.tokenizer_json import SPIECE_UNDERLINE

_MBART_25 = (
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN", "hi_IN",
    "it_IT", "ja_XX", "kk_KZ", "ko_KR", "lt_LT", "lv_LV", "my_MM", "ne_NP", "nl_XX", "ro_RO",
    "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN")
#: fairseq's language codes of mBART (25) and mBART-50 (52), by the
#: `tokenizer_class` of the folder's `tokenizer_config.json`.
MBART_LANGUAGE_CODES = {
    "MBartTokenizer": _MBART_25,
    "MBart50Tokenizer": _MBART_25 + (
        "af_ZA", "az_AZ", "bn_IN", "fa_IR", "he_IL", "hr_HR", "id_ID", "ka_GE", "km_KH", "mk_MK",
        "ml_IN", "mn_MN", "mr_IN", "pl_PL", "ps_AF", "pt_XX", "sv_SE", "sw_KE", "ta_IN", "te_IN",
        "th_TH", "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI"),
}


def sentencepiece_pieces(model):
    """`(pieces, charsmap)` of a serialized SentencePiece model: `[(piece,
    score)]` in id order, and the precompiled normalization map (bytes).

    Raises:
        ValueError: for bytes that are not a SentencePiece model.
    """
    pieces, charsmap = [], b""
    for field, value in _fields(model):
        if field == 1:
            piece = dict(_fields(value))
            pieces.append((piece.get(1, b"").decode("utf-8"),
                           struct.unpack("<f", piece.get(2, b"\0\0\0\0"))[0]))
        elif field == 3:
            charsmap = dict(_fields(value)).get(2, b"")
    if not pieces:
        raise ValueError("The SentencePiece model has no pieces.")
    return pieces, charsmap


def mbart_tokenizer_json(model, tokenizer_class, src_lang=None):
    """The `tokenizer.json` object `transformers` 5 makes for an mBART or
    mBART-50 folder.

    Args:
        model: the bytes of `sentencepiece.bpe.model`.
        tokenizer_class: `"MBartTokenizer"` or `"MBart50Tokenizer"`.
        src_lang: a language code of the class (default `en_XX`).

    Raises:
        ValueError: naming `tokenizer_class` or `src_lang`.
    """
    if tokenizer_class not in MBART_LANGUAGE_CODES:
        raise ValueError(f"tokenizer_config.json: `tokenizer_class` must be one of "
                         f"{sorted(MBART_LANGUAGE_CODES)}. "
                         f"Received: tokenizer_class={tokenizer_class!r}")
    codes = MBART_LANGUAGE_CODES[tokenizer_class]
    src_lang = "en_XX" if src_lang is None else src_lang
    if src_lang not in codes:
        raise ValueError(f"tokenizer_config.json: `src_lang` must be a language code of "
                         f"{tokenizer_class}. Received: src_lang={src_lang!r}")
    pieces, charsmap = sentencepiece_pieces(model)
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = [[token, 0.0] for token in specials] + [list(p) for p in pieces[3:]]
    vocab += [[code, 0.0] for code in codes] + [["<mask>", 0.0]]
    ids = {token: i for i, (token, _) in enumerate(vocab)}
    mbart50 = tokenizer_class == "MBart50Tokenizer"
    normalizers = [{"type": "Precompiled",
                    "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")}
                   ] if charsmap else []
    normalizers += [{"type": "Strip", "strip_left": False, "strip_right": True},
                    {"type": "Replace", "pattern": {"Regex": " {2,}"},
                     "content": " " if mbart50 else SPIECE_UNDERLINE}]
    metaspace = {"type": "Metaspace", "replacement": SPIECE_UNDERLINE,
                 "prepend_scheme": "always", "split": True}
    single = ([src_lang, "$A", "</s>"] if mbart50 else ["$A", "</s>", src_lang])
    return {
        "version": "1.0",
        "added_tokens": [_added(ids[token], token) for token in specials + list(codes)]
        + [_added(ids["<mask>"], "<mask>", lstrip=True)],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace if mbart50 else {
            "type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]},
        "post_processor": _template(single, ids),
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
    }


#: What `pegasus_tokenizer_json` builds: a folder's config must agree.
PEGASUS_DEFAULTS = {"offset": 103, "pad_token": "<pad>", "eos_token": "</s>",
                    "unk_token": "<unk>", "mask_token": "<mask_2>", "mask_token_sent": "<mask_1>"}


def pegasus_tokenizer_json(model, config=None):
    """The `tokenizer.json` object `transformers` 5 makes for a Pegasus
    folder (`spiece.model`): `<pad>` `</s>` `<mask_1>` `<mask_2>`, the 101
    placeholders `<unk_2>` ... `<unk_102>`, then the pieces after
    SentencePiece's `<pad>` and `</s>` (103 ids later), `X </s>`.

    Args:
        model: the bytes of `spiece.model`.
        config: `tokenizer_config.json`'s object, or None; its offset and
            special tokens must be `PEGASUS_DEFAULTS`.

    Raises:
        ValueError: naming a setting of `config` other than the default.
    """
    for key, value in (config or {}).items():
        if key in PEGASUS_DEFAULTS and _content(value) != PEGASUS_DEFAULTS[key]:
            raise ValueError(f"tokenizer_config.json: `{key}` must be "
                             f"{PEGASUS_DEFAULTS[key]!r} (Pegasus's; other settings are not "
                             f"read). Received: {key}={value!r}")
    pieces, charsmap = sentencepiece_pieces(model)
    vocab = [[token, 0.0] for token in ("<pad>", "</s>", "<mask_1>", "<mask_2>")]
    vocab += [[f"<unk_{i}>", -100.0] for i in range(2, PEGASUS_DEFAULTS["offset"])]
    specials = [token for token, _ in vocab]
    vocab += [list(p) for p in pieces[2:]]
    ids = {token: i for i, (token, _) in enumerate(vocab)}
    if "<unk>" not in ids:
        raise ValueError("spiece.model: the SentencePiece model must hold `<unk>`. "
                         "Received: a model without it")
    metaspace = {"type": "Metaspace", "replacement": SPIECE_UNDERLINE,
                 "prepend_scheme": "always", "split": True}
    normalizers = ([{"type": "Precompiled",
                     "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")}]
                   if charsmap else [])
    normalizers.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    return {
        "version": "1.0",
        "added_tokens": [_added(ids[token], token) for token in specials + ["<unk>"]],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace,
        "post_processor": _template(["$A", "</s>"], ids),
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": ids["<unk>"], "vocab": vocab,
                  "byte_fallback": False},
    }


def _content(value):
    """A token's text, from a string or an AddedToken's fields."""
    return value.get("content") if isinstance(value, dict) else value


def _template(single, ids):
    """A `TemplateProcessing` of `single` (`$A` and special tokens), its pair
    template with `$B` after `$A`."""
    pair = [name for part in single for name in ([part, "$B"] if part == "$A" else [part])]
    return {"type": "TemplateProcessing",
            "single": [_template_part(part) for part in single],
            "pair": [_template_part(part) for part in pair],
            "special_tokens": {token: {"id": token, "ids": [ids[token]], "tokens": [token]}
                               for token in single if not token.startswith("$")}}


def _template_part(part):
    if part.startswith("$"):
        return {"Sequence": {"id": part[1:], "type_id": 0}}
    return {"SpecialToken": {"id": part, "type_id": 0}}


def _added(token_id, content, lstrip=False):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": False, "special": True}


def _fields(data):
    """`(field number, value)` of each field of a protocol buffer message:
    an int for a varint, bytes for a length-delimited or fixed field."""
    data, at = bytes(data), 0
    try:
        while at < len(data):
            key, at = _varint(data, at)
            field, kind = key >> 3, key & 7
            if kind == 0:
                value, at = _varint(data, at)
            elif kind == 2:
                size, at = _varint(data, at)
                value, at = data[at:at + size], at + size
            elif kind in (1, 5):
                size = 8 if kind == 1 else 4
                value, at = data[at:at + size], at + size
            else:
                raise ValueError(f"wire type {kind}")
            if at > len(data):
                raise ValueError("cut short")
            yield field, value
    except (IndexError, ValueError) as error:
        raise ValueError(f"Not a SentencePiece model ({error}).") from None


def _varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


__all__ = ["MBART_LANGUAGE_CODES", "PEGASUS_DEFAULTS", "mbart_tokenizer_json",
           "pegasus_tokenizer_json", "sentencepiece_pieces"]
