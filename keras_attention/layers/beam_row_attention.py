"""`MultiHeadAttention.call_cached` for the rows of a beam search: `R`
consecutive query rows per source (`B * R` rows for `B` sources).

Self-attention reads and writes a cache in beam slots (`init_cache(B, L,
rows_per_source=R)`, never reordered: each row reads the slots its
ancestors wrote, `cache_ancestry`); cross-attention reads each source's
memory cache once for its `R` rows, which become `R * t` queries of their
source.
"""

from keras import ops

from keras_attention import masks
from keras_attention.layers import attention_core, beam_slots


def _slot_rows(rows_total, cache, ancestry):
    """`(R, L)`: the rows per source and the cache length of `cache`, beam
    slots of `B` sources and `L * R` positions, read by `rows_total = B *
    R` query rows through `ancestry (rows_total, L)`; a ValueError where
    they do not fit or `R` is 1."""
    sources, positions = cache[0].shape[0], cache[1].shape[2]
    cache_length = ancestry.shape[-1] if ops.ndim(ancestry) == 2 else None
    rows = rows_total // sources if rows_total and sources else None
    if (tuple(ancestry.shape[:1]) != (rows_total,) or not rows or rows * sources != rows_total
            or cache_length is None or cache_length * rows != positions):
        raise ValueError(
            f"A cache of {sources} sources in beam slots of {positions} positions serves "
            "rows_per_source rows of each: `cache_ancestry` is int32 (rows, cache_len) "
            "with cache_len * rows_per_source positions. Received: "
            f"{rows_total} query rows, cache_ancestry of shape {tuple(ancestry.shape)}")
    if rows == 1:  # a cache per row whose shapes pass for slots (L == key_dim)
        raise ValueError(
            "`cache_ancestry` reads beam slots of two or more rows per source "
            "(`init_cache(sources, max_length, rows_per_source)`); a cache of one row per "
            f"source is read without it. Received: {rows_total} query rows and a cache "
            f"of {sources} sources, cache shapes {[tuple(c.shape) for c in cache]}")
    return rows, cache_length


class BeamRowAttention:
    """The beam-row paths of `MultiHeadAttention.call_cached`, mixed in
    before `BaseAttention`. They read the layer's heads and gate
    (`HeadProjections`), `_query_scale`, `_local_window_mask`, the logits'
    bias layout (`GroupedHeadAttention`), the checks of `HeadCache` and the
    cached call's `_call_mask` and `_attend_cached_heads`
    (`CachedHeadAttention`).
    """

    def _self_attend_slots(self, query, cache, cache_update_index, ancestry, attention_mask,
                           training, attention_bias=None):
        """`call_cached` of self-attention over a cache in beam slots:
        `(output, cache, scores)`, the rows' outputs and scores as their
        reordered caches would give them."""
        sources = cache[0].shape[0] if isinstance(cache, (tuple, list)) and cache else None
        self._check_cache(cache, sources, in_slots=True)
        ancestry = ops.convert_to_tensor(ancestry)
        rows, cache_length = _slot_rows(query.shape[0], cache, ancestry)
        query = ops.cast(query, self.compute_dtype)
        query_length = query.shape[1]
        self._check_cache_index(cache_update_index, query_length, cache_length)
        index = ops.cast(cache_update_index, "int32")
        key_slots = beam_slots.write_key_slots(
            cache[0], self._key_heads(query, cache_update_index), index)
        value_slots = beam_slots.write_value_slots(cache[1], self._value_heads(query), index)
        allowed = masks.merge_masks(
            self._call_mask(attention_mask, query, cache_length),
            masks.causal_mask(query_length, cache_length, offset=index),
            self._local_window_mask(query_length, cache_length, offset=index),
        )
        mask = beam_slots.slot_mask(ancestry, rows, index, allowed)
        query_heads = ops.cast(self._query_heads(query, cache_update_index), "float32")
        logits = beam_slots.slot_logits(query_heads * self._query_scale, key_slots)
        bias = self._check_attention_bias(attention_bias, query, ancestry)
        if bias is not None:
            logits = beam_slots.add_slot_bias(logits, self._logits_bias(bias), rows)
        weights = attention_core.masked_softmax(logits, mask[:, None, None])  # 5 axes
        context = beam_slots.slot_context(self._drop(weights, training), value_slots, rows)
        output = self._finish_output(context, self._gate(query))
        return output, (key_slots, value_slots), beam_slots.slot_scores(weights, rows)

    @staticmethod
    def _rows_per_source(query, memory_cache):
        """`R` where a memory cache of `B` sources serves a query of `B * R`
        rows (`R > 1` consecutive rows per source, e.g. the beams of a
        search); None where the batches are equal (or not both known)."""
        rows = query.shape[0]
        sources = memory_cache[0].shape[0] if isinstance(memory_cache, (tuple, list)) and (
            memory_cache) and hasattr(memory_cache[0], "shape") else None
        if rows is None or sources is None or rows == sources:
            return None
        if sources == 0 or rows % sources:
            raise ValueError(
                "A `memory_cache` of B sources serves a query of B * R rows (R rows per "
                f"source). Received: {rows} query rows for a memory_cache of {sources} "
                "sources")
        return rows // sources

    def _cross_attend_shared(self, query, key_heads, value_heads, rows, attention_mask,
                             training):
        """Cross-attention of `query (B * R, t, Dq)` over the memory of `B`
        sources, read once for the `R` rows of each: the rows become `R * t`
        queries of their source. `attention_mask`: `(B, t, S)` or `(B * R,
        t, S)`. Returns `(output (B * R, t, Do), scores (B * R, H, t, S))`."""
        length, sources = query.shape[1], key_heads.shape[0]
        query = ops.reshape(query, (sources, rows * length, query.shape[-1]))
        mask = None
        if attention_mask is not None:
            attention_mask = ops.convert_to_tensor(attention_mask)
            if attention_mask.shape[0] == sources * rows:
                mask = ops.reshape(attention_mask, (sources, rows * length, -1))
            else:
                mask = ops.tile(self._call_mask(attention_mask, query[:, :length],
                                                key_heads.shape[2]), (1, rows, 1))
            mask = ops.cast(mask, "bool")
        output, scores = self._attend_cached_heads(
            query, 0, key_heads, value_heads, mask, training)
        output = ops.reshape(output, (sources * rows, length) + tuple(output.shape[2:]))
        scores = ops.reshape(scores, (sources, self.num_heads, rows, length, -1))
        scores = ops.reshape(ops.transpose(scores, (0, 2, 1, 3, 4)),
                             (sources * rows, self.num_heads, length, -1))
        return output, scores
