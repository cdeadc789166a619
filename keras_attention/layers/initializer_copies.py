"""One initializer per weight.

A Keras 3 initializer fixes its seed when it is made (an unseeded one draws
a seed then), so one instance gives the same values to every weight of a
shape, and overlapping values to weights of other shapes. A layer that owns
several weights, or hands an initializer on to several sublayers, gives each
one `clone_initializer(initializer)` instead, as Keras' `MultiHeadAttention`
and keras-hub's blocks do: the copy has the same class and config, so an
unseeded initializer draws a new seed and a seeded one keeps its seed.
"""

import keras

__all__ = ["clone_initializer"]


def clone_initializer(initializer):
    """A new initializer of the class and config of `initializer` (a Keras
    initializer object, or anything `keras.initializers.get` takes)."""
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())
