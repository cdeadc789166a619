"""The private Keras names of `keras_attention.keras_internals` exist in the
installed Keras and do what the package needs of them: a Keras upgrade that
moves one fails here, naming it."""

import keras
import numpy as np

from keras_attention import keras_internals


def test_in_symbolic_scope_is_true_only_while_a_functional_model_is_traced():
    seen = []

    class Probe(keras.layers.Layer):
        def call(self, x):
            seen.append(keras_internals.in_symbolic_scope())
            return x

    probe = Probe()
    probe(keras.Input((3,)))
    probe(np.zeros((1, 3), "float32"))
    assert seen[0] is True and seen[-1] is False


def test_autocast_scope_reads_float_variables_in_its_dtype():
    variable = keras.Variable(np.ones(2, "float32"))
    with keras_internals.autocast_scope("float16"):
        assert keras.backend.standardize_dtype(variable.value.dtype) == "float16"
    with keras_internals.autocast_scope(None):
        assert keras.backend.standardize_dtype(variable.value.dtype) == "float32"
    assert keras.backend.standardize_dtype(variable.value.dtype) == "float32"
