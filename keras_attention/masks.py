"""Attention masks: the one place where keras_attention builds a mask.

Every function here is pure and works on any Keras backend. A mask is a
boolean tensor of shape `(batch, target_len, source_len)` (written `(B, T, S)`)
in which **True means "this query may attend to this key"**, the convention of
`keras.layers.MultiHeadAttention`. A leading batch axis of 1 broadcasts over
the batch.

Shapes used below:

- `B`: batch size.
- `T`: target (query) length.
- `S`: source (key/value) length.

Every layer of `keras_attention.layers` turns its Keras implicit masks, its
explicit `attention_mask` and its causal or window flags into one `(B, T, S)`
mask with the functions of this module, so every code path masks the same way.

Packed rows (several examples per row, numbered by segment ids, 0 on padding)
use `segment_mask` (block diagonal; merged with `causal_mask` in a decoder)
and `segment_positions` (positions that restart at every example).

Example:

>>> import numpy as np
>>> from keras_attention import masks
>>> lengths = np.array([3, 1])
>>> key_mask = masks.sequence_mask(lengths, 3)          # (B, S)
>>> mask = masks.merge_masks(
...     masks.padding_mask(key_mask=key_mask, query_length=3),
...     masks.causal_mask(3, 3),
... )
>>> np.asarray(mask).astype(int)[0]
array([[1, 0, 0],
       [1, 1, 0],
       [1, 1, 1]])
>>> np.asarray(mask).astype(int)[1]
array([[1, 0, 0],
       [1, 0, 0],
       [1, 0, 0]])
"""

import keras
import numpy as np
from keras import ops

from keras_attention.validation import check_non_negative_int, concrete_values

__all__ = [
    "attention_mask",
    "causal_mask",
    "decoder_token_mask",
    "merge_masks",
    "padding_mask",
    "padding_mask_from_lengths",
    "segment_mask",
    "segment_positions",
    "sequence_mask",
    "sliding_window_mask",
]


def sequence_mask(lengths, max_length):
    """Turns sequence lengths into a `(B, L)` boolean mask.

    Args:
        lengths: integer tensor of shape `(B,)`, the number of valid
            (leading) positions of each sequence.
        max_length: int or scalar tensor `L`, the padded length.

    Returns:
        A boolean tensor of shape `(B, L)`, True on the first `lengths[b]`
        positions of row `b`.

    Example:

    >>> from keras_attention import masks
    >>> masks.sequence_mask([2, 0, 3], 3).numpy().astype(int).tolist()
    [[1, 1, 0], [0, 0, 0], [1, 1, 1]]
    """
    lengths = ops.convert_to_tensor(lengths, dtype="int32")
    positions = ops.arange(max_length, dtype="int32")
    return ops.less(positions[None, :], lengths[:, None])


def padding_mask(
    query_mask=None, key_mask=None, *, query_length=None, key_length=None
):
    """Builds a `(B, T, S)` mask from per-position padding masks.

    These are the Keras implicit masks (for example from
    `keras.layers.Embedding(mask_zero=True)`): True on real tokens, False on
    padding. A query position may attend to a key position when both are
    real. A padded query row is therefore fully masked; keras_attention gives
    such rows zero attention weights and a zero output.

    Args:
        query_mask: boolean tensor `(B, T)` or None (every query is real).
        key_mask: boolean tensor `(B, S)` or None (every key is real).
        query_length: `T`; needed only when `query_mask` is None.
        key_length: `S`; needed only when `key_mask` is None.

    Returns:
        A boolean tensor of shape `(B, T, S)`, or None if both masks are
        None.

    Example:

    >>> from keras_attention import masks
    >>> m = masks.padding_mask(key_mask=[[True, True, False]], query_length=2)
    >>> m.numpy().astype(int).tolist()
    [[[1, 1, 0], [1, 1, 0]]]
    """
    if query_mask is None and key_mask is None:
        return None
    if query_mask is None:
        if query_length is None:
            raise ValueError(
                "`padding_mask` needs `query_length` when `query_mask` is "
                "None. Received: query_length=None"
            )
        key_mask = ops.cast(key_mask, "bool")
        return ops.repeat(key_mask[:, None, :], query_length, axis=1)
    query_mask = ops.cast(query_mask, "bool")
    if key_mask is None:
        if key_length is None:
            raise ValueError(
                "`padding_mask` needs `key_length` when `key_mask` is None. "
                "Received: key_length=None"
            )
        return ops.repeat(query_mask[:, :, None], key_length, axis=2)
    key_mask = ops.cast(key_mask, "bool")
    return ops.logical_and(query_mask[:, :, None], key_mask[:, None, :])


def padding_mask_from_lengths(
    key_lengths, key_length, query_length, query_lengths=None
):
    """Builds a `(B, T, S)` padding mask from sequence lengths.

    Args:
        key_lengths: integer tensor `(B,)`, valid keys per example.
        key_length: `S`, the padded key length.
        query_length: `T`, the padded query length.
        query_lengths: optional integer tensor `(B,)`, valid queries per
            example; None means every query is real.

    Returns:
        A boolean tensor of shape `(B, T, S)`.

    Example:

    >>> from keras_attention import masks
    >>> m = masks.padding_mask_from_lengths([1, 2], key_length=2,
    ...                                     query_length=1)
    >>> m.numpy().astype(int).tolist()
    [[[1, 0]], [[1, 1]]]
    """
    key_mask = sequence_mask(key_lengths, key_length)
    query_mask = None
    if query_lengths is not None:
        query_mask = sequence_mask(query_lengths, query_length)
    return padding_mask(query_mask, key_mask, query_length=query_length)


def decoder_token_mask(token_ids, pad_token_id):
    """The `(B, T)` mask of real tokens of a decoder input: `token_ids !=
    pad_token_id`, except the first position, which is always True.

    A decoder input starts with its start token, whatever its id: Marian and
    T5 start the decoder with their pad id (`transformers`' shifted labels),
    which a plain `token_ids != pad_token_id` would mask as padding. Padding
    only ever follows the start token, so nothing else changes.

    Args:
        token_ids: integer tensor `(B, T)`, the decoder input.
        pad_token_id: int, the padding id.

    Returns:
        A boolean tensor `(B, T)`, True on the start token and real tokens.

    Example:

    >>> from keras_attention import masks
    >>> m = masks.decoder_token_mask([[0, 5, 6, 0], [0, 7, 0, 0]], 0)
    >>> m.numpy().astype(int).tolist()
    [[1, 1, 1, 0], [1, 1, 0, 0]]
    """
    check_non_negative_int("pad_token_id", pad_token_id)
    token_ids = ops.convert_to_tensor(token_ids)
    # Positions from a cumulative sum: the length may be symbolic.
    first = ops.equal(ops.cumsum(ops.ones_like(token_ids, "int32"), axis=1), 1)
    return ops.logical_or(ops.not_equal(token_ids, pad_token_id), first)


def _query_positions(query_length, key_length, offset, caller):
    """Absolute positions of the queries, `(1, T)` or `(B, T)`.

    The query at row `i` sits at position `offset + i`; the keys sit at
    positions `0 .. S-1`. With `offset = S - T` the last query is aligned with
    the last key (bottom-right), which is what a decode step needs.
    """
    if offset is None:
        if (
            isinstance(query_length, int)
            and isinstance(key_length, int)
            and query_length != key_length
        ):
            raise ValueError(
                f"`{caller}` needs an explicit `offset` when the query length "
                "differs from the key length, so that a decode step is not "
                "silently aligned top-left. Pass `offset=key_length - "
                "query_length` to align the last query with the last key. "
                f"Received: query_length={query_length}, "
                f"key_length={key_length}, offset=None"
            )
        offset = 0
    offset = ops.convert_to_tensor(offset, dtype="int32")
    rows = ops.arange(query_length, dtype="int32")[None, :]
    if len(offset.shape) == 0:
        return rows + offset
    if len(offset.shape) != 1:
        raise ValueError(
            f"`{caller}` takes a scalar or a `(batch,)` offset. "
            f"Received: offset.shape={tuple(offset.shape)}"
        )
    return rows + offset[:, None]


def causal_mask(query_length, key_length, offset=None):
    """Builds a causal mask: a query may attend to keys at or before it.

    The query at row `i` is at position `offset + i` and may attend to key
    `j` when `j <= offset + i`. With `query_length == key_length` the offset
    defaults to 0 (the usual lower-triangular mask). When the lengths differ,
    for example on a one-token decode step against a cache, `offset` must be
    given; `offset = key_length - query_length` aligns the mask bottom-right.

    Args:
        query_length: `T`, int or scalar tensor.
        key_length: `S`, int or scalar tensor.
        offset: None, an int, a scalar tensor, or an integer tensor of shape
            `(B,)` giving each example's position of its first query.

    Returns:
        A boolean tensor of shape `(1, T, S)`, or `(B, T, S)` for a per-example
        offset.

    Example:

    >>> from keras_attention import masks
    >>> masks.causal_mask(3, 3).numpy().astype(int)[0].tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    >>> masks.causal_mask(1, 4, offset=3).numpy().astype(int)[0].tolist()
    [[1, 1, 1, 1]]
    """
    query_positions = _query_positions(
        query_length, key_length, offset, "causal_mask"
    )
    key_positions = ops.arange(key_length, dtype="int32")
    return ops.less_equal(
        key_positions[None, None, :], query_positions[:, :, None]
    )


def sliding_window_mask(query_length, key_length, window, offset=None):
    """Builds a local (banded) mask: keys at most `window` positions away.

    The query at position `p = offset + i` may attend to key `j` when
    `|p - j| <= window`. Merge it with `causal_mask` for a causal local window
    (the query then sees itself and the `window` keys before it).

    Args:
        query_length: `T`, int or scalar tensor.
        key_length: `S`, int or scalar tensor.
        window: non-negative int, the largest allowed distance.
        offset: as in `causal_mask`.

    Returns:
        A boolean tensor of shape `(1, T, S)`, or `(B, T, S)` for a per-example
        offset.

    Example:

    >>> from keras_attention import masks
    >>> masks.sliding_window_mask(4, 4, 1).numpy().astype(int)[0].tolist()
    [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    """
    window = check_non_negative_int("window", window)
    query_positions = _query_positions(
        query_length, key_length, offset, "sliding_window_mask"
    )
    key_positions = ops.arange(key_length, dtype="int32")
    distance = ops.abs(
        query_positions[:, :, None] - key_positions[None, None, :]
    )
    return ops.less_equal(distance, window)


def merge_masks(*masks):
    """Combines masks with a logical AND; None entries are ignored.

    Args:
        *masks: boolean tensors broadcastable to `(B, T, S)`, or None.

    Returns:
        The broadcast logical AND of the masks, or None if all are None.

    Example:

    >>> from keras_attention import masks
    >>> m = masks.merge_masks(None, masks.causal_mask(2, 2),
    ...                       [[[True, False], [False, True]]])
    >>> m.numpy().astype(int).tolist()
    [[[1, 0], [0, 1]]]
    """
    merged = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        merged = mask if merged is None else ops.logical_and(merged, mask)
    return merged


def segment_mask(query_segment_ids, key_segment_ids=None):
    """Builds the block-diagonal mask of packed sequences.

    A packed row holds several examples one after the other; `segment_ids`
    numbers them `1, 2, ...` and marks padding with 0. A query may attend to
    a key of the same example only: True where the two segment ids are equal
    and not 0. A padding query (segment 0) is therefore a fully masked row
    (zero weights, zero context: docs/concepts/fully_masked_rows.md).

    Self-attention: `segment_mask(ids)` (`(B, T, T)`); merge it with
    `causal_mask(T, T)` for a decoder (`merge_masks`). Cross-attention:
    `segment_mask(target_ids, source_ids)` (`(B, T, S)`): each target token
    sees only the source of its own example, when both rows number their
    examples in the same order.

    Args:
        query_segment_ids: integer tensor `(B, T)`, 0 on padding.
        key_segment_ids: integer tensor `(B, S)`, 0 on padding; defaults to
            `query_segment_ids` (self-attention).

    Returns:
        A boolean tensor of shape `(B, T, S)`.

    Example:

    >>> from keras_attention import masks
    >>> m = masks.segment_mask([[1, 1, 2, 0]])
    >>> m.numpy().astype(int)[0].tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    """
    query_segment_ids = ops.convert_to_tensor(query_segment_ids, dtype="int32")
    if key_segment_ids is None:
        key_segment_ids = query_segment_ids
    key_segment_ids = ops.convert_to_tensor(key_segment_ids, dtype="int32")
    for name, ids in (("query_segment_ids", query_segment_ids),
                      ("key_segment_ids", key_segment_ids)):
        if len(ids.shape) != 2:
            raise ValueError(
                f"`{name}` must have shape (batch, length). "
                f"Received: {name}.shape={tuple(ids.shape)}"
            )
    same = ops.equal(query_segment_ids[:, :, None], key_segment_ids[:, None, :])
    real = ops.not_equal(query_segment_ids, 0)[:, :, None]
    return ops.logical_and(same, real)


def segment_positions(segment_ids):
    """Positions that restart at 0 in every example of a packed row.

    The position of a token is the number of earlier tokens of its row with
    the same segment id, so an example packed after others gets the
    positions `0, 1, ...` it would have alone (the segments need not be
    contiguous). Padding (segment 0) gets 0. Computed as a `(B, T, T)`
    comparison, cheap next to attention at the lengths that are packed.

    Args:
        segment_ids: integer tensor `(B, T)`, 0 on padding.

    Returns:
        An int32 tensor `(B, T)`.

    Example:

    >>> from keras_attention import masks
    >>> masks.segment_positions([[1, 1, 1, 2, 2, 0]]).numpy().tolist()
    [[0, 1, 2, 0, 1, 0]]
    """
    segment_ids = ops.convert_to_tensor(segment_ids, dtype="int32")
    # Indices from a cumsum, not `arange`: the length may be symbolic
    # (a functional model's input).
    index = ops.cumsum(ops.ones_like(segment_ids), axis=1)  # (B, T): 1 .. T
    earlier = ops.less(index[:, None, :], index[:, :, None])  # key u before query t
    same = ops.logical_and(segment_mask(segment_ids), earlier)  # (B, T, T)
    return ops.sum(ops.cast(same, "int32"), axis=-1)


def _static_dim(x):
    return x if isinstance(x, int) else None


def attention_mask(mask, *, batch_size, query_length, key_length):
    """Checks a user's `attention_mask` and returns it as a boolean mask.

    Accepted: boolean tensors (True = may attend) and integer tensors of 0
    and 1, of shape `(B, T, S)`, `(1, T, S)` or `(T, S)`. Float masks are
    rejected: a float mask cannot be told apart from an additive mask
    (0 / -1e9) whose meaning is inverted, so keras_attention never guesses.
    Integer masks holding values other than 0 and 1 are rejected whenever
    their values are known (eager calls).

    Args:
        mask: the mask given by the user.
        batch_size: `B` (int, or None when unknown).
        query_length: `T` (int, or None when unknown).
        key_length: `S` (int, or None when unknown).

    Returns:
        A boolean tensor of shape `(B, T, S)` or `(1, T, S)`.

    Raises:
        ValueError: for a float mask, an integer mask with values other than
            0 and 1, or a mask of the wrong shape.

    Example:

    >>> import numpy as np
    >>> from keras_attention import masks
    >>> m = masks.attention_mask(np.tril(np.ones((2, 2), "int32")),
    ...                          batch_size=3, query_length=2, key_length=2)
    >>> tuple(m.shape)
    (1, 2, 2)
    """
    batch_size, query_length, key_length = (
        _static_dim(batch_size),
        _static_dim(query_length),
        _static_dim(key_length),
    )
    if isinstance(mask, (list, tuple, bool, int)):
        mask = np.asarray(mask)
    dtype = getattr(mask, "dtype", None)
    dtype = "" if dtype is None else keras.backend.standardize_dtype(dtype)
    if "float" in dtype or "complex" in dtype:
        raise ValueError(
            "`attention_mask` must be a boolean tensor (True = may attend) "
            "or an integer tensor of 0 and 1. A float mask is refused "
            "because an additive mask (0 / -1e9) would be read inverted; "
            "convert it yourself, e.g. `mask > 0.5` for a 0/1 float mask or "
            "`mask == 0` for an additive one. "
            f"Received: attention_mask with dtype {dtype}"
        )
    if "bool" not in dtype and "int" not in dtype:
        raise ValueError(
            "`attention_mask` must be a boolean or integer tensor. "
            f"Received: attention_mask with dtype {dtype or type(mask)}"
        )
    shape = tuple(mask.shape)
    expected = (batch_size, query_length, key_length)
    if len(shape) == 2:
        shape = (1,) + shape
    ok = len(shape) == 3 and all(
        got is None or want is None or got == want or (axis == 0 and got == 1)
        for axis, (got, want) in enumerate(zip(shape, expected))
    )
    if not ok:
        raise ValueError(
            "`attention_mask` must have shape (batch, target_len, source_len)"
            f" = {expected}, or (target_len, source_len). A (batch, "
            "source_len) padding mask must first be expanded with "
            "`keras_attention.masks.padding_mask(key_mask=...)`. "
            f"Received: attention_mask.shape={tuple(mask.shape)}"
        )
    if "int" in dtype:
        values = concrete_values(mask)
        if values is not None and not np.isin(values, (0, 1)).all():
            raise ValueError(
                "`attention_mask` of integer dtype must hold only 0 and 1 "
                "(1 = may attend); it looks like an additive or inverted "
                "mask. Received: attention_mask with values "
                f"{sorted(set(np.unique(values).tolist()))[:6]}"
            )
    mask = ops.cast(mask, "bool")
    if len(mask.shape) == 2:
        mask = mask[None, :, :]
    return mask
