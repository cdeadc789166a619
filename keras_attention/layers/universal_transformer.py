"""`UniversalTransformerEncoder`: one Transformer block applied recurrently over depth."""

import math

import keras
from keras import ops

from keras_attention.layers.output_specs import traced_output_spec
from keras_attention.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_attention.validation import (
    check_bool,
    check_call_bool,
    check_non_negative_float,
    check_positive_int,
    check_rate,
)


def step_signal(length, dim, step):
    """`P + S_step`: `(T, D)` float32, the signal added before step `step`
    (0-based) to a sequence of `length` positions of size `dim`."""
    return sinusoid(ops.arange(length), dim) + sinusoid(ops.convert_to_tensor([step]), dim)


def sinusoid(positions, dim):
    """The sinusoidal signal of Vaswani et al. at float `positions` `(N,)`:
    `(N, dim)`, sines in the first half, cosines in the second (float32)."""
    half = dim // 2
    scale = math.log(10000.0) / max(half - 1, 1)
    inverse_timescales = ops.exp(ops.arange(half, dtype="float32") * -scale)
    angles = ops.cast(positions, "float32")[:, None] * inverse_timescales[None, :]
    signal = ops.concatenate([ops.sin(angles), ops.cos(angles)], axis=-1)
    if dim % 2:
        signal = ops.pad(signal, [[0, 0], [0, 1]])
    return signal


@keras.saving.register_keras_serializable(package="keras_attention")
class UniversalTransformerEncoder(keras.layers.Layer):
    """The Universal Transformer encoder (Dehghani et al., ICLR 2019).

    The same `TransformerEncoderBlock` (one set of weights) is applied
    `max_steps` times; before each step the position signal `P` (over the
    `T` positions) and the timestep signal `S_t` (over steps) are added:

    ```
    h^0 = x                                                  (B, T, D)
    h^t = Block(h^{t-1} + P + S_t)                           t = 1..max_steps
    y   = LN(h^N)        (LN only with norm_first=True)
    ```

    With `act=True`, adaptive computation time (Graves, 2016) halts each
    position on its own: a halting unit gives `p^t = sigmoid(w . (h^{t-1} +
    P + S_t) + b)` per position; a position runs while its cumulative `p`
    stays at most `halting_threshold`, its last step gets the remainder `R
    = 1 - sum p` (every position halts at `max_steps` at the latest), and
    the output is the weighted sum of the steps' states, `y = LN(sum_t w^t
    h^t)`, `w^t = p^t` before halting, `R` at it, 0 after. The ponder cost
    `ponder_cost * mean(N + R)` over real positions (`N` the steps taken)
    is added as a layer loss (`layer.losses`, so `fit` minimises it).

    Masks: a Keras mask or `x_mask` `(B, T)` (True = real position) masks
    padded keys in every step; padded positions give 0 in the output (and
    0 steps in the halting output), and count in no ponder cost.

    Shapes: `x` `(B, T, D)` -> `(B, T, D)`; per-step attention `(B,
    max_steps, H, T, T)`; halting steps `(B, T)`.

    Args:
        intermediate_dim: positive int, the block's feed-forward size.
        num_heads: positive int, dividing `D`. (The order of
            `TransformerEncoderBlock` and keras-hub's blocks.)
        max_steps: positive int, the recurrence depth (ACT: the most steps).
        act: bool, adaptive computation time (per-position halting).
        halting_threshold: float in (0, 1), the cumulative halting
            probability that stops a position (the paper's `1 - epsilon`).
        ponder_cost: non-negative float, the weight of the ACT ponder cost.
        dropout: float in [0, 1), the block's dropout.
        norm_first: bool, pre-norm block (and a final layer norm) or post-norm.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        x: `(B, T, D)`.
        x_mask: optional boolean `(B, T)`, True for real positions (the
            Keras mask is used when present).
        attention_mask: optional boolean `(B, T, T)`, True = may attend.
        return_attention_scores: bool, also return each step's attention
            weights `(B, max_steps, H, T, T)`.
        return_halting: bool, also return the number of steps each position
            was updated `(B, T)` float32 (`max_steps` everywhere without ACT).
        training: bool.

    Returns:
        `y`, or `(y, scores)`, `(y, halting)`, `(y, scores, halting)` as asked.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import UniversalTransformerEncoder
    >>> encoder = UniversalTransformerEncoder(16, 2, max_steps=3, act=True)
    >>> y, steps = encoder(np.ones((2, 5, 8), "float32"), return_halting=True)
    >>> tuple(y.shape), tuple(steps.shape)
    ((2, 5, 8), (2, 5))
    >>> bool((np.asarray(steps) >= 1).all() and (np.asarray(steps) <= 3).all())
    True

    References:
        Dehghani, Gouws, Vinyals, Uszkoreit, Kaiser, "Universal
        Transformers", ICLR 2019. Graves, "Adaptive Computation Time for
        Recurrent Neural Networks", 2016.
    """

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        max_steps=4,
        act=False,
        halting_threshold=0.99,
        ponder_cost=0.01,
        dropout=0.0,
        norm_first=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.intermediate_dim = check_positive_int("intermediate_dim", intermediate_dim)
        self.max_steps = check_positive_int("max_steps", max_steps)
        self.act = check_bool("act", act)
        if isinstance(halting_threshold, bool) or not (
            isinstance(halting_threshold, (int, float)) and 0.0 < halting_threshold < 1.0
        ):
            raise ValueError(
                "Argument `halting_threshold` must be a float in (0, 1). "
                f"Received: halting_threshold={halting_threshold!r}"
            )
        self.halting_threshold = float(halting_threshold)
        self.ponder_cost = check_non_negative_float("ponder_cost", ponder_cost)
        self.dropout = check_rate("dropout", dropout)
        self.norm_first = check_bool("norm_first", norm_first)
        self.supports_masking = True

    def build(self, x_shape):
        if x_shape is None or len(x_shape) != 3 or x_shape[-1] is None:
            raise ValueError(
                "`x` must have shape (batch, seq_len, dim) with a known dim. "
                f"Received: x.shape={x_shape}"
            )
        self.block = TransformerEncoderBlock(
            intermediate_dim=self.intermediate_dim, num_heads=self.num_heads, dropout=self.dropout,
            norm_first=self.norm_first, dtype=self.dtype_policy, name="block",
        )
        self.block.build(x_shape)
        self.final_norm = None
        if self.norm_first:
            self.final_norm = keras.layers.LayerNormalization(
                epsilon=1e-5, dtype=self.dtype_policy, name="final_norm"
            )
            self.final_norm.build(x_shape)
        self.halting_unit = None
        if self.act:
            self.halting_unit = keras.layers.Dense(
                1, activation="sigmoid", dtype="float32", name="halting_unit",
                bias_initializer=keras.initializers.Constant(1.0),  # as tensor2tensor
            )
            self.halting_unit.build(tuple(x_shape[:-1]) + (x_shape[-1],))
        self.built = True

    def call(
        self,
        x,
        mask=None,
        *,
        x_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        return_halting=False,
        training=None,
    ):
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        return_halting = check_call_bool("return_halting", return_halting)
        training = check_call_bool("training", training, allow_none=True)
        padding = mask if mask is not None else x_mask
        real = ops.ones(ops.shape(x)[:2], "float32")
        if padding is not None:
            real = ops.cast(padding, "float32")
        state, scores, halting = self._recur(x, padding, real, attention_mask,
                                             return_attention_scores, training)
        if self.final_norm is not None:
            state = self.final_norm(state)
        state = ops.where(ops.expand_dims(real > 0, -1), state, ops.zeros_like(state))
        outputs = [state]
        if return_attention_scores:
            outputs.append(ops.stack(scores, axis=1))  # (B, steps, H, T, T)
        if return_halting:
            outputs.append(ops.where(real > 0, halting, 0.0))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _step(self, state, step, padding, attention_mask, return_attention_scores, training):
        """One application of the shared block: `(input, output, scores)`."""
        signal = ops.cast(step_signal(ops.shape(state)[1], state.shape[-1], step), state.dtype)
        state = state + signal[None]
        output = self.block(state, x_mask=padding, attention_mask=attention_mask,
                            return_attention_scores=return_attention_scores,
                            training=training)
        if return_attention_scores:
            return state, output[0], output[1]
        return state, output, None

    def _recur(self, x, padding, real, attention_mask, return_attention_scores, training):
        """The recurrence: `(state, per-step scores, steps per position)`."""
        scores = []
        state = x
        if not self.act:
            for step in range(self.max_steps):
                _, state, step_scores = self._step(state, step, padding, attention_mask,
                                                   return_attention_scores, training)
                scores.append(step_scores)
            return state, scores, ops.full(ops.shape(real), float(self.max_steps))
        running = ops.ones_like(real)  # 1 until the position halts (B, T)
        halting = ops.zeros_like(real)  # cumulative halting probability
        remainders = ops.zeros_like(real)
        updates = ops.zeros_like(real)  # steps taken (B, T)
        output = ops.zeros(ops.shape(x), "float32")
        for step in range(self.max_steps):
            inputs, state, step_scores = self._step(state, step, padding, attention_mask,
                                                    return_attention_scores, training)
            scores.append(step_scores)
            p = ops.squeeze(self.halting_unit(ops.cast(inputs, "float32")), -1)  # (B, T)
            if step == self.max_steps - 1:  # every position still running halts here
                halts, keeps = running, ops.zeros_like(running)
            else:
                reached = ops.cast(halting + p * running > self.halting_threshold, "float32")
                halts, keeps = reached * running, (1.0 - reached) * running
            halting = halting + p * keeps
            remainder = halts * (1.0 - halting)
            remainders = remainders + remainder
            halting = halting + remainder
            updates = updates + keeps + halts
            running = keeps
            weight = p * keeps + remainder
            output = output + ops.cast(state, "float32") * weight[..., None]
        if self.ponder_cost:
            ponder_time = ops.where(real > 0, updates + remainders, 0.0)  # (B, T)
            ponder = ops.sum(ponder_time) / ops.maximum(ops.sum(real), 1.0)
            self.add_loss(self.ponder_cost * ponder)
        return ops.cast(output, self.compute_dtype), scores, updates

    def compute_output_shape(self, x_shape):
        return tuple(x_shape)

    def compute_output_spec(self, *args, **kwargs):
        # Traced: the outputs depend on `return_attention_scores` and
        # `return_halting`.
        return traced_output_spec(self, *args, **kwargs)

    def compute_mask(self, x, previous_mask=None):
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "max_steps": self.max_steps,
            "act": self.act,
            "halting_threshold": self.halting_threshold,
            "ponder_cost": self.ponder_cost,
            "dropout": self.dropout,
            "norm_first": self.norm_first,
        })
        return config
