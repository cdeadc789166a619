"""The caches of `MultiHeadAttention`: a memory projected once
(`compute_cache`), the zero step cache of self-attention (`init_cache`, one
cache per row or beam slots), their shapes and the checks of a cache and of
the position a cached call writes at.

Layout: heads first, keys `(B, K, L, key_dim)` and values `(B, K, L,
value_dim)` (`K` key/value heads, `L` positions); in beam slots keys
`(B, K, key_dim, L * R)` and values `(B, K, L * R, value_dim)` (see
`keras_attention.layers.beam_slots`).
"""

from keras import ops

from keras_attention.layers import beam_slots
from keras_attention.layers.grouped_heads import heads_first
from keras_attention.validation import check_positive_int, concrete_values


def _fits(cache, expected, in_slots):
    """Whether `cache` is a pair of tensors of the `expected` shapes (None
    in either: any) whose keys and values have the same length."""
    if not (isinstance(cache, (tuple, list)) and len(cache) == 2):
        return False
    shapes = [tuple(c.shape) for c in cache]
    lengths = (shapes[0][-1 if in_slots else -2:][:1], shapes[1][-2:-1])
    return lengths[0] == lengths[1] and all(
        len(got) == len(want)
        and all(e is None or g is None or g == e for g, e in zip(got, want))
        for got, want in zip(shapes, expected)
    )


def _layout(in_slots):
    """The axes of a cache's keys and values, for error messages."""
    if in_slots:
        return ("(sources, num_key_value_heads, key_dim, cache_len * rows_per_source) "
                "and (sources, num_key_value_heads, cache_len * rows_per_source, "
                "value_dim), from `init_cache(sources, max_length, rows_per_source)`")
    return ("(batch, num_key_value_heads, cache_len, key_dim) and "
            "(batch, num_key_value_heads, cache_len, value_dim)")


class HeadCache:
    """The cache methods of `MultiHeadAttention`, mixed in before
    `BaseAttention`. They read the layer's `key_dim`, `_kv_heads`,
    `_value_head_dim`, `compute_dtype`, its heads (`_key_heads`,
    `_value_heads`) and `_scores_are_scaled_dot_products`.
    """

    def compute_cache(self, value, key=None):
        """The memory cache: a memory projected once, for cross-attention
        with `call_cached(..., memory_cache=...)`.

        Args:
            value: `(B, S, Dv)`, the memory.
            key: `(B, S, Dk)`, defaults to `value`.

        Returns:
            `(key_heads (B, K, S, key_dim), value_heads (B, K, S,
            value_dim))`, heads first (`K` key/value heads).
        """
        key = value if key is None else key
        value = ops.cast(value, self.compute_dtype)
        key = ops.cast(key, self.compute_dtype)
        return heads_first(self._key_heads(key)), heads_first(self._value_heads(value))

    def init_cache(self, batch_size, max_length, rows_per_source=None):
        """The step cache of self-attention: zero keys and values for
        `max_length` positions, heads first: `(keys (B, K, L, key_dim),
        values (B, K, L, value_dim))`.

        With `rows_per_source=R`, the cache of `batch_size` sources in beam
        slots (see `keras_attention.layers.beam_slots`): `(keys (B, K,
        key_dim, L * R), values (B, K, L * R, value_dim))` (keys transposed;
        slot `j`'s position `l` at `l * R + j`), for a query of `B * R`
        rows that reads it through `call_cached(..., cache_ancestry=...)`;
        a beam search never reorders it. Slots hold two or more rows per
        source: with one, the two layouts could have the same shapes
        (`max_length == key_dim`) and one be read as the other."""
        dtype = self.compute_dtype
        if rows_per_source is not None:
            check_positive_int("rows_per_source", rows_per_source)
            if rows_per_source < 2:
                raise ValueError(
                    "Beam slots hold two or more rows per source; for one row per source "
                    "call `init_cache(batch_size, max_length)` (a cache per row, read "
                    f"without `cache_ancestry`). Received: rows_per_source={rows_per_source}")
            if not self.supports_beam_slots:
                raise ValueError(
                    f"{type(self).__name__} scores heads its own way "
                    "(`_head_logits`), which beam slots do not read. Received: "
                    f"rows_per_source={rows_per_source}")
        return tuple(ops.zeros(shape, dtype) for shape in self._cache_shapes(
            batch_size, max_length, rows_per_source))

    def _cache_shapes(self, batch_size, max_length, rows_per_source=None):
        """The shapes of `init_cache`'s keys and values."""
        if rows_per_source is not None:
            return beam_slots.slot_cache_shapes(batch_size, self._kv_heads, self.key_dim,
                                                self._value_head_dim, max_length, rows_per_source)
        heads = (batch_size, self._kv_heads)
        return (heads + (max_length, self.key_dim), heads + (max_length, self._value_head_dim))

    @property
    def supports_beam_slots(self):
        """Whether `init_cache(..., rows_per_source=R)` and `call_cached(...,
        cache_ancestry=...)` are available: the layer's scores are
        `MultiHeadAttention`'s scaled dot products."""
        return self._scores_are_scaled_dot_products()

    def _check_cache(self, cache, batch_size, name="cache", in_slots=False):
        """A ValueError naming `name` unless `cache` is a pair (keys,
        values) of `init_cache`'s shapes for `batch_size` rows (None: any)
        and any length, in beam slots with `in_slots`."""
        expected = self._cache_shapes(batch_size, None, 1 if in_slots else None)
        if _fits(cache, expected, in_slots):
            return
        received = (
            [tuple(c.shape) for c in cache]
            if isinstance(cache, (tuple, list))
            else type(cache).__name__
        )
        raise ValueError(
            f"`{name}` must be a pair (key_heads, value_heads) of shapes "
            f"{_layout(in_slots)} = {expected} (None: any). Received: {name} shapes "
            f"{received}"
        )

    @staticmethod
    def _check_cache_index(index, query_length, cache_length):
        """A ValueError unless `query_length` new positions written at a
        known `index` fit in a cache of `cache_length` positions."""
        values = concrete_values(index)
        if values is None or values.ndim != 0 or cache_length is None:
            return  # traced: XLA clamps out-of-range writes (documented)
        last = int(values) + (query_length or 0)
        if int(values) < 0 or last > cache_length:
            raise ValueError(
                "`cache_update_index` is out of range: the new tokens must fit "
                f"in the cache of length {cache_length}. Received: "
                f"cache_update_index={int(values)} with {query_length} new "
                "token(s)"
            )
