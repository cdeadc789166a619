"""`AttentionRNNDecoder`: an RNN decoder with Luong-style input feeding."""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers.bahdanau_attention import BahdanauAttention
from keras_attention.layers.cache_contract import (
    check_memory_cache_dict,
    check_new_positions,
)
from keras_attention.layers.luong_attention import LuongAttention
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import (
    check_bool,
    check_call_bool,
    check_choice,
    check_last_dim_known,
    check_positive_int,
    check_rank,
    check_rate,
)

CELLS = {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell}
_INPUTS_LAYOUT = "(batch, target_len, input_dim)"
_MEMORY_LAYOUT = "(batch, source_len, memory_dim)"


def _as_attention(attention):
    """`attention` as a `BahdanauAttention` or `LuongAttention` instance."""
    if isinstance(attention, dict):
        attention = keras.saving.deserialize_keras_object(attention)
    if not isinstance(attention, (BahdanauAttention, LuongAttention)):
        raise TypeError(
            "Argument `attention` must be a `BahdanauAttention` or "
            "`LuongAttention` instance (or its serialized config). "
            f"Received: attention={attention!r}"
        )
    return attention


def _serialize_attention(attention):
    """The attention's config dict, without its build shapes: this layer
    builds it, and a built attention would be kept as is on loading."""
    config = keras.saving.serialize_keras_object(attention)
    config.pop("build_config", None)
    return config


def _check_shapes(inputs_shape, memory_shape):
    """Ranks, known feature sizes and equal batch sizes of the inputs."""
    check_rank("inputs", inputs_shape, 3, _INPUTS_LAYOUT)
    check_rank("memory", memory_shape, 3, _MEMORY_LAYOUT)
    check_last_dim_known("inputs", inputs_shape)
    check_last_dim_known("memory", memory_shape)
    batch, memory_batch = inputs_shape[0], memory_shape[0]
    if batch is not None and memory_batch is not None and batch != memory_batch:
        raise ValueError(
            "`inputs` and `memory` must have the same batch size. Received: "
            f"inputs.shape={tuple(inputs_shape)}, "
            f"memory.shape={tuple(memory_shape)}"
        )


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionRNNDecoder(QuantizableSublayers, keras.layers.Layer):
    """An attentional RNN decoder with input feeding (Luong et al., 2015).

    The Keras 3 counterpart of TensorFlow Addons' `AttentionWrapper`. At each
    target step `t` (with `a_0 = 0` and the cell state from `initial_state`
    or zeros):

    ```
    cell_input_t = [x_t ; a_{t-1}]   (input_feeding=True)   (B, E + units)
                 = x_t               (input_feeding=False)  (B, E)
    h_t, state_t = cell(cell_input_t, state_{t-1})          h_t: (B, units)
    c_t, alpha_t = attention(h_t, memory)        c_t: (B, Dm), alpha_t: (B, S)
    a_t          = tanh(W_c [c_t ; h_t])         W_c: (Dm + units, units)
    output_t     = dropout(a_t)                  (B, units)
    ```

    `a_t` is the "attentional hidden state"; with input feeding the
    (dropped-out) output `output_t` is fed back as `a_t` at the next step.
    `W_c` has no bias. The attention layer is queried with `h_t` and attends
    over `memory` (keys and values); memory padding (the Keras mask of
    `memory`, or `memory_mask`) gets exactly 0 alignment and NaN stored there
    cannot reach the outputs.

    For generation the decoder follows the contract of every cached layer
    (docs/concepts/caches.md): `compute_cache(memory, memory_mask)` once,
    `init_cache(batch, max_length, initial_state)` (the state before step
    0), then `call_cached(inputs, state, index, memory_cache=...)` ->
    `(outputs, state, alignments)` per step; `call` is the same steps over
    the whole target.

    Target padding (the Keras mask of `inputs`) is not used inside the loop:
    padded steps still run and their outputs are meant to be ignored
    downstream; the output keeps the mask of `inputs`.

    Shapes: `inputs` `(B, T, E)`, `memory` `(B, S, Dm)` -> outputs
    `(B, T, units)`; alignment history `(B, T, S)` (float32).

    Args:
        units: positive int, the size of the RNN cell (and of `a_t`).
        attention: a `BahdanauAttention` or `LuongAttention` instance (or
            its serialized config), queried with `h_t` `(B, 1, units)`. It
            is re-created from its config (without weights) when its dtype
            policy differs from this layer's; a built one is used as is.
            `LuongAttention("dot")` needs `Dm == units`.
        cell: `"gru"` (default) or `"lstm"`.
        input_feeding: bool (default True), feed `a_{t-1}` to the cell.
        dropout: float in [0, 1), dropout on `a_t` (training only); the
            dropped-out `a_t` is both the output and the value fed back.
        **kwargs: `keras.layers.Layer` arguments.

    `W_c` is a bias-free Keras `Dense` sublayer (`attention_projection`):
    `model.quantize` and `enable_lora` reach it and the attention's
    projections; Keras does not quantize the RNN cell (it warns). Files
    saved when `W_c` was the own variable `attention_kernel` still load.

    Call arguments:
        inputs: `(B, T, E)`, the (embedded) target inputs.
        memory: `(B, S, Dm)`, the encoder outputs.
        inputs_mask: optional boolean `(B, T)` (filled from the Keras mask
            of `inputs`); only propagated to the output.
        memory_mask: optional boolean `(B, S)`, True on real source tokens
            (filled from the Keras mask of `memory`).
        initial_state: optional initial cell state, e.g. the encoder's final
            state: a `(B, units)` tensor for `"gru"`, a list `[h, c]` of two
            for `"lstm"`. `a_0` is always zero.
        return_attention_scores: bool; if True returns `(outputs,
            alignment_history)`.
        training: bool.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import AttentionRNNDecoder, LuongAttention
    >>> decoder = AttentionRNNDecoder(16, LuongAttention("general"))
    >>> targets = np.random.rand(2, 4, 8).astype("float32")    # (B, T, E)
    >>> memory = np.random.rand(2, 6, 10).astype("float32")    # (B, S, Dm)
    >>> outputs, alignments = decoder(targets, memory,
    ...                               return_attention_scores=True)
    >>> tuple(outputs.shape), tuple(alignments.shape)
    ((2, 4, 16), (2, 4, 6))
    >>> memory_cache = decoder.compute_cache(memory)         # once
    >>> state = decoder.init_cache(2, 4)                     # (h, a_0)
    >>> output_0, state, alignment_0 = decoder.call_cached(  # one step
    ...     targets[:, :1], state, 0, memory_cache=memory_cache)
    >>> tuple(output_0.shape), len(state), tuple(alignment_0.shape)
    ((2, 1, 16), 2, (2, 1, 6))
    >>> np.allclose(output_0, np.asarray(outputs)[:, :1], atol=1e-5)
    True

    References:
        Luong, Pham, Manning, "Effective Approaches to Attention-based Neural
        Machine Translation", EMNLP 2015 (section 3.3, input feeding).
    """

    def __init__(
        self,
        units,
        attention,
        cell="gru",
        input_feeding=True,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.cell_type = check_choice("cell", cell, tuple(CELLS))
        self.input_feeding = check_bool("input_feeding", input_feeding)
        self.dropout = check_rate("dropout", dropout)
        self.supports_masking = True
        policy = self.dtype_policy
        attention = _as_attention(attention)
        if attention.dtype_policy.name != policy.name:
            config = dict(attention.get_config(), dtype=policy)
            attention = type(attention).from_config(config)
        self.attention = attention
        self.cell = CELLS[cell](units, dtype=policy, name="cell")
        self._seed_generator = (
            keras.random.SeedGenerator() if self.dropout > 0 else None
        )

    # ----------------------------------------------------------------- build
    def build(self, inputs_shape, memory_shape):
        _check_shapes(inputs_shape, memory_shape)
        batch, input_dim = inputs_shape[0], inputs_shape[-1]
        memory_dim = memory_shape[-1]
        feed_dim = self.units if self.input_feeding else 0
        self.cell.build((batch, input_dim + feed_dim))
        if not self.attention.built:
            self.attention.build((batch, 1, self.units), tuple(memory_shape))
        self.attention_projection = keras.layers.Dense(  # W_c
            self.units,
            use_bias=False,
            kernel_initializer="glorot_uniform",
            dtype=self.dtype_policy,
            name="attention_projection",
        )
        self.attention_projection.build((batch, memory_dim + self.units))
        self.built = True

    def _legacy_projections(self):
        # Before it was a sublayer, W_c was the own variable `attention_kernel`.
        return [self.attention_projection]

    attention_kernel = property(lambda self: self.attention_projection.kernel)

    # ----------------------------------------------------------------- cache
    def _zero_state(self, batch_size):
        """The zero state `(cell_states..., a_0)`, each `(B, units)`."""
        num_states = 2 if self.cell_type == "lstm" else 1
        zeros = ops.zeros((batch_size, self.units), self.compute_dtype)
        return (zeros,) * (num_states + 1)

    def init_cache(self, batch_size, max_length, initial_state=None):
        """The step cache: the state before step 0, `(cell_states..., a_0)`,
        each `(B, units)` (`"gru"` has one cell state `h`, `"lstm"` two).

        Args:
            batch_size: int `B`.
            max_length: int, the number of target positions (the state has
                a fixed size: accepted for the contract, not used).
            initial_state: optional cell state(s), as in `call` (e.g. the
                encoder's final state); zeros by default. `a_0` is zero.
        """
        del max_length
        return self._start_state(batch_size, initial_state)

    def compute_cache(self, memory, memory_mask=None):
        """The memory cache: the memory in the compute dtype and its padding
        (the attention layer projects the keys at each step).

        Args:
            memory: `(B, S, Dm)`, the encoder outputs.
            memory_mask: optional boolean `(B, S)`, True on real source
                tokens (default: every position).

        Returns:
            `{"memory": (B, S, Dm), "memory_mask": (B, S) bool}`.
        """
        memory = ops.cast(memory, self.compute_dtype)
        if memory_mask is None:
            memory_mask = ops.ones(ops.shape(memory)[:2], "bool")
        return {"memory": memory, "memory_mask": ops.cast(memory_mask, "bool")}

    def call_cached(
        self,
        inputs,
        cache,
        cache_update_index=None,
        *,
        memory_cache,
        training=False,
    ):
        """`t` new target positions; returns `(outputs, cache, alignments)`,
        the order of every cached layer.

        Args:
            inputs: `(B, t, E)`, the (embedded) inputs of the new positions
                (`t` static).
            cache: the state, from `init_cache` or the previous step.
            cache_update_index: the position of the first new token
                (accepted for the contract; the state has no positions).
            memory_cache: from `compute_cache(memory, memory_mask)`.
            training: bool.

        Returns:
            `outputs (B, t, units)`, the new state and `alignments (B, t, S)`
            float32.
        """
        training = check_call_bool("training", training, allow_none=True)
        del cache_update_index
        check_memory_cache_dict(
            memory_cache, ("memory", "memory_mask"), "compute_cache(memory, memory_mask)"
        )
        inputs = check_new_positions(inputs, _INPUTS_LAYOUT)
        state, outputs, alignments = tuple(cache), [], []
        for t in range(inputs.shape[1]):
            output, state, alignment = self._step(
                inputs[:, t], state, memory_cache["memory"],
                memory_cache["memory_mask"], training,
            )
            outputs.append(output)
            alignments.append(alignment)
        return ops.stack(outputs, axis=1), state, ops.stack(alignments, axis=1)

    def _step(self, inputs_t, state, memory, memory_mask=None, training=False):
        """One decoder step: `inputs_t (B, E)` and `state` -> `(output_t (B,
        units), new_state, alignment_t (B, S) float32)`."""
        *cell_states, previous = state
        cell_input = ops.cast(inputs_t, self.compute_dtype)  # (B, E)
        if self.input_feeding:
            cell_input = ops.concatenate([cell_input, previous], axis=-1)
        h, cell_states = self.cell(cell_input, list(cell_states), training=training)
        attention_mask = None
        if memory_mask is not None:
            attention_mask = masks.padding_mask(
                key_mask=memory_mask, query_length=1
            )  # (B, 1, S)
        context, alignment = self.attention(
            h[:, None, :],
            memory,
            attention_mask=attention_mask,
            return_attention_scores=True,
            training=training,
        )  # (B, 1, Dm), (B, 1, S)
        output = self._attentional_state(context[:, 0], h, training)
        return output, (*cell_states, output), alignment[:, 0]

    def _attentional_state(self, context, h, training):
        """`dropout(tanh(W_c [c_t ; h_t]))`: `(B, Dm), (B, units) -> (B, units)`."""
        combined = ops.concatenate([ops.cast(context, h.dtype), h], axis=-1)
        output = ops.tanh(self.attention_projection(combined))
        if training and self._seed_generator is not None:
            output = keras.random.dropout(
                output, self.dropout, seed=self._seed_generator
            )
        return output

    # ------------------------------------------------------------------ call
    def call(
        self,
        inputs,
        memory,
        *,
        inputs_mask=None,
        memory_mask=None,
        initial_state=None,
        return_attention_scores=False,
        training=None,
    ):
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        training = check_call_bool("training", training, allow_none=True)
        inputs = ops.cast(inputs, self.compute_dtype)
        memory = ops.cast(memory, self.compute_dtype)
        _check_shapes(inputs.shape, memory.shape)
        state = self._start_state(ops.shape(inputs)[0], initial_state)
        outputs, alignments = self._decode(
            inputs, memory, memory_mask, state, training
        )
        if return_attention_scores:
            return outputs, alignments
        return outputs

    def compute_output_shape(self, inputs_shape, memory_shape):
        return tuple(inputs_shape[:-1]) + (self.units,)

    def compute_output_spec(self, inputs, memory, *, return_attention_scores=False,
                            **kwargs):
        # Not traced: torch's tracer loses the compute dtype in the step loop.
        outputs = keras.KerasTensor(
            self.compute_output_shape(inputs.shape, memory.shape), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return outputs
        alignments = tuple(inputs.shape[:2]) + (memory.shape[1],)
        return outputs, keras.KerasTensor(alignments, dtype="float32")

    def _start_state(self, batch_size, initial_state):
        """The state before step 0: the given cell state(s), `a_0 = 0`."""
        state = self._zero_state(batch_size)
        if initial_state is None:
            return state
        cell_states = initial_state
        if not isinstance(cell_states, (list, tuple)):
            cell_states = [cell_states]
        if len(cell_states) != len(state) - 1:
            raise ValueError(
                f"`initial_state` of a {self.cell_type!r} cell must hold "
                f"{len(state) - 1} tensor(s) of shape (batch, {self.units}). "
                f"Received: initial_state with {len(cell_states)} tensor(s)"
            )
        cell_states = [ops.cast(s, self.compute_dtype) for s in cell_states]
        return (*cell_states, state[-1])

    def _decode(self, inputs, memory, memory_mask, state, training):
        """Runs `step` over time; returns `(B, T, units)` and `(B, T, S)`.

        A static `T` is unrolled: inside a symbolic loop, the attention
        layers' `(B, 1, Dq) @ (Dq, U)` projections with an unknown batch size
        cannot be differentiated under XLA (their transpose permutations stop
        being compile-time constants). A dynamic `T` uses `ops.while_loop`,
        which therefore trains under XLA only with a static batch size.
        """
        length = inputs.shape[1]
        if not isinstance(length, int) or length == 0:  # None, or JAX's symbolic dim
            return self._decode_in_loop(inputs, memory, memory_mask, state, training)
        outputs, alignments = [], []
        for t in range(length):
            output, state, alignment = self._step(
                inputs[:, t], state, memory, memory_mask, training
            )
            outputs.append(output)
            alignments.append(alignment)
        return ops.stack(outputs, axis=1), ops.stack(alignments, axis=1)

    def _decode_in_loop(self, inputs, memory, memory_mask, state, training):
        """`_decode` with an `ops.while_loop` and `(T, B, .)` buffers."""
        batch_size, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        source_length = ops.shape(memory)[1]
        outputs = ops.zeros((length, batch_size, self.units), self.compute_dtype)
        alignments = ops.zeros((length, batch_size, source_length), "float32")

        def body(t, state, outputs, alignments):
            inputs_t = ops.take(inputs, t, axis=1)  # (B, E)
            output, state, alignment = self._step(
                inputs_t, state, memory, memory_mask, training
            )
            # Row t of the buffers; unlike slice_update, it has a gradient.
            row = ops.reshape(t, (1, 1))
            outputs = ops.scatter_update(outputs, row, output[None])
            alignments = ops.scatter_update(alignments, row, alignment[None])
            return t + 1, state, outputs, alignments

        _, _, outputs, alignments = ops.while_loop(
            lambda t, *_: t < length,
            body,
            (ops.convert_to_tensor(0, "int32"), state, outputs, alignments),
            maximum_iterations=length,
        )
        return (
            ops.transpose(outputs, (1, 0, 2)),  # (B, T, units)
            ops.transpose(alignments, (1, 0, 2)),  # (B, T, S)
        )

    def compute_mask(self, inputs, previous_mask=None):
        # One output per target step: the output keeps the mask of `inputs`.
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "attention": _serialize_attention(self.attention),
                "cell": self.cell_type,
                "input_feeding": self.input_feeding,
                "dropout": self.dropout,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["attention"] = _as_attention(config["attention"])
        return super().from_config(config)
