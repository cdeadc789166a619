"""Grouped-query head arithmetic: the dot products of query heads grouped
by key/value head with the key heads, and the contexts of their weights
over the value heads, as batched matmuls.

Keys and values come laid out `(B, S, K, d)` (as projected) or heads first,
`(B, K, S, d)` (as cached). Axes: `B` batch, `T` query positions, `S` key
positions, `K` key/value heads, `G` query heads per key/value head (head
`h = k * G + g`), `d` head size.
"""

from keras import ops


def heads_first(heads):
    """`(B, S, K, d)` heads as `(B, K, S, d)`, the layout of the caches."""
    return ops.transpose(heads, (0, 2, 1, 3))


def grouped_dot_products(query_heads, key_heads):
    """Grouped-query dot products `(B, K, G, T, S)`.

    Args:
        query_heads: `(B, T, K, G, d)`.
        key_heads: `(B, S, K, d)`; each of the `G` query heads of group `k`
            meets key head `k` (the group's rows are stacked, not the key
            head copied: one `(B, K, G*T, d) @ (B, K, d, S)` matmul).
    """
    return grouped_dot_products_heads_first(query_heads, heads_first(key_heads))


def grouped_context(weights, value_heads):
    """`(B, K, G, T, S)` weights times value heads `(B, S, K, dv)` ->
    contexts `(B, K, G, T, dv)`, as one `(B, K, G*T, S) @ (B, K, S, dv)`."""
    return grouped_context_heads_first(weights, heads_first(value_heads))


def grouped_dot_products_heads_first(query_heads, key_heads):
    """`grouped_dot_products` over heads-first keys `(B, K, S, d)` (a
    cache): one `(B, K, G*T, d) @ (B, K, d, S)` matmul whose operands are
    already batch-major, so XLA copies neither (keys laid out `(B, S, K, d)`
    are transposed, a copy of the whole cache, at every decoding step)."""
    shape = ops.shape(query_heads)
    batch, length, kv_heads, group, dim = (shape[i] for i in range(5))
    query_heads = ops.reshape(
        ops.transpose(query_heads, (0, 2, 3, 1, 4)), (batch, kv_heads, group * length, dim)
    )
    logits = ops.matmul(query_heads, ops.swapaxes(key_heads, 2, 3))  # (B, K, G*T, S)
    return ops.reshape(logits, (batch, kv_heads, group, length, ops.shape(key_heads)[2]))


def grouped_context_heads_first(weights, value_heads):
    """`grouped_context` over heads-first values `(B, K, S, dv)`."""
    shape = ops.shape(weights)
    batch, kv_heads, group, length = (shape[i] for i in range(4))
    weights = ops.reshape(weights, (batch, kv_heads, group * length, shape[4]))
    context = ops.matmul(weights, value_heads)
    return ops.reshape(context, (batch, kv_heads, group, length, ops.shape(value_heads)[-1]))
