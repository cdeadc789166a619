"""`TransformerDecoderBlock`: causal self-attention, cross-attention, feed-forward."""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers.cache_contract import describe_cache
from keras_attention.layers.feed_forward import residual
from keras_attention.layers.transformer_block import (
    KERAS_HUB_CACHE_ARGUMENTS,
    TransformerBlock,
    attention_with_scores,
)
from keras_attention.validation import check_call_bool, check_same_length


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerDecoderBlock(TransformerBlock):
    """A Transformer decoder block with self- and cross-attention caches.

    ```
    pre-norm  (norm_first=True):  h = x + Drop(CausalSelfAttn(LN(x)))
                                  c = h + Drop(CrossAttn(LN(h), memory))
                                  y = c + Drop(FFN(LN(c)))
    post-norm (norm_first=False): h = LN(x + Drop(CausalSelfAttn(x)))
                                  c = LN(h + Drop(CrossAttn(h, memory)))
                                  y = LN(c + Drop(FFN(c)))
    ```

    Built without a `memory`, the block has no cross-attention (a
    decoder-only block). Keras masks on `x` (target padding) and `memory`
    (source padding) are honoured; the output keeps the mask of `x`.

    For generation (the contract of every cached layer,
    docs/concepts/caches.md), `compute_cache(memory, memory_mask)` projects
    the memory once (the cross-attention cache), `init_cache(batch,
    max_length)` makes the self-attention cache, and `call_cached(inputs,
    cache, cache_update_index, memory_cache=...)` runs `t` new positions,
    returning `(y, cache, cross_scores)`.

    Shapes: `x` `(B, T, D)`, `memory` `(B, S, Dm)` -> `(B, T, D)`;
    self-attention weights `(B, H, T, T)`, cross-attention weights
    `(B, H, T, S)`.

    The constructor takes keras-hub's `TransformerDecoder` arguments in
    keras-hub's order, `normalize_first` included (see
    `TransformerEncoderBlock`), and the call its mask keywords
    (`decoder_padding_mask`, `encoder_padding_mask`,
    `decoder_attention_mask`, `encoder_attention_mask`, `use_causal_mask`).
    keras-hub's cache arguments raise a ValueError pointing to
    `call_cached` and to `keras_attention.compat.keras_hub.TransformerDecoder`,
    which takes them.

    Args: as `TransformerEncoderBlock` (`intermediate_dim`, `num_heads`,
        `dropout`, `activation`, `layer_norm_epsilon`, `kernel_initializer`,
        `bias_initializer`, `norm_first` (alias `normalize_first`),
        `num_key_value_heads`, `rotary`, `implementation`,
        `normalization`, `use_bias`, `attention_scale`,
        `gated_feed_forward`, `key_dim`; `rotary` applies to self-attention
        only; `implementation`, `use_bias`, `attention_scale` and `key_dim`
        to both attentions (their heads of `key_dim`, default `D //
        num_heads`, project back to `D`), and `call_cached` always runs
        their exact path).

    Call arguments:
        x: `(B, T, D)`.
        memory: `(B, S, Dm)` or None.
        x_mask: optional boolean `(B, T)`, True on real target tokens
            (filled from the Keras mask of `x`). Alias:
            `decoder_padding_mask`.
        memory_mask: optional boolean `(B, S)`, True on real source tokens
            (filled from the Keras mask of `memory`). Alias:
            `encoder_padding_mask`.
        attention_mask: optional boolean `(B, T, T)` for self-attention,
            True = may attend, combined with the causal mask (packed rows:
            `masks.segment_mask(segment_ids)`). Alias:
            `decoder_attention_mask`.
        memory_attention_mask: optional boolean `(B, T, S)` for
            cross-attention (packed rows: `masks.segment_mask(
            target_segment_ids, source_segment_ids)`). Alias:
            `encoder_attention_mask`.
        use_causal_mask: bool (default True), the causal self-attention
            mask; False makes self-attention bidirectional.
        self_attention_bias: optional float tensor broadcastable to `(B, H,
            T, T)`, added to the self-attention logits (T5's causal
            `RelativePositionBias`); not a mask.
        cross_attention_bias: optional float tensor broadcastable to `(B,
            H, T, S)`, added to the cross-attention logits.
        return_attention_scores: bool; if True returns `(y, self_scores,
            cross_scores)` (`cross_scores` is None without memory).
        training: bool.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import TransformerDecoderBlock
    >>> block = TransformerDecoderBlock(intermediate_dim=16, num_heads=2)
    >>> x = np.ones((2, 4, 8), "float32")
    >>> memory = np.ones((2, 6, 8), "float32")
    >>> y, self_w, cross_w = block(x, memory, return_attention_scores=True)
    >>> tuple(y.shape), tuple(self_w.shape), tuple(cross_w.shape)
    ((2, 4, 8), (2, 2, 4, 4), (2, 2, 4, 6))
    """

    call_aliases = {
        "decoder_padding_mask": "x_mask",
        "encoder_padding_mask": "memory_mask",
        "decoder_attention_mask": "attention_mask",
        "encoder_attention_mask": "memory_attention_mask",
    }
    unsupported_call_arguments = KERAS_HUB_CACHE_ARGUMENTS

    def build(self, x_shape, memory_shape=None):
        self._check_x_shape(x_shape)
        dim = x_shape[-1]
        self._build_self_attention(x_shape)
        self.cross_attention = None
        if memory_shape is not None:
            self.cross_attention = self._attention("cross_attention", dim, False)
            self.cross_attention.build(x_shape, memory_shape)
            self.cross_attention_norm = self._norm("cross_attention_norm")
            self.cross_attention_norm.build(x_shape)
        self._feed_forward(x_shape)
        self.built = True

    def _check_memory(self, memory):
        self._check_given_with_cross_attention("memory", memory)

    def _check_given_with_cross_attention(self, name, value, made_by=""):
        """A ValueError unless `value` (the memory or its cache) is given
        exactly when the block has cross-attention (was built with a memory)."""
        has_cross = self.cross_attention is not None
        if (value is not None) != has_cross:
            raise ValueError(
                f"`{name}`{made_by} must be given exactly when the block has "
                f"cross-attention ({has_cross}), i.e. was built with a memory. "
                f"Received: {name}={describe_cache(value)}"
            )

    def call(
        self,
        x,
        memory=None,
        *,
        mask=None,
        x_mask=None,
        memory_mask=None,
        attention_mask=None,
        memory_attention_mask=None,
        use_causal_mask=True,
        self_attention_bias=None,
        cross_attention_bias=None,
        return_attention_scores=False,
        training=None,
    ):
        use_causal_mask = check_call_bool("use_causal_mask", use_causal_mask)
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        training = check_call_bool("training", training, allow_none=True)
        self._check_memory(memory)
        if hasattr(x_mask, "shape"):
            x_mask = check_same_length("x_mask", x_mask, "x", x)
        if memory is not None and hasattr(memory_mask, "shape"):
            memory_mask = check_same_length("memory_mask", memory_mask, "memory", memory)
        padding = x_mask if x_mask is not None else mask
        h, self_scores = self._self_attention_residual(
            x, padding, training, return_attention_scores,
            attention_mask=attention_mask, use_causal_mask=use_causal_mask,
            attention_bias=self_attention_bias,
        )
        cross_scores = None
        if memory is not None:

            def cross_attend(z):
                return attention_with_scores(
                    self.cross_attention,
                    return_attention_scores,
                    z,
                    memory,
                    query_mask=padding,
                    value_mask=memory_mask,
                    attention_mask=memory_attention_mask,
                    attention_bias=cross_attention_bias,
                    training=training,
                )

            h, cross_scores = residual(
                h, cross_attend, self.cross_attention_norm,
                self.residual_dropout, self.norm_first, training,
            )
        y = self._feed_forward_residual(h, training)
        if return_attention_scores:
            return y, self_scores, cross_scores
        return y

    def compute_output_shape(self, x_shape, memory_shape=None):
        return tuple(x_shape)

    # ------------------------------------------------------------ caching
    def init_cache(self, batch_size, max_length, rows_per_source=None):
        """The step cache: zero self-attention keys and values, each
        `(B, num_key_value_heads, max_length, head_size)` (`head_size`:
        `key_dim`, default `D // num_heads`); with `rows_per_source=R`, in
        beam slots for `B` sources (see `MultiHeadAttention.init_cache`)."""
        return self.self_attention.init_cache(batch_size, max_length, rows_per_source)

    def compute_cache(self, memory, memory_mask=None):
        """The memory cache: the memory projected once for cross-attention,
        with its padding.

        Args:
            memory: `(B, S, Dm)`.
            memory_mask: optional boolean `(B, S)`, True on real source
                tokens (default: every position).

        Returns:
            A dict `{"cross_attention": (key_heads (B, K, S, head_size),
            value_heads (B, K, S, head_size)), "memory_mask": (B, S) bool}`.
        """
        self._check_memory(memory)
        memory = ops.convert_to_tensor(memory)
        if memory_mask is None:
            memory_mask = ops.ones(ops.shape(memory)[:2], "bool")
        return {
            "cross_attention": self.cross_attention.compute_cache(memory),
            "memory_mask": ops.cast(memory_mask, "bool"),
        }

    def call_cached(
        self,
        inputs,
        cache,
        cache_update_index,
        *,
        memory_cache=None,
        self_attention_bias=None,
        cross_attention_bias=None,
        cache_ancestry=None,
        self_attention_mask=None,
        training=False,
    ):
        """Runs `t` new positions starting at `cache_update_index`; returns
        `(y, cache, cross_scores)`, the order of every cached layer.

        Args:
            inputs: `(B, t, D)`, the new positions.
            cache: the self-attention cache, from `init_cache` or the
                previous step.
            cache_update_index: int or scalar tensor, the position of the
                first new token (also the rotary position offset).
            memory_cache: from `compute_cache(memory, memory_mask)`;
                required exactly when the block has cross-attention.
            self_attention_bias: optional float tensor broadcastable to
                `(B, H, t, L)`: the bias rows of the new positions over the
                whole cache (`RelativePositionBias(query_length=t,
                key_length=L, query_offset=cache_update_index)`).
            cross_attention_bias: optional float tensor broadcastable to
                `(B, H, t, S)`.
            cache_ancestry: with a cache in beam slots, int32 `(B * R, L)`:
                the slot of each row's ancestor at each position (see
                `MultiHeadAttention.call_cached`).
            self_attention_mask: optional boolean `(B, t, L)`, True = the
                new position may attend to that cached one (on top of the
                causal rule): rows whose sequence starts later in the cache
                than position 0 (`ContinuousDecoder`).
            training: bool.

        Returns:
            `y (B, t, D)`, the updated self-attention cache and the
            cross-attention `scores (B, H, t, S)` float32 (None for a block
            without cross-attention).
        """
        training = check_call_bool("training", training, allow_none=True)
        self._check_given_with_cross_attention(
            "memory_cache", memory_cache, " (from `compute_cache(memory)`)"
        )
        x = ops.cast(inputs, self.compute_dtype)

        def self_attend(h):
            out, new_cache, _ = self.self_attention.call_cached(
                h, cache, cache_update_index, attention_bias=self_attention_bias,
                attention_mask=self_attention_mask, cache_ancestry=cache_ancestry,
                training=training,
            )
            return out, new_cache

        h, cache = residual(
            x, self_attend, self.self_attention_norm, self.residual_dropout,
            self.norm_first, training,
        )
        cross_scores = None
        if memory_cache is not None:
            cross_mask = masks.padding_mask(
                key_mask=memory_cache["memory_mask"], query_length=ops.shape(x)[1]
            )

            def cross_attend(z):
                out, _, scores = self.cross_attention.call_cached(
                    z, memory_cache=memory_cache["cross_attention"],
                    attention_mask=cross_mask, attention_bias=cross_attention_bias,
                    training=training,
                )
                return out, scores

            h, cross_scores = residual(
                h, cross_attend, self.cross_attention_norm,
                self.residual_dropout, self.norm_first, training,
            )
        y = self._feed_forward_residual(h, training)
        return y, cache, cross_scores
