"""The regularizers and constraints a layer hands on to its projection sublayers.

`FeedForward` and `MultiHeadAttention` take Keras' `kernel_regularizer`,
`bias_regularizer`, `kernel_constraint` and `bias_constraint` and pass them
to every `Dense` / `EinsumDense` they hold; these functions keep them as
attributes of the layer, give them to the sublayers and write their config.
"""

import keras

PROJECTION_OPTIONS = (
    "kernel_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "bias_constraint",
)


def _keras_module(name):
    return keras.regularizers if name.endswith("_regularizer") else keras.constraints


def set_projection_options(layer, **options):
    """Sets `layer.<name>` to the Keras object of each option (a name, a
    config, an object or None), for `name` in `PROJECTION_OPTIONS`."""
    unknown = sorted(set(options) - set(PROJECTION_OPTIONS))
    if unknown:
        raise ValueError(
            f"Projection options are {list(PROJECTION_OPTIONS)}. Received: {unknown}"
        )
    for name, value in options.items():
        setattr(layer, name, _keras_module(name).get(value))


def projection_options(layer):
    """`{name: object}` of `layer`'s options: keyword arguments of a sublayer."""
    return {name: getattr(layer, name) for name in PROJECTION_OPTIONS}


def projection_options_config(layer):
    """`{name: serialized object}` of `layer`'s options, for `get_config`."""
    return {
        name: _keras_module(name).serialize(getattr(layer, name))
        for name in PROJECTION_OPTIONS
    }
