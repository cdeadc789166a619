import keras
import pytest

from keras_attention.layers.projection_options import (
    PROJECTION_OPTIONS,
    projection_options,
    projection_options_config,
    set_projection_options,
)

pytestmark = pytest.mark.keras_ops_only


class Holder:
    pass


def test_options_become_keras_objects_and_round_trip_through_their_config():
    holder = Holder()
    set_projection_options(holder, kernel_regularizer="l2", bias_regularizer=None,
                           kernel_constraint=keras.constraints.MaxNorm(2.0),
                           bias_constraint="non_neg")
    options = projection_options(holder)
    assert list(options) == list(PROJECTION_OPTIONS)
    assert isinstance(options["kernel_regularizer"], keras.regularizers.L2)
    assert options["bias_regularizer"] is None
    assert isinstance(options["bias_constraint"], keras.constraints.NonNeg)
    again = Holder()
    set_projection_options(again, **projection_options_config(holder))
    assert again.kernel_constraint.max_value == 2.0
    assert projection_options_config(again) == projection_options_config(holder)


def test_unknown_option_is_refused():
    with pytest.raises(ValueError, match=r"Received: \['activity_regularizer'\]"):
        set_projection_options(Holder(), activity_regularizer="l2")
