"""Subword tokenizers trained on a training split (SentencePiece, keras-hub).

SentencePiece detokenizes losslessly, so BLEU and ROUGE are computed on real
detokenized text. Ids follow keras-hub's trainer: pad 0, unk 1, start
(`<s>`) 2, end (`</s>`) 3; pass `special_token_ids(tokenizer)` to the model
builders, and `never_generated_ids(tokenizer)` to `generate(...,
suppress_token_ids=...)`.

Two readers of one saved model: `load_tokenizer` gives keras-hub's
`SentencePieceTokenizer` (TensorFlow ops: for `tf.data` pipelines and
exported graphs), `SentencePieceModel` the same ids and texts in plain Python
(the `sentencepiece` package: what reading a run folder needs to answer a
line, without loading TensorFlow or keras-hub).
"""

import contextlib
import os
import re

import numpy as np

from keras_attention.files import write_atomically
from keras_attention.validation import check_positive_int


def train_tokenizer(texts, vocabulary_size, *, lowercase=False, model_type="unigram"):
    """Trains a SentencePiece tokenizer on `texts`.

    When the texts are too few for `vocabulary_size`, the largest size
    SentencePiece accepts is used instead (small built-in datasets).

    Args:
        texts: list of str, the training split only.
        vocabulary_size: positive int, the wanted vocabulary size.
        lowercase: bool, case-fold while normalising.
        model_type: `"unigram"`, `"bpe"` or `"word"` (whitespace-separated
            words, for small closed vocabularies such as bAbI's).

    Returns:
        A `keras_hub.tokenizers.SentencePieceTokenizer`.
    """
    import keras_hub
    import tensorflow as tf

    vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
    texts = [t for t in texts if t]
    if not texts:
        raise ValueError("`texts` must hold at least one non-empty string. Received: []")
    dataset = tf.data.Dataset.from_tensor_slices(texts)

    def train(size):
        with _quiet_stderr():
            return keras_hub.tokenizers.compute_sentence_piece_proto(
                dataset, size, model_type=model_type, lowercase=lowercase
            )

    try:
        proto = train(vocabulary_size)
    except RuntimeError as error:
        match = re.search(r"value <= (\d+)", str(error))
        if not match:
            raise
        proto = train(int(match.group(1)))
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=proto)


@contextlib.contextmanager
def _quiet_stderr():
    """Silences the SentencePiece trainer's C++ log lines (file descriptor 2)."""
    try:
        saved = os.dup(2)
    except OSError:  # no real stderr (some notebooks)
        yield
        return
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def special_token_ids(tokenizer):
    """`{"pad_token_id", "start_token_id", "end_token_id"}` of a tokenizer."""
    return {
        "pad_token_id": tokenizer.token_to_id("<pad>"),
        "start_token_id": tokenizer.token_to_id("<s>"),
        "end_token_id": tokenizer.token_to_id("</s>"),
    }


def never_generated_ids(tokenizer):
    """The sorted ids of the tokens a model should never generate: pad,
    unknown (`<unk>`, detokenized as "⁇") and start (`<s>`); the
    `suppress_token_ids` of `Seq2SeqModel.generate` (the recipes pass it)."""
    ids = special_token_ids(tokenizer)
    return sorted({ids["pad_token_id"], tokenizer.token_to_id("<unk>"), ids["start_token_id"]})


def save_tokenizer(tokenizer, path):
    """Writes the tokenizer's SentencePiece model to `path` atomically (a
    temporary file in the same folder, then a rename)."""
    proto = tokenizer.proto
    if isinstance(proto, str):
        with open(proto, "rb") as f:
            proto = f.read()
    write_atomically(path, lambda file: file.write(proto))


def load_tokenizer(path):
    """Loads a tokenizer written by `save_tokenizer` as keras-hub's
    `SentencePieceTokenizer` (for `tf.data` and graphs; `SentencePieceModel`
    reads it in plain Python)."""
    import keras_hub

    if not os.path.exists(path):
        raise FileNotFoundError(f"No tokenizer at {path!r}")
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=path)


class SentencePieceModel:
    """A saved SentencePiece model in plain Python: the ids and texts of
    keras-hub's `SentencePieceTokenizer` of the same model (one C++ library
    under both: no sampling, no start or end token added), read with the
    `sentencepiece` package, so that neither TensorFlow nor keras-hub loads.
    `keras-attention generate` and `SavedRun` read a run's `.spm` files with it.

    Args:
        proto: the serialized model (bytes), or the path of a `.spm` file
            `save_tokenizer` wrote.

    Raises:
        ValueError: for bytes that are not a SentencePiece model.
        FileNotFoundError: naming a missing file.

    Example:

    >>> from keras_attention import data
    >>> trained = data.train_tokenizer(["a cat sat on the mat", "a dog ran"], 40)
    >>> plain = data.SentencePieceModel(trained.proto)
    >>> plain("a cat") == [int(i) for i in trained("a cat")]
    True
    >>> plain.detokenize([plain("a cat")])
    ['a cat']
    """

    def __init__(self, proto):
        import sentencepiece

        if isinstance(proto, (str, os.PathLike)):
            if not os.path.exists(proto):
                raise FileNotFoundError(f"No tokenizer at {os.fspath(proto)!r}")
            with open(proto, "rb") as file:
                proto = file.read()
        self.proto = bytes(proto)
        self._processor = sentencepiece.SentencePieceProcessor()
        try:
            self._processor.LoadFromSerializedProto(self.proto)
        except (RuntimeError, OSError, TypeError) as error:
            raise ValueError(f"Argument `proto` must be a serialized SentencePiece model "
                             f"({error}). Received: {len(self.proto)} bytes") from None

    def __call__(self, texts):
        """`tokenize`."""
        return self.tokenize(texts)

    def tokenize(self, texts):
        """Ids of a string (a list of int), or of a list of strings (a list
        of lists)."""
        if isinstance(texts, str):
            return self._processor.EncodeAsIds(texts)
        return [self._processor.EncodeAsIds(text) for text in texts]

    def pieces(self, texts):
        """The pieces of each of `texts` (a list of lists of str): those of
        keras-hub's tokenizer with `dtype="string"`."""
        return [self._processor.EncodeAsPieces(text) for text in texts]

    def detokenize(self, token_ids):
        """The strings of a batch of id lists (a list of str)."""
        return [self._processor.DecodeIds([int(i) for i in row]) for row in token_ids]

    def vocabulary_size(self):
        return self._processor.GetPieceSize()

    def token_to_id(self, token):
        """The id of a piece (`<unk>`'s id for a piece the model lacks, as
        keras-hub's)."""
        return self._processor.PieceToId(token)

    def id_to_token(self, token_id):
        """The piece of an id.

        Raises:
            ValueError: for an id outside `[0, vocabulary_size())`, as
                keras-hub's.
        """
        if not 0 <= int(token_id) < self.vocabulary_size():
            raise ValueError(f"`id` must be in range [0, {self.vocabulary_size() - 1}]. "
                             f"Received: {token_id}")
        return self._processor.IdToPiece(int(token_id))


def encode_sources(texts, tokenizer, max_length):
    """Source texts -> an int32 NumPy array `(N, L)` for `generate`, padded
    with 0 (`<pad>`) to the longest row (each cut to `max_length` ids;
    `max_length=None`: not cut; `tokenizer`: either reader of a model)."""
    rows = [list(map(int, tokenizer(t)[:max_length])) for t in texts]
    width = max(1, max(len(r) for r in rows))
    out = np.zeros((len(rows), width), "int32")
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def detokenize(tokenizer, token_ids):
    """Token ids `(B, L)` -> list of B strings, cut at the end token and
    without padding or start tokens."""
    ids = special_token_ids(tokenizer)
    texts = []
    for row in token_ids:
        kept = []
        for token in row:
            token = int(token)
            if token == ids["end_token_id"]:
                break
            if token not in (ids["pad_token_id"], ids["start_token_id"]):
                kept.append(token)
        texts.append(tokenizer.detokenize([kept])[0] if kept else "")
    return [t.numpy().decode("utf-8") if hasattr(t, "numpy") else str(t) for t in texts]


__all__ = [
    "SentencePieceModel",
    "detokenize",
    "encode_sources",
    "load_tokenizer",
    "never_generated_ids",
    "save_tokenizer",
    "special_token_ids",
    "train_tokenizer",
]
