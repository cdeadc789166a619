import doctest

import keras
import numpy as np
import pytest

from keras_attention import callbacks
from keras_attention.callbacks import AverageLastEpochs


class RecordWeights(keras.callbacks.Callback):
    """The model's weights at the end of each epoch."""

    def __init__(self):
        super().__init__()
        self.epochs = []

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append([np.array(w) for w in self.model.get_weights()])


def small_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"),
                              keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.05), "mse")
    return model


def fit(model, average, epochs):
    rng = np.random.default_rng(0)
    inputs, targets = rng.normal(size=(32, 3)), rng.normal(size=(32, 1))
    record = RecordWeights()
    model.fit(inputs, targets, epochs=epochs, batch_size=8, verbose=0,
              callbacks=[record, average])  # record runs first: the epoch's own weights
    return record


def test_docstring_examples_run():
    result = doctest.testmod(callbacks)
    assert result.failed == 0 and result.attempted > 0


def test_weights_after_fit_are_the_mean_of_the_last_epochs():
    keras.utils.set_random_seed(0)
    model = small_model()
    average = AverageLastEpochs(3)
    record = fit(model, average, epochs=5)
    assert average.averaged_epochs == [3, 4, 5]
    final = model.get_weights()
    assert len(final) == 8  # BatchNormalization's moving statistics are averaged too
    for index, weight in enumerate(final):
        expected = np.mean([epoch[index] for epoch in record.epochs[2:]], axis=0)
        np.testing.assert_allclose(weight, expected, rtol=1e-6, atol=1e-7)
    assert not np.allclose(final[0], record.epochs[-1][0])  # not the last epoch's


def test_one_epoch_keeps_the_last_weights_and_short_fits_average_what_ran():
    keras.utils.set_random_seed(0)
    model = small_model()
    record = fit(model, AverageLastEpochs(1), epochs=3)
    for weight, last in zip(model.get_weights(), record.epochs[-1]):
        np.testing.assert_allclose(weight, last, rtol=1e-6)
    average = AverageLastEpochs(4)
    record = fit(model, average, epochs=2)
    assert average.averaged_epochs == [1, 2]
    np.testing.assert_allclose(model.get_weights()[0],
                               (record.epochs[0][0] + record.epochs[1][0]) / 2, rtol=1e-6)


def test_num_epochs_must_be_positive():
    with pytest.raises(ValueError, match=r"`num_epochs` must be a positive integer.*"
                                         r"Received: num_epochs=0"):
        AverageLastEpochs(0)
