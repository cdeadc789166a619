"""The shared argument checks: what each accepts, and errors that name the argument."""

import math
import pathlib
import re

import keras
import numpy as np
import pytest

from keras_attention import validation


def received(name, value):
    """Regex: the message names `name` and ends with `Received: name=value`."""
    return f"`{re.escape(name)}`.*Received: {re.escape(name)}={re.escape(repr(value))}"


def test_check_positive_and_non_negative_int():
    assert validation.check_positive_int("units", np.int64(3)) == 3
    assert type(validation.check_positive_int("units", np.int64(3))) is int
    assert validation.check_positive_int("units", None, allow_none=True) is None
    assert validation.check_non_negative_int("steps", 0) == 0
    for bad in (0, -1, 1.5, True, "2", None):
        with pytest.raises(ValueError, match=received("units", bad)):
            validation.check_positive_int("units", bad)
    for bad in (-1, 0.0, False):
        with pytest.raises(ValueError, match=received("steps", bad)):
            validation.check_non_negative_int("steps", bad)


def test_check_rate_choice_and_bool():
    assert validation.check_rate("dropout", 0) == 0.0
    for bad in (1.0, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match=received("dropout", bad)):
            validation.check_rate("dropout", bad)
    assert validation.check_choice("cell", "gru", ("gru", "lstm")) == "gru"
    with pytest.raises(ValueError, match="one of 'gru', 'lstm'.*Received: cell='rnn'"):
        validation.check_choice("cell", "rnn", ("gru", "lstm"))
    assert validation.check_bool("flag", False) is False
    with pytest.raises(TypeError, match=received("flag", 1)):
        validation.check_bool("flag", 1)


def test_check_call_bool_takes_bools_and_known_boolean_scalars_only():
    check = validation.check_call_bool
    assert check("use_causal_mask", True) is True and check("training", False) is False
    assert check("use_causal_mask", np.True_) is True and check("training", np.False_) is False
    assert check("training", keras.ops.convert_to_tensor(True)) is True  # an eager tensor
    assert check("training", None, allow_none=True) is None
    for bad in ("no", "False", "0", 0, 1, 0.0, None, [True]):
        with pytest.raises(TypeError, match=rf"`use_causal_mask` must be True or False\. "
                                            rf"Received: use_causal_mask={re.escape(repr(bad))}$"):
            check("use_causal_mask", bad)
    with pytest.raises(TypeError, match=r"must be True, False or None\. Received: training='no'"):
        check("training", "no", allow_none=True)
    for bad in (keras.ops.ones((2,), "bool"), keras.ops.convert_to_tensor(1),
                keras.KerasTensor((), dtype="bool")):  # not scalar; not bool; symbolic
        with pytest.raises(TypeError, match=r"`training` must be True(,| or) False.*Received: "):
            check("training", bad, allow_none=True)


@pytest.mark.tf_only("a symbolic tf.Tensor inside tf.function")
def test_check_call_bool_refuses_a_symbolic_tensor_naming_it():
    import tensorflow as tf

    @tf.function
    def traced(flag):
        return validation.check_call_bool("training", flag)

    with pytest.raises(TypeError, match=r"a tensor whose value is known.*Received: training="):
        traced(tf.constant(True))


def test_check_non_negative_float():
    assert validation.check_non_negative_float("weight", 0) == 0.0
    assert validation.check_non_negative_float("weight", np.float32(1.5)) == 1.5
    for bad in (-0.5, math.inf, math.nan, True, "1", None):
        with pytest.raises(ValueError, match="`weight` must be a finite float >= 0. Received: "):
            validation.check_non_negative_float("weight", bad)


def test_check_str():
    assert validation.check_str("key", "document") == "document"
    assert validation.check_str("key", None, allow_none=True) is None
    with pytest.raises(TypeError, match="must be a string. " + "Received: key=3"):
        validation.check_str("key", 3)
    with pytest.raises(TypeError, match="must be a string or None. Received: key=b'x'"):
        validation.check_str("key", b"x", allow_none=True)
    with pytest.raises(TypeError, match="Received: key=None"):
        validation.check_str("key", None)


def test_check_string_list():
    assert validation.check_string_list("texts", ("a", "b")) == ["a", "b"]
    assert validation.check_string_list("texts", iter([])) == []
    for bad in ("ab", b"ab", 3):
        with pytest.raises(TypeError, match=received("texts", bad)):
            validation.check_string_list("texts", bad)
    with pytest.raises(TypeError, match=r"Every item of `texts` .*Received: texts\[1\]=2"):
        validation.check_string_list("texts", ["a", 2])


def test_check_callable():
    assert validation.check_callable("fn", len) is len
    assert validation.check_callable("fn", None, allow_none=True) is None
    with pytest.raises(TypeError, match="`fn` must be callable. Received: fn='x'"):
        validation.check_callable("fn", "x")
    with pytest.raises(TypeError, match=r"callable \(a function\) or None. Received: fn=3"):
        validation.check_callable("fn", 3, allow_none=True)


def test_check_rank():
    validation.check_rank("ids", (2, None), 2, "(batch, source_len)")
    with pytest.raises(ValueError, match=re.escape(
            "`ids` must be a rank-2 tensor of shape (batch, source_len). "
            "Received: ids.shape=(2, 3, 4)")):
        validation.check_rank("ids", [2, 3, 4], 2, "(batch, source_len)")
    with pytest.raises(ValueError, match=re.escape("Received: ids.shape=None")):
        validation.check_rank("ids", None, 2, "(batch, source_len)")


def test_check_last_dim_known():
    validation.check_last_dim_known("memory", (None, None, 4))
    with pytest.raises(ValueError, match=re.escape(
            "The last dimension of `memory` must be known. Received: memory.shape=(2, 3, None)")):
        validation.check_last_dim_known("memory", (2, 3, None))


def test_check_same_sizes_ignores_unknown_sizes():
    validation.check_same_sizes("same batch", (("a.shape[0]", 2), ("b.shape[0]", None)))
    validation.check_same_sizes("same batch", (("a.shape[0]", 2), ("b.shape[0]", 2)))
    with pytest.raises(ValueError, match=re.escape(
            "`a` and `b` must have the same batch size. Received: a.shape[0]=2, b.shape[0]=3")):
        validation.check_same_sizes(
            "`a` and `b` must have the same batch size",
            (("a.shape[0]", 2), ("c.shape[0]", None), ("b.shape[0]", 3)),
        )


def test_check_file(tmp_path):
    path = tmp_path / "data.tsv"
    path.write_text("x")
    assert validation.check_file("path", str(path)) == path
    assert isinstance(validation.check_file("path", path), pathlib.Path)
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "missing"))):
        validation.check_file("path", tmp_path / "missing")
    with pytest.raises(ValueError, match=re.escape(
            "Argument `path` must be a file, not a directory or device. "
            f"Received: path='{tmp_path}'")):
        validation.check_file("path", tmp_path)
    with pytest.raises(TypeError, match=received("path", 3)):
        validation.check_file("path", 3)


def test_concrete_values_reads_known_values_only():
    np.testing.assert_array_equal(validation.concrete_values([1, 2]), [1, 2])
    assert validation.concrete_values(np.int32(3)) == 3
    assert validation.concrete_values(keras.KerasTensor((None, 3))) is None


def test_check_same_length_and_check_length_limit_name_both_lengths():
    mask, value = np.ones((2, 5), bool), np.ones((2, 4, 3), "float32")
    assert validation.check_same_length("value_mask", mask[:, :4], "value", value) is not None
    assert validation.check_same_length("value_mask", None, "value", value) is None
    with pytest.raises(ValueError, match=r"`value_mask` must have the sequence length of "
                                         r"`value` \(4\)\. Received: value_mask.shape=\(2, 5\), "
                                         r"value.shape=\(2, 4, 3\)"):
        validation.check_same_length("value_mask", mask, "value", value)
    assert validation.check_length_limit("token_ids", 6, 6, "a table", tensor="t") == "t"
    with pytest.raises(ValueError, match=r"`token_ids` may hold at most 6 positions \(a table\)\."
                                         r" Received: token_ids of length 7"):
        validation.check_length_limit("token_ids", np.int64(7), 6, "a table")
