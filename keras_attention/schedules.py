"""Learning-rate schedules for training Transformers."""

import keras
from keras import ops

from keras_attention.validation import check_non_negative_int


@keras.saving.register_keras_serializable(package="keras_attention")
class WarmupInverseSqrtDecay(keras.optimizers.schedules.LearningRateSchedule):
    """A linear warmup to `peak_learning_rate`, then inverse square root decay
    (Vaswani et al. 2017, with the peak given directly).

    ```
    s  = step + 1
    lr = peak_learning_rate * min(s / warmup_steps, sqrt(warmup_steps / s))
    ```

    The rate rises linearly over the first `warmup_steps` steps, peaks at
    step `warmup_steps - 1`, then falls as `1 / sqrt(step)` (a quarter of the
    peak at `16 * warmup_steps`). With `warmup_steps=0` it is the constant
    `peak_learning_rate`.

    Args:
        peak_learning_rate: float > 0, the highest rate.
        warmup_steps: int >= 0, the steps of the linear warmup.

    Example:

    >>> schedule = WarmupInverseSqrtDecay(1e-3, warmup_steps=100)
    >>> [round(float(schedule(step)), 6) for step in (0, 99, 399)]
    [1e-05, 0.001, 0.0005]
    """

    def __init__(self, peak_learning_rate, warmup_steps):
        if isinstance(peak_learning_rate, bool) or not (
            isinstance(peak_learning_rate, (int, float)) and peak_learning_rate > 0
        ):
            raise ValueError(
                "`peak_learning_rate` must be a number > 0. "
                f"Received: peak_learning_rate={peak_learning_rate!r}"
            )
        self.peak_learning_rate = float(peak_learning_rate)
        self.warmup_steps = check_non_negative_int("warmup_steps", warmup_steps)

    def __call__(self, step):
        if self.warmup_steps == 0:
            return ops.cast(self.peak_learning_rate, "float32")
        step = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        factor = ops.minimum(step / warmup, ops.sqrt(warmup / step))
        return self.peak_learning_rate * factor

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate, "warmup_steps": self.warmup_steps}


__all__ = [
    "WarmupInverseSqrtDecay",
]
