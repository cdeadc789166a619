"""Self-attention caches in beam slots: nothing moves when beams are reordered.

A beam search keeps `R` hypotheses (rows) per source. With caches of one
row each, `(B * R, K, L, d)`, every step reorders every layer's keys and
values by the rows' parents: a copy of the whole cache per step (a fifth of
a Marian-base-sized beam step on a CPU). In beam slots the cache of a
source holds one slot per beam: row `r` of a source writes its keys and
values into slot `r` only, and reads position `l` from slot `ancestry[row,
l]`, the slot its ancestor wrote that position into. Reordering beams then
reorders the small `(B * R, L)` ancestry table; the caches never move.

The attention of the `R` rows of a source runs as one matmul over the
`L * R` keys of its slots, masked to the slot of each position's ancestor:
the same keys, values and weights as the rows' reordered caches would give
(the other slots weigh exactly 0).

Layout: position-major, slot `j`'s position `l` at `l * R + j`, so that
the `R` rows' new positions are one contiguous slice, written in place;
keys transposed, `(B, K, d, L * R)`, values `(B, K, L * R, d)`, so that
each is the right operand of its matmul as it lies (XLA's CPU dot over
keys `(B, K, L * R, d)` transposed them at every step, far slower:
bench/RESULTS.md; slots as an axis of their own made XLA copy the cache to
view it flat).

Axes: `K` key/value heads, `G` query heads per key head, `t` new positions,
`L` cache positions, `d` head size, head `h = k * G + g`.
"""

from keras import ops


def own_slots(rows, rows_per_source):
    """int32 `(rows,)`: the slot each row writes, `row mod R`."""
    return ops.arange(rows, dtype="int32") % rows_per_source


def slot_cache_shapes(sources, kv_heads, key_dim, value_dim, max_length, rows_per_source):
    """The shapes of keys and values in beam slots."""
    positions = None if max_length is None else max_length * rows_per_source
    return ((sources, kv_heads, key_dim, positions), (sources, kv_heads, positions, value_dim))


def _per_source(new_heads, sources):
    """New heads `(B * R, t, K, d)` as `(B, R, t, K, d)`."""
    rows = new_heads.shape[0] // sources
    return ops.reshape(new_heads, (sources, rows) + tuple(new_heads.shape[1:]))


def write_key_slots(key_slots, new_heads, index):
    """`key_slots (B, K, d, L * R)` with the new key heads `(B * R, t, K, d)`
    of each row written into its own slot at positions `index .. index + t
    - 1`."""
    sources, kv_heads, dim, _ = key_slots.shape
    new = _per_source(new_heads, sources)
    rows, length = new.shape[1], new.shape[2]
    new = ops.reshape(ops.transpose(new, (0, 3, 4, 2, 1)), (sources, kv_heads, dim, length * rows))
    zero = ops.zeros((), "int32")
    start = (zero, zero, zero, ops.cast(index, "int32") * rows)
    return ops.slice_update(key_slots, start, ops.cast(new, key_slots.dtype))


def write_value_slots(value_slots, new_heads, index):
    """`value_slots (B, K, L * R, d)` with the new value heads `(B * R, t,
    K, d)` of each row written into its own slot at positions `index ..`."""
    sources, kv_heads, _, dim = value_slots.shape
    new = _per_source(new_heads, sources)
    rows, length = new.shape[1], new.shape[2]
    new = ops.reshape(ops.transpose(new, (0, 3, 2, 1, 4)), (sources, kv_heads, length * rows, dim))
    zero = ops.zeros((), "int32")
    start = (zero, zero, ops.cast(index, "int32") * rows, zero)
    return ops.slice_update(value_slots, start, ops.cast(new, value_slots.dtype))


def slot_logits(query_heads, key_slots):
    """Dot products of the query heads `(B * R, t, K, G, d)` (float32,
    scaled) with every key of their source's slots `(B, K, d, L * R)`:
    float32 `(B, K, G, R * t, L * R)` (query row and position, then key
    position and slot: five axes, as TensorFlow's softmax takes)."""
    sources = key_slots.shape[0]
    query = _per_source(query_heads, sources)  # (B, R, t, K, G, d)
    _, rows, new, kv_heads, group, dim = query.shape
    query = ops.reshape(ops.transpose(query, (0, 3, 4, 1, 2, 5)),
                        (sources, kv_heads, group * rows * new, dim))
    logits = ops.matmul(query, ops.cast(key_slots, "float32"))
    return ops.reshape(logits, (sources, kv_heads, group, rows * new, key_slots.shape[-1]))


def slot_mask(ancestry, rows_per_source, index, allowed):
    """boolean `(B, R * t, L * R)`: a row's query at position `index + i`
    may attend slot `j`'s position `l` where its ancestor wrote `l` into
    slot `j` (the row's own slot from `index` on) and `allowed` lets it.

    Args:
        ancestry: int32 `(B * R, L)`, the slot of each row's ancestor at
            each position (read below `index` only).
        rows_per_source: `R`.
        index: int32 scalar, the position of the first new query.
        allowed: boolean `(B * R or 1, t, L)`, the causal, window and
            padding masks of the rows.
    """
    rows_total, length = ancestry.shape
    rows = rows_per_source
    new = allowed.shape[1]
    positions = ops.arange(length, dtype="int32")[None, :]
    written = ops.where(positions >= index, own_slots(rows_total, rows)[:, None],
                        ops.cast(ancestry, "int32"))  # (B * R, L)
    in_slot = written[:, :, None] == ops.arange(rows, dtype="int32")  # (B * R, L, R)
    mask = ops.logical_and(in_slot[:, None], ops.cast(allowed, "bool")[:, :, :, None])
    return ops.reshape(mask, (rows_total // rows, rows * new, length * rows))


def add_slot_bias(logits, bias, rows_per_source):
    """`logits (B, K, G, R * t, L * R)` plus a bias per row and position
    `(B * R or 1, K or 1, G or 1, t or 1, L or 1)` (the same for every slot)."""
    sources, kv_heads, group, queries, keys = logits.shape
    rows = rows_per_source
    new, length = queries // rows, keys // rows
    if bias.shape[0] == 1:
        bias = bias[:, :, :, None, :, :, None]
    else:
        bias = ops.reshape(bias, (sources, rows) + tuple(bias.shape[1:]))
        bias = ops.transpose(bias, (0, 2, 3, 1, 4, 5))[..., None]
    logits = ops.reshape(logits, (sources, kv_heads, group, rows, new, length, rows)) + bias
    return ops.reshape(logits, (sources, kv_heads, group, queries, keys))


def slot_context(weights, value_slots, rows_per_source):
    """Weights `(B, K, G, R * t, L * R)` over the values of the slots `(B,
    K, L * R, dv)`: contexts `(B * R, K, G, t, dv)` (rows of the search)."""
    sources, kv_heads, group, queries, keys = weights.shape
    rows, dim = rows_per_source, value_slots.shape[-1]
    context = ops.matmul(
        ops.reshape(ops.cast(weights, value_slots.dtype),
                    (sources, kv_heads, group * queries, keys)), value_slots)
    context = ops.reshape(context, (sources, kv_heads, group, rows, queries // rows, dim))
    return ops.reshape(ops.transpose(context, (0, 3, 1, 2, 4, 5)),
                       (sources * rows, kv_heads, group, queries // rows, dim))


def slot_scores(weights, rows_per_source):
    """Weights `(B, K, G, R * t, L * R)` as each row's scores over its
    positions `(B * R, H, t, L)` (the other slots weigh 0)."""
    sources, kv_heads, group, queries, keys = weights.shape
    rows = rows_per_source
    new, length = queries // rows, keys // rows
    per_position = ops.sum(
        ops.reshape(weights, (sources, kv_heads, group, rows, new, length, rows)), axis=6)
    return ops.reshape(ops.transpose(per_position, (0, 3, 1, 2, 4, 5)),
                       (sources * rows, kv_heads * group, new, length))
