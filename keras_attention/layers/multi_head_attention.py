"""`MultiHeadAttention`: multi-head attention with grouped-query heads.

The class holds the settings, the sublayers and the config; its methods
come from one mixin per module:

- `head_projections`: the query, key, value, gate and output projections
  and the heads they give;
- `grouped_head_attention`: `BaseAttention`'s exact, blocked and fused
  paths over grouped heads (the matmuls are `grouped_heads`');
- `head_cache`: `compute_cache`, `init_cache` and the checks of a cache;
- `cached_head_attention`: `call_cached`;
- `beam_row_attention`: `call_cached` for the rows of a beam search.
"""

import math
import numbers

import keras

from keras_attention import masks
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.beam_row_attention import BeamRowAttention
from keras_attention.layers.cached_head_attention import CachedHeadAttention
from keras_attention.layers.grouped_head_attention import GroupedHeadAttention
from keras_attention.layers.head_cache import HeadCache
from keras_attention.layers.head_projections import HeadProjections
from keras_attention.layers.projection_options import (
    projection_options_config,
    set_projection_options,
)
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import check_bool, check_positive_int

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
class MultiHeadAttention(
    CachedHeadAttention,
    BeamRowAttention,
    HeadCache,
    GroupedHeadAttention,
    HeadProjections,
    QuantizableSublayers,
    BaseAttention,
):
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
    query_offset=cache_update_index)`). `use_gate` and `sliding_window`
    apply in the cached calls as in the full call (the window at positions
    `cache_update_index + i`).

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

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        """`(B, T) + output_shape` (default `(Dq,)`)."""
        super().compute_output_shape(query_shape, value_shape, key_shape)
        output_shape = self._output_shape or (self.output_dim or query_shape[-1],)
        return tuple(query_shape[:-1]) + tuple(output_shape)

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
