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
template; `pegasus_tokenizer_json` for Pegasus folders (`spiece.model`);
`nllb_tokenizer_json` for NLLB folders (`sentencepiece.bpe.model` +
`tokenizer_config.json`: a BPE model, its merges made from the pieces).
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

#: NLLB-200's language codes (fairseq's), the tokens an NLLB tokenizer adds
#: after the pieces when its config lists none.
NLLB_LANGUAGE_CODES = (
    "ace_Arab", "ace_Latn", "acm_Arab", "acq_Arab", "aeb_Arab", "afr_Latn", "ajp_Arab",
    "aka_Latn", "amh_Ethi", "apc_Arab", "arb_Arab", "ars_Arab", "ary_Arab", "arz_Arab",
    "asm_Beng", "ast_Latn", "awa_Deva", "ayr_Latn", "azb_Arab", "azj_Latn", "bak_Cyrl",
    "bam_Latn", "ban_Latn", "bel_Cyrl", "bem_Latn", "ben_Beng", "bho_Deva", "bjn_Arab",
    "bjn_Latn", "bod_Tibt", "bos_Latn", "bug_Latn", "bul_Cyrl", "cat_Latn", "ceb_Latn",
    "ces_Latn", "cjk_Latn", "ckb_Arab", "crh_Latn", "cym_Latn", "dan_Latn", "deu_Latn",
    "dik_Latn", "dyu_Latn", "dzo_Tibt", "ell_Grek", "eng_Latn", "epo_Latn", "est_Latn",
    "eus_Latn", "ewe_Latn", "fao_Latn", "pes_Arab", "fij_Latn", "fin_Latn", "fon_Latn",
    "fra_Latn", "fur_Latn", "fuv_Latn", "gla_Latn", "gle_Latn", "glg_Latn", "grn_Latn",
    "guj_Gujr", "hat_Latn", "hau_Latn", "heb_Hebr", "hin_Deva", "hne_Deva", "hrv_Latn",
    "hun_Latn", "hye_Armn", "ibo_Latn", "ilo_Latn", "ind_Latn", "isl_Latn", "ita_Latn",
    "jav_Latn", "jpn_Jpan", "kab_Latn", "kac_Latn", "kam_Latn", "kan_Knda", "kas_Arab",
    "kas_Deva", "kat_Geor", "knc_Arab", "knc_Latn", "kaz_Cyrl", "kbp_Latn", "kea_Latn",
    "khm_Khmr", "kik_Latn", "kin_Latn", "kir_Cyrl", "kmb_Latn", "kon_Latn", "kor_Hang",
    "kmr_Latn", "lao_Laoo", "lvs_Latn", "lij_Latn", "lim_Latn", "lin_Latn", "lit_Latn",
    "lmo_Latn", "ltg_Latn", "ltz_Latn", "lua_Latn", "lug_Latn", "luo_Latn", "lus_Latn",
    "mag_Deva", "mai_Deva", "mal_Mlym", "mar_Deva", "min_Latn", "mkd_Cyrl", "plt_Latn",
    "mlt_Latn", "mni_Beng", "khk_Cyrl", "mos_Latn", "mri_Latn", "zsm_Latn", "mya_Mymr",
    "nld_Latn", "nno_Latn", "nob_Latn", "npi_Deva", "nso_Latn", "nus_Latn", "nya_Latn",
    "oci_Latn", "gaz_Latn", "ory_Orya", "pag_Latn", "pan_Guru", "pap_Latn", "pol_Latn",
    "por_Latn", "prs_Arab", "pbt_Arab", "quy_Latn", "ron_Latn", "run_Latn", "rus_Cyrl",
    "sag_Latn", "san_Deva", "sat_Beng", "scn_Latn", "shn_Mymr", "sin_Sinh", "slk_Latn",
    "slv_Latn", "smo_Latn", "sna_Latn", "snd_Arab", "som_Latn", "sot_Latn", "spa_Latn",
    "als_Latn", "srd_Latn", "srp_Cyrl", "ssw_Latn", "sun_Latn", "swe_Latn", "swh_Latn",
    "szl_Latn", "tam_Taml", "tat_Cyrl", "tel_Telu", "tgk_Cyrl", "tgl_Latn", "tha_Thai",
    "tir_Ethi", "taq_Latn", "taq_Tfng", "tpi_Latn", "tsn_Latn", "tso_Latn", "tuk_Latn",
    "tum_Latn", "tur_Latn", "twi_Latn", "tzm_Tfng", "uig_Arab", "ukr_Cyrl", "umb_Latn",
    "urd_Arab", "uzn_Latn", "vec_Latn", "vie_Latn", "war_Latn", "wol_Latn", "xho_Latn",
    "ydd_Hebr", "yor_Latn", "yue_Hant", "zho_Hans", "zho_Hant", "zul_Latn")

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
    _check_defaults(config or {}, PEGASUS_DEFAULTS, "Pegasus's")
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



#: What `nllb_tokenizer_json` builds: a folder's config must agree.
NLLB_DEFAULTS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>",
                 "unk_token": "<unk>", "mask_token": "<mask>"}
_NLLB_CLASSES = ("NllbTokenizer", "NllbTokenizerFast")


def nllb_tokenizer_json(model, config):
    """The `tokenizer.json` object `transformers` 5 makes for an older NLLB
    folder (`sentencepiece.bpe.model` + `tokenizer_config.json`, a
    SentencePiece BPE model): `<s>` `<pad>` `</s>` `<unk>`, the pieces after
    SentencePiece's three special ones from 4, the language codes, `<mask>`;
    the BPE merges of every two pieces making a piece, in the order of the
    piece's id; `src_lang X </s>` (`X </s> src_lang` with
    `legacy_behaviour`).

    The config's `additional_special_tokens` (or `extra_special_tokens`) are
    the language codes; without them, NLLB-200's 202 (`NLLB_LANGUAGE_CODES`),
    as the tokenizer's own default and `transformers` 4 have it
    (`transformers` 5 would then drop the codes: the source language becomes
    `<unk>`).

    Args:
        model: the bytes of `sentencepiece.bpe.model`.
        config: `tokenizer_config.json`'s object.

    Raises:
        ValueError: naming `tokenizer_class`, `src_lang`, a special token
            other than `NLLB_DEFAULTS`, or an `added_tokens_decoder` entry
            whose id is not the one built here.
    """
    if config.get("tokenizer_class") not in _NLLB_CLASSES:
        raise ValueError(f"tokenizer_config.json: `tokenizer_class` must be one of "
                         f"{list(_NLLB_CLASSES)}. "
                         f"Received: tokenizer_class={config.get('tokenizer_class')!r}")
    _check_defaults(config, NLLB_DEFAULTS, "NLLB's")
    codes = config.get("additional_special_tokens", config.get("extra_special_tokens"))
    codes = list(NLLB_LANGUAGE_CODES) if codes is None else [_content(c) for c in codes]
    src_lang = config.get("src_lang") or "eng_Latn"
    if src_lang not in codes:
        raise ValueError(f"tokenizer_config.json: `src_lang` must be one of the folder's "
                         f"language codes. Received: src_lang={src_lang!r}")
    pieces, charsmap = sentencepiece_pieces(model)
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {token: i for i, token in enumerate(specials)}
    for piece, _ in pieces:
        vocab.setdefault(piece, len(vocab))
    ids = {**vocab, **{code: len(vocab) + i for i, code in enumerate(codes)}}
    ids["<mask>"] = len(ids)
    _check_added_tokens(config, ids)
    normalizers = ([{"type": "Precompiled",
                     "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")}]
                   if charsmap else [])
    normalizers.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    metaspace = {"type": "Metaspace", "replacement": SPIECE_UNDERLINE,
                 "prepend_scheme": "always", "split": True}
    single = (["$A", "</s>", src_lang] if config.get("legacy_behaviour")
              else [src_lang, "$A", "</s>"])
    return {
        "version": "1.0",
        "added_tokens": [_added(ids[token], token) for token in specials + codes]
        + [_added(ids["<mask>"], "<mask>", lstrip=True, normalized=True)],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace,
        "post_processor": _template(single, ids),
        "decoder": metaspace,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": sentencepiece_bpe_merges(pieces)},
    }


def sentencepiece_bpe_merges(pieces):
    """The merges `transformers` 5 writes for a SentencePiece BPE model's
    `pieces` (`[(piece, score)]` in id order): for each piece in id order,
    each split into two pieces of the model, the shorter left part first."""
    known = {piece for piece, _ in pieces}
    return [[piece[:k], piece[k:]] for piece, _ in pieces for k in range(1, len(piece))
            if piece[:k] in known and piece[k:] in known]


def _check_defaults(config, defaults, whose):
    for key, value in config.items():
        if key in defaults and _content(value) != defaults[key]:
            raise ValueError(f"tokenizer_config.json: `{key}` must be {defaults[key]!r} "
                             f"({whose}; other settings are not read). "
                             f"Received: {key}={value!r}")


def _check_added_tokens(config, ids):
    for token_id, token in (config.get("added_tokens_decoder") or {}).items():
        content = _content(token)
        if ids.get(content) != int(token_id):
            raise ValueError(f"tokenizer_config.json: `added_tokens_decoder` must give each "
                             f"token the id the tokenizer gives it "
                             f"({content!r}: {ids.get(content)}). "
                             f"Received: added_tokens_decoder[{token_id!r}]={content!r}")

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


def _added(token_id, content, lstrip=False, normalized=False):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": normalized, "special": True}


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


__all__ = ["MBART_LANGUAGE_CODES", "NLLB_DEFAULTS", "NLLB_LANGUAGE_CODES", "PEGASUS_DEFAULTS",
           "mbart_tokenizer_json", "nllb_tokenizer_json", "pegasus_tokenizer_json",
           "sentencepiece_bpe_merges", "sentencepiece_pieces"]
