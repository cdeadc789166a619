"""The tokenizers of the checkpoints we convert, giving their ids.

Each reads the files a Hugging Face checkpoint folder ships and reuses
keras-hub's tokenizers (SentencePiece through TensorFlow Text, byte-level
BPE), so `transformers` is not needed:

- `MarianTokenizer`: `source.spm` / `target.spm` (SentencePiece) split the
  text into pieces, the joint `vocab.json` maps pieces to ids (a piece it
  lacks is `<unk>`), a leading language code `>>xx<<` is one token, `</s>`
  is appended;
- `BartTokenizer`: byte-level BPE over `vocab.json` + `merges.txt`, wrapped
  as `<s> ... </s>`;
- `T5Tokenizer`: `spiece.model` ids, `</s>` appended, and the 100 sentinel
  tokens `<extra_id_0>` ... `<extra_id_99>` after the SentencePiece
  vocabulary, `<extra_id_0>` last (32099 for a 32000-piece model).

BART and T5 folders saved by `transformers` 5 hold `tokenizer.json` alone:
`from_folder` reads it when the older files are not all there (its BPE
vocabulary and merges, or the SentencePiece model of its Unigram pieces:
`keras_attention.pretrained.tokenizer_json`), and gives the same ids either
way. `files_in(folder)` names the files `from_folder` reads.

Each is a `keras_attention.tokenizer.Tokenizer`: `tokenize(texts) -> list
of id lists` (the special tokens of the checkpoint's template included;
`tokenize_targets` for Marian's target side), `detokenize(ids) -> list of
str` (special tokens and padding dropped, as `transformers`'
`batch_decode(..., skip_special_tokens=True)`), `vocabulary_size()`, the
special ids (`pad_token_id`, `end_token_id`, and `start_token_id` and
`unk_token_id` where the vocabulary has them), and `truncate`, which keeps
a cut row's last id (its end token, or mBART's language code after it).
`largest_id` is the largest id `tokenize` can give.

mBART (mBART-50), Pegasus and NLLB folders are read from their
`tokenizer.json` by the `tokenizers` library (what `transformers` 5 runs
for them): `FastTokenizer`, the ids of `transformers`' tokenizer with the
special tokens of the folder's template (mBART's source language code,
saved with the tokenizer), and its decoding. M2M100's own tokenizer files
(`vocab.json` + `sentencepiece.bpe.model`, no `tokenizer.json`) are read by
`M2M100Tokenizer`, as Marian's are; the `m2m_100` family reads either layout
(`OneOf`). An older mBART or mBART-50 folder (`sentencepiece.bpe.model`, no
`tokenizer.json`) is read into the `FastTokenizer` of the file `transformers`
5 makes of it (`MBartSentencePieceFolder`), as are an older Pegasus folder
(`spiece.model`: `PegasusSentencePieceFolder`) and an older NLLB folder
(`sentencepiece.bpe.model`: `NllbSentencePieceFolder`).

Not reproduced: Moses punctuation normalization (`transformers` applies it
to Marian sources only when `sacremoses` is installed), and special-token
text inside a string (e.g. a literal `"</s>"`) for BART, T5 (but its
sentinels) and Marian (but a leading language code), which is tokenized as
text; the `tokenizer.json` families and M2M100 match it as `transformers`
does.
"""

import json
import os
import re

import numpy as np

from keras_attention.pretrained import tokenizer_json
from keras_attention.pretrained.checkpoint import checkpoint_file
from keras_attention.pretrained.tokenizer_json import SPIECE_UNDERLINE
from keras_attention.tokenizer import Tokenizer, id_rows, keep_last


def _keras_hub_tokenizers():
    """keras-hub's tokenizers, imported when a tokenizer is first made (the
    table of families, `families.py`, names these classes without it)."""
    import keras_hub

    return keras_hub.tokenizers


def _texts(texts):
    if isinstance(texts, str):
        raise ValueError(f"`texts` must be a list of strings, not one string. Received: "
                         f"texts={texts!r}")
    texts = list(texts)
    if not all(isinstance(t, str) for t in texts):
        raise ValueError(f"`texts` must be a list of strings. Received: texts={texts!r}")
    return texts


def _sentencepiece(model):
    """A SentencePiece model (a path or its bytes) read with the
    `sentencepiece` package (`data.SentencePieceModel`: keras-hub's ids and
    pieces, without loading TensorFlow)."""
    from keras_attention.data.subwords import SentencePieceModel

    return SentencePieceModel(model)


def _files_in(layouts, folder):
    """The names of the first of `layouts` (tuples of file names) whose files
    are all in `folder`; each must be a plain file inside it.

    Raises:
        FileNotFoundError: naming the first missing file of the first layout
            (and the other layouts), when none is complete.
        ValueError: naming a file that is a link out of the folder or not a
            plain file.
    """
    folder = os.fspath(folder)
    for names in layouts:
        if all(os.path.lexists(os.path.join(folder, name)) for name in names):
            for name in names:
                checkpoint_file(folder, name)
            return names
    missing = next(n for n in layouts[0] if not os.path.lexists(os.path.join(folder, n)))
    others = " or ".join(" + ".join(names) for names in layouts[1:] if missing not in names)
    raise FileNotFoundError(f"The checkpoint folder has no {missing}"
                            + (f" (nor {others})" if others else "")
                            + f". Received: folder={folder!r}")


def _json_object(folder, name):
    """The JSON object of the file `name` of `folder` (a config)."""
    with open(checkpoint_file(folder, name), encoding="utf-8") as file:
        config = json.load(file)
    if not isinstance(config, dict):
        raise ValueError(f"{name} must hold a JSON object. Received: "
                         f"{type(config).__name__} in folder={os.fspath(folder)!r}")
    return config


class _FolderTokenizer(Tokenizer):
    """What the tokenizers share: `LAYOUTS`, the sets of files each enough
    for `from_folder` (the first complete one is read), and `truncate`: each
    appends its end token (mBART its language code after it), which a cut
    row keeps last."""

    LAYOUTS = ()

    @classmethod
    def files_in(cls, folder):
        """The names of the files `from_folder` reads in `folder`."""
        return _files_in(cls.LAYOUTS, folder)

    def truncate(self, token_ids, max_length):
        """`token_ids` cut to `max_length` ids, its last id kept last."""
        return keep_last(token_ids, max_length)


def _join_pieces(pieces):
    """SentencePiece's decoding of plain pieces: `▁` is a space, the first
    one dropped."""
    return "".join(pieces).replace(SPIECE_UNDERLINE, " ").strip()


class MarianTokenizer(_FolderTokenizer):
    """A Marian (OPUS-MT) checkpoint's tokenizer.

    Args:
        source_spm, target_spm: paths of the SentencePiece models.
        vocabulary: the joint `vocab.json` mapping, `{piece: id}`.

    Example:

    ```python
    tokenizer = MarianTokenizer.from_folder("opus-mt-en-de")
    ids = tokenizer.tokenize(["I am a small frog."])      # [[..., 0]] (</s> = 0)
    tokenizer.detokenize(model.generate(ids_padded, ...))
    ```
    """

    #: The files `from_folder` reads (transformers 5 still saves these).
    FILES = ("source.spm", "target.spm", "vocab.json")
    LAYOUTS = (FILES,)

    def __init__(self, source_spm, target_spm, vocabulary, *, unk_token="<unk>",
                 eos_token="</s>", pad_token="<pad>"):
        if not isinstance(vocabulary, dict) or not vocabulary:
            raise ValueError("Argument `vocabulary` must be a non-empty dict {piece: id}. "
                             f"Received: vocabulary={type(vocabulary).__name__}")
        for name, token in (("unk_token", unk_token), ("eos_token", eos_token),
                            ("pad_token", pad_token)):
            if token not in vocabulary:
                raise ValueError(f"Argument `{name}` must be in the vocabulary. "
                                 f"Received: {name}={token!r}")
        self.vocabulary = {str(k): int(v) for k, v in vocabulary.items()}
        self.pieces = {v: k for k, v in self.vocabulary.items()}
        self.source = _sentencepiece(source_spm)
        self.target = _sentencepiece(target_spm)
        self.unk_token_id = self.vocabulary[unk_token]
        self.end_token_id = self.vocabulary[eos_token]
        self.pad_token_id = self.vocabulary[pad_token]
        self.special_ids = {self.unk_token_id, self.end_token_id, self.pad_token_id}

    @classmethod
    def from_folder(cls, folder):
        """From a checkpoint folder holding source.spm, target.spm and vocab.json."""
        cls.files_in(folder)
        with open(checkpoint_file(folder, "vocab.json"), encoding="utf-8") as file:
            vocabulary = json.load(file)
        return cls(checkpoint_file(folder, "source.spm"), checkpoint_file(folder, "target.spm"),
                   vocabulary)

    def vocabulary_size(self):
        return len(self.vocabulary)

    @property
    def largest_id(self):
        """The largest id `tokenize` can give (a model needs more rows than it)."""
        return max(self.vocabulary.values())

    def tokenize(self, texts):
        """Ids of each text by `source.spm`, `</s>` appended."""
        return self._tokenize(texts, self.source)

    def tokenize_targets(self, texts):
        """Ids of each text by `target.spm`, `</s>` appended."""
        return self._tokenize(texts, self.target)

    def _tokenize(self, texts, sentencepiece):
        texts = _texts(texts)
        codes, rest = [], []
        for text in texts:
            code = []
            end = text.find("<<")
            if text.startswith(">>") and end != -1:
                code, text = [text[:end + 2]], text[end + 2:]
            codes.append(code)
            rest.append(text)
        pieces = sentencepiece.pieces(rest)
        return [
            [self.vocabulary.get(p, self.unk_token_id) for p in code + row] + [self.end_token_id]
            for code, row in zip(codes, pieces)
        ]

    def detokenize(self, token_ids):
        """Text of each row of ids (special tokens dropped)."""
        return [
            _join_pieces([self.pieces[i] for i in row
                          if i not in self.special_ids and i in self.pieces])
            for row in id_rows(token_ids)
        ]


class BartTokenizer(_FolderTokenizer):
    """A BART (or RoBERTa-style) checkpoint's byte-level BPE tokenizer.

    Args:
        vocabulary: `vocab.json`'s `{token: id}` or its path.
        merges: `merges.txt`'s path or its list of merge rules.
    """

    #: The files of the older layout; `LAYOUTS`: the layouts `from_folder`
    #: reads, the first complete one.
    FILES = ("vocab.json", "merges.txt")
    LAYOUTS = (FILES, (tokenizer_json.FILE,))

    def __init__(self, vocabulary, merges, *, bos_token="<s>", eos_token="</s>",
                 pad_token="<pad>", unk_token="<unk>"):
        if isinstance(vocabulary, (str, os.PathLike)):
            with open(vocabulary, encoding="utf-8") as file:
                vocabulary = json.load(file)
        if isinstance(merges, (str, os.PathLike)):
            with open(merges, encoding="utf-8") as file:
                merges = [line.rstrip("\n") for line in file]
            merges = [m for m in merges if m and not m.startswith("#version")]
        for name, token in (("bos_token", bos_token), ("eos_token", eos_token),
                            ("pad_token", pad_token), ("unk_token", unk_token)):
            if token not in vocabulary:
                raise ValueError(f"Argument `{name}` must be in the vocabulary. "
                                 f"Received: {name}={token!r}")
        self.vocabulary = dict(vocabulary)
        self.bpe = _keras_hub_tokenizers().BytePairTokenizer(vocabulary=self.vocabulary,
                                                          merges=list(merges))
        self.start_token_id = self.vocabulary[bos_token]
        self.end_token_id = self.vocabulary[eos_token]
        self.pad_token_id = self.vocabulary[pad_token]
        self.unk_token_id = self.vocabulary[unk_token]
        self.special_ids = {self.start_token_id, self.end_token_id, self.pad_token_id,
                            self.unk_token_id}
        if "<mask>" in self.vocabulary:
            self.special_ids.add(self.vocabulary["<mask>"])

    @classmethod
    def from_folder(cls, folder):
        """From a checkpoint folder holding vocab.json and merges.txt, or
        tokenizer.json (a byte-level BPE)."""
        if cls.files_in(folder) == cls.FILES:
            return cls(checkpoint_file(folder, "vocab.json"),
                       checkpoint_file(folder, "merges.txt"))
        return cls(*tokenizer_json.bpe_vocabulary_and_merges(tokenizer_json.read(folder)))

    def vocabulary_size(self):
        return len(self.vocabulary)

    @property
    def largest_id(self):
        """The largest id `tokenize` can give (a model needs more rows than it)."""
        return max(self.vocabulary.values())

    def tokenize(self, texts):
        """`<s>` + the BPE ids of each text + `</s>`."""
        texts = _texts(texts)
        ids = self.bpe.tokenize(texts) if texts else []
        ids = ids.to_list() if hasattr(ids, "to_list") else ids
        return [[self.start_token_id] + [int(i) for i in row] + [self.end_token_id]
                for row in ids]

    def detokenize(self, token_ids):
        """Text of each row of ids (special tokens dropped)."""
        rows = [[i for i in row if i not in self.special_ids] for row in id_rows(token_ids)]
        texts = [self.bpe.detokenize([row]) if row else None for row in rows]
        return ["" if t is None else _string(t) for t in texts]


class T5Tokenizer(_FolderTokenizer):
    """A T5 checkpoint's SentencePiece tokenizer with its sentinel tokens.

    Args:
        spiece_model: path of `spiece.model`, or its bytes.
        extra_ids: the number of sentinels `<extra_id_N>` (100).
    """

    SENTINEL = re.compile(r"<extra_id_(\d+)>")
    #: The file of the older layout; `LAYOUTS`: the layouts `from_folder`
    #: reads, the first complete one.
    FILES = ("spiece.model",)
    LAYOUTS = (FILES, (tokenizer_json.FILE,))

    def __init__(self, spiece_model, extra_ids=100):
        if isinstance(extra_ids, bool) or not isinstance(extra_ids, int) or extra_ids < 0:
            raise ValueError("Argument `extra_ids` must be an integer >= 0. "
                             f"Received: extra_ids={extra_ids!r}")
        self.spm = _sentencepiece(spiece_model)
        self.extra_ids = extra_ids
        self.piece_count = self.spm.vocabulary_size()
        self.pad_token_id = self.spm.token_to_id("<pad>")
        self.end_token_id = self.spm.token_to_id("</s>")
        self.unk_token_id = self.spm.token_to_id("<unk>")
        self.special_ids = {self.pad_token_id, self.end_token_id, self.unk_token_id}

    @classmethod
    def from_folder(cls, folder, extra_ids=None):
        """From a checkpoint folder holding spiece.model, or tokenizer.json
        (a Unigram model). `extra_ids`: None for the folder's (tokenizer.json's
        sentinels; 100 beside spiece.model), or a number it must equal."""
        if cls.files_in(folder) == cls.FILES:
            return cls(checkpoint_file(folder, "spiece.model"),
                       100 if extra_ids is None else extra_ids)
        model, added = tokenizer_json.unigram_sentencepiece_model(tokenizer_json.read(folder))
        if extra_ids is not None and extra_ids != len(added):
            raise ValueError(f"Argument `extra_ids` must be the {len(added)} sentinels of the "
                             f"folder's tokenizer.json. Received: extra_ids={extra_ids!r}")
        tokenizer = cls(model, len(added))
        if added != {tokenizer.sentinel_id(n): f"<extra_id_{n}>" for n in range(len(added))}:
            shown = dict(sorted(added.items())[:3])
            raise ValueError(f"tokenizer.json: the `added_tokens` after the "
                             f"{tokenizer.piece_count} pieces must be T5's sentinels, "
                             f"<extra_id_0> last. Received: {shown} ...")
        return tokenizer

    def vocabulary_size(self):
        return self.piece_count + self.extra_ids

    @property
    def largest_id(self):
        """The largest id `tokenize` can give (a model needs more rows than it)."""
        return self.vocabulary_size() - 1

    def sentinel_id(self, n):
        """The id of `<extra_id_n>`."""
        return self.piece_count + self.extra_ids - 1 - n

    def tokenize(self, texts):
        """Ids of each text (sentinels as their ids), `</s>` appended."""
        rows = []
        for text in _texts(texts):
            parts = self.SENTINEL.split(text)  # text, n, text, n, ..., text
            ids = []
            for k, part in enumerate(parts):
                if k % 2:
                    n = int(part)
                    if n >= self.extra_ids:
                        ids.extend(self._spm_ids([f"<extra_id_{part}>"]))
                    else:
                        ids.append(self.sentinel_id(n))
                elif part.strip():
                    ids.extend(self._spm_ids([part]))
            rows.append(ids + [self.end_token_id])
        return rows

    def _spm_ids(self, texts):
        return [int(i) for i in self.spm.tokenize(texts)[0]]

    def detokenize(self, token_ids):
        """Text of each row (special tokens and sentinels dropped)."""
        texts = []
        for row in id_rows(token_ids):
            kept = [i for i in row if i not in self.special_ids and i < self.piece_count]
            texts.append(self.spm.detokenize([kept])[0] if kept else "")
        return texts


#: `transformers`' `clean_up_tokenization`: spaces before punctuation and
#: English contractions dropped from decoded text (in this order).
CLEAN_UPS = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
             (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


#: The `tokenizer_config.json` key that makes transformers 5 clean up the
#: spaces of a BPE tokenizer's texts.
_FORCE_BPE_CLEAN_UP = "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"


class FastTokenizer(_FolderTokenizer):
    """A checkpoint's `tokenizer.json`, read by the `tokenizers` library:
    mBART and mBART-50, Pegasus, NLLB (`transformers` 5 runs these
    tokenizers from that file alone).

    `encode` adds the special tokens of the file's template (`</s>`, and
    for mBART the source language code the tokenizer was saved with);
    `decode` drops special tokens as `batch_decode(...,
    skip_special_tokens=True)` does, cleaning up spaces where the folder's
    `tokenizer_config.json` asks for it (`clean_up_tokenization_spaces`;
    `from_folder` skips it for a BPE model, NLLB's, as transformers 5 does).

    Args:
        tokenizer_json: path of `tokenizer.json`, or its JSON object (made
            from an older folder: `sentencepiece_folders`).
        pad_token, eos_token: their texts (`tokenizer_config.json`'s, by
            default `<pad>` and `</s>`); each must be in the vocabulary.
        clean_up_tokenization_spaces: bool.
    """

    FILE = tokenizer_json.FILE
    CONFIG = "tokenizer_config.json"
    LAYOUTS = ((FILE, CONFIG), (FILE,))

    def __init__(self, tokenizer_json, *, pad_token="<pad>", eos_token="</s>",
                 clean_up_tokenization_spaces=False):
        try:
            import tokenizers
        except ImportError:
            raise ImportError("Reading a tokenizer.json needs the `tokenizers` package (pip "
                              "install tokenizers; it comes with keras-hub and transformers)"
                              ) from None
        try:
            self.tokenizer = (tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json))
                              if isinstance(tokenizer_json, dict)
                              else tokenizers.Tokenizer.from_file(os.fspath(tokenizer_json)))
        except Exception as error:  # the library's parse errors (Exception subclasses)
            named = "an object" if isinstance(tokenizer_json, dict) else repr(
                os.fspath(tokenizer_json))
            raise ValueError(f"{self.FILE} is not a tokenizer the `tokenizers` library reads "
                             f"({str(error)[:200]}). Received: tokenizer_json={named}") from None
        for name, token in (("pad_token", pad_token), ("eos_token", eos_token)):
            if not isinstance(token, str) or self.tokenizer.token_to_id(token) is None:
                raise ValueError(f"Argument `{name}` must be a token of {self.FILE}. "
                                 f"Received: {name}={token!r}")
        if not isinstance(clean_up_tokenization_spaces, bool):
            raise ValueError("Argument `clean_up_tokenization_spaces` must be a bool. Received: "
                             f"clean_up_tokenization_spaces={clean_up_tokenization_spaces!r}")
        self.pad_token_id = self.tokenizer.token_to_id(pad_token)
        self.end_token_id = self.tokenizer.token_to_id(eos_token)
        self.start_token_id = self.tokenizer.token_to_id("<s>")  # None where there is none
        self.unk_token_id = self.tokenizer.token_to_id("<unk>")
        self.clean_up_tokenization_spaces = clean_up_tokenization_spaces
        self.special_ids = {i for i, token in self.tokenizer.get_added_tokens_decoder().items()
                            if token.special}

    @classmethod
    def from_folder(cls, folder):
        """From a checkpoint folder holding tokenizer.json (and, read where
        present, tokenizer_config.json's pad and end tokens and clean-up)."""
        names = cls.files_in(folder)
        config = _json_object(folder, cls.CONFIG) if cls.CONFIG in names else {}
        return cls.with_config(checkpoint_file(folder, cls.FILE), config)

    @classmethod
    def with_config(cls, tokenizer_json, config):
        """From a `tokenizer.json` (a path or its object) and the object of
        its `tokenizer_config.json` (pad and end tokens, clean-up)."""
        options = {}
        for key in ("pad_token", "eos_token", "clean_up_tokenization_spaces"):
            value = config.get(key)
            if isinstance(value, dict):  # an AddedToken's fields
                value = value.get("content")
            if value is not None:
                options[key] = value
        tokenizer = cls(tokenizer_json, **options)
        if type(tokenizer.tokenizer.model).__name__ == "BPE" and config.get(
                _FORCE_BPE_CLEAN_UP) is not True:
            # As transformers 5: the clean-up strips spaces BPE keeps (NLLB's
            # config asks for it), so it is skipped unless forced.
            tokenizer.clean_up_tokenization_spaces = False
        return tokenizer

    def vocabulary_size(self):
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def largest_id(self):
        """The largest id `tokenize` can give (a model needs more rows than it)."""
        return max(self.tokenizer.get_vocab(with_added_tokens=True).values())

    @property
    def json(self):
        """The tokenizer's `tokenizer.json` object (what the graph twin reads)."""
        return json.loads(self.tokenizer.to_str())

    def tokenize(self, texts):
        """Ids of each text, with the special tokens of the file's template."""
        texts = _texts(texts)
        return [list(encoding.ids) for encoding in self.tokenizer.encode_batch(texts)] \
            if texts else []

    def detokenize(self, token_ids):
        """Text of each row of ids (special tokens dropped)."""
        rows = id_rows(token_ids)
        texts = self.tokenizer.decode_batch(rows, skip_special_tokens=True) if rows else []
        if self.clean_up_tokenization_spaces:
            for old, new in CLEAN_UPS:
                texts = [text.replace(old, new) for text in texts]
        return texts


#: fairseq's language codes of M2M100 checkpoints (`tokenizer_config.json`'s
#: `language_codes`): the token `__xx__` of the i-th code has the id
#: `len(vocab.json) + i`.
M2M100_LANGUAGE_CODES = {
    "m2m100": (
        "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs",
        "cy", "da", "de", "el", "en", "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd", "gl",
        "gu", "ha", "he", "hi", "hr", "ht", "hu", "hy", "id", "ig", "ilo", "is", "it", "ja", "jv",
        "ka", "kk", "km", "kn", "ko", "lb", "lg", "ln", "lo", "lt", "lv", "mg", "mk", "ml", "mn",
        "mr", "ms", "my", "ne", "nl", "no", "ns", "oc", "or", "pa", "pl", "ps", "pt", "ro", "ru",
        "sd", "si", "sk", "sl", "so", "sq", "sr", "ss", "su", "sv", "sw", "ta", "th", "tl", "tn",
        "tr", "uk", "ur", "uz", "vi", "wo", "xh", "yi", "yo", "zh", "zu"),
    "wmt21": ("en", "ha", "is", "ja", "cs", "ru", "zh", "de"),
}


class M2M100Tokenizer(_FolderTokenizer):
    """M2M100's own tokenizer files: `sentencepiece.bpe.model` splits the
    text into pieces, `vocab.json` (fairseq's dictionary) maps pieces to ids
    (a piece it lacks is `<unk>`), the language tokens `__xx__` follow the
    vocabulary; a text is `__src__ ... </s>`, `src_lang` from
    `tokenizer_config.json` (default `en`). The special tokens and language
    tokens inside a text are their ids, as in `transformers`' tokenizer.

    Args:
        spm_path: path of `sentencepiece.bpe.model`.
        vocabulary: `vocab.json`'s `{piece: id}`.
        src_lang: a code of `language_codes`.
        language_codes: `"m2m100"` (100 codes) or `"wmt21"` (8).
        clean_up_tokenization_spaces: bool (the folder's config's).
    """

    FILES = ("vocab.json", "sentencepiece.bpe.model")
    CONFIG = "tokenizer_config.json"
    LAYOUTS = (FILES + (CONFIG,), FILES)

    def __init__(self, spm_path, vocabulary, *, src_lang="en", language_codes="m2m100",
                 clean_up_tokenization_spaces=False):
        if not isinstance(vocabulary, dict) or not vocabulary or not all(
                isinstance(k, str) and isinstance(v, int) for k, v in vocabulary.items()):
            raise ValueError("Argument `vocabulary` must be a non-empty dict {piece: id}. "
                             f"Received: vocabulary={type(vocabulary).__name__}")
        if language_codes not in M2M100_LANGUAGE_CODES:
            raise ValueError(f"Argument `language_codes` must be one of "
                             f"{sorted(M2M100_LANGUAGE_CODES)}. "
                             f"Received: language_codes={language_codes!r}")
        codes = M2M100_LANGUAGE_CODES[language_codes]
        if src_lang not in codes:
            raise ValueError(f"Argument `src_lang` must be a language code of "
                             f"{language_codes!r}. Received: src_lang={src_lang!r}")
        for token in ("<s>", "<pad>", "</s>", "<unk>"):
            if token not in vocabulary:
                raise ValueError(f"Argument `vocabulary` must hold {token!r}. "
                                 f"Received: vocabulary of {len(vocabulary)} pieces without it")
        if not isinstance(clean_up_tokenization_spaces, bool):
            raise ValueError("Argument `clean_up_tokenization_spaces` must be a bool. Received: "
                             f"clean_up_tokenization_spaces={clean_up_tokenization_spaces!r}")
        self.spm_path = os.fspath(spm_path)
        self.spm = _sentencepiece(self.spm_path)
        self.vocabulary = dict(vocabulary)
        self.pieces = {i: piece for piece, i in self.vocabulary.items()}
        self.language_ids = {f"__{code}__": len(vocabulary) + i for i, code in enumerate(codes)}
        self.start_token_id = self.vocabulary["<s>"]
        self.pad_token_id = self.vocabulary["<pad>"]
        self.end_token_id = self.vocabulary["</s>"]
        self.unk_token_id = self.vocabulary["<unk>"]
        self.source_language_id = self.language_ids[f"__{src_lang}__"]
        self.added_tokens = {**{t: self.vocabulary[t] for t in ("<s>", "<pad>", "</s>", "<unk>")},
                             **self.language_ids}
        self.special_ids = set(self.added_tokens.values())
        self.clean_up_tokenization_spaces = clean_up_tokenization_spaces
        self._added = re.compile("|".join(map(re.escape, sorted(self.added_tokens, key=len,
                                                                 reverse=True))))

    @classmethod
    def from_folder(cls, folder):
        """From a checkpoint folder holding vocab.json and
        sentencepiece.bpe.model (and, read where present,
        tokenizer_config.json's `src_lang`, `language_codes` and clean-up)."""
        names = cls.files_in(folder)
        with open(checkpoint_file(folder, "vocab.json"), encoding="utf-8") as file:
            vocabulary = json.load(file)
        options = {}
        if cls.CONFIG in names:
            config = _json_object(folder, cls.CONFIG)
            for key in ("src_lang", "language_codes", "clean_up_tokenization_spaces"):
                if config.get(key) is not None:
                    options[key] = config[key]
        return cls(checkpoint_file(folder, "sentencepiece.bpe.model"), vocabulary, **options)

    def vocabulary_size(self):
        return len(self.vocabulary) + len(self.language_ids)

    @property
    def largest_id(self):
        """The largest id `tokenize` can give (a model needs more rows than it)."""
        return max(self.language_ids.values())

    def tokenize(self, texts):
        """`__src__` + ids + `</s>` of each text."""
        parts = [self._parts(text) for text in _texts(texts)]
        pieces = iter(self.spm.pieces([p for row in parts for p in row if isinstance(p, str)]))
        rows = []
        for row in parts:
            ids = [self.source_language_id]
            for part in row:
                ids += [self.vocabulary.get(p, self.unk_token_id) for p in next(pieces)] \
                    if isinstance(part, str) else [part]
            rows.append(ids + [self.end_token_id])
        return rows

    def _parts(self, text):
        """The texts between the special and language tokens of `text`, and
        those tokens' ids, in order."""
        parts, start = [], 0
        for match in self._added.finditer(text):
            parts += [text[start:match.start()], self.added_tokens[match.group()]]
            start = match.end()
        return [p for p in parts + [text[start:]] if p != ""]

    def detokenize(self, token_ids):
        """Text of each row of ids (special and language tokens dropped)."""
        texts = [_join_pieces([self.pieces[i] for i in row
                               if i not in self.special_ids and i in self.pieces])
                 for row in id_rows(token_ids)]
        if self.clean_up_tokenization_spaces:
            for old, new in CLEAN_UPS:
                texts = [text.replace(old, new) for text in texts]
        return texts


def _from_sentencepiece(cls, folder, model_file, build):
    """The `FastTokenizer` of `build(model bytes, config)`, the
    `tokenizer.json` object `transformers` 5 makes of an older folder."""
    names = cls.files_in(folder)
    config = _json_object(folder, "tokenizer_config.json") if (
        "tokenizer_config.json" in names) else {}
    with open(checkpoint_file(folder, model_file), "rb") as file:
        data = build(file.read(), config)
    return FastTokenizer.with_config(data, {
        key: value for key, value in config.items() if key == "clean_up_tokenization_spaces"
        or key == _FORCE_BPE_CLEAN_UP})


class MBartSentencePieceFolder(_FolderTokenizer):
    """An older mBART or mBART-50 folder (`sentencepiece.bpe.model` +
    `tokenizer_config.json`, no `tokenizer.json`): `from_folder` gives the
    `FastTokenizer` of the `tokenizer.json` `transformers` 5 makes of it
    (`sentencepiece_folders.mbart_tokenizer_json`; the config's
    `tokenizer_class` says which family, `src_lang` the source language)."""

    LAYOUTS = (("sentencepiece.bpe.model", "tokenizer_config.json"),)

    @classmethod
    def from_folder(cls, folder):
        from keras_attention.pretrained import sentencepiece_folders

        return _from_sentencepiece(cls, folder, "sentencepiece.bpe.model", lambda model, config: (
            sentencepiece_folders.mbart_tokenizer_json(model, config.get("tokenizer_class"),
                                                       config.get("src_lang"))))


class PegasusSentencePieceFolder(_FolderTokenizer):
    """An older Pegasus folder (`spiece.model`, and `tokenizer_config.json`
    where present; no `tokenizer.json`): `from_folder` gives the
    `FastTokenizer` of the `tokenizer.json` `transformers` 5 makes of it
    (`sentencepiece_folders.pegasus_tokenizer_json`)."""

    LAYOUTS = (("spiece.model", "tokenizer_config.json"), ("spiece.model",))

    @classmethod
    def from_folder(cls, folder):
        from keras_attention.pretrained import sentencepiece_folders

        return _from_sentencepiece(cls, folder, "spiece.model",
                                   sentencepiece_folders.pegasus_tokenizer_json)



class NllbSentencePieceFolder(_FolderTokenizer):
    """An older NLLB folder (`sentencepiece.bpe.model` +
    `tokenizer_config.json` naming `NllbTokenizer`, no `tokenizer.json`):
    `from_folder` gives the `FastTokenizer` of the `tokenizer.json`
    `transformers` 5 makes of it (`sentencepiece_folders.nllb_tokenizer_json`:
    a BPE model, the config's language codes, NLLB-200's 202 where it lists
    none)."""

    LAYOUTS = (("sentencepiece.bpe.model", "tokenizer_config.json"),)

    @classmethod
    def from_folder(cls, folder):
        from keras_attention.pretrained import sentencepiece_folders

        return _from_sentencepiece(cls, folder, "sentencepiece.bpe.model",
                                   sentencepiece_folders.nllb_tokenizer_json)

class OneOf:
    """The tokenizer of a family whose folders come in layouts read by
    different classes (M2M100: NLLB's `tokenizer.json`, or its own
    `vocab.json` + `sentencepiece.bpe.model`): `LAYOUTS` of them all, in the
    order given; `from_folder` reads a folder with the class of its first
    complete layout."""

    def __init__(self, *classes):
        self.classes = classes
        self.LAYOUTS = tuple(layout for c in classes for layout in c.LAYOUTS)

    def files_in(self, folder):
        """The names of the files `from_folder` reads in `folder`."""
        return _files_in(self.LAYOUTS, folder)

    def from_folder(self, folder):
        names = self.files_in(folder)
        return next(c for c in self.classes if names in c.LAYOUTS).from_folder(folder)


def _string(value):
    """The one string of a keras-hub detokenize output."""
    value = value.numpy() if hasattr(value, "numpy") else value
    value = np.asarray(value).reshape(-1)[0]
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
