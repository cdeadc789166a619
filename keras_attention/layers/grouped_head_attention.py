"""How `MultiHeadAttention` fills `BaseAttention`'s paths with grouped
heads: float32 logits `(B, K, G, T, S)` (head `h = k * G + g`), contexts
`(B, K, G, T, dv)`, the blocked (flash) path's operands, the fused path's
`(B, T, H, d)` heads and the weights returned `(B, H, T, S)`.
"""

import dataclasses

from keras import ops

from keras_attention.layers.grouped_heads import grouped_context, grouped_dot_products


class GroupedHeadAttention:
    """The attention methods of `MultiHeadAttention` over grouped heads,
    mixed in before `BaseAttention`. They read the layer's `num_heads`,
    `key_dim`, `_kv_heads`, `_group_size`, `_query_scale` and the heads of
    `HeadProjections` (`_query_heads`, `_key_heads`, `_value_heads`,
    `_gate`, `_finish_output`, `_fused_output`).
    """

    def _logits_bias(self, bias):
        """A bias `(B or 1, H or 1, T or 1, S or 1)` as `(B or 1, K or 1,
        G or 1, T or 1, S or 1)`, the logits' layout (head h = k * G + g)."""
        bias = ops.cast(bias, "float32")
        if bias.shape[1] == 1:
            return bias[:, :, None]
        shape = ops.shape(bias)
        return ops.reshape(
            bias, (shape[0], self._kv_heads, self._group_size, shape[2], shape[3])
        )

    def _compute_logits(self, query, key):
        # (B, T, K, G, key_dim) x (B, S, K, key_dim) -> (B, K, G, T, S)
        return self._head_logits(self._query_heads(query), self._key_heads(key))

    def _head_logits(self, query_heads, key_heads):
        """float32 logits `(B, K, G, T, S)` from grouped query heads
        `(B, T, K, G, key_dim)` and key heads `(B, S, K, key_dim)`."""
        query_heads = ops.cast(query_heads, "float32") * self._query_scale
        return grouped_dot_products(query_heads, ops.cast(key_heads, "float32"))

    def _has_own_head_logits(self):
        """Whether a subclass scores heads its own way (overrides
        `_head_logits`), so that the scaled-dot-product shortcuts (flash
        gradient, heads-first cached keys, beam slots) do not apply."""
        return type(self)._head_logits is not GroupedHeadAttention._head_logits

    def _compute_output(self, weights, value):
        return self._output_from_heads(weights, self._value_heads(value))

    def _output_from_heads(self, weights, value_heads):
        return self._finish_output(self._prepared_context(weights, value_heads))

    # Blocked path: heads are projected once, outside the query blocks.
    _context_query_axis = 3  # contexts are (B, K, G, T, value_dim)

    def _prepare_query(self, query, start):
        return self._query_heads(query, start)

    def _prepare_key(self, key):
        return self._key_heads(key)

    def _prepare_value(self, value):
        return self._value_heads(value)

    def _prepared_logits(self, query_heads, key_heads):
        return self._head_logits(query_heads, key_heads)

    def _prepared_context(self, weights, value_heads):
        return grouped_context(ops.cast(weights, value_heads.dtype), value_heads)

    def _scores_are_scaled_dot_products(self):
        """Whether the logits are `_head_logits`' scaled dot products, so
        that blocks may use the flash gradient. A subclass overriding
        `_head_logits` keeps `keras.remat` unless it overrides this too
        (returning True where its score is the scaled dot product)."""
        return not self._has_own_head_logits()

    def _flash_operands(self, key_heads, value_heads):
        if not self._scores_are_scaled_dot_products():
            return None
        return (
            ops.transpose(key_heads, (0, 2, 1, 3)),
            ops.transpose(value_heads, (0, 2, 1, 3)),
        )

    def _flash_query(self, query_heads):
        query_heads = ops.cast(query_heads, "float32") * self._query_scale
        return ops.transpose(query_heads, (0, 2, 3, 1, 4))

    def _flash_context(self, output):
        return output  # (B, K, G, t, value_dim), as `_prepared_context`

    # Fused path: (B, T, H, d) heads, head h = k * G + g as everywhere.
    def _fused_heads(self, query, value, key):
        grouped = self._query_heads(query)
        shape = ops.shape(grouped)
        query_heads = ops.reshape(
            grouped, (shape[0], shape[1], self.num_heads, self.key_dim)
        )
        scale = ops.cast(self._query_scale, query_heads.dtype)
        return query_heads * scale, self._key_heads(key), self._value_heads(value)

    def _steps(self, training, query=None):
        steps = super()._steps(training, query)
        if not self.use_gate:
            return steps
        gate = self._gate(query)  # (B, T, H, dv), sigmoid

        def compute_output(weights, value):
            context = self._prepared_context(weights, self._value_heads(value))
            return self._finish_output(context, gate)

        return dataclasses.replace(
            steps,
            compute_output=compute_output,
            finish_output=lambda context: self._finish_output(context, gate),
            fused_output=lambda context: self._fused_output(context, gate),
        )

    def _public_scores(self, weights):
        # (B, K, G, T, S) -> (B, H, T, S), head h = k * G + g.
        batch, _, _, target_len, source_len = ops.shape(weights)
        return ops.reshape(
            weights, (batch, self.num_heads, target_len, source_len)
        )
