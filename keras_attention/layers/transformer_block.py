"""`TransformerBlock`: what the encoder and decoder blocks share."""

import numbers

import keras

from keras_attention.layers.attention_implementations import IMPLEMENTATIONS
from keras_attention.layers.feed_forward import (
    FeedForward,
    get_activation,
    residual,
    serialize_activation,
)
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.output_specs import traced_output_spec
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import (
    check_bool,
    check_choice,
    check_positive_int,
    check_rate,
)

NORMALIZATIONS = ("layer_norm", "rms_norm")


def make_norm(normalization, epsilon, dtype, name):
    """A normalization layer: `"layer_norm"` (Keras `LayerNormalization`,
    mean and variance, scale and bias) or `"rms_norm"` (Keras
    `RMSNormalization`: `x * rsqrt(mean(x^2) + epsilon) * scale`, no mean, no
    bias, computed in float32, as T5's `T5LayerNorm`)."""
    if normalization == "rms_norm":
        norm = keras.layers.RMSNormalization(epsilon=epsilon, dtype=dtype, name=name)
        # Position-wise, so Keras masks pass through (Keras' layer does not
        # say so, and would warn that it "will destroy the mask").
        norm.supports_masking = True
        return norm
    return keras.layers.LayerNormalization(epsilon=epsilon, dtype=dtype, name=name)


def check_scale(name, value):
    """`value` as a float if it is None or a positive finite number, else a
    ValueError naming `name`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
        0 < float(value) < float("inf")
    ):
        raise ValueError(
            f"Argument `{name}` must be None or a positive number. "
            f"Received: {name}={value!r}"
        )
    return float(value)


def head_size(dim, num_heads):
    """`dim // num_heads`, or a ValueError naming both."""
    if dim % num_heads:
        raise ValueError(
            "The model size must be divisible by `num_heads` (or pass `key_dim`). "
            f"Received: dim={dim}, num_heads={num_heads}"
        )
    return dim // num_heads


def attention_with_scores(attention, return_attention_scores, *args, **kwargs):
    """`(output, scores)` of an attention call; scores are None (and not
    computed) unless `return_attention_scores`."""
    if return_attention_scores:
        return attention(*args, return_attention_scores=True, **kwargs)
    return attention(*args, **kwargs), None


def pick_alias(name, value, alias, alias_value):
    """The value of an argument that has two spellings: `name` (ours, the
    documented one) and `alias` (keras-hub's). None means "not given";
    giving both raises a ValueError naming both."""
    if alias_value is None:
        return value
    if value is not None:
        raise ValueError(
            f"Pass `{name}` or its alias `{alias}`, not both. "
            f"Received: {name}={_describe(value)}, {alias}={_describe(alias_value)}"
        )
    return alias_value


def _describe(value):
    """A short text for an error message: a tensor's shape, else repr."""
    shape = getattr(value, "shape", None)
    return f"<tensor of shape {tuple(shape)}>" if shape is not None else repr(value)


KERAS_HUB_CACHE_ARGUMENTS = (
    "self_attention_cache",
    "self_attention_cache_update_index",
    "cross_attention_cache",
    "cross_attention_cache_update_index",
)


class TransformerBlock(QuantizableSublayers, keras.layers.Layer):
    """Base of `TransformerEncoderBlock` and `TransformerDecoderBlock`: the
    constructor arguments, sublayer factories, mask propagation and config.
    See the subclasses for the equations. Every projection is a Keras
    sublayer: `quantize(mode)` and `enable_lora(rank)` work on the block
    (`QuantizableSublayers`), and a quantized block round-trips through
    `.keras`."""

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        norm_first=None,
        num_key_value_heads=None,
        rotary=False,
        implementation="auto",
        normalization="layer_norm",
        use_bias=True,
        attention_scale=None,
        gated_feed_forward=False,
        key_dim=None,
        **kwargs,
    ):
        # keras-hub's spelling, an alias: not in the signature, not in the config.
        norm_first = pick_alias(
            "norm_first", norm_first, "normalize_first", kwargs.pop("normalize_first", None)
        )
        super().__init__(**kwargs)
        self.implementation = check_choice(
            "implementation", implementation, IMPLEMENTATIONS
        )
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.intermediate_dim = check_positive_int("intermediate_dim", intermediate_dim)
        self.dropout = check_rate("dropout", dropout)
        self.norm_first = check_bool("norm_first", True if norm_first is None else norm_first)
        self.num_key_value_heads = check_positive_int(
            "num_key_value_heads", num_key_value_heads, allow_none=True
        )
        if self.num_key_value_heads and self.num_heads % self.num_key_value_heads:
            raise ValueError(
                "Argument `num_key_value_heads` must divide `num_heads`. "
                f"Received: num_key_value_heads={num_key_value_heads}, "
                f"num_heads={num_heads}"
            )
        self.activation = get_activation(activation)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.normalization = check_choice("normalization", normalization, NORMALIZATIONS)
        self.use_bias = check_bool("use_bias", use_bias)
        self.attention_scale = check_scale("attention_scale", attention_scale)
        self.gated_feed_forward = check_bool("gated_feed_forward", gated_feed_forward)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.rotary = check_bool("rotary", rotary)
        self.key_dim = check_positive_int("key_dim", key_dim, allow_none=True)
        self.supports_masking = True

    # keras-hub's call keywords: {keras-hub name: ours}, resolved before
    # Keras fills masks in, so that an explicit keras-hub padding mask wins
    # over the Keras mask of the input (as in keras-hub).
    call_aliases = {}
    # keras-hub call keywords with no counterpart here (refused unless None).
    unsupported_call_arguments = ()

    def __call__(self, *args, **kwargs):
        self._reject_unsupported_call_arguments(kwargs)
        for alias, name in self.call_aliases.items():
            if alias in kwargs:
                kwargs[name] = pick_alias(name, kwargs.get(name), alias, kwargs.pop(alias))
        return super().__call__(*args, **kwargs)

    def _reject_unsupported_call_arguments(self, kwargs):
        given = {name: kwargs.pop(name) for name in self.unsupported_call_arguments
                 if kwargs.get(name) is not None}
        for name in self.unsupported_call_arguments:
            kwargs.pop(name, None)
        if given:
            received = ", ".join(f"{name}={_describe(value)}" for name, value in given.items())
            raise ValueError(
                f"`{type(self).__name__}` takes no caches in `call`: keras-hub's "
                "cache arguments (`self_attention_cache` / `cross_attention_cache`, "
                "one `(B, 2, L, H, D)` tensor each, and their update indices) are "
                "taken by `keras_attention.compat.keras_hub.TransformerDecoder`, "
                "keras-hub's signature on this block. Here, cached decoding uses "
                "`init_cache(batch_size, max_length)`, `compute_cache(memory)` "
                "and `call_cached(x, cache, cache_update_index, "
                "memory_cache=...)`, or `Seq2SeqModel.generate`. "
                f"Received: {received}"
            )

    def _norm(self, name):
        return make_norm(
            self.normalization, self.layer_norm_epsilon, self.dtype_policy, name
        )

    def _head_size(self, dim):
        """The size of each attention head: `key_dim`, or `dim // num_heads`
        (`dim` the query's last axis) when it is None."""
        if self.key_dim is not None:
            return self.key_dim
        return head_size(dim, self.num_heads)

    def _attention(self, name, dim, rotary):
        # `scale` is passed only when set, so that the default builds the
        # attention exactly as before.
        scale = {} if self.attention_scale is None else {"scale": self.attention_scale}
        return MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=self._head_size(dim),
            num_key_value_heads=self.num_key_value_heads,
            dropout=self.dropout,
            rotary=rotary,
            implementation=self.implementation,
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name=name,
            **scale,
        )

    def _feed_forward(self, x_shape):
        self.feed_forward = FeedForward(
            self.intermediate_dim,
            activation=self.activation,
            dropout=self.dropout,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            gated=self.gated_feed_forward,
            use_bias=self.use_bias,
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

    def compute_output_spec(self, *args, **kwargs):
        # Traced: the outputs depend on `return_attention_scores`.
        return traced_output_spec(self, *args, **kwargs)

    def compute_mask(self, x, previous_mask=None):
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "activation": serialize_activation(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "norm_first": self.norm_first,
                "num_key_value_heads": self.num_key_value_heads,
                "rotary": self.rotary,
                "implementation": self.implementation,
                "normalization": self.normalization,
                "use_bias": self.use_bias,
                "attention_scale": self.attention_scale,
                "gated_feed_forward": self.gated_feed_forward,
                "key_dim": self.key_dim,
            }
        )
        return config
