"""`MultiHeadAttention` with the signature and defaults of `keras.layers`.

Changing `keras.layers.MultiHeadAttention` to
`keras_attention.compat.keras.MultiHeadAttention` keeps a model's arguments,
weights (the same sublayers, names and layouts) and outputs; the computation
is keras_attention's (float32 softmax, the fully-masked-row rule, fused and
blocked kernels, grouped-query heads through `num_key_value_heads=`).
"""

import keras
import numpy as np
from keras import ops

from keras_attention import masks
from keras_attention.layers.multi_head_attention import (
    MultiHeadAttention as AttentionLayer,
)
from keras_attention.validation import concrete_values

FLASH_IMPLEMENTATIONS = {None: "auto", True: "fused", False: "exact"}

__all__ = ["MultiHeadAttention"]


def check_keras_arguments(num_heads, key_dim, value_dim, output_shape):
    """Keras' own checks, with Keras' messages, before ours."""
    for name, value in (("num_heads", num_heads), ("key_dim", key_dim),
                        ("value_dim", value_dim)):
        if name == "value_dim" and value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(
                f"Received an invalid value for argument `{name}`, expected a "
                f"positive integer. Received: {name}={value}"
            )
    if output_shape is not None and not isinstance(output_shape, int):
        try:
            tuple(output_shape)
        except TypeError:
            raise ValueError(
                f"Invalid `output_shape`: {output_shape}. When specified, the "
                "`output_shape` should be of type tuple, list, or int. "
                f"Received: output_shape={output_shape}"
            ) from None


def check_key_and_value_shapes(value_shape, key_shape):
    """Keras' check, with its message: `key` and `value` share every
    dimension but the last."""
    key_shape = value_shape if key_shape is None else key_shape
    if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
        raise ValueError(
            "All dimensions of `value` and `key`, except the last one, must be "
            f"equal. Received: value_shape={value_shape} and "
            f"key_shape={key_shape}"
        )


def as_boolean_mask(mask, name="attention_mask"):
    """A Keras mask as a boolean tensor (None stays None): boolean, integer
    0 / 1, or float 0 / 1 as Keras reads it (`mask > 0.5`). A float mask
    whose values are known must hold only 0 and 1: an additive mask (0 /
    -1e9) would be misread, so it raises a ValueError naming `name`."""
    if mask is None:
        return None
    values = concrete_values(mask)
    mask = ops.convert_to_tensor(mask)
    dtype = keras.backend.standardize_dtype(mask.dtype)
    if dtype == "bool":
        return mask
    if "float" in dtype and values is not None and not np.isin(values, (0, 1)).all():
        raise ValueError(
            f"`{name}`: a float mask must hold 0 (masked) and 1 (may attend), "
            "as Keras reads it; an additive mask (0 / -1e9) would be misread: "
            f"pass `{name}=mask == 0` for one. Received: {name} with values "
            f"{np.unique(values)[:4].tolist()}"
        )
    return ops.greater(mask, 0.5) if "float" in dtype else ops.not_equal(mask, 0)


@keras.saving.register_keras_serializable(package="keras_attention.compat.keras")
class MultiHeadAttention(AttentionLayer):
    """`keras.layers.MultiHeadAttention`'s arguments, in its order, on
    keras_attention's `MultiHeadAttention`.

    Shapes: `query` `(B, T, Dq)`, `value` `(B, S, Dv)`, `key` `(B, S, Dk)` ->
    `(B, T) + output_shape` (default `(Dq,)`); scores `(B, H, T, S)`.

    Masks may be boolean, or 0 / 1 numbers as in Keras (a float mask with
    other values, such as an additive 0 / -1e9 one, raises a ValueError).
    Differences kept on purpose: attention over the sequence axis only
    (`attention_axes` None or 1), and a query row whose keys are all masked
    outputs the output bias (Keras' layer averages all the values there).
    `flash_attention=True` picks keras_attention's fused kernel
    (`implementation="fused"`), `False` the exact path; the layer's own
    arguments (`num_key_value_heads`, `rotary`, `implementation`, ...) are
    accepted as keywords.

    Args: those of `keras.layers.MultiHeadAttention` (`num_heads, key_dim,
        value_dim, dropout, use_bias, output_shape, attention_axes,
        sliding_window, flash_attention, kernel_initializer, bias_initializer,
        kernel_regularizer, bias_regularizer, activity_regularizer,
        kernel_constraint, bias_constraint, use_gate, seed`), then
        `keras_attention.layers.MultiHeadAttention` keywords.

    Call arguments: as `keras.layers.MultiHeadAttention`: `query, value,
        key=None, query_mask=None, value_mask=None, key_mask=None,
        attention_mask=None, return_attention_scores=False, training=None,
        use_causal_mask=False`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras import MultiHeadAttention
    >>> layer = MultiHeadAttention(2, 4, None, 0.1)  # keras' positional order
    >>> x = np.ones((2, 3, 8), "float32")
    >>> out, scores = layer(x, x, attention_mask=np.tril(np.ones((3, 3))),
    ...                     return_attention_scores=True)
    >>> layer.dropout, tuple(out.shape), tuple(scores.shape)
    (0.1, (2, 3, 8), (2, 2, 3, 3))
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        attention_axes=None,
        sliding_window=None,
        flash_attention=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        use_gate=False,
        seed=None,
        **kwargs,
    ):
        check_keras_arguments(num_heads, key_dim, value_dim, output_shape)
        if flash_attention not in FLASH_IMPLEMENTATIONS:
            raise ValueError(
                "`flash_attention` must be None, True or False. "
                f"Received: flash_attention={flash_attention!r}"
            )
        if flash_attention and dropout > 0:
            raise ValueError(
                "Dropout is not supported when flash attention is enabled. "
                f"Received: dropout={dropout}, flash_attention=True"
            )
        if flash_attention is not None:
            implementation = FLASH_IMPLEMENTATIONS[flash_attention]
            given = kwargs.pop("implementation", implementation)
            if given not in ("auto", implementation):
                raise ValueError(
                    f"`flash_attention={flash_attention}` means "
                    f"implementation={implementation!r}; pass one of the two. "
                    f"Received: flash_attention={flash_attention}, "
                    f"implementation={given!r}"
                )
            kwargs["implementation"] = implementation
        super().__init__(
            num_heads=num_heads,
            key_dim=key_dim,
            value_dim=value_dim,
            dropout=dropout,
            use_bias=use_bias,
            output_shape=output_shape,
            attention_axes=attention_axes,
            sliding_window=sliding_window,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            use_gate=use_gate,
            seed=seed,
            **kwargs,
        )
        self.flash_attention = flash_attention

    # Keras' names of the projection sublayers and options, read by code
    # written for `keras.layers.MultiHeadAttention`.
    _query_dense = property(lambda self: self.query_dense)
    _key_dense = property(lambda self: self.key_dense)
    _value_dense = property(lambda self: self.value_dense)
    _output_dense = property(lambda self: self.output_dense)
    _gate_dense = property(lambda self: self.gate_dense)
    _sliding_window = property(lambda self: self.sliding_window)
    _flash_attention = property(lambda self: self.flash_attention)

    def build(self, query_shape, value_shape, key_shape=None):
        check_key_and_value_shapes(value_shape, key_shape)
        super().build(query_shape, value_shape, key_shape)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
    ):
        use_causal_mask = _keras_flag(use_causal_mask)
        if self.flash_attention and return_attention_scores:
            raise ValueError(
                "Returning attention scores is not supported when flash "
                "attention is enabled. Please disable flash attention to access"
                " attention scores. Received: return_attention_scores=True"
            )
        attention_mask = as_boolean_mask(attention_mask)
        if attention_mask is not None and len(attention_mask.shape) == 4:
            if attention_mask.shape[1] != 1:
                raise ValueError(
                    "`attention_mask` is shared by every head: give it as "
                    "(batch, target_len, source_len), or (batch, 1, target_len, "
                    "source_len). Received: "
                    f"attention_mask.shape={tuple(attention_mask.shape)}"
                )
            attention_mask = attention_mask[:, 0]
        query_length, key_length = query.shape[1], (value if key is None else key).shape[1]
        if use_causal_mask and query_length != key_length:
            # Keras' causal mask between different lengths: top-left
            # aligned, query i sees keys j <= i.
            attention_mask = masks.merge_masks(
                attention_mask, masks.causal_mask(query_length, key_length, offset=0)
            )
            use_causal_mask = False
        return super().call(
            query,
            value,
            key,
            query_mask=as_boolean_mask(query_mask, "query_mask"),
            value_mask=as_boolean_mask(value_mask, "value_mask"),
            key_mask=as_boolean_mask(key_mask, "key_mask"),
            attention_mask=attention_mask,
            return_attention_scores=return_attention_scores,
            training=training,
            use_causal_mask=use_causal_mask,
        )

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        check_key_and_value_shapes(value_shape, key_shape)
        return super().compute_output_shape(query_shape, value_shape, key_shape)

    def get_config(self):
        config = super().get_config()
        config["flash_attention"] = self.flash_attention
        if self.flash_attention is not None:
            del config["implementation"]  # implied by `flash_attention`
        return config


def _keras_flag(value):
    """Keras' `MultiHeadAttention` reads `use_causal_mask` by truth value, and
    its own tests pass `0`: the integers 0 and 1 are taken as False and True
    here. Anything else (a string such as "no") goes on to our check, which
    refuses it naming the argument."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    return value
