import doctest

import keras
import numpy as np
import pytest

from keras_attention import losses
from keras_attention.losses import SmoothedSparseCrossentropy

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(3, 5, 7)).astype("float32")
LABELS = np.array([[4, 2, 6, 0, 0], [1, 3, 0, 0, 0], [5, 5, 5, 2, 1]])  # 0 = padding


def numpy_reference(labels, logits, label_smoothing, ignore_class=0, weights=None):
    """The smoothed cross-entropy averaged over the non-pad tokens, in NumPy."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    num_classes = logits.shape[-1]
    targets = np.eye(num_classes)[labels] * (1 - label_smoothing) + label_smoothing / num_classes
    per_token = -(targets * log_probs).sum(axis=-1)
    valid = (labels != ignore_class).astype("float64")
    if weights is not None:
        valid = valid * weights
    return (per_token * valid).sum() / valid.sum(), per_token * (labels != ignore_class)


def test_docstring_examples_run():
    result = doctest.testmod(losses, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 0.3])
def test_loss_equals_the_numpy_reference_over_non_pad_tokens(label_smoothing):
    loss = SmoothedSparseCrossentropy(label_smoothing=label_smoothing, ignore_class=0)
    expected, _ = numpy_reference(LABELS, LOGITS, label_smoothing)
    assert float(loss(LABELS, LOGITS)) == pytest.approx(expected, rel=1e-5)


def test_without_smoothing_it_equals_keras_ignore_class_crossentropy():
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    ours = SmoothedSparseCrossentropy(label_smoothing=0.0, ignore_class=0)
    assert float(ours(LABELS, LOGITS)) == pytest.approx(float(keras_loss(LABELS, LOGITS)), rel=1e-5)


def test_pad_logits_do_not_change_the_loss():
    loss = SmoothedSparseCrossentropy(label_smoothing=0.1)
    changed = LOGITS.copy()
    changed[LABELS == 0] = 100.0 * RNG.normal(size=changed[LABELS == 0].shape)
    assert float(loss(LABELS, changed)) == pytest.approx(float(loss(LABELS, LOGITS)), rel=1e-6)


def test_per_token_losses_are_zero_on_padding_and_sample_weights_count():
    per_token = SmoothedSparseCrossentropy(label_smoothing=0.2, reduction=None)(LABELS, LOGITS)
    _, expected = numpy_reference(LABELS, LOGITS, 0.2)
    np.testing.assert_allclose(np.asarray(per_token), expected, rtol=1e-5, atol=1e-6)
    weights = RNG.uniform(0.5, 2.0, size=LABELS.shape)
    weighted = SmoothedSparseCrossentropy(label_smoothing=0.2)(LABELS, LOGITS, weights)
    assert float(weighted) == pytest.approx(numpy_reference(LABELS, LOGITS, 0.2, 0, weights)[0],
                                            rel=1e-5)


def test_probabilities_input_and_no_ignored_class():
    probabilities = np.asarray(keras.ops.softmax(LOGITS, axis=-1))
    loss = SmoothedSparseCrossentropy(0.1, from_logits=False, ignore_class=None)
    shifted = LOGITS - LOGITS.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    targets = np.eye(7)[LABELS] * 0.9 + 0.1 / 7
    expected = -(targets * log_probs).sum(-1).mean()
    assert float(loss(LABELS, probabilities)) == pytest.approx(expected, rel=1e-4)


def test_config_round_trip_and_serialization():
    loss = SmoothedSparseCrossentropy(label_smoothing=0.1, ignore_class=3, reduction="sum")
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(restored, SmoothedSparseCrossentropy)
    assert restored.get_config() == loss.get_config()
    assert float(restored(LABELS, LOGITS)) == pytest.approx(float(loss(LABELS, LOGITS)), rel=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    ({"label_smoothing": 1.0}, r"`label_smoothing` must be a float in \[0, 1\).*Received: "
                               r"label_smoothing=1.0"),
    ({"ignore_class": "pad"}, r"`ignore_class` must be an int or None.*Received: "
                              r"ignore_class='pad'"),
    ({"reduction": "sum_over_batch_size"}, r"`reduction` must be one of.*Received: "
                                           r"reduction='sum_over_batch_size'"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SmoothedSparseCrossentropy(**kwargs)


def test_a_model_fits_with_it_and_its_loss_ignores_pad_targets():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Embedding(10, 8),
                              keras.layers.Dense(10)])
    model.compile("adam", SmoothedSparseCrossentropy(0.1))
    inputs = RNG.integers(1, 10, size=(8, 4))
    labels = np.where(np.arange(4) < 2, inputs, 0)
    history = model.fit(inputs, labels, epochs=2, verbose=0)
    expected, _ = numpy_reference(labels, np.asarray(model.predict(inputs, verbose=0)), 0.1)
    assert model.evaluate(inputs, labels, verbose=0) == pytest.approx(expected, rel=1e-4)
    assert np.isfinite(history.history["loss"]).all()
