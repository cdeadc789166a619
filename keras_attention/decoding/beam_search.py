"""Beam search with frozen finished hypotheses and the GNMT penalties.

Live and finished hypotheses are kept apart (as in Flax's WMT example): a
hypothesis that emits `end_id` leaves the live set with its score frozen and
is never extended; the live set always holds `num_beams` unfinished
hypotheses. Scores follow Wu et al. (2016), section 7:

```
lp(Y)   = ((5 + |Y|) / 6) ** length_penalty          (|Y| counts the end token)
cp(X;Y) = coverage_penalty * sum_j log(min(sum_i a_ij, 1))   (real source j)
score   = log P(Y|X) / lp(Y) + cp(X;Y)
```

`a_ij` is the step's cross-attention; a source position that was never
attended contributes `log(1e-10)` rather than `-inf`. Hypotheses still
live at `max_length` compete with the finished ones. The loop stops early
once, for every batch row, its worst finished score beats the best score any live
hypothesis can still reach (`log P / lp(max_length)`, an upper bound because
log-probabilities only decrease and `cp <= 0`).
"""

from keras import ops

from keras_attention.decoding.search import (
    BEAM_SLOTS,
    SOURCE_STATE,
    SearchOutput,
    forced_tokens,
    previous_tokens,
    write_column,
)

NEG_INF = float("-inf")
_MIN_COVERAGE = 1e-10


def length_normalizer(length, alpha):
    """GNMT `((5 + length) / 6) ** alpha`."""
    return ops.power((5.0 + ops.cast(length, "float32")) / 6.0, alpha)


def coverage_score(coverage, source_mask, beta):
    """GNMT coverage penalty over real source positions; `(B, K)`."""
    logs = ops.log(ops.clip(coverage, _MIN_COVERAGE, 1.0))
    if source_mask is not None:
        logs = ops.where(source_mask, logs, 0.0)
    return beta * ops.sum(logs, axis=-1)


def flat_rows(beam_index, num_beams):
    """Row indices into a `(B * K, ...)` tensor for beams `(B, M)`."""
    batch = ops.shape(beam_index)[0]
    offsets = ops.arange(batch, dtype="int32")[:, None] * num_beams
    return ops.reshape(offsets + beam_index, (-1,))


def gather_beams(x, beam_index, num_beams):
    """`x (B, K, ...)` -> `(B, M, ...)` picking beams `beam_index (B, M)`."""
    shape = ops.shape(x)
    rest = tuple(shape[2:])
    flat = ops.reshape(x, (shape[0] * shape[1],) + rest)
    picked = ops.take(flat, flat_rows(beam_index, num_beams), axis=0)
    return ops.reshape(picked, (shape[0], beam_index.shape[1]) + rest)


#: Entries of a dict state that a beam search carries as they are.
UNREORDERED_STATE = (SOURCE_STATE, BEAM_SLOTS)


def gather_state(state, beam_index, num_beams):
    """Reorders every tensor of the model state `(B * K, ...)`, except its
    `SOURCE_STATE` entry (the same for every beam of a source, it would be
    copied onto itself: the cross-attention keys and values of every layer)
    and its `BEAM_SLOTS` entry (self-attention caches that beams read
    through a reordered ancestry table: a step's largest copy avoided)."""
    rows = flat_rows(beam_index, num_beams)

    def reorder(x):
        return ops.take(x, rows, axis=0)

    if isinstance(state, dict):
        return {key: value if key in UNREORDERED_STATE else _map(reorder, value)
                for key, value in state.items()}
    return _map(reorder, state)


def _map(fn, structure):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map(fn, s) for s in structure)
    if isinstance(structure, dict):
        return {k: _map(fn, v) for k, v in structure.items()}
    return fn(structure)


def _best_continuations(totals, count):
    """The `count` best of `totals (B, K, V)` per batch row, as a top-k over
    `K * V` values would give them, ties included (lower beam, then lower
    token first): `(scores, beam, token)`, each `(B, count)`.

    Two rounds: the `count` best tokens of each beam, then the best of those
    `K * count`; the best overall are among them. A top-k over each beam's
    `V` values is cheaper than one over `K * V` (on XLA's CPU, a third of a
    Marian-base-sized beam step's sorting)."""
    B, K, V = totals.shape[0], totals.shape[1], totals.shape[2]
    if B is None:
        B = ops.shape(totals)[0]
    per_beam = min(count, V)
    beam_scores, beam_tokens = ops.top_k(totals, per_beam)  # (B, K, per_beam)
    return _best_of_flat(ops.reshape(beam_scores, (B, K * per_beam)),
                         ops.reshape(ops.cast(beam_tokens, "int32"), (B, K * per_beam)),
                         per_beam, count)


def _top_log_probs(logits, allowed, count):
    """The `count` best log-probabilities of each row, best first, and their
    tokens: `(N, count)` float32 and int32. `logits (N, V)` give the
    probabilities; `allowed (N, V)` is `logits` with the tokens a rule bans
    at `-inf`, and ranks them.

    The log-softmax shifts a row by one constant, so a row's best tokens are
    its best allowed logits: only those are shifted (by `log_softmax`'s
    maximum and log-sum-exp, so the same bits), and no `(N, V)`
    log-probabilities are written. On XLA's CPU, a `(N, V)` log-softmax had
    its maximum fused into the logits' matmul, which then ran a third
    slower, and its top-k read each row sequentially (`_top_k_by_chunks`)."""
    top_logits, tokens, row_max = _top_k_by_chunks(logits, allowed, count)
    log_sum = ops.log(ops.sum(ops.exp(logits - row_max), axis=-1, keepdims=True))
    return (top_logits - row_max) - log_sum, tokens


def _top_k_by_chunks(logits, allowed, k, chunk=128):
    """`ops.top_k(allowed, k)` (ties to the lower token), tokens int32, and
    the maximum of `logits (N, V)` `(N, 1)`, from one read of each.

    Each row is cut into chunks of `chunk` tokens: the `k` chunks with the
    best maxima (ties to the lower chunk) hold the row's `k` best tokens
    (a chunk left out is outranked by `k` chunk maxima, each better than
    every token of it), so a top-k
    runs over `k * chunk` tokens instead of `V` (XLA's CPU top-k reads a
    row at about 2 ns a token, a fused maximum at a fraction of that). The
    tokens past the last whole chunk are always candidates."""
    N, V = logits.shape[0], logits.shape[1]
    if N is None:
        N = ops.shape(logits)[0]
    chunks = V // chunk
    if chunks < 2 * k:
        top, tokens = ops.top_k(allowed, k)
        return top, ops.cast(tokens, "int32"), ops.max(logits, axis=-1, keepdims=True)
    whole = chunks * chunk
    allowed_chunks = ops.reshape(allowed[:, :whole], (N, chunks, chunk))
    row_max = ops.max(ops.reshape(logits[:, :whole], (N, chunks, chunk)), axis=(1, 2))[:, None]
    _, best = ops.top_k(ops.max(allowed_chunks, axis=-1), k)
    best = ops.sort(ops.cast(best, "int32"), axis=-1)  # in token order, so ties go low
    candidates = ops.reshape(ops.take_along_axis(
        allowed_chunks, ops.broadcast_to(best[:, :, None], (N, k, chunk)), axis=1), (N, k * chunk))
    ids = ops.reshape(best[:, :, None] * chunk + ops.arange(chunk, dtype="int32"), (N, k * chunk))
    if whole < V:
        row_max = ops.maximum(row_max, ops.max(logits[:, whole:], axis=-1, keepdims=True))
        candidates = ops.concatenate([candidates, allowed[:, whole:]], axis=1)
        tail = ops.arange(whole, V, dtype="int32")[None, :]
        ids = ops.concatenate([ids, ops.broadcast_to(tail, (N, V - whole))], axis=1)
    top, position = ops.top_k(candidates, k)
    return top, ops.take_along_axis(ids, ops.cast(position, "int32"), axis=1), row_max


def _best_of_each_beam(live_scores, top_log_probs, top_tokens, count):
    """`_best_continuations` from each beam's best log-probabilities and
    their tokens `(B * K, per_beam)`, best first, and `live_scores (B, K)`:
    the best continuation of all is among them."""
    B, K = live_scores.shape[0], live_scores.shape[1]
    if B is None:
        B = ops.shape(live_scores)[0]
    per_beam = top_log_probs.shape[-1]
    totals = live_scores[:, :, None] + ops.reshape(top_log_probs, (B, K, per_beam))
    return _best_of_flat(ops.reshape(totals, (B, K * per_beam)),
                         ops.reshape(top_tokens, (B, K * per_beam)), per_beam, count)


def _best_of_flat(scores, tokens, per_beam, count):
    """The `count` best of `scores (B, K * per_beam)`: `(scores, beam,
    token)`, each `(B, count)`."""
    top_scores, position = ops.top_k(scores, count)
    position = ops.cast(position, "int32")
    token = ops.take_along_axis(tokens, position, axis=1)
    return top_scores, position // per_beam, token


def extend_beams(step_fn, live_tokens, live_scores, index, state, *, start_id, vocab_size,
                 prompt=None, process_scores=None, ruled_out=NEG_INF):
    """One step of a beam search: every live beam extended by every token,
    the best `C = min(2K, K * V)` continuations kept.

    Args:
        step_fn: the model's step function over `B * K` rows.
        live_tokens: int32 `(B, K, L)`, the live hypotheses.
        live_scores: float32 `(B, K)`, their summed log-probabilities.
        index: the position being written.
        state: the model state, `B * K` rows.
        start_id, vocab_size: ints (`V`).
        prompt: optional int32 `(B, P)` forced prefix: inside it, the
            forced token adds 0 to the score and every other one
            `ruled_out`.
        process_scores: optional `process(log_probs (B * K, V), index,
            tokens (B * K, L)) -> log_probs` after the log-softmax. One
            whose `rules_out_only` attribute is True (it only sets scores
            to `-inf`, see `generation_rules.ScoresProcess`) is applied to
            the logits instead, and the step writes no `(B * K, V)`
            log-probabilities: the same tokens, a faster step.
        ruled_out: the score of a token the prompt rules out.

    Returns:
        A dict: `scores (B, C)` (summed log-probabilities, best first),
        `beam` and `token` int32 `(B, C)` (the beam each extends and the
        token added), `tokens (B, C, L)` (the extended hypotheses), and
        the step's `state` and `attention` (rows of the live beams).
    """
    B, K, L = live_tokens.shape[0], live_tokens.shape[1], live_tokens.shape[2]
    if B is None:  # a batch known only at run time (a serving graph's loop)
        B = ops.shape(live_tokens)[0]
    V = vocab_size
    flat_tokens = ops.reshape(live_tokens, (B * K, L))
    logits, new_state, attention = step_fn(
        previous_tokens(flat_tokens, index, start_id), index, state
    )
    count = min(2 * K, K * V)
    logits = ops.cast(logits, "float32")
    rules_on_logits = process_scores is None or getattr(process_scores, "rules_out_only", False)
    if prompt is None and rules_on_logits:
        allowed = logits if process_scores is None else process_scores(logits, index, flat_tokens)
        top_log_probs, top_tokens = _top_log_probs(logits, allowed, min(count, V))
        top_scores, beam, token = _best_of_each_beam(
            live_scores, top_log_probs, top_tokens, count)
    else:
        log_probs = ops.log_softmax(logits, axis=-1)
        if process_scores is not None:
            log_probs = process_scores(log_probs, index, flat_tokens)
        log_probs = ops.reshape(log_probs, (B, K, V))
        if prompt is not None:
            forced = forced_tokens(ops.zeros((B,), "int32"), prompt, index)
            is_forced = ops.arange(V)[None, None, :] == forced[:, None, None]
            # Prompt tokens are given, not scored: they add 0 to log P.
            in_prompt = index < prompt.shape[1]
            log_probs = ops.where(in_prompt, ops.where(is_forced, 0.0, ruled_out), log_probs)
        top_scores, beam, token = _best_continuations(live_scores[:, :, None] + log_probs, count)
    tokens = gather_beams(live_tokens, beam, K)
    C = token.shape[1]
    tokens = ops.reshape(
        write_column(ops.reshape(tokens, (B * C, L)), index, ops.reshape(token, (B * C,))),
        (B, C, L),
    )
    return {"scores": top_scores, "beam": beam, "token": token, "tokens": tokens,
            "state": new_state, "attention": attention}


def beam_search(
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
    length_penalty=0.0,
    coverage_penalty=0.0,
    source_mask=None,
    source_length=None,
    num_return_sequences=1,
    prompt=None,
    collect_attention=False,
    process_scores=None,
):
    """Beam search over `step_fn` (see `search.py`).

    Args:
        step_fn: the model's step function; `state` has `B * K` rows, the
            `K` beams of batch row `b` at rows `b * K .. b * K + K - 1`
            (tile the model state with `ops.repeat(x, K, axis=0)`).
        state: initial model state with `B * K` rows.
        batch_size, num_beams: `B`, `K`.
        max_length: `L`, the most tokens per hypothesis.
        start_id, end_id, pad_id: ints.
        vocab_size: `V`.
        length_penalty: `alpha` >= 0 (0: raw log-probability).
        coverage_penalty: `beta` >= 0.
        source_mask: boolean `(B * K, S)`, real source positions (for the
            coverage penalty).
        source_length: `S` (for coverage and attention buffers).
        num_return_sequences: `n <= K` best hypotheses to return.
        prompt: optional int32 `(B, P)` forced prefix.
        collect_attention: also return the attention of each hypothesis.
        process_scores: optional `process(log_probs (B * K, V), index,
            tokens (B * K, L)) -> log_probs`, applied after the log-softmax
            (e.g. `GenerationRules.processor`).

    Returns:
        `SearchOutput` with `token_ids (B, n, L)` sorted best first and their
        `scores (B, n)`.
    """
    B, K, L, V = batch_size, num_beams, max_length, vocab_size
    prompt_length = 0 if prompt is None else prompt.shape[1]
    track_coverage = source_length is not None
    S = source_length if track_coverage else 0
    S_attn = S if collect_attention else 0
    alpha = ops.cast(length_penalty, "float32")
    beta = ops.cast(coverage_penalty, "float32")
    beam_source_mask = None
    if source_mask is not None:
        beam_source_mask = ops.reshape(source_mask, (B, K, ops.shape(source_mask)[-1]))

    first_alive = ops.concatenate(
        [ops.zeros((B, 1)), ops.full((B, K - 1), NEG_INF)], axis=1
    )
    loop_vars = {
        "index": ops.zeros((), "int32"),
        "live_tokens": ops.full((B, K, L), pad_id, "int32"),
        "live_logprob": first_alive,
        "live_coverage": ops.zeros((B, K, S)),
        "live_attention": ops.zeros((B, K, L if collect_attention else 0, S_attn)),
        "done_tokens": ops.full((B, K, L), pad_id, "int32"),
        "done_scores": ops.full((B, K), NEG_INF),
        "done_attention": ops.zeros((B, K, L if collect_attention else 0, S_attn)),
        "state": state,
    }

    def candidates(v):
        """Extends every live beam by every token; keeps the best 2K."""
        index = v["index"]
        step = extend_beams(step_fn, v["live_tokens"], v["live_logprob"], index, v["state"],
                            start_id=start_id, vocab_size=V, prompt=prompt,
                            process_scores=process_scores)
        beam = step["beam"]
        attention = ops.reshape(
            ops.cast(step["attention"], "float32"), (B, K, ops.shape(step["attention"])[-1])
        )
        coverage = v["live_coverage"]
        if track_coverage:
            coverage = coverage + attention
        history = v["live_attention"]
        if collect_attention:
            history = ops.reshape(
                write_column(ops.reshape(history, (B * K, L, S)), index,
                             ops.reshape(attention, (B * K, S))),
                (B, K, L, S),
            )
        return {
            "logprob": step["scores"],
            "beam": beam,
            "token": step["token"],
            "tokens": step["tokens"],
            "coverage": gather_beams(coverage, beam, K),
            "history": gather_beams(history, beam, K),
            "state": step["state"],
        }

    def penalised(logprob, coverage, length):
        score = logprob / length_normalizer(length, alpha)
        if track_coverage:
            mask = None if beam_source_mask is None else beam_source_mask[:, :1]
            score = score + coverage_score(coverage, mask, beta)
        return score

    def body(v):
        c = candidates(v)
        index = v["index"]
        # A hypothesis ends only if its end token ranks among the top K
        # candidates (as in fairseq), so that num_beams=1 is exactly greedy.
        in_top_k = ops.arange(c["token"].shape[1])[None, :] < K
        ended = ops.logical_and(
            ops.logical_and(c["token"] == end_id, index >= prompt_length), in_top_k
        )
        # Live: the best K candidates that are not end tokens.
        is_end = c["token"] == end_id
        live_logprob, keep = ops.top_k(ops.where(is_end, NEG_INF, c["logprob"]), K)
        keep = ops.cast(keep, "int32")
        # Finished: candidates that ended, frozen with their final score,
        # merged with the finished set so far.
        new_scores = ops.where(ended, penalised(c["logprob"], c["coverage"], index + 1), NEG_INF)
        all_scores = ops.concatenate([v["done_scores"], new_scores], axis=1)
        done_scores, done_keep = ops.top_k(all_scores, K)
        done_keep = ops.cast(done_keep, "int32")
        all_tokens = ops.concatenate([v["done_tokens"], c["tokens"]], axis=1)
        all_history = ops.concatenate([v["done_attention"], c["history"]], axis=1)
        return {
            "index": index + 1,
            "live_tokens": gather_beams(c["tokens"], keep, 2 * K),
            "live_logprob": live_logprob,
            "live_coverage": gather_beams(c["coverage"], keep, 2 * K),
            "live_attention": gather_beams(c["history"], keep, 2 * K),
            "done_tokens": gather_beams(all_tokens, done_keep, 3 * K),
            "done_scores": done_scores,
            "done_attention": gather_beams(all_history, done_keep, 3 * K),
            "state": gather_state(
                c["state"], ops.take_along_axis(c["beam"], keep, axis=1), K
            ),
        }

    def cond(v):
        best_possible = v["live_logprob"][:, 0] / length_normalizer(L, alpha)
        worst_done = v["done_scores"][:, K - 1]
        all_done = ops.all(worst_done > best_possible)
        return ops.logical_and(v["index"] < L, ops.logical_not(all_done))

    final = ops.while_loop(cond, body, loop_vars, maximum_iterations=L)
    # Hypotheses still live at the end (cut by max_length) compete with the
    # finished ones, scored at their current length.
    live_scores = penalised(final["live_logprob"], final["live_coverage"], final["index"])
    scores = ops.concatenate([final["done_scores"], live_scores], axis=1)
    scores, best = ops.top_k(scores, num_return_sequences)
    best = ops.cast(best, "int32")
    tokens = ops.concatenate([final["done_tokens"], final["live_tokens"]], axis=1)
    attention = None
    if collect_attention:
        attention = gather_beams(
            ops.concatenate([final["done_attention"], final["live_attention"]], axis=1),
            best,
            2 * K,
        )
    return SearchOutput(gather_beams(tokens, best, 2 * K), scores, None, attention)
