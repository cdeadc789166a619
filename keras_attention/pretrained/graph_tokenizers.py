"""Our tokenizers as TensorFlow graphs, for a SavedModel: the graph form of
the tokenizer contract (`keras_attention.tokenizer.Tokenizer`).

`graph_tokenizer(tokenizer)` turns a recipe's `data.SentencePieceModel` or a
checkpoint tokenizer of `keras_attention.pretrained.tokenizers` into a
`tf.Module` whose `encode(texts)` (tf.string `(B,)` -> int32
`tf.RaggedTensor` `(B, None)`) and `decode(token_ids)` (int `(B, L)`, dense
or ragged -> tf.string `(B,)`) are `tf.function`s giving the ids and texts
of the Python tokenizer (and so of `transformers`' tokenizer), and whose
`truncate(token_ids, max_length)` cuts encoded rows as the Python
tokenizer's `truncate` does; made only of TensorFlow and TensorFlow Text ops:

- A recipe's SentencePiece model: TensorFlow Text SentencePiece ids (no
  start or end token added); a cut row keeps its first ids; decoding drops
  padding, start and end tokens.

- Marian: TensorFlow Text SentencePiece pieces (`source.spm`, or
  `target.spm` with `target=True`), a `tf.lookup` table of `vocab.json`
  (`<unk>` for a piece it lacks), a leading language code `>>xx<<` as one
  token, `</s>` appended; decoding joins the pieces of the ids.
- BART: keras-hub's `BytePairTokenizer` (its TensorFlow path), wrapped as
  `<s> ... </s>`.
- T5: SentencePiece ids, the sentinels `<extra_id_N>` as their ids, `</s>`
  appended; decoding drops special tokens and sentinels.
- `tokenizer.json` (mBART, mBART-50, Pegasus, NLLB: a `FastTokenizer`): the
  SentencePiece model rebuilt from its Unigram or SentencePiece-BPE pieces
  (`tokenizer_json.unigram_sentencepiece_model`, `bpe_sentencepiece_model`),
  the added tokens in a text (special tokens, language codes) as their ids,
  one `▁` for the spaces a text ends with where the file keeps them, the
  template's special ids around it all (`tokenizer_json.template_ids`);
  decoding drops special tokens, joins the pieces as the file's Metaspace
  decoder does and applies the tokenizer's clean-up of spaces. A file
  SentencePiece cannot reproduce is refused naming its field.
- M2M100's own files (`M2M100Tokenizer`): as Marian's, with the special and
  language tokens in a text as their ids and `__src__ ... </s>` around it.

Decoding drops the special tokens and padding, as `batch_decode(...,
skip_special_tokens=True)`. Whitespace stripped at the ends of a decoded
Marian text is ASCII whitespace only (the Python tokenizer strips Unicode
spaces too).

Example:

>>> import tensorflow as tf
>>> from keras_attention.pretrained import tokenizers
>>> tokenizer = tokenizers.T5Tokenizer.from_folder(folder)  # doctest: +SKIP
>>> graph = graph_tokenizer(tokenizer)  # doctest: +SKIP
>>> graph.encode(tf.constant(["Hello"]))  # doctest: +SKIP
<tf.RaggedTensor [[..., 1]]>
"""

import hashlib
import re

import tensorflow as tf
import tensorflow_text as tf_text

from keras_attention.data.subwords import SentencePieceModel
from keras_attention.pretrained import tokenizer_json, tokenizers

__all__ = ["BartGraphTokenizer", "FastGraphTokenizer", "M2M100GraphTokenizer",
           "MarianGraphTokenizer", "SentencePieceGraphTokenizer", "T5GraphTokenizer",
           "graph_tokenizer"]

_TEXTS = tf.TensorSpec((None,), tf.string)
_IDS = tf.RaggedTensorSpec((None, None), tf.int32, ragged_rank=1)


def graph_tokenizer(tokenizer):
    """The graph twin of a `data.SentencePieceModel` or a
    `keras_attention.pretrained.tokenizers` object.

    Raises:
        ValueError: naming the type of another object, or the field of a
            `tokenizer.json` that TensorFlow's SentencePiece cannot reproduce.
    """
    for python, graph in ((SentencePieceModel, SentencePieceGraphTokenizer),
                          (tokenizers.MarianTokenizer, MarianGraphTokenizer),
                          (tokenizers.BartTokenizer, BartGraphTokenizer),
                          (tokenizers.T5Tokenizer, T5GraphTokenizer),
                          (tokenizers.FastTokenizer, FastGraphTokenizer),
                          (tokenizers.M2M100Tokenizer, M2M100GraphTokenizer)):
        if isinstance(tokenizer, python):
            return graph(tokenizer)
    raise ValueError(
        "Argument `tokenizer` must be a data.SentencePieceModel, or a MarianTokenizer, "
        "BartTokenizer, T5Tokenizer, FastTokenizer or M2M100Tokenizer of "
        "keras_attention.pretrained.tokenizers. "
        f"Received: tokenizer={type(tokenizer).__name__}"
    )


def _proto(spm):
    """The serialized model of a SentencePiece tokenizer (its `proto`: bytes or a path)."""
    proto = spm.proto
    if isinstance(proto, str):
        with open(proto, "rb") as file:
            proto = file.read()
    return bytes(proto)


def _sentencepiece(proto, out_type):
    """A TensorFlow Text SentencePiece tokenizer; its op is named after the
    model's hash (two models under one op name would share one resource in
    a reloaded SavedModel)."""
    digest = hashlib.sha256(proto).hexdigest()[:16]
    return tf_text.SentencepieceTokenizer(model=proto, out_type=out_type,
                                          name=f"sentencepiece_{digest}")


def _ragged(token_ids):
    """Int32 ragged `(B, None)` of dense or ragged ids."""
    if isinstance(token_ids, tf.RaggedTensor):
        return tf.cast(token_ids, tf.int32)
    return tf.RaggedTensor.from_tensor(tf.cast(token_ids, tf.int32))


def _vocabulary_tables(vocabulary, unk_id):
    """`(piece -> id, id -> piece)` lookup tables of a `{piece: id}`
    vocabulary (`unk_id` for a piece it lacks, `""` for an id)."""
    pieces = sorted(vocabulary, key=vocabulary.get)
    ids = [vocabulary[p] for p in pieces]
    piece_ids = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(pieces), tf.constant(ids, tf.int32)),
        default_value=unk_id)
    id_pieces = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(ids, tf.int32), tf.constant(pieces)),
        default_value="")
    return piece_ids, id_pieces


def _keep(token_ids, dropped):
    """`token_ids` (ragged) without the ids listed in `dropped`."""
    values = token_ids.flat_values
    keep = tf.reduce_all(values[:, None] != tf.constant(sorted(dropped), tf.int32)[None], axis=1)
    return tf.ragged.boolean_mask(token_ids, token_ids.with_flat_values(keep))


def _wrap(token_ids, start=(), end=()):
    """`start + ids + end` for each row of a ragged `(B, None)`; `start`
    and `end` an id or a sequence of ids."""
    start, end = ([ids] if isinstance(ids, int) else list(ids) for ids in (start, end))
    batch = token_ids.nrows()
    parts = [tf.tile(tf.constant([ids], tf.int32), [batch, 1]) for ids in (start, end) if ids]
    middle = 1 if start else 0
    parts.insert(middle, tf.cast(token_ids, tf.int32))
    return tf.concat(parts, axis=1)


class _GraphTokenizer(tf.Module):
    """What every graph tokenizer shares: a checkpoint tokenizer appends its
    end token, and a cut row keeps it last (`tokenizer.keep_last`)."""

    def truncate(self, token_ids, max_length):
        """Ragged int32 rows `(B, None)` of `encode`, each cut to at most
        `max_length` ids: its first `max_length - 1` and its last."""
        positions = tf.ragged.range(token_ids.row_lengths())
        last = tf.expand_dims(token_ids.row_lengths() - 1, 1)
        keep = (positions < max_length - 1) | (positions == last)
        return tf.ragged.boolean_mask(token_ids, keep)


class SentencePieceGraphTokenizer(_GraphTokenizer):
    """A recipe's `data.SentencePieceModel` as TensorFlow graphs (see the
    module docstring)."""

    def __init__(self, tokenizer):
        super().__init__(name="sentencepiece_tokenizer")
        self.spm = _sentencepiece(_proto(tokenizer), tf.int32)
        self.special_ids = sorted({tokenizer.pad_token_id, tokenizer.start_token_id,
                                   tokenizer.end_token_id})

    @tf.function(input_signature=[_TEXTS], autograph=False)
    def encode(self, texts):
        """The pieces' ids `(B, None)` of `texts (B,)`, nothing added."""
        return _ragged(self.spm.tokenize(texts))

    def truncate(self, token_ids, max_length):
        """Rows cut to their first `max_length` ids (`Tokenizer.truncate`)."""
        return token_ids[:, :max_length]

    @tf.function(input_signature=[_IDS], autograph=False)
    def _decode(self, token_ids):
        return self.spm.detokenize(_keep(token_ids, self.special_ids))

    def decode(self, token_ids):
        """Texts tf.string `(B,)` of int ids `(B, L)` (dense or ragged)."""
        return self._decode(_ragged(token_ids))


class MarianGraphTokenizer(_GraphTokenizer):
    """A `MarianTokenizer` as TensorFlow graphs (see the module docstring)."""

    def __init__(self, tokenizer):
        super().__init__(name="marian_tokenizer")
        self.end_token_id = tokenizer.end_token_id
        self.special_ids = sorted(tokenizer.special_ids)
        self.source = _sentencepiece(_proto(tokenizer.source), tf.string)
        self.target = _sentencepiece(_proto(tokenizer.target), tf.string)
        self.piece_ids, self.id_pieces = _vocabulary_tables(tokenizer.vocabulary,
                                                            tokenizer.unk_token_id)

    def _encode(self, texts, spm):
        # A leading language code `>>xx<<` (up to the first "<<") is one token.
        coded = tf.strings.regex_full_match(texts, r"(?s)>>.*?<<.*")
        code = tf.strings.regex_replace(texts, r"(?s)^(>>.*?<<).*$", r"\1")
        rest = tf.where(coded, tf.strings.regex_replace(texts, r"(?s)^>>.*?<<", ""), texts)
        codes = tf.ragged.boolean_mask(code[:, None], coded[:, None])
        pieces = tf.concat([codes, spm.tokenize(rest)], axis=1)
        return _wrap(tf.ragged.map_flat_values(self.piece_ids.lookup, pieces),
                     end=self.end_token_id)

    @tf.function(input_signature=[_TEXTS], autograph=False)
    def encode(self, texts):
        """Source ids `(B, None)` of tf.string `texts (B,)`."""
        return self._encode(texts, self.source)

    @tf.function(input_signature=[_TEXTS], autograph=False)
    def encode_target(self, texts):
        """Target ids (`target.spm`), as the Python tokenizer's `tokenize_targets`."""
        return self._encode(texts, self.target)

    @tf.function(input_signature=[_IDS], autograph=False)
    def _decode(self, token_ids):
        kept = _keep(token_ids, self.special_ids)
        joined = tf.strings.reduce_join(
            tf.ragged.map_flat_values(self.id_pieces.lookup, kept), axis=1)
        return tf.strings.strip(tf.strings.regex_replace(joined, "\u2581", " "))

    def decode(self, token_ids):
        """Texts tf.string `(B,)` of int ids `(B, L)` (dense or ragged)."""
        return self._decode(_ragged(token_ids))


class BartGraphTokenizer(_GraphTokenizer):
    """A `BartTokenizer` as TensorFlow graphs (see the module docstring)."""

    def __init__(self, tokenizer):
        super().__init__(name="bart_tokenizer")
        self.bpe = tokenizer.bpe
        self.start_token_id = tokenizer.start_token_id
        self.end_token_id = tokenizer.end_token_id
        self.special_ids = sorted(tokenizer.special_ids)

    @tf.function(input_signature=[_TEXTS], autograph=False)
    def encode(self, texts):
        """`<s>` + byte-level BPE ids + `</s>` `(B, None)` of `texts (B,)`."""
        ids = self.bpe.tokenize(texts)
        if not isinstance(ids, tf.RaggedTensor):  # a batch of equal lengths
            ids = tf.RaggedTensor.from_tensor(ids)
        return _wrap(ids, self.start_token_id, self.end_token_id)

    @tf.function(input_signature=[_IDS], autograph=False)
    def _decode(self, token_ids):
        return self.bpe.detokenize(_keep(token_ids, self.special_ids))

    def decode(self, token_ids):
        """Texts tf.string `(B,)` of int ids `(B, L)` (dense or ragged)."""
        return self._decode(_ragged(token_ids))


class T5GraphTokenizer(_GraphTokenizer):
    """A `T5Tokenizer` as TensorFlow graphs (see the module docstring)."""

    def __init__(self, tokenizer):
        super().__init__(name="t5_tokenizer")
        self.spm = _sentencepiece(_proto(tokenizer.spm), tf.int32)
        self.extra_ids = tokenizer.extra_ids
        self.piece_count = tokenizer.piece_count
        self.end_token_id = tokenizer.end_token_id
        self.special_ids = sorted(tokenizer.special_ids)

    @tf.function(input_signature=[_TEXTS], autograph=False)
    def encode(self, texts):
        """Ids `(B, None)` of `texts (B,)`: sentinels as their ids, `</s>`
        appended."""
        sentinel = r"<extra_id_\d+>"
        parts = tf_text.regex_split(texts, sentinel, keep_delim_regex_pattern=sentinel)
        flat = parts.flat_values  # the texts between sentinels, and the sentinels
        matched = tf.strings.regex_full_match(flat, sentinel)
        number = tf.strings.to_number(tf.where(
            matched, tf.strings.regex_replace(flat, r"^<extra_id_(\d+)>$", r"\1"), "0"),
            tf.float64)
        is_sentinel = matched & (number < self.extra_ids)
        sentinel_id = self.piece_count + self.extra_ids - 1 - tf.cast(
            tf.where(is_sentinel, number, 0.0), tf.int32)
        blank = tf.equal(tf.strings.length(tf.strings.strip(flat)), 0)
        pieces = self.spm.tokenize(tf.where(is_sentinel | blank, "", flat))
        pieces = tf.concat([tf.ragged.boolean_mask(sentinel_id[:, None], is_sentinel[:, None]),
                            pieces], axis=1)
        ids = parts.with_flat_values(pieces).merge_dims(1, 2)
        return _wrap(ids, end=self.end_token_id)

    @tf.function(input_signature=[_IDS], autograph=False)
    def _decode(self, token_ids):
        kept = _keep(token_ids, self.special_ids)
        kept = tf.ragged.boolean_mask(kept, kept < self.piece_count)
        return self.spm.detokenize(kept)

    def decode(self, token_ids):
        """Texts tf.string `(B,)` of int ids `(B, L)` (dense or ragged)."""
        return self._decode(_ragged(token_ids))


def _literal(text):
    """`text` as an RE2 pattern matching itself."""
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


class _AddedTokens(tf.Module):
    """The tokens a tokenizer matches in a text before its model (special
    tokens, language codes): `split` cuts texts at them, `merge` puts their
    ids between the model's ids of the texts around them."""

    def __init__(self, tokens):
        """`tokens`: `[(content, id, lstrip, rstrip)]`; `lstrip`/`rstrip`: the
        token takes the spaces to its left / right."""
        super().__init__(name="added_tokens")
        # Longest first: a token that begins another never hides it.
        self.pattern = "|".join(
            (r"\s*" if lstrip else "") + _literal(content) + (r"\s*" if rstrip else "")
            for content, _, lstrip, rstrip in sorted(tokens, key=lambda t: -len(t[0]))
        ) or r"[^\x00-\x{10FFFF}]"  # none: a pattern nothing matches
        self.ids = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([t[0] for t in tokens], tf.string),
            tf.constant([t[1] for t in tokens], tf.int32)), default_value=-1)

    def split(self, texts):
        """`(parts, is_added)`: ragged `(B, None)` of the texts between added
        tokens and the tokens, and bool `(P,)` over `parts.flat_values`."""
        parts = tf_text.regex_split(texts, self.pattern, keep_delim_regex_pattern=self.pattern)
        return parts, tf.strings.regex_full_match(parts.flat_values, self.pattern)

    def merge(self, parts, is_added, ids):
        """Ids `(B, None)`: `ids` (ragged `(P, None)`, the model's ids of each
        part; empty for an added token) with each added token's id."""
        added_id = self.ids.lookup(tf.strings.strip(parts.flat_values))
        ids = tf.concat([tf.ragged.boolean_mask(added_id[:, None], is_added[:, None]),
                         tf.cast(ids, tf.int32)], axis=1)
        return parts.with_flat_values(ids).merge_dims(1, 2)


class FastGraphTokenizer(_GraphTokenizer):
    """A `FastTokenizer` (a SentencePiece `tokenizer.json`) as TensorFlow
    graphs (see the module docstring)."""

    def __init__(self, tokenizer):
        super().__init__(name="fast_tokenizer")
        data = tokenizer.json
        proto, _ = (tokenizer_json.bpe_sentencepiece_model(data)
                    if (data.get("model") or {}).get("type") == "BPE"
                    else tokenizer_json.unigram_sentencepiece_model(data))
        self.start_ids, self.end_ids = tokenizer_json.template_ids(data)
        self.spm = _sentencepiece(proto, tf.int32)
        self.piece_count = int(self.spm.vocab_size())
        self.space_id = int(self.spm.string_to_id(tokenizer_json.SPIECE_UNDERLINE))
        self.keeps_trailing_space = tokenizer_json.keeps_trailing_space(data)
        self.strips_first_space = tokenizer_json.decoder_strips_first_space(data)
        self.added = _AddedTokens(tokenizer_json.added_tokens(data))
        self.special_ids = sorted(tokenizer.special_ids)
        self.clean_ups = tokenizers.CLEAN_UPS if tokenizer.clean_up_tokenization_spaces else ()

    @tf.function(input_signature=[_TEXTS], autograph=False)
    def encode(self, texts):
        """Ids `(B, None)` of `texts (B,)`: the added tokens in a text (special
        tokens, language codes) as their ids, the text between them as
        SentencePiece ids, all inside the template's special ids."""
        parts, is_added = self.added.split(texts)
        flat = parts.flat_values
        pieces = self.spm.tokenize(tf.where(is_added, "", flat))
        if self.keeps_trailing_space:  # SentencePiece drops the spaces a text ends with
            trailing = ~is_added & tf.strings.regex_full_match(flat, r"(?s).*[\s\p{Zs}]")
            pieces = tf.concat([pieces, tf.ragged.boolean_mask(
                tf.fill([tf.size(flat), 1], self.space_id), trailing[:, None])], axis=1)
        return _wrap(self.added.merge(parts, is_added, pieces), self.start_ids, self.end_ids)

    @tf.function(input_signature=[_IDS], autograph=False)
    def _decode(self, token_ids):
        # The file's decoder: pieces joined, `▁` as spaces, the first one
        # dropped (SentencePiece's own decoding drops every leading space).
        kept = _keep(token_ids, self.special_ids)
        pieces = self.spm.id_to_string(tf.ragged.boolean_mask(kept, kept < self.piece_count))
        texts = tf.strings.regex_replace(tf.strings.reduce_join(pieces, axis=1),
                                         tokenizer_json.SPIECE_UNDERLINE, " ")
        if self.strips_first_space:
            texts = tf.strings.regex_replace(texts, "^ ", "")
        for old, new in self.clean_ups:
            texts = tf.strings.regex_replace(texts, _literal(old), new)
        return texts

    def decode(self, token_ids):
        """Texts tf.string `(B,)` of int ids `(B, L)` (dense or ragged)."""
        return self._decode(_ragged(token_ids))


class M2M100GraphTokenizer(_GraphTokenizer):
    """An `M2M100Tokenizer` (`vocab.json` + `sentencepiece.bpe.model`) as
    TensorFlow graphs: SentencePiece pieces, a `tf.lookup` table of
    `vocab.json` (`<unk>` for a piece it lacks), the special and language
    tokens in a text as their ids, `__src__ ... </s>`; decoding drops them
    and joins the pieces."""

    def __init__(self, tokenizer):
        super().__init__(name="m2m100_tokenizer")
        with open(tokenizer.spm_path, "rb") as file:
            self.spm = _sentencepiece(file.read(), tf.string)
        self.piece_ids, self.id_pieces = _vocabulary_tables(tokenizer.vocabulary,
                                                            tokenizer.unk_token_id)
        self.added = _AddedTokens([(token, i, False, False)
                                   for token, i in tokenizer.added_tokens.items()])
        self.start_ids, self.end_ids = [tokenizer.source_language_id], [tokenizer.end_token_id]
        self.special_ids = sorted(tokenizer.special_ids)
        self.clean_ups = tokenizers.CLEAN_UPS if tokenizer.clean_up_tokenization_spaces else ()

    @tf.function(input_signature=[_TEXTS], autograph=False)
    def encode(self, texts):
        """`__src__` + ids + `</s>` `(B, None)` of `texts (B,)`."""
        parts, is_added = self.added.split(texts)
        pieces = self.spm.tokenize(tf.where(is_added, "", parts.flat_values))
        ids = tf.ragged.map_flat_values(self.piece_ids.lookup, pieces)
        return _wrap(self.added.merge(parts, is_added, ids), self.start_ids, self.end_ids)

    @tf.function(input_signature=[_IDS], autograph=False)
    def _decode(self, token_ids):
        kept = _keep(token_ids, self.special_ids)
        joined = tf.strings.reduce_join(
            tf.ragged.map_flat_values(self.id_pieces.lookup, kept), axis=1)
        texts = tf.strings.strip(tf.strings.regex_replace(joined, "\u2581", " "))
        for old, new in self.clean_ups:
            texts = tf.strings.regex_replace(texts, _literal(old), new)
        return texts

    def decode(self, token_ids):
        """Texts tf.string `(B,)` of int ids `(B, L)` (dense or ragged)."""
        return self._decode(_ragged(token_ids))
