"""Losses for sequence models: cross-entropy with label smoothing that
ignores padding."""

import keras
from keras import ops

from keras_attention.validation import check_bool, check_rate

REDUCTIONS = ("mean_with_sample_weight", "sum", None, "none")


@keras.saving.register_keras_serializable(package="keras_attention")
class SmoothedSparseCrossentropy(keras.losses.Loss):
    """Sparse categorical cross-entropy with label smoothing (Szegedy et al.
    2016), each token of class `ignore_class` (padding) left out.

    ```
    q     = (1 - label_smoothing) * one_hot(y_true) + label_smoothing / V
    loss  = -sum_v q_v log p_v
          = (1 - label_smoothing) * nll + label_smoothing * mean_v(-log p_v)
    ```

    A token whose label is `ignore_class` (padding) gets weight 0: the loss
    of a batch is the mean over its other tokens (weighted by `sample_weight`
    when one is given), as `keras.losses.SparseCategoricalCrossentropy(
    ignore_class=...)` (which has no `label_smoothing`) computes it; with
    `label_smoothing=0` both give the same loss.

    Args:
        label_smoothing: float in [0, 1), the probability mass spread evenly
            over the `V` classes.
        from_logits: bool, whether `y_pred` holds logits (else probabilities).
        ignore_class: int or `None`, the label whose tokens are left out.
        reduction: `"mean_with_sample_weight"` (the mean over the tokens
            not ignored), `"sum"`, or `None` (the loss per token, 0 on the
            ignored ones).
        name, dtype: as for `keras.losses.Loss`.

    Shapes: `y_true (B, T)` int labels, `y_pred (B, T, V)`; with
    `reduction=None` the loss per token `(B, T)`.

    Example:

    >>> import numpy as np
    >>> loss = SmoothedSparseCrossentropy(label_smoothing=0.1, ignore_class=0)
    >>> logits = np.zeros((1, 3, 4), "float32")  # uniform over 4 classes
    >>> round(float(loss(np.array([[2, 3, 0]]), logits)), 4)  # log(4), pad left out
    1.3863
    """

    def __init__(self, label_smoothing=0.0, from_logits=True, ignore_class=0,
                 reduction="mean_with_sample_weight", name="smoothed_sparse_crossentropy",
                 dtype=None):
        self.label_smoothing = check_rate("label_smoothing", label_smoothing)
        self.from_logits = check_bool("from_logits", from_logits)
        if ignore_class is not None and not isinstance(ignore_class, int):
            raise ValueError(
                f"`ignore_class` must be an int or None. Received: ignore_class={ignore_class!r}"
            )
        self.ignore_class = ignore_class
        if reduction not in REDUCTIONS:
            raise ValueError(
                f"`reduction` must be one of {REDUCTIONS}. Received: reduction={reduction!r}"
            )
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The reduced loss; the ignored tokens weigh 0 (`sample_weight (B, T)`
        or `None`)."""
        if self.ignore_class is not None:
            weights = ops.cast(ops.not_equal(ops.convert_to_tensor(y_true), self.ignore_class),
                               self.dtype)
            if len(weights.shape) == len(y_pred.shape):  # labels (B, T, 1)
                weights = ops.squeeze(weights, axis=-1)
            if sample_weight is not None:
                weights = weights * ops.cast(sample_weight, self.dtype)
            sample_weight = weights
        return super().__call__(y_true, y_pred, sample_weight=sample_weight)

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")
        if len(y_true.shape) == len(y_pred.shape):  # labels (B, T, 1)
            y_true = ops.squeeze(y_true, axis=-1)
        y_pred = ops.cast(y_pred, "float32")
        log_probs = (ops.log_softmax(y_pred, axis=-1) if self.from_logits
                     else ops.log(ops.clip(y_pred, 1e-7, 1.0)))
        num_classes = ops.shape(y_pred)[-1]
        valid = None
        if self.ignore_class is not None:  # any class id in range; weighted 0 by __call__
            valid = ops.not_equal(y_true, self.ignore_class)
            y_true = ops.where(valid, y_true, 0)
        nll = -ops.take_along_axis(log_probs, ops.expand_dims(y_true, -1), axis=-1)[..., 0]
        losses = nll
        if self.label_smoothing:
            uniform = -ops.sum(log_probs, axis=-1) / ops.cast(num_classes, "float32")
            losses = (1.0 - self.label_smoothing) * nll + self.label_smoothing * uniform
        if valid is not None:
            losses = ops.where(valid, losses, 0.0)
        return losses

    def get_config(self):
        return {
            **super().get_config(),
            "label_smoothing": self.label_smoothing,
            "from_logits": self.from_logits,
            "ignore_class": self.ignore_class,
            "dtype": self.dtype,
        }


__all__ = [
    "REDUCTIONS",
    "SmoothedSparseCrossentropy",
]
