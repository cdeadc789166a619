"""The projections of `MultiHeadAttention`: Keras `EinsumDense` sublayers
from a sequence `(B, L, D)` to heads `(B, L, heads, head_dim)`, and from
contexts `(B, T, H, dv)` to the output `(B, T, *output_shape)`; the query,
key, value and gate heads they give.
"""

from keras import ops

from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.projection_options import projection_options
from keras_attention.layers.quantization import einsum_projection
from keras_attention.layers.token_and_position_embedding import rotary_position_encoding


def as_one_batch(projection, x):
    """`projection(x)` for `x` `(B, L, ...)`, computed on `x` seen as one
    sequence `(1, B*L, ...)` when `B` and `L` are static: an `EinsumDense`
    then runs one GEMM, whose kernel gradient needs no sum over a batch of
    per-sequence products (Keras' einsum broadcasts the kernel over the
    batch). Same values. With a dynamic `B` or `L`, `x` as it is: Keras'
    TensorFlow einsum takes its matmul route only for static shapes (an
    int8 `tf.einsum` on a CPU is many times slower). Quantized projections
    also take `x` as it is: the gain was measured on float kernels only."""
    batch, length = x.shape[0], x.shape[1]
    if not (isinstance(batch, int) and isinstance(length, int)) or (
        getattr(projection, "quantization_mode", None) is not None
    ):
        return projection(x)
    projected = projection(ops.reshape(x, (1, batch * length) + tuple(x.shape[2:])))
    return ops.reshape(projected, (batch, length) + tuple(projected.shape[2:]))


class HeadProjections:
    """The projection methods of `MultiHeadAttention`, mixed in before
    `BaseAttention`. They read the layer's settings (`num_heads`, `key_dim`,
    `_kv_heads`, `_group_size`, `_value_head_dim`, `use_bias`, `rotary`,
    `use_gate`, `output_dim`, `_output_shape`, the initializers) and the
    sublayers `build_attention` makes with `_add_projection` and
    `_add_output_projection` (`query_dense`, `key_dense`, `value_dense`,
    `gate_dense`, `output_dense`).
    """

    def _sublayer_kwargs(self):
        """What one projection sublayer gets, as in Keras' layer: the shared
        options and its own copy of each initializer (one instance would
        start W_q, W_k and W_v equal, its seed being fixed)."""
        return dict(
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            activity_regularizer=self.projection_activity_regularizer,
            dtype=self.dtype_policy,
            **projection_options(self),
        )

    def _add_projection(self, name, input_shape, heads, head_dim, activation=None):
        """An `EinsumDense` `(B, L, D) -> (B, L, heads, head_dim)`, kernel
        `(D, heads, head_dim)` and bias `(heads, head_dim)` (Keras' layout),
        built for `input_shape`."""
        projection = einsum_projection(
            "bld,dhk->blhk",
            (None, heads, head_dim),
            "hk" if self.use_bias else None,
            name,
            activation=activation,
            **self._sublayer_kwargs(),
        )
        projection.build(tuple(input_shape))
        return projection

    def _add_output_projection(self, query_shape):
        """The `EinsumDense` `(B, T, H, value_dim) -> (B, T, *output_shape)`
        (default `(Dq,)`), kernel `(H, value_dim, *output_shape)` (Keras'
        layout), built for queries of `query_shape`."""
        output_shape = self._output_shape or (self.output_dim or query_shape[-1],)
        letters = "opqrsuvwxyz"[: len(output_shape)]
        projection = einsum_projection(
            f"bthd,hd{letters}->bt{letters}",
            (None,) + tuple(output_shape),
            letters if self.use_bias else None,
            "attention_output",
            **self._sublayer_kwargs(),
        )
        projection.build(
            (query_shape[0], query_shape[1], self.num_heads, self._value_head_dim)
        )
        return projection

    def _grouped_query(self, query):
        """Query heads `(B, T, K, G, key_dim)`, grouped by key/value head."""
        projected = as_one_batch(self.query_dense, query)  # (B, T, H, key_dim)
        shape = ops.shape(projected)
        return ops.reshape(
            projected,
            (shape[0], shape[1], self._kv_heads, self._group_size, self.key_dim),
        )

    def _rotate(self, heads, start_index):
        """Rotary position encoding of heads `(B, L, ...)` at positions
        `start_index + l` (a no-op unless `rotary=True`)."""
        if not self.rotary:
            return heads
        return rotary_position_encoding(heads, start_index)

    def _query_heads(self, query, start_index=0):
        """Query heads `(B, T, K, G, key_dim)` of `query (B, T, Dq)` at
        positions `start_index + t`."""
        return self._rotate(self._grouped_query(query), start_index)

    def _key_heads(self, key, start_index=0):
        """Key heads `(B, S, K, key_dim)` of `key (B, S, Dk)` at positions
        `start_index + s`."""
        return self._rotate(as_one_batch(self.key_dense, key), start_index)

    def _value_heads(self, value):
        """Value heads `(B, S, K, value_dim)` of `value (B, S, Dv)`."""
        return as_one_batch(self.value_dense, value)

    def _gate(self, query):
        """The gate `sigmoid(query W^g + b^g)` `(B, t, H, value_dim)` of
        `query (B, t, Dq)` with `use_gate=True`, else None."""
        return as_one_batch(self.gate_dense, query) if self.use_gate else None

    def _fused_output(self, context, gate=None):
        """The output `(B, T, *output_shape)` from contexts `(B, T, H, dv)`,
        times the gate `(B, T, H, dv)` first with `use_gate=True`."""
        if self.use_gate:
            if gate is None:
                raise ValueError(
                    "`use_gate=True` needs the gate `(B, T, H, value_dim)` "
                    "computed from the query of the call. Received: gate=None"
                )
            context = context * ops.cast(gate, context.dtype)
        return as_one_batch(self.output_dense, context)

    def _finish_output(self, context, gate=None):
        """The output from contexts `(B, K, G, T, dv)` (see `_fused_output`)."""
        shape = ops.shape(context)
        context = ops.reshape(
            ops.transpose(context, (0, 3, 1, 2, 4)),
            (shape[0], shape[3], self.num_heads, self._value_head_dim),
        )
        return self._fused_output(context, gate)
