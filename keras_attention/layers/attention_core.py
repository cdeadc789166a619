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

import functools

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


def flash_attention(query, key, value, mask_fn=None, link=None, bias=None,
                    constant_bias=None, keep_weights=False):
    """Exact softmax attention with FlashAttention's gradient.

    By default the forward pass keeps only the output; the backward pass
    recomputes the scores and weights once and derives every gradient from
    them, as in FlashAttention (Dao et al. 2022), without recomputing the
    output. With `keep_weights=True` the forward pass keeps its weights
    and the backward pass starts from them (no recomputation: the exact
    path's memory, a matmul and a softmax less than the default, and two
    passes over `(t, S)` fewer than the softmax's own gradient):

    ```
    P = softmax(Q K^T)     dV = P^T dO     D = rowsum(dO * O)
    dS = P * (dO V^T - D)  dQ = dS K       dK = dS^T Q
    ```

    Memory is that of one `(B, K, G, t, S)` score tensor at a time (without
    `keep_weights`), and the results equal `masked_softmax` followed by
    `weighted_sum` (it is the same float32 softmax): exact zeros where
    masked, and a fully masked row gets a zero output and zero gradients.
    The weights are recomputed by the softmax rather than kept as a
    log-sum-exp per row: on a CPU one fused softmax costs less than the
    `exp(S - lse)` it would save, and the forward pass is then exactly the
    exact path's. `- D` is a subtraction that XLA fuses into the `P * ...`
    (folding it into the matmul with a column of ones appended to the
    values, as before, made XLA's CPU dot slower and saved TensorFlow less
    than noise: bench/RESULTS.md).

    Args:
        query: query heads `(B, K, G, t, d)`, already scaled (the logits are
            `query . key`).
        key: key heads `(B, K, S, d)`.
        value: value heads `(B, K, S, dv)`.
        mask_fn: None (no mask) or a function of no arguments returning a
            boolean tensor broadcastable to `(B, K, G, t, S)`, True = may
            attend; called again in the backward pass, so that no mask is
            kept between the passes either.
        link: optional float32 scalar, zero, derived from the previous
            block's output: the forward pass of this block waits for it,
            and the backward pass returns it a (zero) gradient as soon as
            `dS` is known, which lets the previous block start recomputing
            while this one finishes (a graph executor then holds two blocks'
            weights at a time, not all of them).
        bias: optional float32 tensor of rank 5 broadcastable to `(B, K, G,
            t, S)`, added to the logits before the softmax (e.g. a relative
            position bias); its gradient is `dS` summed over the axes it
            broadcasts along. Masked keys still get exactly 0.
        constant_bias: optional float32 array broadcastable to `(B, K, G,
            t, S)` added to the logits with no gradient (`causal_bias`).
        keep_weights: keep the forward pass's weights for the backward
            pass instead of recomputing them (`mask_fn` is then called
            once).

    Returns:
        `(B, K, G, t, dv)` in the dtype of `value`.
    """
    shape = ops.shape(query)
    batch, kv_heads, group, length = (shape[i] for i in range(4))
    key_length = ops.shape(key)[2]

    def grouped(x):  # (B, K, G, t, n) -> (B, K, G*t, n): one matmul per head
        return ops.reshape(x, (batch, kv_heads, group * length, ops.shape(x)[-1]))

    def ungrouped(x):  # (B, K, G*t, n) -> (B, K, G, t, n)
        return ops.reshape(x, (batch, kv_heads, group, length, ops.shape(x)[-1]))

    def products(rows, columns):
        """`(B, K, G, t, n) . (B, K, S, n)` -> float32 `(B, K, G, t, S)`."""
        return ungrouped(
            ops.matmul(
                grouped(ops.cast(rows, "float32")),
                ops.swapaxes(ops.cast(columns, "float32"), 2, 3),
            )
        )

    def by_key(scores, rows):
        """`(B, K, G, t, S)` scores times `(B, K, G*t, n)` rows, summed over
        the queries: `(B, K, S, n)`, as `(rows^T scores)^T`: the transposed
        operand of the matmul is the small one (TensorFlow's graph optimizer
        folds it into the matmul; oneDNN runs a transposed `(t, S)` operand
        slower), then a transpose of the small result."""
        scores = ops.reshape(scores, (batch, kv_heads, group * length, key_length))
        return ops.swapaxes(ops.matmul(ops.swapaxes(rows, 2, 3), scores), 2, 3)

    def weights_times(weights, matrix):
        """`(B, K, G, t, S) @ (B, K, S, n)` in the dtype of `matrix`."""
        weights = ops.reshape(
            ops.cast(weights, matrix.dtype),
            (batch, kv_heads, group * length, key_length),
        )
        return ungrouped(ops.matmul(weights, matrix))

    def softmax_weights(query, key, bias):
        mask = None if mask_fn is None else mask_fn()
        logits = products(query, key)
        if bias is not None:
            logits = logits + bias
        if constant_bias is not None:
            logits = logits + constant_bias
        return masked_softmax(logits, mask)

    def recomputed_weights(query, key, bias, upstream):
        # The recomputation waits for this block's upstream gradient (a
        # zero that depends on it, finite even if it is not): otherwise
        # a graph executor would recompute every block's weights as soon
        # as the forward pass ends and hold them all at once.
        total = ops.sum(ops.cast(upstream, "float32"))
        zero = ops.where(ops.isfinite(total), 0.0 * total, 0.0)
        return softmax_weights(query + ops.cast(zero, query.dtype), key, bias)

    def attend_with_gradient(query, key, value, link, bias):
        linked = query if link is None else query + ops.cast(link, query.dtype)
        kept = softmax_weights(linked, key, bias)
        output = weights_times(kept, value)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            weights = (
                kept if keep_weights else recomputed_weights(query, key, bias, upstream)
            )
            d_value = by_key(
                ops.cast(weights, value.dtype), grouped(ops.cast(upstream, value.dtype))
            )
            d_output = ops.cast(upstream, "float32")
            row_dot = ops.sum(
                d_output * ops.cast(output, "float32"), axis=-1, keepdims=True
            )
            d_scores = weights * (products(d_output, ops.cast(value, "float32")) - row_dot)
            gradients = ()
            if link is not None:
                # The previous block may start its recomputation now, while
                # this one finishes with dQ and dK (two blocks at a time).
                early = ops.sum(d_scores[..., :1, :1])
                gradients = (ops.where(ops.isfinite(early), 0.0 * early, 0.0),)
            if bias is not None:
                gradients += (_reduce_to_shape(d_scores, bias.shape),)
            d_query = weights_times(d_scores, ops.cast(key, "float32"))
            d_key = by_key(d_scores, grouped(ops.cast(query, "float32")))
            return (
                ops.cast(d_query, query.dtype),
                ops.cast(d_key, key.dtype),
                ops.cast(d_value, value.dtype),
            ) + gradients

        return output, grad

    extra = [ops.cast(x, "float32") for x in (link, bias) if x is not None]

    @ops.custom_gradient
    def attend(query, key, value, *extra):
        extra = list(extra)
        link_operand = None if link is None else extra.pop(0)
        bias_operand = None if bias is None else extra.pop(0)
        return attend_with_gradient(query, key, value, link_operand, bias_operand)

    return attend(query, key, value, *extra)


def _reduce_to_shape(x, shape):
    """`x` summed over the axes along which a tensor of `shape` (same rank,
    1 on the broadcast axes) was broadcast to it."""
    axes = tuple(i for i, size in enumerate(shape) if size == 1)
    return ops.sum(x, axis=axes, keepdims=True) if axes else x


# A causal bias is a constant of T * S float32 entries in the program: up to
# 16 MiB (T = S = 2048); longer calls build their mask with ops instead.
CAUSAL_BIAS_MAX_ENTRIES = 2048 * 2048
_MASKED_LOGIT = -1e30  # added to a finite logit: exp() of it underflows to 0


@functools.lru_cache(maxsize=8)
def causal_bias(query_length, key_length):
    """The additive causal mask `(T, S)`: 0 where `j <= i`, -1e30 above.

    A NumPy constant (built once per shape); added to finite float32 logits
    it gives masked keys an exp() of exactly 0, like `masked_softmax`'s
    `where`, but the gradient of an add is the identity. Only for causal
    self-attention (`T == S`), where every row has a key: a fully masked row
    would get uniform weights instead of zeros.
    """
    rows = np.arange(query_length)[:, None]
    columns = np.arange(key_length)[None, :]
    return np.where(columns <= rows, 0.0, _MASKED_LOGIT).astype("float32")


def biased_softmax(logits, bias):
    """float32 `softmax(logits + bias)` over the last axis.

    Args:
        logits: tensor `(..., T, S)`; cast to float32.
        bias: float32 array broadcastable to `logits` (`causal_bias`).
    """
    logits = ops.cast(logits, "float32")
    if logits.shape[-1] == 1:
        return ops.ones_like(logits)
    return ops.softmax(ops.add(logits, bias), axis=-1)
