"""The most tokens a model accepts in one input line, and the refusal of a
line longer than that (`SourceTooLongError`).

`TextToText.encode` (and so `search`, `generate` and `keras-attention
generate`) refuses such a line unless the caller asks for truncation
(`truncate=True`, `--truncate`): a line is never cut without a word.
"""


class SourceTooLongError(ValueError):
    """An input line has more tokens than the model accepts.

    A `ValueError` (`keras-attention generate` reports it as one line); its
    message names the line, its length and the limit, and says how to ask
    for truncation.

    Attributes:
        index: int, the 0-based position of the first line that is too
            long, in the list of lines given.
        length: int, its number of tokens.
        limit: int, the most tokens the model accepts (the run's
            `GenerationConfig.source_length`).
    """

    def __init__(self, index, length, limit):
        self.index, self.length, self.limit = int(index), int(length), int(limit)
        super().__init__(
            f"Argument `texts` holds a line longer than this model accepts: line "
            f"{self.index + 1} has {self.length} tokens, more than the run's source length of "
            f"{self.limit}. Shorten it, or ask for truncation (`truncate=True`; `--truncate` on "
            f"the command line) to cut it to {self.limit} tokens. "
            f"Received: texts[{self.index}] of {self.length} tokens")

    def __reduce__(self):  # pickled with its attributes (its message is made from them)
        return type(self), (self.index, self.length, self.limit)


def check_source_length(token_ids, limit, pad_token_id):
    """`token_ids` with at most `limit` columns, or a refusal of the first row
    longer than that.

    A row is too long when it holds an id other than `pad_token_id` at a
    position `limit` or beyond; a row of exactly `limit` tokens fits.

    Args:
        token_ids: int NumPy array `(N, S)`, rows padded at the end with
            `pad_token_id` (as a model kind's encode hook pads them, uncut).
        limit: positive int, the most tokens a row may have.
        pad_token_id: int.

    Returns:
        `token_ids[:, :limit]` (`(N, min(S, limit))`): the ids themselves
        where `S <= limit`.

    Raises:
        SourceTooLongError: naming the first row that is too long, its
            length and `limit`.
    """
    import numpy as np

    beyond = token_ids[:, limit:] != pad_token_id  # (N, S - limit)
    too_long = np.flatnonzero(beyond.any(axis=-1))
    if too_long.size:
        index = int(too_long[0])
        length = int(np.flatnonzero(token_ids[index] != pad_token_id)[-1]) + 1
        raise SourceTooLongError(index, length, limit)
    return token_ids[:, :limit]


__all__ = ["SourceTooLongError", "check_source_length"]
