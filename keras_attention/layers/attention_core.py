"""The numerical core shared by every attention layer.

One rule holds for every layer, path and dtype policy:

- logits and the softmax are computed in float32, whatever the compute dtype;
- masked keys get a weight of exactly 0, with no mask constant added to the
  logits (a `where` selects, so nothing can overflow);
- a query row whose keys are all masked gets weights of exactly 0, hence a zero
  context vector, and finite gradients;
- keys, values and queries at positions that no unmasked pair uses are zeroed
  before use, so NaN or inf stored in padding cannot reach the output or the
  gradients.
"""

import numpy as np
from keras import ops

_LOWEST_FLOAT32 = float(np.finfo(np.float32).min)


def masked_softmax(logits, mask=None):
    """Softmax over the last axis, in float32, with exact zeros where masked.

    Args:
        logits: tensor `(..., T, S)`; cast to float32.
        mask: boolean tensor broadcastable to `logits`, True = may attend, or
            None.

    Returns:
        float32 weights of the shape of `logits`. Rows with at least one
        unmasked key sum to 1; fully masked rows are all 0.
    """
    logits = ops.cast(logits, "float32")
    if logits.shape[-1] == 0:
        return logits
    if logits.shape[-1] == 1:  # one key: weight 1 (Keras warns on softmax)
        weights = ops.ones_like(logits)
        return weights if mask is None else ops.where(mask, weights, 0.0)
    if mask is None:
        return ops.softmax(logits, axis=-1)
    # One fused softmax over the selected logits (masked ones become the
    # lowest float32, so their exp underflows to exactly 0 whenever the row
    # has an unmasked key); the outer `where` zeroes what remains: the
    # uniform weights of fully masked rows.
    weights = ops.softmax(ops.where(mask, logits, _LOWEST_FLOAT32), axis=-1)
    return ops.where(mask, weights, 0.0)


def zero_unused_positions(x, used):
    """Replaces the rows of `x` that no attention pair uses by zeros.

    Args:
        x: tensor `(B, L, D)`.
        used: boolean tensor `(B, L)` or `(1, L)`, or None.

    Returns:
        `x` with `x[b, l] = 0` wherever `used[b, l]` is False.
    """
    if used is None:
        return x
    return ops.where(used[:, :, None], x, ops.zeros_like(x))


def dot_product_logits(query, key, scale=None):
    """float32 logits `q . k` (times `scale`), query scaled before the matmul.

    Args:
        query: tensor `(B, T, D)`.
        key: tensor `(B, S, D)`.
        scale: optional Python float multiplying the queries.

    Returns:
        float32 tensor `(B, T, S)`.
    """
    query = ops.cast(query, "float32")
    key = ops.cast(key, "float32")
    if scale is not None:
        query = query * scale
    return ops.einsum("btd,bsd->bts", query, key)


def additive_logits(projected_query, projected_key, v):
    """float32 logits `v . tanh(q + k)` for already projected `q` and `k`.

    Args:
        projected_query: tensor `(B, T, U)`.
        projected_key: tensor `(B, S, U)`.
        v: tensor `(U,)`.

    Returns:
        float32 tensor `(B, T, S)`.
    """
    projected_query = ops.cast(projected_query, "float32")
    projected_key = ops.cast(projected_key, "float32")
    hidden = ops.tanh(projected_query[:, :, None, :] + projected_key[:, None])
    return ops.einsum("btsu,u->bts", hidden, ops.cast(v, "float32"))


def weighted_sum(weights, value):
    """Context vectors `weights @ value` in the dtype of `value`.

    Args:
        weights: float32 tensor `(B, T, S)`.
        value: tensor `(B, S, Dv)`.

    Returns:
        tensor `(B, T, Dv)`.
    """
    return ops.matmul(ops.cast(weights, value.dtype), value)
