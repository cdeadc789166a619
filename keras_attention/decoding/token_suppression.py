"""Token suppression: ids that a search never generates.

Some target ids are never a correct output: SentencePiece's unknown token
(`<unk>`, detokenized as "⁇"), the pad token and the start token. Wrapping
a `step_fn` (see `keras_attention.decoding.search`) with `suppress_tokens`
gives those ids a logit of `SUPPRESSED_LOGIT` at every step, so that no
search picks them: greedy and beam search, top-k, top-p and random sampling,
eager or compiled, on every backend. `Seq2SeqModel.generate(...,
suppress_token_ids=...)` does this for a model.

The logit is large and finite rather than `-inf`, so that the log-softmax
and score sums of beam search stay finite numbers. A forced token (a
`decoder_prompt`) is not picked, so a prompt may still hold a suppressed id.
"""

import numbers

import numpy as np
from keras import ops

#: The logit a suppressed token gets (after a cast to float32).
SUPPRESSED_LOGIT = -1e9


def check_suppress_token_ids(suppress_token_ids, vocab_size, *, end_id=None):
    """The suppressed ids as a sorted tuple without duplicates, checked.

    Args:
        suppress_token_ids: None (nothing suppressed) or a list, tuple or
            1-D NumPy array of int token ids.
        vocab_size: int `V`; every id must lie in `[0, V)`, and at least one
            id must stay allowed.
        end_id: optional int, the end token: it may not be suppressed (rows
            must be able to end).

    Returns:
        A tuple of ints (empty when nothing is suppressed).

    Raises:
        ValueError: naming `suppress_token_ids`.
    """
    received = f"Received: suppress_token_ids={suppress_token_ids!r}"
    if suppress_token_ids is None:
        return ()
    valid = isinstance(suppress_token_ids, (list, tuple)) or (
        isinstance(suppress_token_ids, np.ndarray) and suppress_token_ids.ndim == 1
    )
    if not valid or not all(_is_int(i) for i in suppress_token_ids):
        raise ValueError(
            f"Argument `suppress_token_ids` must be a list, tuple or 1-D array of int token "
            f"ids. {received}"
        )
    ids = tuple(sorted({int(i) for i in suppress_token_ids}))
    outside = [i for i in ids if not 0 <= i < vocab_size]
    if outside:
        raise ValueError(
            f"Argument `suppress_token_ids` must hold token ids in [0, {vocab_size}) (the "
            f"target vocabulary); {outside[0]} is not. {received}"
        )
    if len(ids) == vocab_size:
        raise ValueError(
            f"Argument `suppress_token_ids` must leave at least one of the {vocab_size} token "
            f"ids allowed. {received}"
        )
    if end_id is not None and end_id in ids:
        raise ValueError(
            f"Argument `suppress_token_ids` must not hold the end token id {end_id} (rows "
            f"must be able to end). {received}"
        )
    return ids


def _is_int(value):
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def suppress_tokens(step_fn, token_ids, vocab_size):
    """A `step_fn` whose logits are `SUPPRESSED_LOGIT` at `token_ids`.

    The new step function casts the logits to float32 and sets the
    suppressed columns; its state and attention are those of `step_fn`.
    Pass it to `decoding.sampling_search`, `decoding.beam_search` or a
    sampler's `search`: none of them picks a suppressed id (a beam search
    with more beams than allowed tokens may still keep a suppressed
    hypothesis, last, with a score near `SUPPRESSED_LOGIT`).

    Args:
        step_fn: `step_fn(token_ids (N,), index, state) -> (logits (N, V),
            state, attention)`.
        token_ids: the ids never to generate (see
            `check_suppress_token_ids`); None or empty returns `step_fn`.
        vocab_size: int `V`, the logits' last dimension.

    Returns:
        A step function with the same contract.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention import decoding
    >>> def step_fn(token_ids, index, state):  # prefers token 1, then the end (3)
    ...     logits = np.log(np.array([[0.01, 0.6, 0.09, 0.3]], "float32"))
    ...     return ops.convert_to_tensor(logits), state, ops.zeros((1, 1))
    >>> greedy = dict(batch_size=1, max_length=3, start_id=2, end_id=3, pad_id=0,
    ...               select=lambda logits, index: ops.cast(ops.argmax(logits, -1), "int32"))
    >>> ops.convert_to_numpy(decoding.sampling_search(step_fn, {}, **greedy).token_ids)
    array([[1, 1, 1]], dtype=int32)
    >>> step_fn = decoding.suppress_tokens(step_fn, [1], vocab_size=4)
    >>> ops.convert_to_numpy(decoding.sampling_search(step_fn, {}, **greedy).token_ids)
    array([[3, 0, 0]], dtype=int32)
    """
    ids = check_suppress_token_ids(token_ids, vocab_size)
    if not ids:
        return step_fn
    suppressed = np.zeros((vocab_size,), "bool")
    suppressed[list(ids)] = True

    def suppressed_step_fn(token_ids, index, state):
        logits, state, attention = step_fn(token_ids, index, state)
        logits = ops.where(
            ops.convert_to_tensor(suppressed), SUPPRESSED_LOGIT, ops.cast(logits, "float32")
        )
        return logits, state, attention

    return suppressed_step_fn
