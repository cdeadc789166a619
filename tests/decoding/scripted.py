"""Scripted models: next-token tables instead of networks (keras-hub's
pattern), so that decoding is tested against hand-derived answers."""

import keras
import numpy as np
from keras import ops

PAD, START, END = 0, 1, 2


def table_step_fn(log_prob_table, source_length=3):
    """A `step_fn` whose logits are `log_prob_table[row, previous_token]`.

    `log_prob_table`: `(B, V, V)` (one table per batch row) or `(V, V)`.
    The state carries each row's batch index, so beam reordering is visible.
    """
    table = np.asarray(log_prob_table, "float32")
    if table.ndim == 2:
        table = table[None]

    def step_fn(token_ids, index, state):
        rows = state["row"]
        flat = rows * table.shape[1] + token_ids
        logits = ops.take(ops.reshape(table, (-1, table.shape[2])), flat, axis=0)
        attention = ops.one_hot(
            ops.minimum(index, source_length - 1) * ops.ones_like(token_ids), source_length
        )
        return logits, state, attention

    return step_fn


def row_state(batch_size, num_beams=1):
    return {"row": ops.repeat(ops.arange(batch_size, dtype="int32"), num_beams, axis=0)}


def log_table(vocab_size, rows):
    """A `(V, V)` log-probability table from `{previous: {token: prob}}`;
    unspecified rows put everything on END."""
    table = np.full((vocab_size, vocab_size), -np.inf, "float32")
    for previous in range(vocab_size):
        probs = rows.get(previous, {END: 1.0})
        for token, prob in probs.items():
            table[previous, token] = np.log(prob)
    return table


def compiled(fn):
    """`fn` compiled as the backend compiles generation: XLA on TensorFlow,
    `jax.jit` on JAX; unchanged (eager) on torch."""
    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True, autograph=False)
    if backend == "jax":
        import jax

        return jax.jit(fn)
    return fn
