"""`MultiHeadAttention`: multi-head attention with grouped-query heads."""

import dataclasses
import math
import numbers

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers import attention_core, beam_slots
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.cache_contract import describe_cache, warn_deprecated
from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.projection_options import (
    projection_options,
    projection_options_config,
    set_projection_options,
)
from keras_attention.layers.quantization import QuantizableSublayers, einsum_projection
from keras_attention.layers.token_and_position_embedding import rotary_position_encoding
from keras_attention.validation import (
    check_bool,
    check_call_bool,
    check_positive_int,
    concrete_values,
)


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


def _as_one_batch(projection, x):
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


def heads_first(heads):
    """`(B, S, K, d)` heads as `(B, K, S, d)`, the layout of the caches."""
    return ops.transpose(heads, (0, 2, 1, 3))


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


# `attention_axes` values that mean the sequence axis of a (B, T, D) input.
_SEQUENCE_AXES = (None, 1, -2, (1,), (-2,), [1], [-2])


def _check_keras_only_arguments(attention_axes, flash_attention):
    """Refuses the `keras.layers.MultiHeadAttention` arguments we leave out
    on purpose, naming the alternative."""
    if attention_axes not in _SEQUENCE_AXES:
        raise ValueError(
            "`attention_axes`: this layer attends over the sequence axis of "
            "(batch, seq_len, dim) inputs only; for attention over other axes "
            "(images, video) use `keras_attention.compat.keras.MultiHeadAttention`, or reshape "
            "the other axes into the batch. Received: "
            f"attention_axes={attention_axes!r}"
        )
    if flash_attention is not None:
        raise ValueError(
            "`flash_attention`: choose the kernel with `implementation=` "
            "('fused' for keras.ops.dot_product_attention, 'exact', 'blocked' "
            f"or 'auto'). Received: flash_attention={flash_attention!r}"
        )


def _check_scale(scale):
    """`scale` as a float: None or a finite float > 0."""
    if scale is None:
        return None
    if (
        isinstance(scale, bool)
        or not isinstance(scale, numbers.Real)
        or not math.isfinite(float(scale))
        or float(scale) <= 0.0
    ):
        raise ValueError(
            "Argument `scale` must be None (1 / sqrt(key_dim)) or a finite "
            f"float > 0 (T5: 1.0). Received: scale={scale!r}"
        )
    return float(scale)


def _check_output_shape(output_shape, output_dim):
    """Keras' `output_shape` (int or sequence of positive ints) as a tuple,
    or None; it may not be given with `output_dim`."""
    if output_shape is None:
        return None
    if output_dim is not None:
        raise ValueError(
            "Pass `output_shape` or `output_dim`, not both (`output_dim=n` "
            "is `output_shape=(n,)`). Received: "
            f"output_shape={output_shape!r}, output_dim={output_dim!r}"
        )
    shape = (output_shape,) if isinstance(output_shape, int) else output_shape
    try:
        shape = tuple(shape)
    except TypeError:
        shape = None
    if not shape or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
    ):
        raise ValueError(
            "`output_shape` must be a positive int or a non-empty tuple of "
            f"positive ints. Received: output_shape={output_shape!r}"
        )
    return shape


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHeadAttention(QuantizableSublayers, BaseAttention):
    """Multi-head attention, with grouped-query (GQA) and multi-query (MQA).

    With `H = num_heads` query heads and `K = num_key_value_heads` key/value
    heads (`K` divides `H`; each group of `G = H / K` consecutive query heads
    shares one key/value head):

    ```
    q_h = query W^q_h + b^q_h                 (B, T, key_dim)
    k_j = key   W^k_j + b^k_j                 (B, S, key_dim)   j = h // G
    v_j = value W^v_j + b^v_j                 (B, S, value_dim)
    a_h = softmax((q_h * scale) k_j^T + bias_h)  (B, T, S), float32
    out = sum_h (a_h v_j) W^o_h + b^o         (B, T, output_dim)
    ```

    `K = H` is standard multi-head attention, `K = 1` is multi-query
    attention. `scale` is `1 / sqrt(key_dim)` unless given (T5: 1.0, no
    scaling); `bias_h` is head `h` of the call's float `attention_bias`
    (0 without one). Queries are scaled before the matmul and logits and softmax
    are float32 under every dtype policy. A query row with every key masked
    gets zero weights in every head, so its output is exactly the output
    bias `b^o`, on every path.

    Shapes: `query` `(B, T, Dq)`, `value` `(B, S, Dv)`, `key` `(B, S, Dk)`
    (defaults to `value`). Output `(B, T, output_dim)` (default `Dq`);
    weights `(B, H, T, S)` (float32).

    Args:
        num_heads: positive int `H`, the number of query heads.
        key_dim: positive int, the size of each query and key head.
        value_dim: positive int, the size of each value head; defaults to
            `key_dim`.
        num_key_value_heads: positive int `K` dividing `num_heads`; defaults
            to `num_heads`.
        dropout: float in [0, 1), dropout on the attention weights.
        use_bias: bool, whether the projections have biases.
        scale: None (default: `1 / sqrt(key_dim)`) or a float > 0, the
            factor of the queries before the dot products (T5: `1.0`),
            on every implementation and in `call_cached`.
        output_dim: positive int, the output size; defaults to `Dq`.
        kernel_initializer: initializer of the projection kernels; each
            projection gets its own copy (as in Keras' layer), so W_q, W_k
            and W_v start from different draws.
        bias_initializer: initializer of the projection biases (a copy each).
        seed: optional int seed for dropout.
        rotary: bool, apply rotary position embeddings (RoPE, Su et al.
            2021, keras-hub's `RotaryEmbedding`) to query and key heads at
            their positions (self-attention; needs an even `key_dim`).
        output_shape: as in `keras.layers.MultiHeadAttention`: an int or a
            tuple, the output's shape after `(B, T)` (default `(Dq,)`);
            `output_dim=n` is `output_shape=(n,)` (give one of the two).
        use_gate: bool, as in Keras: gated attention (Qiu et al. 2025), the
            contexts times `sigmoid(query W^g + b^g)` `(B, T, H, value_dim)`
            before the output projection (in `call_cached` too).
        sliding_window: positive int or None, as in Keras: query `i` may
            attend to key `j` only when `|i - j| < sliding_window` (a
            symmetric band, top-left aligned; with `use_causal_mask=True`,
            the causal window of Mistral). `call_cached` applies the same
            band at the absolute positions `cache_update_index + i`.
        kernel_regularizer, bias_regularizer, activity_regularizer,
        kernel_constraint, bias_constraint: as in Keras, for every projection
            sublayer.
        attention_axes: only None or the sequence axis (`1`); Keras'
            attention over other axes is refused (use
            `keras.layers.MultiHeadAttention` for images).
        flash_attention: only None; the kernel is chosen by
            `implementation`.
        query_block_size: see `BaseAttention`.
        implementation: `"auto"` (default), `"exact"`, `"blocked"` or
            `"fused"` (`keras.ops.dot_product_attention`; a call returning
            or dropping out the weights runs the exact path): see
            `BaseAttention`. `call_cached` always runs the exact path
            (it returns the weights).
        quantized_sublayers: written by `get_config` (which projections are
            quantized); leave it None.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments: `query`, `value`, `key`, `attention_mask`,
    `use_causal_mask`, `return_attention_scores`, `training` as in
    `BaseAttention`, and `attention_bias`: an optional float tensor
    broadcastable to `(B, H, T, S)` (`(T, S)`, `(H, T, S)`, `(1, H, T, S)`,
    ...), added to the float32 logits after the scale and before the
    softmax, e.g. `RelativePositionBias`'s output. It is not a mask (the
    boolean masks still decide which keys get exactly 0 and which rows are
    empty) and it gets a gradient. "auto" runs the exact path when a bias
    is given; "blocked" (the flash core) and "fused"
    (`keras.ops.dot_product_attention`'s `bias`, the mask folded into it)
    take it when asked for.

    Projections are Keras `EinsumDense` sublayers with Keras' names and
    layouts: `query_dense` (`"query"`, kernel `(Dq, H, key_dim)`),
    `key_dense` and `value_dense` (`(D, K, head_dim)`), `gate_dense`
    (`"gate"`) and `output_dense` (`"attention_output"`, kernel `(H,
    value_dim, *output_shape)`). So `model.quantize("int8" | "float8" |
    "int4")`, `layer.quantize(...)`, `enable_lora(rank)` (on the layer: all
    projections; or on one of them), constraints, regularizers and
    `DTypePolicyMap` entries reach them, and weights copy from and to
    `keras.layers.MultiHeadAttention` variable by variable. `.keras` files
    saved when the kernels were the layer's own variables still load.

    Where we differ from Keras' layer on purpose: masks are boolean
    (`attention_mask` True = may attend); `use_causal_mask=True` needs
    `T == S` (a decode step's bottom-right mask needs an explicit offset:
    `masks.causal_mask(T, S, offset=...)`); attention runs over the
    sequence axis only.

    Caching (the contract of every cached layer, docs/concepts/caches.md):
    `compute_cache(value)` projects a memory once; `init_cache(batch,
    length)` makes a zero self-attention cache; `call_cached(inputs, cache,
    cache_update_index)` (or `call_cached(inputs, memory_cache=...)`)
    returns `(output, cache, scores)`. Keys and values are cached per
    key/value head, so grouped-query attention shrinks the cache by `H / K`.
    `call_cached` takes an `attention_bias` too, `(B or 1, H or 1, t, L)`:
    the bias rows of the new positions (`RelativePositionBias(...,
    query_offset=cache_update_index)`). The older `call_with_cache`,
    returning `(output, scores, cache)`, is deprecated. `use_gate` and
    `sliding_window` apply in the cached calls as in the full call (the
    window at positions `cache_update_index + i`).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import MultiHeadAttention
    >>> layer = MultiHeadAttention(num_heads=4, key_dim=8,
    ...                            num_key_value_heads=2)
    >>> x = np.random.rand(2, 6, 16).astype("float32")
    >>> out, weights = layer(x, x, use_causal_mask=True,
    ...                      return_attention_scores=True)
    >>> tuple(out.shape), tuple(weights.shape)
    ((2, 6, 16), (2, 4, 6, 6))

    References:
        Vaswani et al., "Attention Is All You Need", 2017; Shazeer, "Fast
        Transformer Decoding: One Write-Head is All You Need", 2019; Ainslie
        et al., "GQA", 2023.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        num_key_value_heads=None,
        dropout=0.0,
        use_bias=True,
        output_dim=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        rotary=False,
        output_shape=None,
        use_gate=False,
        sliding_window=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        attention_axes=None,
        flash_attention=None,
        scale=None,
        **kwargs,
    ):
        _check_keras_only_arguments(attention_axes, flash_attention)
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        self.rotary = check_bool("rotary", rotary)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.key_dim = check_positive_int("key_dim", key_dim)
        self.value_dim = check_positive_int(
            "value_dim", value_dim, allow_none=True
        )
        self.num_key_value_heads = check_positive_int(
            "num_key_value_heads", num_key_value_heads, allow_none=True
        )
        kv_heads = self.num_key_value_heads or self.num_heads
        if self.num_heads % kv_heads:
            raise ValueError(
                "Argument `num_key_value_heads` must divide `num_heads`. "
                f"Received: num_key_value_heads={num_key_value_heads}, "
                f"num_heads={num_heads}"
            )
        self.use_bias = check_bool("use_bias", use_bias)
        self.scale = _check_scale(scale)
        self.output_dim = check_positive_int(
            "output_dim", output_dim, allow_none=True
        )
        self._output_shape = _check_output_shape(output_shape, output_dim)
        self.use_gate = check_bool("use_gate", use_gate)
        self.sliding_window = check_positive_int(
            "sliding_window", sliding_window, allow_none=True
        )

        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        set_projection_options(
            self, kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        )
        self.projection_activity_regularizer = keras.regularizers.get(
            activity_regularizer
        )
        self.gate_dense = None

    @property
    def _kv_heads(self):
        return self.num_key_value_heads or self.num_heads

    @property
    def _group_size(self):
        return self.num_heads // self._kv_heads

    @property
    def _value_head_dim(self):
        return self.value_dim or self.key_dim

    @property
    def _query_scale(self):
        """The factor of the queries: `scale`, or `1 / sqrt(key_dim)`."""
        return 1.0 / math.sqrt(self.key_dim) if self.scale is None else self.scale

    @property
    def _attention_bias_heads(self):
        return self.num_heads

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

    def build_attention(self, query_shape, value_shape, key_shape):
        if self.rotary and self.key_dim % 2:
            raise ValueError(
                "Argument `key_dim` must be even with `rotary=True`. "
                f"Received: key_dim={self.key_dim}"
            )
        self.query_dense = self._add_projection(
            "query", query_shape, self.num_heads, self.key_dim
        )
        self.key_dense = self._add_projection(
            "key", key_shape, self._kv_heads, self.key_dim
        )
        self.value_dense = self._add_projection(
            "value", value_shape, self._kv_heads, self._value_head_dim
        )
        if self.use_gate:
            self.gate_dense = self._add_projection(
                "gate", query_shape, self.num_heads, self._value_head_dim, "sigmoid"
            )
        self.output_dense = self._add_output_projection(query_shape)

    def _legacy_projections(self):
        # Before the projections were sublayers: query, key, value and
        # output kernels (each followed by its bias) were own variables.
        return [self.query_dense, self.key_dense, self.value_dense, self.output_dense]

    # Read-only views of the projections' variables (bias None without).
    query_kernel = property(lambda self: self.query_dense.kernel)
    query_bias = property(lambda self: self.query_dense.bias)
    key_kernel = property(lambda self: self.key_dense.kernel)
    key_bias = property(lambda self: self.key_dense.bias)
    value_kernel = property(lambda self: self.value_dense.kernel)
    value_bias = property(lambda self: self.value_dense.bias)
    output_kernel = property(lambda self: self.output_dense.kernel)
    output_bias = property(lambda self: self.output_dense.bias)

    def _band_width(self):
        # Keras' `sliding_window=w`: |i - j| < w, i.e. a distance <= w - 1.
        return None if self.sliding_window is None else self.sliding_window - 1

    def _local_window_mask(self, query_length, key_length, offset=None):
        """The band of the layer's local window for queries at positions
        `offset + i` (`i` without an offset) over keys `j`: boolean `(1, T,
        S)`, or None without a window. `call_cached` merges it with the
        causal mask, so a decode step sees the band of the full call."""
        width = self._band_width()
        if width is None:
            return None
        return masks.sliding_window_mask(query_length, key_length, width, offset=offset)

    def _grouped_query(self, query):
        """Query heads `(B, T, K, G, key_dim)`, grouped by key/value head."""
        projected = _as_one_batch(self.query_dense, query)  # (B, T, H, key_dim)
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
        return self._rotate(self._grouped_query(query), start_index)

    def _key_heads(self, key, start_index=0):
        return self._rotate(_as_one_batch(self.key_dense, key), start_index)

    def _value_heads(self, value):
        return _as_one_batch(self.value_dense, value)

    def _compute_logits(self, query, key):
        # (B, T, K, G, key_dim) x (B, S, K, key_dim) -> (B, K, G, T, S)
        return self._head_logits(self._query_heads(query), self._key_heads(key))

    def _head_logits(self, query_heads, key_heads):
        """float32 logits `(B, K, G, T, S)` from grouped query heads
        `(B, T, K, G, key_dim)` and key heads `(B, S, K, key_dim)`."""
        query_heads = ops.cast(query_heads, "float32") * self._query_scale
        return grouped_dot_products(query_heads, ops.cast(key_heads, "float32"))

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
        return type(self)._head_logits is MultiHeadAttention._head_logits

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
        return _as_one_batch(self.output_dense, context)

    def _finish_output(self, context, gate=None):
        """The output from contexts `(B, K, G, T, dv)` (see `_fused_output`)."""
        shape = ops.shape(context)
        context = ops.reshape(
            ops.transpose(context, (0, 3, 1, 2, 4)),
            (shape[0], shape[3], self.num_heads, self._value_head_dim),
        )
        return self._fused_output(context, gate)

    def _steps(self, training, query=None):
        steps = super()._steps(training, query)
        if not self.use_gate:
            return steps
        gate = _as_one_batch(self.gate_dense, query)  # (B, T, H, dv), sigmoid

        def compute_output(weights, value):
            context = self._prepared_context(weights, self._value_heads(value))
            return self._finish_output(context, gate)

        return dataclasses.replace(
            steps,
            compute_output=compute_output,
            finish_output=lambda context: self._finish_output(context, gate),
            fused_output=lambda context: self._fused_output(context, gate),
        )

    # ------------------------------------------------------------ caching
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
        expected = self._cache_shapes(batch_size, None, 1 if in_slots else None)
        ok = isinstance(cache, (tuple, list)) and len(cache) == 2
        if ok:
            shapes = [tuple(c.shape) for c in cache]
            lengths = (shapes[0][-1 if in_slots else -2:][:1], shapes[1][-2:-1])
            ok = lengths[0] == lengths[1] and all(
                len(got) == len(want)
                and all(e is None or g is None or g == e for g, e in zip(got, want))
                for got, want in zip(shapes, expected)
            )
        if not ok:
            received = (
                [tuple(c.shape) for c in cache]
                if isinstance(cache, (tuple, list))
                else type(cache).__name__
            )
            layout = ("(batch, num_key_value_heads, cache_len, key_dim) and "
                      "(batch, num_key_value_heads, cache_len, value_dim)")
            if in_slots:
                layout = ("(sources, num_key_value_heads, key_dim, cache_len * rows_per_source) "
                          "and (sources, num_key_value_heads, cache_len * rows_per_source, "
                          "value_dim), from `init_cache(sources, max_length, rows_per_source)`")
            raise ValueError(
                f"`{name}` must be a pair (key_heads, value_heads) of shapes {layout} = "
                f"{expected} (None: any). Received: {name} shapes {received}"
            )

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        """`(B, T) + output_shape` (default `(Dq,)`)."""
        super().compute_output_shape(query_shape, value_shape, key_shape)
        output_shape = self._output_shape or (self.output_dim or query_shape[-1],)
        return tuple(query_shape[:-1]) + tuple(output_shape)

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
        if cache_ancestry is not None:
            if cache is None:
                raise ValueError(
                    "`cache_ancestry` reads a self-attention cache in beam slots; "
                    "cross-attention has none. Received: cache=None, cache_ancestry of shape "
                    f"{tuple(ops.shape(cache_ancestry))}")
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

    def _self_attend_slots(self, query, cache, cache_update_index, ancestry, attention_mask,
                           training, attention_bias=None):
        """`call_cached` of self-attention over a cache in beam slots:
        `(output, cache, scores)`, the rows' outputs and scores as their
        reordered caches would give them."""
        sources = cache[0].shape[0] if isinstance(cache, (tuple, list)) and cache else None
        self._check_cache(cache, sources, in_slots=True)
        ancestry = ops.convert_to_tensor(ancestry)
        rows_total, positions = query.shape[0], cache[1].shape[2]
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
        gate = _as_one_batch(self.gate_dense, query) if self.use_gate else None
        output = self._finish_output(context, gate)
        return output, (key_slots, value_slots), beam_slots.slot_scores(weights, rows)

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
        if type(self)._head_logits is not MultiHeadAttention._head_logits:
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
        gate = _as_one_batch(self.gate_dense, query) if self.use_gate else None  # (B, t, H, dv)
        return self._finish_output(context, gate), self._public_scores(weights)

    def call_with_cache(
        self,
        query,
        cache,
        cache_update_index=None,
        *,
        attention_mask=None,
        training=False,
    ):
        """Deprecated: `call_cached`, with the older return order `(output,
        scores, cache)`.

        `call_with_cache(query, cache, index)` is `call_cached(query, cache,
        index)` with the last two results swapped; `call_with_cache(query,
        cross_cache)` (no index) is `call_cached(query,
        memory_cache=cross_cache)` and returns the cross cache unchanged
        last, as before.
        """
        training = check_call_bool("training", training, allow_none=True)
        warn_deprecated(
            self, "call_with_cache",
            "`call_cached(inputs, cache, cache_update_index)` (self-attention) or "
            "`call_cached(inputs, memory_cache=...)` (cross-attention)",
        )
        if cache_update_index is None:
            output, _, scores = self.call_cached(
                query, memory_cache=cache, attention_mask=attention_mask,
                training=training,
            )
            return output, scores, cache
        output, cache, scores = self.call_cached(
            query, cache, cache_update_index, attention_mask=attention_mask,
            training=training,
        )
        return output, scores, cache

    @staticmethod
    def _check_cache_index(index, query_length, cache_length):
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

    def _public_scores(self, weights):
        # (B, K, G, T, S) -> (B, H, T, S), head h = k * G + g.
        batch, _, _, target_len, source_len = ops.shape(weights)
        return ops.reshape(
            weights, (batch, self.num_heads, target_len, source_len)
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "num_key_value_heads": self.num_key_value_heads,
                "use_bias": self.use_bias,
                "scale": self.scale,
                "output_dim": self.output_dim,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "rotary": self.rotary,
                "output_shape": self._output_shape,
                "use_gate": self.use_gate,
                "sliding_window": self.sliding_window,
                **projection_options_config(self),
                "activity_regularizer": keras.regularizers.serialize(
                    self.projection_activity_regularizer
                ),
                "attention_axes": None,
                "flash_attention": None,
            }
        )
        return config
