"""Argument checks shared by every public constructor.

Each check raises a `ValueError` (or `TypeError`) that names the argument and
says `Received: ...`, in the Keras style, so bad input fails at construction.
"""

import numbers

import numpy as np
from keras import ops


def check_positive_int(name, value, allow_none=False):
    """Returns `value` as an `int` if it is a positive integer.

    `bool` is rejected even though it is an `int` subclass; NumPy integers are
    accepted.
    """
    if value is None and allow_none:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value <= 0
    ):
        raise ValueError(
            f"Argument `{name}` must be a positive integer. "
            f"Received: {name}={value!r}"
        )
    return int(value)


def check_non_negative_int(name, value, allow_none=False):
    """Returns `value` as an `int` if it is an integer >= 0."""
    if value is None and allow_none:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < 0
    ):
        raise ValueError(
            f"Argument `{name}` must be a non-negative integer. "
            f"Received: {name}={value!r}"
        )
    return int(value)


def check_rate(name, value):
    """Returns `value` as a `float` if it lies in [0, 1)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 <= float(value) < 1.0
    ):
        raise ValueError(
            f"Argument `{name}` must be a float in [0, 1). "
            f"Received: {name}={value!r}"
        )
    return float(value)


def check_choice(name, value, choices):
    """Returns `value` if it is one of `choices`."""
    if value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ValueError(
            f"Argument `{name}` must be one of {options}. "
            f"Received: {name}={value!r}"
        )
    return value


def check_bool(name, value):
    """Returns `value` if it is a Python `bool`."""
    if not isinstance(value, bool):
        raise TypeError(
            f"Argument `{name}` must be a bool. Received: {name}={value!r}"
        )
    return value


def concrete_values(x):
    """Returns `x` as a NumPy array when its values are known, else None.

    Values are known for Python and NumPy values and eager tensors; they are
    not for symbolic tensors (functional API, `tf.function`, XLA), where value
    checks are skipped.
    """
    if isinstance(x, (np.ndarray, np.generic, list, tuple, bool, int)):
        return np.asarray(x)
    try:
        return np.asarray(ops.convert_to_numpy(x))
    except Exception:  # symbolic tensors cannot be read
        return None


# --- Layer-input checks moved from keras_attention/layers/base_attention.py
# (issue 13: validators live here); names kept.


def check_query_block_size(value):
    """`"auto"`, None or a positive int."""
    if value is None or value == "auto":
        return value
    if isinstance(value, str):
        raise ValueError(
            "Argument `query_block_size` must be 'auto', None or a positive "
            f"int. Received: query_block_size={value!r}"
        )
    return check_positive_int("query_block_size", value)


def check_rank3(name, shape, layout):
    """Raises a `ValueError` unless `shape` has rank 3 (`layout` names the
    axes in the message, e.g. "(batch, target_len, query_dim)")."""
    if shape is None or len(shape) != 3:
        raise ValueError(
            f"`{name}` must be a rank-3 tensor of shape {layout}. "
            f"Received: {name}.shape={None if shape is None else tuple(shape)}"
        )
