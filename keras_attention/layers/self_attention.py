"""`SelfAttention`: attention of a sequence over itself, with a choice of score."""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers.grouped_heads import grouped_dot_products
from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.output_specs import traced_output_spec
from keras_attention.validation import (
    check_bool,
    check_call_bool,
    check_choice,
    check_non_negative_int,
    check_positive_int,
)

SCORES = ("scaled_dot", "dot", "general", "additive")


@keras.saving.register_keras_serializable(package="keras_attention")
class SelfAttention(MultiHeadAttention):
    """Self-attention over one sequence `x -> (B, T, D)`, with four scores.

    The layer owns its query, key, value and output projections (it is a
    `MultiHeadAttention` whose query, key and value are the same sequence)
    and scores each head `h` (query head `q_h`, key head `k_h`, both of size
    `key_dim = d`) with one of:

    ```
    scaled_dot: e_ij = (q_i * scale) . k_j               scale: 1 / sqrt(d) unless given
    dot:        e_ij = q_i . k_j
    general:    e_ij = q_i . (W_h k_j)                   W_h: (d, d)
    additive:   e_ij = v_h . tanh(q_i + k_j)             v_h: (d,)
    ```

    (`additive` is Bahdanau's score with the query and key projections as
    its `W` and `U`.) Weights are a float32 masked softmax over `j`; the
    output is `sum_h (sum_j a_ij v_j) W^o_h + b^o`, of size `D`.

    `use_causal_mask=True` lets position `i` see positions `j <= i`;
    `window=w` restricts it to `|i - j| <= w` (with causal: the `w` previous
    positions and itself; `call_cached`, always causal, applies the same
    window at the positions `cache_update_index + i`). A Keras mask on `x`
    masks padded positions as keys and as queries, and is propagated to the
    output.

    Shapes: `x` `(B, T, D)`; output `(B, T, D)`; weights `(B, H, T, T)`.

    Args:
        num_heads: positive int, the number of heads.
        key_dim: size of each head; defaults to `D // num_heads` (which
            must divide evenly).
        score: `"scaled_dot"` (default), `"dot"`, `"general"` or
            `"additive"`.
        use_causal_mask: bool, the default causal flag of calls.
        window: optional non-negative int, the local attention radius.
        dropout: float in [0, 1), dropout on the attention weights.
        num_key_value_heads: positive int dividing `num_heads` (GQA / MQA).
        implementation: `"auto"`, `"exact"`, `"blocked"` or `"fused"` (see
            `BaseAttention`); `"fused"` needs `score="scaled_dot"`.
        **kwargs: `use_bias`, `kernel_initializer`, `bias_initializer`,
            `seed`, `scale` (`score="scaled_dot"` only) as in
            `MultiHeadAttention`, and `keras.layers.Layer`
            arguments.

    Call arguments:
        x: tensor `(B, T, D)`.
        attention_mask: optional boolean `(B, T, T)` or `(T, T)` mask.
        attention_bias: optional float tensor broadcastable to `(B, H, T,
            T)`, added to the logits (see `MultiHeadAttention`).
        use_causal_mask: overrides the constructor's flag when not None.
        return_attention_scores: bool, also return the weights.
        training: bool, whether dropout is active.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_attention.layers import SelfAttention
    >>> layer = SelfAttention(num_heads=2, score="additive",
    ...                       use_causal_mask=True, window=2)
    >>> x = np.random.rand(3, 5, 8).astype("float32")
    >>> out, weights = layer(x, return_attention_scores=True)
    >>> tuple(out.shape), tuple(weights.shape)
    ((3, 5, 8), (3, 2, 5, 5))
    >>> bool((keras.ops.convert_to_numpy(weights)[0, 0, 4, :2] == 0).all())  # outside the window
    True
    """

    def __init__(
        self,
        num_heads=1,
        key_dim=None,
        score="scaled_dot",
        use_causal_mask=False,
        window=None,
        dropout=0.0,
        num_key_value_heads=None,
        **kwargs,
    ):
        key_dim = check_positive_int("key_dim", key_dim, allow_none=True)
        # MultiHeadAttention needs a key_dim; the real one may come from the
        # input size in build().
        super().__init__(
            num_heads=num_heads,
            key_dim=key_dim or 1,
            dropout=dropout,
            num_key_value_heads=num_key_value_heads,
            **kwargs,
        )
        self._key_dim_argument = key_dim
        self.score = check_choice("score", score, SCORES)
        self.use_causal_mask = check_bool("use_causal_mask", use_causal_mask)
        self.window = check_non_negative_int("window", window, allow_none=True)
        if self.scale is not None and self.score != "scaled_dot":
            raise ValueError(
                "`scale` applies to `score='scaled_dot'` only (the other "
                "scores have no 1 / sqrt(d) to replace). Received: "
                f"scale={self.scale!r}, score={self.score!r}"
            )
        if self.implementation == "fused" and self.score != "scaled_dot":
            raise ValueError(
                "`implementation='fused'` needs `score='scaled_dot'` (the "
                "fused kernels compute scaled dot products only). Received: "
                f"implementation='fused', score={self.score!r}"
            )

    def build(self, x_shape):
        if x_shape is None or len(x_shape) != 3:
            raise ValueError(
                "`x` must be a rank-3 tensor of shape (batch, seq_len, dim). "
                f"Received: x.shape={x_shape}"
            )
        if self._key_dim_argument is None:
            dim = x_shape[-1]
            if dim % self.num_heads:
                raise ValueError(
                    "`key_dim` defaults to dim // num_heads, which needs "
                    "`num_heads` to divide the input size; pass `key_dim`. "
                    f"Received: x.shape={tuple(x_shape)}, "
                    f"num_heads={self.num_heads}"
                )
            self.key_dim = dim // self.num_heads
        super().build(x_shape, x_shape)

    def build_attention(self, query_shape, value_shape, key_shape):
        super().build_attention(query_shape, value_shape, key_shape)
        if self.score == "general":
            self.score_kernel = self.add_weight(
                name="score_kernel",
                shape=(self.num_heads, self.key_dim, self.key_dim),
                initializer=clone_initializer(self.kernel_initializer),
            )
        elif self.score == "additive":
            self.score_vector = self.add_weight(
                name="score_vector",
                shape=(self.num_heads, self.key_dim),
                initializer=clone_initializer(self.kernel_initializer),
            )

    def _grouped(self, weight):
        # (H, ...) -> (K, G, ...), head h = k * G + g.
        return ops.reshape(
            weight, (self._kv_heads, self._group_size) + tuple(weight.shape[1:])
        )

    def _scores_are_scaled_dot_products(self):
        return self.score == "scaled_dot"  # long sequences then take the flash gradient

    def _head_logits(self, query_heads, key_heads):
        if self.score == "scaled_dot":
            return super()._head_logits(query_heads, key_heads)
        query_heads = ops.cast(query_heads, "float32")
        key_heads = ops.cast(key_heads, "float32")
        if self.score == "additive":
            # (B, T, 1, K, G, d) + (B, 1, S, K, 1, d) -> (B, T, S, K, G, d)
            hidden = ops.tanh(
                query_heads[:, :, None] + key_heads[:, None, :, :, None, :]
            )
            vector = ops.cast(self._grouped(self.score_vector), "float32")
            return ops.einsum("btskgd,kgd->bkgts", hidden, vector)
        if self.score == "general":
            kernel = ops.cast(self._grouped(self.score_kernel), "float32")
            query_heads = ops.einsum("btkgd,kgde->btkge", query_heads, kernel)
        return grouped_dot_products(query_heads, key_heads)

    def call(
        self,
        x,
        mask=None,
        *,
        x_mask=None,
        attention_mask=None,
        attention_bias=None,
        use_causal_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        use_causal_mask = check_call_bool("use_causal_mask", use_causal_mask,
                                          allow_none=True)
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        training = check_call_bool("training", training, allow_none=True)
        # Keras fills `mask` when `x` is the only tensor argument and `x_mask`
        # when `attention_mask` is a tensor too.
        padding = mask if mask is not None else x_mask
        x = ops.convert_to_tensor(x)
        if len(x.shape) != 3:
            raise ValueError(
                "`x` must be a rank-3 tensor of shape (batch, seq_len, dim). "
                f"Received: x.shape={tuple(x.shape)}"
            )
        seq_len = x.shape[1] if isinstance(x.shape[1], int) else None
        explicit = None
        if attention_mask is not None:
            explicit = masks.attention_mask(
                attention_mask,
                batch_size=x.shape[0],
                query_length=seq_len,
                key_length=seq_len,
            )
        if self.window is not None:
            length = ops.shape(x)[1]
            explicit = masks.merge_masks(explicit, self._window_mask(length, length))
        if use_causal_mask is None:
            use_causal_mask = self.use_causal_mask
        return super().call(
            x,
            x,
            query_mask=padding,
            value_mask=padding,
            attention_mask=explicit,
            attention_bias=attention_bias,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )

    def _window_mask(self, query_length, key_length, offset=None):
        """`|offset + i - j| <= window` as boolean `(1, T, S)`."""
        return masks.sliding_window_mask(query_length, key_length, self.window, offset=offset)

    def _local_window_mask(self, query_length, key_length, offset=None):
        # `window` (and Keras' `sliding_window`, if given) in `call_cached`
        # too: new query `i` sits at `offset + i` (`cache_update_index + i`).
        band = super()._local_window_mask(query_length, key_length, offset)
        if self.window is None:
            return band
        return masks.merge_masks(band, self._window_mask(query_length, key_length, offset))

    def compute_output_shape(self, x_shape):
        return super().compute_output_shape(x_shape, x_shape)

    def compute_output_spec(self, x, **kwargs):
        return traced_output_spec(self, x, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "key_dim": self._key_dim_argument,
                "score": self.score,
                "use_causal_mask": self.use_causal_mask,
                "window": self.window,
            }
        )
        return config
