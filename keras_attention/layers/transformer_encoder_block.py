"""`TransformerEncoderBlock`: self-attention and feed-forward, pre- or post-norm."""

import keras

from keras_attention.layers.transformer_block import TransformerBlock


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerEncoderBlock(TransformerBlock):
    """A Transformer encoder block (Vaswani et al., 2017).

    ```
    pre-norm  (norm_first=True):  h = x + Drop(SelfAttn(LN(x)))
                                  y = h + Drop(FFN(LN(h)))
    post-norm (norm_first=False): h = LN(x + Drop(SelfAttn(x)))
                                  y = LN(h + Drop(FFN(h)))
    ```

    Self-attention is keras_attention's `MultiHeadAttention` with
    `key_dim = D / num_heads`, grouped-query through `num_key_value_heads`
    and optional rotary positions. A Keras mask on `x` (padding) masks the
    padded keys and is propagated to the output.

    Shapes: `x` `(B, T, D)` -> `(B, T, D)`; weights `(B, H, T, T)`.

    Args:
        num_heads: positive int, dividing `D`.
        intermediate_dim: positive int, the feed-forward hidden size.
        dropout: float in [0, 1), on attention weights, residual branches and
            the feed-forward hidden layer.
        norm_first: bool, pre-norm (default) or post-norm.
        num_key_value_heads: optional positive int dividing `num_heads`.
        activation: feed-forward activation (default `"relu"`).
        layer_norm_epsilon: float.
        rotary: bool, rotary position embeddings in self-attention.
        implementation: `"auto"` (default), `"exact"`, `"blocked"` or
            `"fused"`, passed to the attention sublayer (see
            `BaseAttention`); a call with `return_attention_scores=True`
            runs its exact path.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        x: `(B, T, D)`.
        attention_mask: optional boolean `(B, T, T)`.
        return_attention_scores: bool, also return the self-attention
            weights.
        training: bool.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import TransformerEncoderBlock
    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_dim=16)
    >>> y, w = block(np.ones((2, 5, 8), "float32"), return_attention_scores=True)
    >>> tuple(y.shape), tuple(w.shape)
    ((2, 5, 8), (2, 2, 5, 5))
    """

    def build(self, x_shape):
        self._check_x_shape(x_shape)
        self._build_self_attention(x_shape)
        self._feed_forward(x_shape)
        self.built = True

    def call(
        self,
        x,
        mask=None,
        *,
        x_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        padding = mask if mask is not None else x_mask
        h, scores = self._self_attention_residual(
            x,
            padding,
            training,
            return_attention_scores,
            attention_mask=attention_mask,
        )
        y = self._feed_forward_residual(h, training)
        return (y, scores) if return_attention_scores else y
