"""`FeedForward` and the residual wrapper shared by the Transformer blocks."""

import keras

from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.projection_options import (
    projection_options,
    projection_options_config,
    set_projection_options,
)
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import check_bool, check_call_bool, check_positive_int, check_rate


@keras.saving.register_keras_serializable(package="keras_attention")
def gelu_approximate(x):
    """GELU in its tanh form, `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`
    (Hendrycks and Gimpel 2016; T5 v1.1's and GPT-2's "gelu_new")."""
    return keras.activations.gelu(x, approximate=True)


def get_activation(identifier):
    """The activation function named or given by `identifier`: any Keras
    activation (`"relu"`, `"gelu"` (exact, with erf), `"swish"`, `"silu"`,
    ...), `"gelu_approximate"` (`gelu_approximate`), or a callable. Raises a
    ValueError naming `activation` for anything else."""
    if identifier == "gelu_approximate":
        return gelu_approximate
    try:
        activation = keras.activations.get(identifier)
    except (ValueError, TypeError) as error:
        raise ValueError(
            "Argument `activation` must be a Keras activation name, "
            "'gelu_approximate' or a callable. "
            f"Received: activation={identifier!r}"
        ) from error
    if not callable(activation):
        raise ValueError(
            "Argument `activation` must be a Keras activation name, "
            f"'gelu_approximate' or a callable. Received: activation={identifier!r}"
        )
    return activation


def serialize_activation(activation):
    """The config form of an activation from `get_activation`: its name
    (`"gelu_approximate"` for `gelu_approximate`)."""
    if activation is gelu_approximate:
        return "gelu_approximate"
    return keras.activations.serialize(activation)


@keras.saving.register_keras_serializable(package="keras_attention")
class FeedForward(QuantizableSublayers, keras.layers.Layer):
    """Position-wise feed-forward network, plain or gated (GLU variants).

    ```
    gated=False: y = W_2 act(W_1 x + b_1) + b_2
    gated=True:  y = W_2 (act(W_1 x + b_1) * (V x + c)) + b_2
    ```

    The gated form is Shazeer's (2020) GLU family: GEGLU with
    `activation="gelu"` (or `"gelu_approximate"`, T5 v1.1's `wi_0` / `wi_1`),
    SwiGLU with `"swish"` / `"silu"`, ReGLU with `"relu"`.

    Shapes: `(B, T, D) -> (B, T, D)` with a hidden size `intermediate_dim`.
    Keras masks pass through unchanged. The projections are Keras `Dense`
    sublayers (`hidden` (`W_1`, activated), `hidden_linear` (`V`, gated
    only), `projection` (`W_2`)): `quantize`, `enable_lora`
    (`QuantizableSublayers`) and dtype-policy maps reach them.

    Args:
        intermediate_dim: positive int, the hidden size.
        activation: the hidden activation (default `"relu"`): a Keras
            activation name (`"relu"`, `"gelu"` (exact, with erf),
            `"swish"` / `"silu"`, ...), `"gelu_approximate"` (the tanh form,
            T5 v1.1's "gelu_new") or a callable.
        dropout: float in [0, 1), dropout on the hidden layer.
        gated: bool (default False), the gated form above: a second input
            projection `hidden_linear` multiplies the activated one.
        use_bias: bool (default True), biases in every projection (T5 has
            none).
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
    >>> swiglu = FeedForward(16, activation="silu", gated=True, use_bias=False)
    >>> tuple(swiglu(np.ones((2, 3, 4), "float32")).shape)
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
        gated=False,
        use_bias=True,
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
        self.activation = get_activation(activation)
        self.dropout = check_rate("dropout", dropout)
        self.gated = check_bool("gated", gated)
        self.use_bias = check_bool("use_bias", use_bias)
        self.supports_masking = True
        policy = self.dtype_policy
        self.hidden = keras.layers.Dense(
            intermediate_dim, activation=self.activation, name="hidden",
            **self._dense_kwargs(),
        )
        self.hidden_linear = None
        if self.gated:
            self.hidden_linear = keras.layers.Dense(
                intermediate_dim, name="hidden_linear", **self._dense_kwargs()
            )
        self.hidden_dropout = keras.layers.Dropout(dropout, dtype=policy)
        self.projection = None

    def _dense_kwargs(self):
        """The arguments of one `Dense` sublayer: the shared options and its
        own copy of each initializer."""
        return {"dtype": self.dtype_policy,
                "kernel_initializer": clone_initializer(self.kernel_initializer),
                "bias_initializer": clone_initializer(self.bias_initializer),
                "use_bias": self.use_bias,
                **projection_options(self)}

    def build(self, inputs_shape):
        self.hidden.build(inputs_shape)
        if self.hidden_linear is not None:
            self.hidden_linear.build(inputs_shape)
        self.projection = keras.layers.Dense(
            inputs_shape[-1], name="projection", **self._dense_kwargs()
        )
        self.projection.build(tuple(inputs_shape[:-1]) + (self.intermediate_dim,))
        self.built = True

    def call(self, inputs, training=None):
        training = check_call_bool("training", training, allow_none=True)
        hidden = self.hidden(inputs)
        if self.hidden_linear is not None:
            hidden = hidden * self.hidden_linear(inputs)
        hidden = self.hidden_dropout(hidden, training=training)
        return self.projection(hidden)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "activation": serialize_activation(self.activation),
                "dropout": self.dropout,
                **projection_options_config(self),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "gated": self.gated,
                "use_bias": self.use_bias,
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
