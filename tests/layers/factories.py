"""Layer factories shared by the cross-layer tests.

Every factory builds a layer taking `query (B, T, 8)` and `value (B, S, 8)`.
"""

import numpy as np
from keras import ops

from keras_attention import layers

DIM = 8

FACTORIES = {
    "scaled_dot_product": lambda **kw: layers.ScaledDotProductAttention(**kw),
    "luong_dot": lambda **kw: layers.LuongAttention("dot", **kw),
    "luong_general": lambda **kw: layers.LuongAttention("general", **kw),
    "luong_concat": lambda **kw: layers.LuongAttention("concat", units=5, **kw),
    "bahdanau": lambda **kw: layers.BahdanauAttention(6, **kw),
    "bahdanau_normalized": lambda **kw: layers.BahdanauAttention(6, normalize=True, **kw),
    "multi_head": lambda **kw: layers.MultiHeadAttention(
        2, 4, bias_initializer="random_normal", **kw
    ),
    "grouped_query": lambda **kw: layers.MultiHeadAttention(
        4, 2, num_key_value_heads=2, bias_initializer="random_normal", **kw
    ),
}


def empty_row_output(layer):
    """What a query row with every key masked must output: 0, or the bias of
    the output projection for layers that have one."""
    bias = getattr(layer, "output_bias", None)
    if bias is None:
        return 0.0
    # The bias is added in the compute dtype.
    return np.asarray(ops.cast(ops.cast(bias, layer.compute_dtype), "float32"))
