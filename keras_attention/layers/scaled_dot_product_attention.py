"""`ScaledDotProductAttention`: parameter-free `softmax(q k^T / sqrt(d)) v`."""

import math

import keras
from keras import ops

from keras_attention.layers import attention_core
from keras_attention.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class ScaledDotProductAttention(BaseAttention):
    """Scaled dot-product attention (Vaswani et al., 2017), no parameters.

    Equations, for query `q_t`, keys `k_s` and values `v_s` of size `d`:

    ```
    e_ts  = (q_t / sqrt(d)) . k_s              (float32; q scaled first)
    a_ts  = softmax_s(e_ts) over unmasked s      (exact 0 where masked)
    out_t = sum_s a_ts v_s
    ```

    Shapes: `query` `(B, T, d)`, `key` `(B, S, d)` (defaults to `value`),
    `value` `(B, S, Dv)`; output `(B, T, Dv)`, weights `(B, T, S)` (float32).

    Unlike `keras.layers.Attention(use_scale=False)`, the scale is the fixed
    `1/sqrt(d)` of the paper and is applied to the queries before the
    matmul, so float16 logits cannot overflow; the softmax always runs in
    float32.

    Args:
        dropout: float in [0, 1), dropout on the attention weights.
        seed: optional int seed for dropout.
        query_block_size, implementation: see `BaseAttention` (`"fused"`
            runs `keras.ops.dot_product_attention`).
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        query, value, key, attention_mask, use_causal_mask,
        return_attention_scores, training: see `BaseAttention`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import ScaledDotProductAttention
    >>> layer = ScaledDotProductAttention()
    >>> q = np.ones((2, 3, 4), "float32")
    >>> v = np.ones((2, 5, 4), "float32")
    >>> out, weights = layer(q, v, return_attention_scores=True)
    >>> tuple(out.shape), tuple(weights.shape)
    ((2, 3, 4), (2, 3, 5))

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def check_feature_sizes(self, query_shape, value_shape, key_shape):
        if (
            query_shape[-1] is not None
            and key_shape[-1] is not None
            and query_shape[-1] != key_shape[-1]
        ):
            raise ValueError(
                "`query` and `key` must have the same last dimension for "
                "dot-product scores (there is no projection to absorb the "
                f"difference). Received: query.shape={tuple(query_shape)}, "
                f"key.shape={tuple(key_shape)}"
            )

    def _scores_are_scaled_dot_products(self):
        return True

    def _fused_heads(self, query, value, key):
        # One head: (B, L, D) -> (B, L, 1, D), the queries scaled.
        scale = ops.cast(1.0 / math.sqrt(query.shape[-1]), query.dtype)
        return query[:, :, None] * scale, key[:, :, None], value[:, :, None]

    def _fused_output(self, context):
        return context[:, :, 0]

    # Blocked path: the flash gradient of `attention_core.flash_attention`,
    # one head (K = G = 1).
    def _flash_operands(self, key, value):
        return key[:, None], value[:, None]  # (B, 1, S, d), (B, 1, S, dv)

    def _flash_query(self, query):
        scale = 1.0 / math.sqrt(query.shape[-1])
        return (ops.cast(query, "float32") * scale)[:, None, None]  # (B, 1, 1, t, d)

    def _flash_context(self, output):
        return output[:, 0, 0]  # (B, t, dv)

    def _compute_logits(self, query, key):
        scale = 1.0 / math.sqrt(query.shape[-1])
        return attention_core.dot_product_logits(query, key, scale)

    def _compute_output(self, weights, value):
        return attention_core.weighted_sum(weights, value)
