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
line, without loading TensorFlow or keras-hub), a
`keras_attention.tokenizer.Tokenizer` as every checkpoint tokenizer is
(`as_tokenizer` gives it for keras-hub's).
"""

import contextlib
import os
import re

from keras_attention.files import write_atomically
from keras_attention.tokenizer import Tokenizer, id_rows
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


class SentencePieceModel(Tokenizer):
    """A saved SentencePiece model in plain Python: the ids and texts of
    keras-hub's `SentencePieceTokenizer` of the same model (one C++ library
    under both: no sampling, no start or end token added), read with the
    `sentencepiece` package, so that neither TensorFlow nor keras-hub loads.
    `keras-attention generate` and `runs.open_run` read a run's `.spm` files with it.

    A `keras_attention.tokenizer.Tokenizer`: `tokenize` gives the pieces'
    ids (a recipe's model takes its sources without start or end token),
    `detokenize` the text of generated rows, cut at the end token, without
    padding or start tokens. `pad_token_id`, `start_token_id`,
    `end_token_id` and `unk_token_id` are the ids of `<pad>`, `<s>`, `</s>`
    and `<unk>` (keras-hub's trainer: 0, 2, 3 and 1).

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
    >>> plain.detokenize([plain("a cat") + [plain.end_token_id, 5]])
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
        self.pad_token_id = self.token_to_id("<pad>")
        self.start_token_id = self.token_to_id("<s>")
        self.end_token_id = self.token_to_id("</s>")
        self.unk_token_id = self.token_to_id("<unk>")

    def __call__(self, texts):
        """`tokenize`."""
        return self.tokenize(texts)

    def tokenize(self, texts):
        """Ids of a list of strings (a list of lists of int), or of one
        string (a list of int)."""
        if isinstance(texts, str):
            return self._processor.EncodeAsIds(texts)
        return [self._processor.EncodeAsIds(text) for text in texts]

    def pieces(self, texts):
        """The pieces of each of `texts` (a list of lists of str): those of
        keras-hub's tokenizer with `dtype="string"`."""
        return [self._processor.EncodeAsPieces(text) for text in texts]

    def detokenize(self, token_ids):
        """The strings of generated rows `(N, L)` (a list of N str): each cut
        at its end token, without padding or start tokens."""
        dropped = (self.pad_token_id, self.start_token_id)
        texts = []
        for row in id_rows(token_ids):
            kept = []
            for token in row:
                if token == self.end_token_id:
                    break
                if token not in dropped:
                    kept.append(token)
            texts.append(self._processor.DecodeIds(kept) if kept else "")
        return texts

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


def as_tokenizer(tokenizer):
    """`tokenizer` as a `keras_attention.tokenizer.Tokenizer`: itself, or
    the `SentencePieceModel` of a keras-hub `SentencePieceTokenizer` (what
    the recipes train: the same ids and texts).

    Raises:
        ValueError: naming `tokenizer`, for anything else.
    """
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    proto = getattr(tokenizer, "proto", None)
    if isinstance(proto, (bytes, str)) and callable(getattr(tokenizer, "detokenize", None)):
        return SentencePieceModel(proto)
    raise ValueError("Argument `tokenizer` must be a `keras_attention.tokenizer.Tokenizer` or a "
                     f"keras-hub `SentencePieceTokenizer`. Received: tokenizer={tokenizer!r}")


__all__ = [
    "SentencePieceModel",
    "as_tokenizer",
    "load_tokenizer",
    "never_generated_ids",
    "save_tokenizer",
    "special_token_ids",
    "train_tokenizer",
]
