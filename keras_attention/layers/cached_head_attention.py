"""`MultiHeadAttention.call_cached`: `t` new positions attending over
cached keys and values, the order of every cached layer `(output, cache,
scores)` (docs/concepts/caches.md).

Self-attention writes the new keys and values into the step cache and
attends causally up to each new position; cross-attention attends to a
memory cache. Both weigh heads-first keys and values `(B, K, L, d)` on the
exact path (the weights are returned). The rows of a beam search take the
paths of `keras_attention.layers.beam_row_attention`.
"""

from keras import ops

from keras_attention import masks
from keras_attention.layers import attention_core
from keras_attention.layers.cache_contract import describe_cache
from keras_attention.layers.grouped_heads import (
    grouped_context_heads_first,
    grouped_dot_products_heads_first,
    heads_first,
)
from keras_attention.validation import check_call_bool


def _check_cached_call(cache, memory_cache, cache_update_index, cache_ancestry):
    """A ValueError unless `call_cached` got one of `cache` (with its
    `cache_update_index`) and `memory_cache`, and `cache_ancestry` only with
    a `cache`."""
    if (cache is None) == (memory_cache is None):
        raise ValueError(
            "Give exactly one of `cache` (self-attention, from `init_cache`) "
            "and `memory_cache` (cross-attention, from `compute_cache`). "
            f"Received: cache={describe_cache(cache)}, "
            f"memory_cache={describe_cache(memory_cache)}"
        )
    if cache is not None and cache_update_index is None:
        raise ValueError(
            "A self-attention `cache` needs the position of the first new "
            "token. Received: cache_update_index=None"
        )
    if cache_ancestry is not None and cache is None:
        raise ValueError(
            "`cache_ancestry` reads a self-attention cache in beam slots; "
            "cross-attention has none. Received: cache=None, cache_ancestry of shape "
            f"{tuple(ops.shape(cache_ancestry))}")


class CachedHeadAttention:
    """The cached call of `MultiHeadAttention`, mixed in before
    `BaseAttention`. It reads the layer's heads (`HeadProjections`), its
    logits and scores (`GroupedHeadAttention`), the checks of `HeadCache`,
    the beam-row paths of `BeamRowAttention` and `BaseAttention`'s
    `_check_attention_bias` and `_drop`.
    """

    def call_cached(
        self,
        inputs,
        cache=None,
        cache_update_index=None,
        *,
        memory_cache=None,
        attention_mask=None,
        attention_bias=None,
        cache_ancestry=None,
        training=False,
    ):
        """`t` new positions over cached keys and values; returns `(output,
        cache, scores)`, the order of every cached layer.

        Self-attention (`cache` from `init_cache`, `cache_update_index` an
        int or scalar tensor): the keys and values of the `t` new `inputs`
        are written into the cache at `cache_update_index` and the queries
        attend causally (bottom-right aligned: query `i` sits at position
        `cache_update_index + i`) to every cached position up to theirs
        (within the layer's local window, if it has one).
        Cross-attention (`memory_cache` from `compute_cache`, no `cache`):
        the queries attend to the fixed memory; `cache_update_index`, if
        given, only places the queries for rotary positions, and the
        returned cache is None.

        Args:
            inputs: `(B, t, Dq)`, the queries.
            cache: `(keys (B, K, L, key_dim), values (B, K, L, value_dim))`,
                or None for cross-attention.
            cache_update_index: position of the first new token (required
                with `cache`).
            memory_cache: `(key_heads (B, K, S, key_dim), value_heads (B, K,
                S, value_dim))`, or None for self-attention. Its `B` may
                also be the number of sources of a query of `B * R` rows
                (`R` consecutive rows per source, the beams of a search):
                the memory is then read once for the rows of its source
                (`attention_mask` per source `(B, t, S)` or per row).
            attention_mask: optional boolean `(B, t, L)` (or `(B, t, S)`)
                mask, True = may attend; e.g. the memory's padding.
            attention_bias: optional float tensor broadcastable to `(B, H,
                t, L)` (or `(B, H, t, S)`), added to the logits: the rows
                of the new positions `cache_update_index + i` (e.g.
                `RelativePositionBias(query_length=t, key_length=L,
                query_offset=cache_update_index)`).
            cache_ancestry: with a cache in beam slots (`init_cache(B, L,
                rows_per_source=R)`, a query of `B * R` rows, `R`
                consecutive rows per source): int32 `(B * R, L)`, for each
                row and cache position the slot its ancestor wrote that
                position into (`keras_attention.layers.beam_slots`). The
                new positions are written into the row's own slot (`row
                mod R`) and read from it whatever the table holds there.
            training: whether dropout is active.

        Returns:
            `output (B, t, output_dim)`, the updated `cache` (None for
            cross-attention) and `scores (B, H, t, L)` (or `(B, H, t, S)`),
            float32.
        """
        training = check_call_bool("training", training, allow_none=True)
        _check_cached_call(cache, memory_cache, cache_update_index, cache_ancestry)
        if cache_ancestry is not None:
            return self._self_attend_slots(
                inputs, cache, cache_update_index, cache_ancestry, attention_mask, training,
                attention_bias,
            )
        if memory_cache is not None:
            output, scores = self._cross_attend_cached(
                inputs, memory_cache, cache_update_index, attention_mask, training,
                attention_bias,
            )
            return output, None, scores
        return self._self_attend_cached(
            inputs, cache, cache_update_index, attention_mask, training,
            attention_bias,
        )

    def _self_attend_cached(self, query, cache, cache_update_index, attention_mask,
                            training, attention_bias=None):
        """`call_cached` of self-attention: `(output, cache, scores)`."""
        self._check_cache(cache, query.shape[0])
        query = ops.cast(query, self.compute_dtype)
        key_cache, value_cache = cache
        query_length, cache_length = query.shape[1], key_cache.shape[2]
        self._check_cache_index(cache_update_index, query_length, cache_length)
        index = ops.cast(cache_update_index, "int32")
        zero = ops.zeros((), "int32")
        key_cache = ops.slice_update(
            key_cache,
            (zero, zero, index, zero),
            ops.cast(heads_first(self._key_heads(query, cache_update_index)), key_cache.dtype),
        )
        value_cache = ops.slice_update(
            value_cache,
            (zero, zero, index, zero),
            ops.cast(heads_first(self._value_heads(query)), value_cache.dtype),
        )
        query_positions, key_positions = ops.shape(query)[1], ops.shape(key_cache)[2]
        mask = masks.merge_masks(
            self._call_mask(attention_mask, query, cache_length),
            masks.causal_mask(query_positions, key_positions, offset=index),
            self._local_window_mask(query_positions, key_positions, offset=index),
        )
        bias = self._check_attention_bias(attention_bias, query, key_cache[:, 0])
        output, scores = self._attend_cached_heads(
            query, cache_update_index, key_cache, value_cache, mask, training, bias
        )
        return output, (key_cache, value_cache), scores

    def _cross_attend_cached(self, query, memory_cache, query_start, attention_mask,
                             training, attention_bias=None):
        """`call_cached` of cross-attention: `(output, scores)`."""
        rows = self._rows_per_source(query, memory_cache)
        self._check_cache(memory_cache, None if rows else query.shape[0], "memory_cache")
        query = ops.cast(query, self.compute_dtype)
        key_heads, value_heads = memory_cache
        if rows:
            if attention_bias is None and not self.rotary:
                return self._cross_attend_shared(query, key_heads, value_heads, rows,
                                                 attention_mask, training)
            key_heads, value_heads = (ops.repeat(x, rows, axis=0)
                                      for x in (key_heads, value_heads))
            if attention_mask is not None and ops.ndim(attention_mask) == 3 and (
                    attention_mask.shape[0] == key_heads.shape[0] // rows):
                attention_mask = ops.repeat(attention_mask, rows, axis=0)
        mask = self._call_mask(attention_mask, query, key_heads.shape[2])
        start = 0 if query_start is None else query_start
        bias = self._check_attention_bias(attention_bias, query, key_heads[:, 0])
        return self._attend_cached_heads(
            query, start, key_heads, value_heads, mask, training, bias
        )

    @staticmethod
    def _call_mask(attention_mask, query, key_length):
        """A given `attention_mask` as boolean `(B, t, L)`, or None."""
        if attention_mask is None:
            return None
        return masks.attention_mask(
            attention_mask,
            batch_size=query.shape[0],
            query_length=query.shape[1],
            key_length=key_length,
        )

    def _attend_cached_heads(self, query, query_start, key_heads, value_heads, mask,
                             training, bias=None):
        """`_attend_heads` over a cache's heads-first `(B, K, L, d)` keys
        and values; a subclass with its own `_head_logits` gets its `(B, L,
        K, d)` layout."""
        if self._has_own_head_logits():
            return self._attend_heads(query, query_start, ops.swapaxes(key_heads, 1, 2),
                                      ops.swapaxes(value_heads, 1, 2), mask, training, bias)
        query_heads = ops.cast(self._query_heads(query, query_start), "float32")
        logits = grouped_dot_products_heads_first(
            query_heads * self._query_scale, ops.cast(key_heads, "float32"))
        return self._weigh_heads(query, logits, value_heads, mask, training, bias,
                                 heads_first_values=True)

    def _attend_heads(self, query, query_start, key_heads, value_heads, mask, training,
                      bias=None):
        """Exact attention of `query (B, t, Dq)` at positions `query_start +
        i` over projected heads (plus a checked `bias`): `(output, scores
        (B, H, t, L))`."""
        logits = self._head_logits(self._query_heads(query, query_start), key_heads)
        return self._weigh_heads(query, logits, value_heads, mask, training, bias)

    def _weigh_heads(self, query, logits, value_heads, mask, training, bias,
                     heads_first_values=False):
        """Softmax of `logits (B, K, G, t, L)` (plus `bias`, under `mask`),
        its context over `value_heads` (`(B, L, K, dv)`, or `(B, K, L, dv)`
        with `heads_first_values`) and the output: `(output, scores)`."""
        if bias is not None:
            logits = logits + self._logits_bias(bias)
        weights = attention_core.masked_softmax(
            logits, None if mask is None else mask[:, None, None]
        )
        weights_used = self._drop(weights, training)
        if heads_first_values:
            context = grouped_context_heads_first(
                ops.cast(weights_used, value_heads.dtype), value_heads)
        else:
            context = self._prepared_context(weights_used, value_heads)
        gate = self._gate(query)  # (B, t, H, dv), or None
        return self._finish_output(context, gate), self._public_scores(weights)
