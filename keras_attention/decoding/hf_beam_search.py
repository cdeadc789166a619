"""Beam search scored and stopped exactly as `transformers`' `generate` does.

Pretrained checkpoints (Marian, BART, T5, ...) were tuned with Hugging Face's beam
search; this loop reproduces its `_beam_search` step for step, so that the
same next-token scores give the same tokens and scores:

- a finished hypothesis scores `sum of log-probabilities / length **
  length_penalty`, where `length` counts the generated tokens after the
  start token and the prompt, the end token included;
- at every step the best `2K` continuations of the `K` live beams are kept;
  those among the best `K` that end (the end token, or the last step
  `max_length - 1`) join the finished set, which keeps the best `K`; the
  best `K` that do not end stay live;
- `early_stopping=True`: a batch row stops taking finished hypotheses (and
  the search stops) once it holds `K`; `False`: a row stops once the best
  live hypothesis, scored at its current length, cannot beat the worst
  finished one; `"never"`: the same test at the longest possible length
  when `length_penalty > 0` (the exact bound);
- the result is the best finished hypothesis (a hypothesis cut by
  `max_length` is finished at its length).

Our own `beam_search` (GNMT penalty, coverage) stays the default of the
recipes; `BeamSampler(length_penalty_form="hf")` runs this one.
"""

from keras import ops

from keras_attention.decoding.beam_search import extend_beams, gather_beams, gather_state
from keras_attention.decoding.search import SearchOutput

#: What `transformers` adds to a score to rule a hypothesis out.
RULED_OUT = -1.0e9


def hf_beam_search(
    step_fn,
    state,
    *,
    batch_size,
    num_beams,
    max_length,
    start_id,
    end_id,
    pad_id,
    vocab_size,
    length_penalty=1.0,
    early_stopping=False,
    num_return_sequences=1,
    prompt=None,
    process_scores=None,
):
    """Hugging Face beam search over `step_fn` (see `search.py`).

    Args:
        step_fn: the model's step function over `B * K` rows, the `K` beams
            of batch row `b` at rows `b * K .. b * K + K - 1`.
        state: initial model state with `B * K` rows.
        batch_size, num_beams: `B`, `K`.
        max_length: `L`, the most generated tokens per hypothesis (prompt
            included; `transformers`' `max_length` is `L + 1`, as it counts
            the decoder start token).
        start_id, end_id, pad_id: ints.
        vocab_size: `V` (at least `2K` for results equal to `transformers`').
        length_penalty: the exponent of the length, any finite float or
            scalar tensor (`transformers`' default 1.0).
        early_stopping: `True`, `False` or `"never"`, as in `transformers`.
        num_return_sequences: `n <= K` best hypotheses to return.
        prompt: optional int32 `(B, P)` forced prefix (not scored; lengths
            count the tokens after it).
        process_scores: optional `process(log_probs (B * K, V), index,
            tokens (B * K, L)) -> log_probs` after the log-softmax (e.g.
            `GenerationRules.processor`).

    Returns:
        `SearchOutput` with `token_ids (B, n, L)` best first (padded with
        `pad_id` after the end token) and their `scores (B, n)`.
    """
    if not any(early_stopping is value for value in (True, False)) and early_stopping != "never":
        raise ValueError(
            "Argument `early_stopping` must be True, False or 'never'. "
            f"Received: early_stopping={early_stopping!r}"
        )
    B, K, L, V = batch_size, num_beams, max_length, vocab_size
    C = min(2 * K, K * V)
    P = 0 if prompt is None else prompt.shape[1]
    alpha = ops.cast(length_penalty, "float32")
    top_num_beams = ops.arange(C)[None, :] < K

    first_running = ops.concatenate(
        [ops.zeros((B, 1)), ops.full((B, K - 1), RULED_OUT)], axis=1
    )
    loop_vars = {
        "index": ops.zeros((), "int32"),
        "go_on": ops.ones((), "bool"),
        "running_tokens": ops.full((B, K, L), pad_id, "int32"),
        "running_scores": first_running,
        "done_tokens": ops.full((B, K, L), pad_id, "int32"),
        "done_scores": ops.full((B, K), RULED_OUT),
        "done": ops.zeros((B, K), "bool"),
        "improvable": ops.ones((B,), "bool"),
        "state": state,
    }

    def body(v):
        index = v["index"]
        step = extend_beams(step_fn, v["running_tokens"], v["running_scores"], index,
                            v["state"], start_id=start_id, vocab_size=V, prompt=prompt,
                            process_scores=process_scores, ruled_out=RULED_OUT)
        top_scores, beam, token, tokens = (step[k] for k in ("scores", "beam", "token", "tokens"))
        in_prompt = index < P
        ends = ops.logical_or(
            ops.logical_and(token == end_id, ops.logical_not(in_prompt)), index == L - 1
        )
        # Live: the best K continuations that do not end.
        running_candidates = top_scores + ops.cast(ends, "float32") * RULED_OUT
        running_scores, keep = ops.top_k(running_candidates, K)
        keep = ops.cast(keep, "int32")
        # Finished: the continuations among the best K that end, scored.
        just_done = ops.logical_and(ends, top_num_beams)
        length = ops.cast(index + 1 - P, "float32")
        scores = top_scores / ops.power(ops.maximum(length, 1.0), alpha)
        if early_stopping is True:
            full = ops.all(v["done"], axis=1, keepdims=True)
            scores = scores + ops.cast(full, "float32") * RULED_OUT
        scores = scores + ops.cast(ops.logical_not(v["improvable"]), "float32")[:, None] * RULED_OUT
        scores = scores + ops.cast(ops.logical_not(just_done), "float32") * RULED_OUT
        merged_scores = ops.concatenate([v["done_scores"], scores], axis=1)
        done_scores, done_keep = ops.top_k(merged_scores, K)
        done_keep = ops.cast(done_keep, "int32")
        done_tokens = gather_beams(
            ops.concatenate([v["done_tokens"], tokens], axis=1), done_keep, K + C
        )
        done = ops.take_along_axis(
            ops.concatenate([v["done"], just_done], axis=1), done_keep, axis=1
        )
        # Can a live hypothesis still beat the worst finished one?
        if early_stopping == "never":
            best_length = ops.where(alpha > 0.0, float(L - P), length)
        else:
            best_length = length
        best_possible = running_scores[:, 0] / ops.power(ops.maximum(best_length, 1.0), alpha)
        worst_done = ops.where(done, ops.min(done_scores, axis=1, keepdims=True), RULED_OUT)
        improvable = ops.logical_and(
            v["improvable"], ops.any(best_possible[:, None] > worst_done, axis=1)
        )
        improvable = ops.where(in_prompt, v["improvable"], improvable)
        go_on = ops.any(improvable)
        if early_stopping is True:
            go_on = ops.logical_and(go_on, ops.logical_not(ops.all(done)))
        go_on = ops.logical_and(go_on, ops.logical_not(ops.all(ends)))
        return {
            "index": index + 1,
            "go_on": go_on,
            "running_tokens": gather_beams(tokens, keep, C),
            "running_scores": running_scores,
            "done_tokens": done_tokens,
            "done_scores": done_scores,
            "done": done,
            "improvable": improvable,
            "state": gather_state(step["state"], ops.take_along_axis(beam, keep, axis=1), K),
        }

    def cond(v):
        return ops.logical_and(v["index"] < L, v["go_on"])

    final = ops.while_loop(cond, body, loop_vars, maximum_iterations=L)
    n = num_return_sequences
    return SearchOutput(final["done_tokens"][:, :n], final["done_scores"][:, :n], None, None)
