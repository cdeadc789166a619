import doctest

import keras
import numpy as np
import pytest

from keras_attention import schedules
from keras_attention.schedules import WarmupInverseSqrtDecay


def test_docstring_examples_run():
    result = doctest.testmod(schedules)
    assert result.failed == 0 and result.attempted > 0


def test_rates_follow_linear_warmup_then_inverse_sqrt():
    schedule = WarmupInverseSqrtDecay(2e-3, warmup_steps=50)
    steps = np.arange(0, 1000)
    rates = np.array([float(schedule(int(step))) for step in steps[::37]])
    s = steps[::37] + 1.0
    expected = 2e-3 * np.minimum(s / 50, np.sqrt(50 / s))
    np.testing.assert_allclose(rates, expected, rtol=1e-5)
    assert float(schedule(49)) == pytest.approx(2e-3)
    assert float(schedule(49)) > float(schedule(48)) and float(schedule(49)) > float(schedule(50))


def test_zero_warmup_is_a_constant_rate():
    schedule = WarmupInverseSqrtDecay(1e-3, warmup_steps=0)
    assert [float(schedule(step)) for step in (0, 10, 10000)] == pytest.approx([1e-3] * 3)


def test_config_round_trip_and_optimizer_serialization():
    schedule = WarmupInverseSqrtDecay(5e-4, warmup_steps=400)
    restored = WarmupInverseSqrtDecay.from_config(schedule.get_config())
    assert restored.get_config() == {"peak_learning_rate": 5e-4, "warmup_steps": 400}
    optimizer = keras.optimizers.deserialize(
        keras.optimizers.serialize(keras.optimizers.Adam(schedule))
    )
    saved = optimizer.get_config()["learning_rate"]
    assert saved["registered_name"] == "keras_attention>WarmupInverseSqrtDecay"
    assert saved["config"] == {"peak_learning_rate": 5e-4, "warmup_steps": 400}
    assert float(optimizer.learning_rate) == pytest.approx(float(schedule(0)))


@pytest.mark.parametrize("kwargs, message", [
    ({"peak_learning_rate": 0.0, "warmup_steps": 1}, r"`peak_learning_rate` must be a number > 0"
                                                     r".*Received: peak_learning_rate=0.0"),
    ({"peak_learning_rate": 1e-3, "warmup_steps": -1}, r"`warmup_steps` must be a non-negative "
                                                       r"integer.*Received: warmup_steps=-1"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WarmupInverseSqrtDecay(**kwargs)
