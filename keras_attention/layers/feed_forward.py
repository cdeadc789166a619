"""`FeedForward` and the residual wrapper shared by the Transformer blocks."""

import keras

from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.projection_options import (
    projection_options,
    projection_options_config,
    set_projection_options,
)
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import check_call_bool, check_positive_int, check_rate


@keras.saving.register_keras_serializable(package="keras_attention")
class FeedForward(QuantizableSublayers, keras.layers.Layer):
    """Position-wise feed-forward network `W_2 act(W_1 x + b_1) + b_2`.

    Shapes: `(B, T, D) -> (B, T, D)` with a hidden size `intermediate_dim`.
    Keras masks pass through unchanged. Both projections are Keras `Dense`
    sublayers (`hidden`, `projection`): `quantize`, `enable_lora`
    (`QuantizableSublayers`) and dtype-policy maps reach them.

    Args:
        intermediate_dim: positive int, the hidden size.
        activation: the hidden activation (default `"relu"`).
        dropout: float in [0, 1), dropout on the hidden layer.
        kernel_regularizer, bias_regularizer: optional regularizers (a name,
            a config or an object) of both `Dense` kernels / biases.
        kernel_constraint, bias_constraint: optional constraints of both
            `Dense` kernels / biases.
        kernel_initializer, bias_initializer: initializers of both `Dense`
            kernels / biases (a name, a config or an object; default
            `"glorot_uniform"` and `"zeros"`, Keras' `Dense` defaults).
        **kwargs: `keras.layers.Layer` arguments.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import FeedForward
    >>> tuple(FeedForward(16)(np.ones((2, 3, 4), "float32")).shape)
    (2, 3, 4)
    """

    def __init__(
        self,
        intermediate_dim,
        activation="relu",
        dropout=0.0,
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        set_projection_options(
            self, kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
        )
        self.intermediate_dim = check_positive_int("intermediate_dim", intermediate_dim)
        self.activation = keras.activations.get(activation)
        self.dropout = check_rate("dropout", dropout)
        self.supports_masking = True
        policy = self.dtype_policy
        self.hidden = keras.layers.Dense(
            intermediate_dim, activation=activation, name="hidden",
            **self._dense_kwargs(),
        )
        self.hidden_dropout = keras.layers.Dropout(dropout, dtype=policy)
        self.projection = None

    def _dense_kwargs(self):
        """The arguments of one `Dense` sublayer: the shared options and its
        own copy of each initializer."""
        return {"dtype": self.dtype_policy,
                "kernel_initializer": clone_initializer(self.kernel_initializer),
                "bias_initializer": clone_initializer(self.bias_initializer),
                **projection_options(self)}

    def build(self, inputs_shape):
        self.hidden.build(inputs_shape)
        self.projection = keras.layers.Dense(
            inputs_shape[-1], name="projection", **self._dense_kwargs()
        )
        self.projection.build(tuple(inputs_shape[:-1]) + (self.intermediate_dim,))
        self.built = True

    def call(self, inputs, training=None):
        training = check_call_bool("training", training, allow_none=True)
        hidden = self.hidden_dropout(self.hidden(inputs), training=training)
        return self.projection(hidden)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                **projection_options_config(self),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config


def residual(x, sublayer, norm, dropout, norm_first, training):
    """One residual sub-block, pre- or post-norm.

    ```
    norm_first=True  (pre-norm):  x + dropout(sublayer(norm(x)))
    norm_first=False (post-norm): norm(x + dropout(sublayer(x)))
    ```

    `sublayer` maps a tensor to a tensor (or to a tuple whose first element
    is the tensor; the rest is returned alongside).
    """
    result = sublayer(norm(x) if norm_first else x)
    extra = ()
    if isinstance(result, tuple):
        result, extra = result[0], result[1:]
    y = x + dropout(result, training=training)
    if not norm_first:
        y = norm(y)
    return (y,) + extra if extra else y
