"""`MemoryHop`: one read of an End-To-End Memory Network (Sukhbaatar et al. 2015)."""

import keras
from keras import ops

from keras_attention.layers.luong_attention import LuongAttention
from keras_attention.layers.quantization import NotQuantizable
from keras_attention.validation import check_bool, check_call_bool


@keras.saving.register_keras_serializable(package="keras_attention")
class MemoryHop(NotQuantizable, keras.layers.Layer):
    """One memory-network hop: `u' = u + sum_i p_i c_i`, `p = softmax(u . m)`.

    The read is a `LuongAttention(score="dot")` with the state as a one-step
    query, the input memories `m` as keys and the output memories `c` as
    values; padding sentences (the Keras mask of `c`) get weight 0. With
    `linear_start=True` the hop starts without its softmax (`p_i = u .
    m_i`, the paper's linear start) until the non-trainable flag
    `softmax_on` is set to 1 (see `keras_attention.models.LinearStart`).

    Shapes: `state` `(B, dim)`, `values`, `keys` `(B, M, dim)`. Returns
    the new state `(B, dim)`, and with `return_attention_scores=True` also
    the softmax weights `(B, 1, M)` in float32.

    Args:
        linear_start: bool.
        **kwargs: `keras.layers.Layer` arguments.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import MemoryHop
    >>> state, memories = np.ones((2, 4), "float32"), np.ones((2, 3, 4), "float32")
    >>> new_state, weights = MemoryHop()(state, memories, memories,
    ...                                  return_attention_scores=True)
    >>> tuple(new_state.shape), tuple(weights.shape)
    ((2, 4), (2, 1, 3))
    """

    _not_quantizable_reason = "its one weight is a scalar switch"
    _kept_in_float = True

    def __init__(self, linear_start=False, **kwargs):
        super().__init__(**kwargs)
        self.linear_start = check_bool("linear_start", linear_start)
        self.attention = LuongAttention(score="dot", name="attention", dtype=self.dtype_policy)

    def build(self, state_shape, values_shape, keys_shape):
        query_shape = (state_shape[0], 1, state_shape[-1])
        self.attention.build(query_shape, values_shape, keys_shape)
        self.softmax_on = self.add_weight(
            name="softmax_on", shape=(), trainable=False,
            initializer="zeros" if self.linear_start else "ones",
        )

    def call(self, state, values, keys, return_attention_scores=False, mask=None):
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        memory_mask = None if mask is None else mask[1]
        attention_mask = None if memory_mask is None else memory_mask[:, None, :]
        query = ops.expand_dims(state, 1)
        read, weights = self.attention(query, values, key=keys, attention_mask=attention_mask,
                                       return_attention_scores=True)
        read = ops.squeeze(read, 1)
        if self.linear_start:
            scores = ops.einsum("bd,bmd->bm", state, keys)
            if memory_mask is not None:
                scores = scores * ops.cast(memory_mask, scores.dtype)
            linear_read = ops.einsum("bm,bmd->bd", scores, values)
            on = ops.cast(self.softmax_on, read.dtype)
            read = on * read + (1 - on) * linear_read
        if return_attention_scores:
            return state + read, weights
        return state + read

    def compute_output_shape(self, state_shape, values_shape, keys_shape):
        return tuple(state_shape)

    def compute_output_spec(self, state, values, keys, return_attention_scores=False,
                            mask=None):
        new_state = keras.KerasTensor(state.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return new_state
        weights = keras.KerasTensor((state.shape[0], 1, values.shape[1]), dtype="float32")
        return new_state, weights

    def compute_mask(self, inputs, previous_mask=None):
        return None

    def get_config(self):
        return dict(super().get_config(), linear_start=self.linear_start)
