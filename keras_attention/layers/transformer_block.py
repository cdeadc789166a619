"""`TransformerBlock`: what the encoder and decoder blocks share."""

import keras

from keras_attention.layers.attention_implementations import IMPLEMENTATIONS
from keras_attention.layers.feed_forward import FeedForward, residual
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import (
    check_bool,
    check_choice,
    check_positive_int,
    check_rate,
)


def head_size(dim, num_heads):
    """`dim // num_heads`, or a ValueError naming both."""
    if dim % num_heads:
        raise ValueError(
            "The model size must be divisible by `num_heads`. "
            f"Received: dim={dim}, num_heads={num_heads}"
        )
    return dim // num_heads


def attention_with_scores(attention, return_attention_scores, *args, **kwargs):
    """`(output, scores)` of an attention call; scores are None (and not
    computed) unless `return_attention_scores`."""
    if return_attention_scores:
        return attention(*args, return_attention_scores=True, **kwargs)
    return attention(*args, **kwargs), None


class TransformerBlock(QuantizableSublayers, keras.layers.Layer):
    """Base of `TransformerEncoderBlock` and `TransformerDecoderBlock`: the
    constructor arguments, sublayer factories, mask propagation and config.
    See the subclasses for the equations. Every projection is a Keras
    sublayer: `quantize(mode)` and `enable_lora(rank)` work on the block
    (`QuantizableSublayers`), and a quantized block round-trips through
    `.keras`."""

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.0,
        norm_first=True,
        num_key_value_heads=None,
        activation="relu",
        layer_norm_epsilon=1e-5,
        rotary=False,
        implementation="auto",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.implementation = check_choice(
            "implementation", implementation, IMPLEMENTATIONS
        )
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.intermediate_dim = check_positive_int("intermediate_dim", intermediate_dim)
        self.dropout = check_rate("dropout", dropout)
        self.norm_first = check_bool("norm_first", norm_first)
        self.num_key_value_heads = check_positive_int(
            "num_key_value_heads", num_key_value_heads, allow_none=True
        )
        if self.num_key_value_heads and self.num_heads % self.num_key_value_heads:
            raise ValueError(
                "Argument `num_key_value_heads` must divide `num_heads`. "
                f"Received: num_key_value_heads={num_key_value_heads}, "
                f"num_heads={num_heads}"
            )
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.rotary = check_bool("rotary", rotary)
        self.supports_masking = True

    def _norm(self, name):
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )

    def _attention(self, name, dim, rotary):
        return MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=head_size(dim, self.num_heads),
            num_key_value_heads=self.num_key_value_heads,
            dropout=self.dropout,
            rotary=rotary,
            implementation=self.implementation,
            dtype=self.dtype_policy,
            name=name,
        )

    def _feed_forward(self, x_shape):
        self.feed_forward = FeedForward(
            self.intermediate_dim,
            activation=self.activation,
            dropout=self.dropout,
            dtype=self.dtype_policy,
            name="feed_forward",
        )
        self.feed_forward.build(x_shape)
        self.feed_forward_norm = self._norm("feed_forward_norm")
        self.feed_forward_norm.build(x_shape)
        self.residual_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)

    def _build_self_attention(self, x_shape):
        self.self_attention = self._attention("self_attention", x_shape[-1], self.rotary)
        self.self_attention.build(x_shape, x_shape)
        self.self_attention_norm = self._norm("self_attention_norm")
        self.self_attention_norm.build(x_shape)

    def _self_attention_residual(
        self, x, padding, training, return_attention_scores, **attention_kwargs
    ):
        """The self-attention sub-block; returns `(h, scores)` (scores None
        unless `return_attention_scores`: a call that asks for no weights
        lets the attention take its fused or blocked path)."""

        def attend(h):
            return attention_with_scores(
                self.self_attention,
                return_attention_scores,
                h,
                h,
                query_mask=padding,
                value_mask=padding,
                training=training,
                **attention_kwargs,
            )

        return residual(
            x, attend, self.self_attention_norm, self.residual_dropout,
            self.norm_first, training,
        )

    def _feed_forward_residual(self, h, training):
        return residual(
            h,
            lambda z: self.feed_forward(z, training=training),
            self.feed_forward_norm,
            self.residual_dropout,
            self.norm_first,
            training,
        )

    @staticmethod
    def _check_x_shape(x_shape):
        if x_shape is None or len(x_shape) != 3:
            raise ValueError(
                "`x` must have shape (batch, seq_len, dim). "
                f"Received: x.shape={x_shape}"
            )

    def compute_mask(self, x, previous_mask=None):
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "norm_first": self.norm_first,
                "num_key_value_heads": self.num_key_value_heads,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "rotary": self.rotary,
                "implementation": self.implementation,
            }
        )
        return config
