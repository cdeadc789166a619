"""Counter-based random numbers in `keras.ops`: reproducible in eager, graph
and XLA, on every backend, with no random state to carry through a loop."""

from keras import ops

_GOLDEN = 0x9E3779B1
_STEP = 0x632BE5AB
_ROW = 0x27D4EB2F


def _u32(value):
    return ops.convert_to_tensor(value, "uint32")


def _mix(x):
    """The murmur3 finaliser: a bijective avalanche on uint32."""
    x = ops.bitwise_xor(x, ops.right_shift(x, 16))
    x = ops.multiply(x, _u32(0x85EBCA6B))
    x = ops.bitwise_xor(x, ops.right_shift(x, 13))
    x = ops.multiply(x, _u32(0xC2B2AE35))
    return ops.bitwise_xor(x, ops.right_shift(x, 16))


def uniform(seed, step, num_rows, num_cols):
    """Uniform floats in (0, 1), `(num_rows, num_cols)`, a pure function of
    `(seed, step, row, col)`.

    Args:
        seed: int or scalar integer tensor.
        step: int or scalar integer tensor (e.g. the decoding position).
        num_rows, num_cols: ints or scalar tensors.
    """
    rows = ops.cast(ops.arange(num_rows, dtype="int32"), "uint32")[:, None]
    cols = ops.cast(ops.arange(num_cols, dtype="int32"), "uint32")[None, :]
    key = ops.cast(seed, "uint32") * _u32(_GOLDEN) + ops.cast(step, "uint32") * _u32(
        _STEP
    )
    bits = _mix(key + _mix(rows * _u32(_ROW) + cols))
    # 24 high bits -> (0, 1), never exactly 0 or 1.
    return (ops.cast(ops.right_shift(bits, 8), "float32") + 0.5) / 16777216.0


def gumbel(seed, step, num_rows, num_cols):
    """Standard Gumbel noise `-log(-log(u))`, `(num_rows, num_cols)`."""
    return -ops.log(-ops.log(uniform(seed, step, num_rows, num_cols)))
