"""Argument checks shared by every public constructor.

Each check raises a `ValueError` (or `TypeError`) that names the argument and
says `Received: ...`, in the Keras style, so bad input fails at construction.
"""

import math
import numbers
import os
import pathlib

import keras
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


def check_call_bool(name, value, allow_none=False):
    """Returns a flag passed at call time (`use_causal_mask`, `training`,
    `return_attention_scores`, ...) as a Python `bool`.

    Called at the top of a layer's `call`; a `True` or `False` returns at
    once (one identity test), so the hot path does no other work.

    Accepted: `True` and `False`; NumPy bools (`np.True_`, what `np.all`
    returns); a scalar boolean tensor whose value is known (an eager tensor,
    e.g. `tf.constant(True)`), read as its value; `None` when `allow_none`
    (it then means "the default", e.g. `training=None` leaves it to Keras).

    Refused with a `TypeError` naming the argument and ending
    `Received: name=value`:
    - strings: `bool("no")`, `bool("False")` and `bool("0")` are all True;
    - ints and floats, `0` and `1` included: a number where a flag belongs
      is as likely a misplaced positional argument as a flag, and the
      constructors' `check_bool` refuses them too;
    - tensors that are not scalar booleans, and symbolic tensors (inside
      `tf.function`, `jax.jit` or a functional model): their value is not
      known when the layer is traced, and a layer cannot branch on it
      (Keras' own `Dropout` fails the same way on a symbolic `training`).

    Example:

    >>> check_call_bool("use_causal_mask", np.bool_(True))
    True
    >>> check_call_bool("use_causal_mask", "no")
    Traceback (most recent call last):
    ...
    TypeError: Argument `use_causal_mask` must be True or False. Received: use_causal_mask='no'
    """
    if value is True or value is False:
        return value
    if value is None and allow_none:
        return None
    if isinstance(value, np.bool_):
        return bool(value)
    if ops.is_tensor(value) or isinstance(value, keras.KerasTensor):
        if tuple(value.shape) == () and keras.backend.standardize_dtype(value.dtype) == "bool":
            known = None if isinstance(value, keras.KerasTensor) else concrete_values(value)
            if known is not None:
                return bool(known)
            raise TypeError(
                f"Argument `{name}` must be True or False, or a tensor whose value is known "
                f"(not symbolic: the layer branches on it). Received: {name}={value!r}"
            )
    expected = "True, False or None" if allow_none else "True or False"
    raise TypeError(f"Argument `{name}` must be {expected}. Received: {name}={value!r}")


def check_non_negative_float(name, value):
    """Returns `value` as a `float` if it is a finite real number >= 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(float(value))
        or float(value) < 0.0
    ):
        raise ValueError(
            f"Argument `{name}` must be a finite float >= 0. "
            f"Received: {name}={value!r}"
        )
    return float(value)


def check_str(name, value, allow_none=False):
    """Returns `value` if it is a `str` (or `None` when `allow_none`)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        expected = "a string or None" if allow_none else "a string"
        raise TypeError(
            f"Argument `{name}` must be {expected}. Received: {name}={value!r}"
        )
    return value


def check_string_list(name, values):
    """Returns `values` as a `list` of strings (a lone string is refused).

    Raises:
        TypeError: `values` is a string, bytes or not iterable, or one item
            is not a string (the message gives its index).
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(
            f"Argument `{name}` must be a list of strings. "
            f"Received: {name}={values!r}"
        )
    values = list(values)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise TypeError(
                f"Every item of `{name}` must be a string. "
                f"Received: {name}[{i}]={value!r}"
            )
    return values


def check_callable(name, value, allow_none=False):
    """Returns `value` if it is callable (or `None` when `allow_none`)."""
    if value is None and allow_none:
        return None
    if not callable(value):
        expected = "callable (a function) or None" if allow_none else "callable"
        raise TypeError(
            f"Argument `{name}` must be {expected}. Received: {name}={value!r}"
        )
    return value


def check_rank(name, shape, rank, layout):
    """Raises a `ValueError` unless `shape` (a tuple, or None) has `rank` dimensions.

    `layout` describes the expected shape in the message, e.g.
    `"(batch, source_len)"`.
    """
    if shape is None or len(shape) != rank:
        shape = None if shape is None else tuple(shape)
        raise ValueError(
            f"`{name}` must be a rank-{rank} tensor of shape {layout}. "
            f"Received: {name}.shape={shape}"
        )


def check_last_dim_known(name, shape):
    """Raises a `ValueError` if the last dimension of `shape` is `None`."""
    if shape[-1] is None:
        raise ValueError(
            f"The last dimension of `{name}` must be known. "
            f"Received: {name}.shape={tuple(shape)}"
        )


def check_same_sizes(what, named_sizes):
    """Raises a `ValueError` unless the known sizes in `named_sizes` agree.

    Args:
        what: str, the rule, naming the arguments (e.g. "`memory` and
            `source_token_ids` must have the same batch size").
        named_sizes: iterable of `(name, size)`; sizes that are `None`
            (unknown) are left out of the comparison.
    """
    known = {name: size for name, size in named_sizes if size is not None}
    if len(set(known.values())) > 1:
        received = ", ".join(f"{name}={size}" for name, size in known.items())
        raise ValueError(f"{what}. Received: {received}")


def check_file(name, value):
    """Returns `value` as a `pathlib.Path` if it names an existing regular file.

    Raises:
        TypeError: `value` is not a str or path-like.
        FileNotFoundError: nothing exists at `value` (the message names the path).
        ValueError: `value` is a directory or a device, not a file.
    """
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"Argument `{name}` must be a str or path-like. Received: {name}={value!r}"
        )
    path = pathlib.Path(value)
    if not path.exists():
        raise FileNotFoundError(f"File not found: '{path}'")
    if not path.is_file():
        raise ValueError(
            f"Argument `{name}` must be a file, not a directory or device. "
            f"Received: {name}='{path}'"
        )
    return path


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


# --- Layer-input checks: the validators of the layers' inputs live here.


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


# --- Sequence lengths: checked at trace time where they are static, and by a
# run-time assertion in a TensorFlow graph where they are not.


def _static_length(x, axis):
    size = x.shape[axis]
    return size if isinstance(size, int) else None


def _made_up_lengths():
    """True while torch infers a functional model's shapes: it fills unknown
    lengths with made-up ones (83, 89), which prove nothing."""
    from keras_attention.keras_internals import in_symbolic_scope

    return keras.config.backend() == "torch" and in_symbolic_scope()


def _assert_in_graph(condition, message, data, tensor):
    """`tensor`, made to wait for an assertion of the scalar boolean
    `condition` in the TensorFlow graph being traced: it fails with an
    `InvalidArgumentError` that starts with `message` and lists `data`
    before any op that reads `tensor` runs (else an op reading it could fail
    first, with its own words). `tensor` itself on JAX and torch (their
    shapes are static when a function runs: the trace-time checks cover
    them) and eagerly. XLA drops assertions."""
    if keras.config.backend() != "tensorflow":
        return tensor
    import tensorflow as tf

    if tf.executing_eagerly():
        return tensor
    assertion = tf.debugging.Assert(condition, [message] + list(data), name="check_length")
    with tf.control_dependencies([assertion]):
        return tf.identity(tensor)


def check_same_length(name, x, other_name, other, axis=1, other_axis=1):
    """Returns `x` after checking `x.shape[axis] == other.shape[other_axis]`.

    Checked at trace time where both lengths are static (eager calls, JAX
    and torch, a functional model fed arrays): a `ValueError`. In a
    TensorFlow graph with a length unknown until run time (a `tf.function`
    with an `input_signature` of `None` lengths, `fit` after a retrace) the
    returned `x` waits for an assertion with the same words and both
    lengths: use it in place of `x`. XLA drops that assertion.

    Args:
        name: str, the argument whose length must match (e.g. `"value_mask"`).
        x: its tensor (or None: nothing to check).
        other_name: str, the argument it must match (e.g. `"value"`).
        other: its tensor.
        axis, other_axis: the sequence axes of `x` and `other`.
    """
    if x is None or other is None or _made_up_lengths():
        return x
    got, want = _static_length(x, axis), _static_length(other, other_axis)
    rule = f"`{name}` must have the sequence length of `{other_name}`"
    if got is not None and want is not None:
        if got != want:
            raise ValueError(
                f"{rule} ({want}). Received: {name}.shape={tuple(x.shape)}, "
                f"{other_name}.shape={tuple(other.shape)}"
            )
        return x
    if keras.config.backend() != "tensorflow":
        return x
    got, want = ops.shape(x)[axis], ops.shape(other)[other_axis]
    return _assert_in_graph(
        ops.equal(got, want), f"{rule}. Received lengths ({name}, {other_name}):",
        (got, want), x,
    )


def check_length_limit(name, length, limit, what, tensor=None):
    """Raises a `ValueError` unless the sequence length `length` is at most
    `limit`; returns `tensor`.

    `length` is an int, or a scalar tensor in a TensorFlow graph: then the
    returned `tensor` (what reads the positions) waits for an assertion with
    the same words (XLA drops it). `what` says where the limit comes from
    (e.g. "the learned position table's max_length=6").
    """
    rule = f"`{name}` may hold at most {limit} positions ({what})"
    if _made_up_lengths():
        return tensor
    if isinstance(length, (int, np.integer)):
        if length > limit:
            raise ValueError(f"{rule}. Received: {name} of length {int(length)}")
        return tensor
    if keras.config.backend() != "tensorflow":
        return tensor
    return _assert_in_graph(
        ops.less_equal(length, limit), f"{rule}. Received: {name} of length", (length,), tensor
    )
