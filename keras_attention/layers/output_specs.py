"""Output specs of a layer's call under every dtype policy.

Keras' `Layer.__call__` casts floating inputs to the layer's compute dtype
before calling `call`; `Layer.compute_output_spec`, called directly (as
keras-hub's and Keras' precision tests do), does not. A layer whose output
shape depends on call arguments (`return_attention_scores`, ...) traces its
`call`; tracing it on the inputs `__call__` would pass gives the output
dtypes of a real call: the compute dtype under `mixed_float16`.
"""

import keras


def traced_output_spec(layer, *args, **kwargs):
    """The output spec of `layer.call(*args, **kwargs)`, traced on the
    inputs `layer.__call__` would pass it (floating inputs autocast to
    `layer.input_dtype`, as the layer's dtype policy casts them).

    Args:
        layer: a built `keras.layers.Layer` (`__call__` builds a layer
            before asking for its output spec).
        *args, **kwargs: the call's arguments; tensors may be
            `keras.KerasTensor`s.

    Returns:
        The `keras.KerasTensor` (or nested structure) that `call` returns.

    Example:

    >>> import keras
    >>> from keras_attention.layers import FeedForward
    >>> from keras_attention.layers.output_specs import traced_output_spec
    >>> layer = FeedForward(8, dtype="mixed_float16")
    >>> layer.build((2, 3, 4))
    >>> spec = traced_output_spec(layer, keras.KerasTensor((2, 3, 4)))
    >>> spec.shape, spec.dtype
    ((2, 3, 4), 'float16')
    """

    def convert(x):
        if isinstance(x, keras.KerasTensor) or keras.ops.is_tensor(x):
            return layer.dtype_policy.convert_input(x, layer.autocast, layer.input_dtype)
        return x

    args, kwargs = keras.tree.map_structure(convert, (args, kwargs))
    # `keras.Operation.compute_output_spec` traces `layer.call`; `Layer`'s
    # own version would use `compute_output_shape` and lose the extra outputs.
    return keras.Operation.compute_output_spec(layer, *args, **kwargs)
