"""`Tokenizer`: the one contract of the tokenizers a model is run with.

A recipe's SentencePiece model (`data.SentencePieceModel`) and every
checkpoint's tokenizer (`keras_attention.pretrained.tokenizers`) implement
it, so what encodes lines for a model and reads its outputs back
(`encode_lines`, `TextToText`, `keras-attention generate`) is written once,
whichever tokenizer a run has. Where the families differ (the special tokens
each adds, how a cut line keeps its end token, a separate target side), the
difference lives in the tokenizer classes, not in their callers.

This module imports neither Keras nor TensorFlow.
"""

import numpy as np


class Tokenizer:
    """What every tokenizer gives: ids of texts, texts of generated ids, its
    vocabulary size and its special ids.

    Subclasses implement `tokenize`, `detokenize` and `vocabulary_size`, and
    set the special ids they have (`pad_token_id` and `end_token_id` always;
    `start_token_id` and `unk_token_id` where the vocabulary has such a token,
    `None` otherwise).

    Attributes:
        pad_token_id: int, the id rows are padded with (the model's
            `pad_token_id`).
        start_token_id: int or None, the id of the start token (`<s>`): a
            recipe model's decoder start; a checkpoint's decoder start is its
            model's `start_token_id` (from its config), which may differ
            (BART starts from `</s>`, Marian and T5 from `<pad>`).
        end_token_id: int, the end token (`</s>`), where a generated row ends.
        unk_token_id: int or None, the id of a piece the vocabulary lacks.

    Example:

    >>> from keras_attention.tokenizer import Tokenizer, encode_lines, keep_last
    >>> class Characters(Tokenizer):
    ...     pad_token_id, end_token_id = 0, 1
    ...     def tokenize(self, texts):
    ...         return [[ord(c) - 95 for c in text] + [self.end_token_id] for text in texts]
    ...     def detokenize(self, token_ids):
    ...         return ["".join(chr(i + 95) for i in row if i > 1) for row in token_ids]
    ...     def vocabulary_size(self):
    ...         return 28
    ...     def truncate(self, token_ids, max_length):  # keeps its end token
    ...         return keep_last(token_ids, max_length)
    >>> tokenizer = Characters()
    >>> tokenizer.tokenize(["abc", "a"])
    [[2, 3, 4, 1], [2, 1]]
    >>> encode_lines(tokenizer, ["abc", "a"], max_length=3)
    array([[2, 3, 1],
           [2, 1, 0]], dtype=int32)
    >>> tokenizer.detokenize([[2, 3, 1, 0]])
    ['ab']
    """

    pad_token_id = None
    start_token_id = None
    end_token_id = None
    unk_token_id = None

    def tokenize(self, texts):
        """A model's input ids of each text, as it takes them (the special
        tokens the tokenizer adds included).

        Args:
            texts: list of `N` str.

        Returns:
            A list of `N` lists of int.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `tokenize`.")

    def tokenize_targets(self, texts):
        """The ids of target texts, as a model is trained to generate them
        (`tokenize`'s unless the tokenizer has a target side of its own, as
        Marian's `target.spm`).

        Args:
            texts: list of `N` str.

        Returns:
            A list of `N` lists of int.
        """
        return self.tokenize(texts)

    def detokenize(self, token_ids):
        """The text of each row of generated ids, without its special tokens
        (padding, start and end).

        Args:
            token_ids: int array `(N, L)` or a list of `N` lists of ids.

        Returns:
            A list of `N` str.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `detokenize`.")

    def vocabulary_size(self):
        """The number of ids the tokenizer knows (int)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `vocabulary_size`.")

    def truncate(self, token_ids, max_length):
        """A row of `tokenize` cut to at most `max_length` ids, as the model
        takes a cut line: its first `max_length` ids (a tokenizer that
        appends an end token keeps it last instead: `keep_last`).

        Args:
            token_ids: list of int, one row.
            max_length: positive int.

        Returns:
            A list of at most `max_length` ints.
        """
        return list(token_ids)[:max_length]


def keep_last(token_ids, max_length):
    """`token_ids` cut to `max_length` ids, its last id (the end token, or
    what a template puts after it) kept last: the `truncate` of the
    tokenizers that append one."""
    token_ids = list(token_ids)
    if len(token_ids) <= max_length:
        return token_ids
    return token_ids[:max_length - 1] + token_ids[-1:]


def id_rows(token_ids):
    """Rows of int ids from a list of lists, a 2-D integer array, or a 1-D
    one (one row)."""
    if isinstance(token_ids, np.ndarray) and token_ids.ndim == 1:
        token_ids = token_ids[None]
    return [[int(i) for i in row] for row in token_ids]


def encode_lines(tokenizer, texts, max_length=None):
    """The ids of input lines for a model's `generate`: `tokenizer.tokenize`,
    each row cut to `max_length` ids (`tokenizer.truncate`; `None`: not
    cut), padded at the end with `tokenizer.pad_token_id` to the longest row.

    Args:
        tokenizer: a `Tokenizer`.
        texts: list of `N` str.
        max_length: positive int or None.

    Returns:
        int32 NumPy array `(N, S)`, `S` the longest row (at least 1).

    Raises:
        ValueError: naming `tokenizer` when it is not a `Tokenizer`, or
            `max_length`.
    """
    if not isinstance(tokenizer, Tokenizer):
        raise ValueError(f"Argument `tokenizer` must be a `keras_attention.tokenizer.Tokenizer`. "
                         f"Received: tokenizer={tokenizer!r}")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(
            max_length, (int, np.integer)) or max_length < 1):
        raise ValueError(f"Argument `max_length` must be a positive int or None. "
                         f"Received: max_length={max_length!r}")
    rows = tokenizer.tokenize(list(texts))
    if max_length is not None:
        rows = [tokenizer.truncate(row, max_length) for row in rows]
    width = max([1] + [len(row) for row in rows])
    ids = np.full((len(rows), width), tokenizer.pad_token_id, "int32")
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
    return ids


__all__ = ["Tokenizer", "encode_lines", "id_rows", "keep_last"]
