"""Token-by-token decoding loops over a model-free `step_fn`.

The contract between a model and these loops (after keras-hub's `next`):

```
step_fn(token_ids, index, state) -> (logits, state, attention)
    token_ids: int32 (N,), the previous token of each row
    index:     int32 scalar, the position being generated
    state:     any nested structure of tensors with leading dimension N
               (caches, masks); shapes never change. In a dict state, the
               entry "source" (SOURCE_STATE) holds what the model computed
               once from its source (cross-attention keys and values, the
               source mask): the step returns it unchanged, and it is the
               same for every beam of a source, so beam search carries it
               without reordering it. The entry "beam_slots" (BEAM_SLOTS)
               holds caches of `B` sources in one slot per beam, which each
               row writes in place and reads through an ancestry table kept
               elsewhere in the state (`keras_attention.layers.beam_slots`):
               beam search reorders the table, never the slots
    logits:    float32 (N, V)
    attention: float32 (N, S), the cross-attention of this step
```

Loops run inside `keras.ops.while_loop` with fixed-size buffers, so they
compile with XLA. Only newly generated tokens can stop a row (a prompt never
does); finished rows are padded with `pad_id`.
"""

import collections

from keras import ops

#: The entry of a dict decoder state that beam search never reorders (see
#: the module docstring).
SOURCE_STATE = "source"

#: The entry of a dict decoder state that holds caches in beam slots (see the
#: module docstring): updated by every step, never reordered.
BEAM_SLOTS = "beam_slots"

SearchOutput = collections.namedtuple(
    "SearchOutput", ["token_ids", "scores", "logits", "attention"]
)
SearchOutput.__doc__ = """What a search returns.

token_ids: int32 `(B, L)`, or `(B, n, L)` for beam search n-best lists.
scores: float32 `(B,)` sum of log-probabilities (sampling) or `(B, n)`
    penalised beam scores.
logits: float32 `(B, L, V)` step logits (sampling loops with
    `collect_logits=True`), else None.
attention: float32 `(B, L, S)` (or `(B, n, L, S)`) cross-attention per
    generated token with `collect_attention=True`, else None.
"""


def previous_tokens(tokens, index, start_id):
    """The input token of step `index`: `start_id` at 0, else `tokens[:, index-1]`."""
    column = ops.take(tokens, ops.maximum(index - 1, 0), axis=1)
    return ops.where(index == 0, ops.cast(start_id, "int32"), column)


def forced_tokens(chosen, prompt, index):
    """Within the prompt, the prompt's token replaces the chosen one."""
    if prompt is None:
        return chosen
    prompt_length = prompt.shape[1]
    forced = ops.take(prompt, ops.minimum(index, prompt_length - 1), axis=1)
    return ops.where(index < prompt_length, forced, chosen)


def write_column(buffer, index, column):
    """`buffer[:, index] = column` for a `(B, L, ...)` buffer."""
    zero = ops.zeros((), "int32")
    start = (zero, ops.cast(index, "int32")) + (zero,) * (len(buffer.shape) - 2)
    return ops.slice_update(buffer, start, ops.expand_dims(column, 1))


def sampling_search(
    step_fn,
    state,
    *,
    batch_size,
    max_length,
    start_id,
    end_id,
    pad_id,
    select,
    prompt=None,
    vocab_size=None,
    source_length=None,
    collect_logits=False,
    collect_attention=False,
    process_scores=None,
):
    """Greedy or sampled decoding, one token per step.

    Args:
        step_fn: see the module docstring.
        state: the initial model state (N = batch_size rows).
        batch_size: int `B`.
        max_length: int `L`, the number of tokens to produce.
        start_id, end_id, pad_id: ints.
        select: `select(logits (B, V), index) -> int32 (B,)`.
        prompt: optional int32 `(B, P)` tokens forced at the first `P`
            positions.
        vocab_size, source_length: sizes of the optional buffers.
        collect_logits, collect_attention: fill `logits` / `attention`.
        process_scores: optional `process(logits (B, V), index, tokens (B,
            L)) -> logits`, applied before `select` (e.g.
            `GenerationRules.processor`); the collected logits and the scores
            are those it returns.

    Returns:
        A `SearchOutput` with `token_ids (B, L)` and `scores (B,)`, the sum
        of the log-probabilities of the generated tokens (prompt tokens are
        given, not scored).
    """
    prompt_length = 0 if prompt is None else prompt.shape[1]
    tokens = ops.full((batch_size, max_length), pad_id, "int32")
    finished = ops.zeros((batch_size,), "bool")
    logprob = ops.zeros((batch_size,), "float32")
    logits_buffer = ops.zeros(
        (batch_size, max_length if collect_logits else 0, vocab_size if collect_logits else 0)
    )
    attention_buffer = ops.zeros(
        (
            batch_size,
            max_length if collect_attention else 0,
            source_length if collect_attention else 0,
        )
    )

    def cond(index, tokens, finished, *_):
        return ops.logical_and(index < max_length, ops.logical_not(ops.all(finished)))

    def body(index, tokens, finished, logprob, state, logits_buffer, attention_buffer):
        logits, state, attention = step_fn(
            previous_tokens(tokens, index, start_id), index, state
        )
        logits = ops.cast(logits, "float32")
        if process_scores is not None:
            logits = process_scores(logits, index, tokens)
        chosen = forced_tokens(select(logits, index), prompt, index)
        chosen = ops.where(finished, pad_id, chosen)
        log_probs = ops.log_softmax(logits, axis=-1)
        token_logprob = ops.take_along_axis(log_probs, chosen[:, None], axis=1)[:, 0]
        scored = ops.logical_and(ops.logical_not(finished), index >= prompt_length)
        logprob = logprob + ops.where(scored, token_logprob, 0.0)
        tokens = write_column(tokens, index, chosen)
        if collect_logits:
            logits_buffer = write_column(logits_buffer, index, logits)
        if collect_attention:
            attention_buffer = write_column(
                attention_buffer, index, ops.cast(attention, "float32")
            )
        newly_ended = ops.logical_and(chosen == end_id, index >= prompt_length)
        finished = ops.logical_or(finished, newly_ended)
        return index + 1, tokens, finished, logprob, state, logits_buffer, attention_buffer

    loop_vars = (
        ops.zeros((), "int32"),
        tokens,
        finished,
        logprob,
        state,
        logits_buffer,
        attention_buffer,
    )
    _, tokens, _, logprob, _, logits_buffer, attention_buffer = ops.while_loop(
        cond, body, loop_vars, maximum_iterations=max_length
    )
    return SearchOutput(
        tokens,
        logprob,
        logits_buffer if collect_logits else None,
        attention_buffer if collect_attention else None,
    )
