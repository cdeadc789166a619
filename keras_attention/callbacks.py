"""Training callbacks: checkpoint averaging."""

import keras
import numpy as np

from keras_attention.validation import check_positive_int


class AverageLastEpochs(keras.callbacks.Callback):
    """Sets the model's weights to the mean of its weights at the end of each
    of the last `num_epochs` epochs of `fit` (checkpoint averaging, as in
    Vaswani et al. 2017, from memory instead of saved files).

    ```
    w = (w_{E-N+1} + ... + w_E) / N     E = fit's epochs, N = num_epochs
    ```

    Every floating-point weight of the model is averaged (trainable or not;
    an integer one, such as a counter, keeps its last value); the optimizer's
    state is left as it is. The sum is kept in host memory (one copy of the
    weights). When `fit` runs fewer epochs than `num_epochs` (or resumes
    from a backup past the first of the last `num_epochs`), the epochs it ran
    among the last ones are averaged; `averaged_epochs` lists them (1-based).
    The weights are set in `on_train_end`, so evaluate or save after `fit`.

    Args:
        num_epochs: int >= 1, how many final epochs to average (1 leaves the
            weights of the last epoch).

    Example:

    >>> import numpy as np, keras
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> average = AverageLastEpochs(2)
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=3, verbose=0,
    ...               callbacks=[average])
    >>> average.averaged_epochs
    [2, 3]
    """

    def __init__(self, num_epochs):
        super().__init__()
        self.num_epochs = check_positive_int("num_epochs", num_epochs)
        self.averaged_epochs = []
        self._sums = None

    def on_train_begin(self, logs=None):
        self.averaged_epochs = []
        self._sums = None

    def on_epoch_end(self, epoch, logs=None):
        last_epoch = self.params.get("epochs", epoch + 1)
        if epoch + 1 <= last_epoch - self.num_epochs:
            return
        weights = [np.asarray(w, dtype="float64") for w in self.model.get_weights()]
        if self._sums is None:
            self._sums = weights
        else:
            self._sums = [total + w for total, w in zip(self._sums, weights)]
        self.averaged_epochs.append(epoch + 1)

    def on_train_end(self, logs=None):
        if not self.averaged_epochs:
            return
        count = len(self.averaged_epochs)
        current = self.model.get_weights()
        self.model.set_weights([
            (total / count).astype(w.dtype) if np.issubdtype(w.dtype, np.floating) else w
            for total, w in zip(self._sums, current)
        ])
        self._sums = None


__all__ = [
    "AverageLastEpochs",
]
