"""Counter-based random numbers in `keras.ops`: reproducible in eager, graph
and XLA, on every backend, with no random state to carry through a loop.

The arithmetic is 32-bit two's complement in int32 (wrapping multiply and
add, logical right shifts made from arithmetic ones and a mask), because
torch has no uint32 shifts; the bits are those of the uint32 murmur3
finaliser, so TensorFlow, JAX and torch draw the same numbers.
"""

from keras import ops

_GOLDEN = 0x9E3779B1
_STEP = 0x632BE5AB
_ROW = 0x27D4EB2F
_MIX_1 = 0x85EBCA6B
_MIX_2 = 0xC2B2AE35


def _i32(value):
    """A uint32 constant as the int32 with the same bits."""
    value &= 0xFFFFFFFF
    return ops.convert_to_tensor(value - (1 << 32) if value >= 1 << 31 else value, "int32")


def _shift_right(x, bits):
    """Logical right shift of int32 `x` (as if it were uint32)."""
    return ops.bitwise_and(ops.right_shift(x, bits), _i32((1 << (32 - bits)) - 1))


def _mix(x):
    """The murmur3 finaliser: a bijective avalanche on 32 bits."""
    x = ops.bitwise_xor(x, _shift_right(x, 16))
    x = ops.multiply(x, _i32(_MIX_1))
    x = ops.bitwise_xor(x, _shift_right(x, 13))
    x = ops.multiply(x, _i32(_MIX_2))
    return ops.bitwise_xor(x, _shift_right(x, 16))


def uniform(seed, step, num_rows, num_cols):
    """Uniform floats in (0, 1), `(num_rows, num_cols)`, a pure function of
    `(seed, step, row, col)`.

    Args:
        seed: int or scalar integer tensor.
        step: int or scalar integer tensor (e.g. the decoding position).
        num_rows, num_cols: ints or scalar tensors.
    """
    rows = ops.arange(num_rows, dtype="int32")[:, None]
    cols = ops.arange(num_cols, dtype="int32")[None, :]
    key = ops.cast(seed, "int32") * _i32(_GOLDEN) + ops.cast(step, "int32") * _i32(_STEP)
    bits = _mix(key + _mix(rows * _i32(_ROW) + cols))
    # 24 high bits -> (0, 1), never exactly 0 or 1.
    return (ops.cast(_shift_right(bits, 8), "float32") + 0.5) / 16777216.0


def gumbel(seed, step, num_rows, num_cols):
    """Standard Gumbel noise `-log(-log(u))`, `(num_rows, num_cols)`."""
    return -ops.log(-ops.log(uniform(seed, step, num_rows, num_cols)))
