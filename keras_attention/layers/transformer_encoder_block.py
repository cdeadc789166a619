"""`TransformerEncoderBlock`: self-attention and feed-forward, pre- or post-norm."""

import keras

from keras_attention.layers.transformer_block import TransformerBlock
from keras_attention.validation import check_call_bool, check_same_length


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerEncoderBlock(TransformerBlock):
    """A Transformer encoder block (Vaswani et al., 2017).

    ```
    pre-norm  (norm_first=True):  h = x + Drop(SelfAttn(LN(x)))
                                  y = h + Drop(FFN(LN(h)))
    post-norm (norm_first=False): h = LN(x + Drop(SelfAttn(x)))
                                  y = LN(h + Drop(FFN(h)))
    ```

    `LN` is a layer norm or an RMS norm (`normalization`); the options
    `activation`, `gated_feed_forward`, `use_bias`, `attention_scale` and
    `normalization` express the published variants with the same block
    (BART / mBART: `"gelu"`, post- / pre-norm; Marian: `"swish"`,
    post-norm; T5: `"rms_norm"`, no biases, `attention_scale=1.0`, pre-norm,
    gated `"gelu_approximate"` for v1.1).

    Self-attention is keras_attention's `MultiHeadAttention` with heads of
    `key_dim` (default `D / num_heads`; given, the heads' inner size
    `num_heads * key_dim` may differ from `D`, and the output projection
    maps it back to `D`), grouped-query through `num_key_value_heads` and
    optional rotary positions. A Keras mask on `x` (padding) masks the
    padded keys and is propagated to the output.

    Shapes: `x` `(B, T, D)` -> `(B, T, D)`; weights `(B, H, T, T)`.

    The constructor takes keras-hub's `TransformerEncoder` arguments in
    keras-hub's order (`intermediate_dim, num_heads, dropout, activation,
    layer_norm_epsilon, kernel_initializer, bias_initializer, norm_first`),
    with `normalize_first` accepted as an alias of `norm_first`, and the call
    takes its `padding_mask`: a keras-hub model swaps its blocks for these by
    changing the import. With the same weights the outputs are keras-hub's
    on real positions; what differs: the default is pre-norm (pass
    `norm_first=False` for keras-hub's post-norm), padded query rows attend
    to nothing, and dropout also drops the feed-forward hidden layer (see
    the migration guide).

    Args:
        intermediate_dim: positive int, the feed-forward hidden size.
        num_heads: positive int, dividing `D` unless `key_dim` is given.
        dropout: float in [0, 1), on attention weights, residual branches and
            the feed-forward hidden layer.
        activation: feed-forward activation (default `"relu"`).
        layer_norm_epsilon: float (default `1e-5`).
        kernel_initializer: the initializer of every projection kernel
            (attention and feed-forward; default `"glorot_uniform"`), a name,
            config or object; each sublayer gets its own copy, as in keras-hub.
        bias_initializer: the same for the biases (default `"zeros"`).
        norm_first: bool, pre-norm or post-norm; None (default) means True,
            pre-norm. `normalize_first` (keras-hub's name) is an accepted
            alias; passing both raises a ValueError.
        num_key_value_heads: optional positive int dividing `num_heads`.
        rotary: bool, rotary position embeddings in self-attention.
        implementation: `"auto"` (default), `"exact"`, `"blocked"` or
            `"fused"`, passed to the attention sublayer (see
            `BaseAttention`); a call with `return_attention_scores=True`
            runs its exact path.
        normalization: `"layer_norm"` (default, Keras `LayerNormalization`)
            or `"rms_norm"` (Keras `RMSNormalization`: `x * rsqrt(mean(x^2)
            + eps) * w`, no mean, no bias, computed in float32: T5's
            `T5LayerNorm`); `layer_norm_epsilon` is its epsilon.
        use_bias: bool (default True), biases in every attention and
            feed-forward projection (T5 has none).
        attention_scale: None (default: `1 / sqrt(head_size)`) or a positive
            float, the factor of the attention logits (T5: `1.0`), passed
            to `MultiHeadAttention(scale=...)`.
        gated_feed_forward: bool (default False), a gated feed-forward
            `W_2 (act(W_1 x) * (V x))` (GEGLU, SwiGLU; see `FeedForward`).
        key_dim: None (default: `D // num_heads`) or a positive int, the
            size of each attention head (query, key and value), apart from
            `D`: T5's `d_kv` (flan-T5-small: 6 heads of 64 on `D = 512`).
            The caches hold heads of `key_dim`.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        x: `(B, T, D)`.
        x_mask: optional boolean `(B, T)`, True on real tokens (filled from
            the Keras mask of `x`; given, it wins over that mask).
            `padding_mask` (keras-hub's name) is an accepted alias.
        attention_mask: optional boolean `(B, T, T)`, True = may attend.
        self_attention_bias: optional float tensor broadcastable to `(B, H,
            T, T)` added to the self-attention logits (T5's
            `RelativePositionBias`, computed once and passed to every
            block); not a mask.
        return_attention_scores: bool, also return the self-attention
            weights.
        training: bool.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import TransformerEncoderBlock
    >>> block = TransformerEncoderBlock(intermediate_dim=16, num_heads=2)
    >>> y, w = block(np.ones((2, 5, 8), "float32"), return_attention_scores=True)
    >>> tuple(y.shape), tuple(w.shape)
    ((2, 5, 8), (2, 2, 5, 5))
    >>> t5_style = TransformerEncoderBlock(
    ...     16, 2, activation="gelu_approximate", gated_feed_forward=True,
    ...     normalization="rms_norm", use_bias=False, layer_norm_epsilon=1e-6)
    >>> tuple(t5_style(np.ones((2, 5, 8), "float32")).shape)
    (2, 5, 8)
    >>> wide = TransformerEncoderBlock(16, 3, key_dim=4)  # inner size 12 on D = 8
    >>> y = wide(np.ones((2, 5, 8), "float32"))
    >>> tuple(y.shape), tuple(wide.self_attention.output_dense.kernel.shape)
    ((2, 5, 8), (3, 4, 8))
    """

    call_aliases = {"padding_mask": "x_mask"}

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
        self_attention_bias=None,
        return_attention_scores=False,
        training=None,
    ):
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        training = check_call_bool("training", training, allow_none=True)
        if hasattr(x_mask, "shape"):
            x_mask = check_same_length("x_mask", x_mask, "x", x)
        padding = x_mask if x_mask is not None else mask
        h, scores = self._self_attention_residual(
            x,
            padding,
            training,
            return_attention_scores,
            attention_mask=attention_mask,
            attention_bias=self_attention_bias,
        )
        y = self._feed_forward_residual(h, training)
        return (y, scores) if return_attention_scores else y

    def compute_output_shape(self, x_shape):
        return tuple(x_shape)
