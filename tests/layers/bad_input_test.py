"""Bad call inputs get a ValueError naming the argument, for every layer,
in eager calls and in the functional API, never a TensorFlow error."""

import keras
import numpy as np
import pytest

from tests.layers.factories import DIM, FACTORIES


def ones(*shape):
    return np.ones(shape, "float32")


BAD_CALLS = {
    "query_rank_2": (lambda: ((ones(2, DIM), ones(2, 4, DIM)), {}),
                     r"`query` must be a rank-3 tensor.*Received: query.shape=\(2, 8\)"),
    "value_rank_4": (lambda: ((ones(2, 3, DIM), ones(2, 4, 1, DIM)), {}),
                     r"`value` must be a rank-3 tensor.*Received: value.shape=\(2, 4, 1, 8\)"),
    "batch_mismatch": (lambda: ((ones(2, 3, DIM), ones(1, 4, DIM)), {}),
                       r"same batch size.*Received: query.shape\[0\]=2, value.shape\[0\]=1"),
    "key_value_length_mismatch": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM), ones(2, 5, DIM)), {}),
                                  r"`key` and `value` must have the same length"
                                  r".*Received: key.shape=\(2, 5, 8\)"),
    "mask_shape": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                            {"attention_mask": np.ones((2, 3, 5), bool)}),
                   r"attention_mask.*Received: attention_mask.shape=\(2, 3, 5\)"),
    "padding_mask_as_attention_mask": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                                                {"attention_mask": np.ones((2, 4), bool)}),
                                       r"padding_mask.*Received: attention_mask.shape=\(2, 4\)"),
    "float_mask": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                            {"attention_mask": np.zeros((2, 3, 4), "float32")}),
                   r"float mask is refused.*Received: attention_mask with dtype float32"),
    "causal_without_offset": (lambda: ((ones(2, 1, DIM), ones(2, 4, DIM)),
                                       {"use_causal_mask": True}),
                              r"use_causal_mask=True.*offset.*Received: query.shape=\(2, 1, 8\)"),
}


@pytest.mark.parametrize("bad", list(BAD_CALLS))
@pytest.mark.parametrize("name", list(FACTORIES))
def test_bad_call_raises_value_error(name, bad):
    make, pattern = BAD_CALLS[bad]
    args, kwargs = make()
    with pytest.raises(ValueError, match=pattern):
        FACTORIES[name]()(*args, **kwargs)


@pytest.mark.parametrize("bad", ["query_rank_2", "batch_mismatch", "key_value_length_mismatch",
                                 "causal_without_offset"])
@pytest.mark.parametrize("name", ["bahdanau", "multi_head", "luong_dot"])
def test_bad_call_raises_value_error_in_functional_api(name, bad):
    make, pattern = BAD_CALLS[bad]
    args, kwargs = make()
    symbolic = [keras.Input(batch_shape=a.shape) for a in args]
    with pytest.raises(ValueError, match=pattern):
        FACTORIES[name]()(*symbolic, **kwargs)


@pytest.mark.parametrize("name", ["scaled_dot_product", "luong_dot"])
def test_feature_size_mismatch_without_projection(name):
    with pytest.raises(ValueError, match=r"same last dimension.*Received: query.shape=\(2, 3, 8\)"):
        FACTORIES[name]()(ones(2, 3, DIM), ones(2, 4, 5))


@pytest.mark.parametrize("name", ["luong_general", "luong_concat", "bahdanau", "multi_head"])
def test_projections_absorb_feature_size_differences(name):
    out = FACTORIES[name]()(ones(2, 3, DIM), ones(2, 4, 5), ones(2, 4, 6))
    assert out.shape[:2] == (2, 3)


def test_integer_and_variable_inputs_are_accepted():
    layer = FACTORIES["multi_head"]()
    ints = np.ones((2, 3, DIM), "int32")
    assert keras.backend.standardize_dtype(layer(ints, ints).dtype) == "float32"
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        variable = tf.Variable(ones(2, 3, DIM))
    else:
        variable = keras.Variable(ones(2, 3, DIM))
    np.testing.assert_array_equal(
        layer(variable, variable), layer(ones(2, 3, DIM), ones(2, 3, DIM))
    )


@pytest.mark.parametrize("name", list(FACTORIES))
def test_empty_memory_follows_the_fully_masked_rule_and_empty_queries_work(name):
    """S = 0: every row is fully masked, so the context is zero (the output is
    the output bias where there is one). T = 0: an empty output."""
    from tests.layers.factories import empty_row_output

    layer = FACTORIES[name]()
    no_keys = np.asarray(layer(ones(2, 3, DIM), ones(2, 0, DIM)))
    assert no_keys.shape[:2] == (2, 3)
    np.testing.assert_array_equal(no_keys, np.broadcast_to(empty_row_output(layer), no_keys.shape))
    assert layer(ones(2, 0, DIM), ones(2, 4, DIM)).shape[:2] == (2, 0)
