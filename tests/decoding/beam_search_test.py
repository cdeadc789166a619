import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_attention.decoding import beam_search, sampling_search, select_tokens
from tests.decoding.scripted import END, PAD, START, log_table, row_state, table_step_fn
from tests.decoding.scripted import compiled as compile_fn

V = 6


def run_beam(table, num_beams=2, max_length=5, batch_size=1, compiled=False, **kwargs):
    def run():
        return beam_search(
            table_step_fn(table), row_state(batch_size, num_beams), batch_size=batch_size,
            num_beams=num_beams, max_length=max_length, start_id=START, end_id=END,
            pad_id=PAD, vocab_size=V, **kwargs,
        )

    out = compile_fn(run)() if compiled else run()
    return np.asarray(out.token_ids), np.asarray(out.scores)


def run_greedy(table, max_length=5, batch_size=1):
    out = sampling_search(
        table_step_fn(table), row_state(batch_size), batch_size=batch_size,
        max_length=max_length, start_id=START, end_id=END, pad_id=PAD,
        select=lambda logits, i: select_tokens(logits, strategy="greedy", k=1, p=1.0,
                                               temperature=1.0, seed=0, step=i),
    )
    return np.asarray(out.token_ids), np.asarray(out.scores)


# EOS first (p=.6) against a continuation (p=.4, then p=.9 of EOS).
EOS_FIRST = log_table(V, {START: {END: 0.6, 3: 0.4}, 3: {END: 0.9, 3: 0.1}})


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "xla"])
def test_eos_first_hypothesis_wins_and_stays_frozen(compiled):
    """keras-hub's BeamSampler keeps extending finished beams and returned the
    continuation (reliability R11); a frozen EOS hypothesis scores log(.6)."""
    tokens, scores = run_beam(EOS_FIRST, num_beams=2, compiled=compiled, num_return_sequences=2)
    np.testing.assert_array_equal(tokens[0, 0], [END, PAD, PAD, PAD, PAD])
    np.testing.assert_allclose(scores[0, 0], np.log(0.6), atol=1e-6)
    np.testing.assert_array_equal(tokens[0, 1], [3, END, PAD, PAD, PAD])
    np.testing.assert_allclose(scores[0, 1], np.log(0.4 * 0.9), atol=1e-6)


# Short [END] (p=.3) against longer hypotheses: [3, END] (.7 * .4 = .28),
# [3, 4, END] (.7 * .6 * .5 = .21), [3, 4, 5, END] (.21 * .9 = .189).
SHORT_VS_LONG = log_table(V, {START: {END: 0.3, 3: 0.7}, 3: {END: 0.4, 4: 0.6},
                              4: {END: 0.5, 5: 0.5}, 5: {END: 0.9, 3: 0.1}})
CANDIDATES = {(END,): 0.3, (3, END): 0.28, (3, 4, END): 0.21, (3, 4, 5, END): 0.189}


def test_gnmt_length_penalty_changes_the_winner():
    tokens, scores = run_beam(SHORT_VS_LONG, length_penalty=0.0)
    np.testing.assert_array_equal(tokens[0, 0, :1], [END])
    np.testing.assert_allclose(scores[0, 0], np.log(0.3), atol=1e-6)
    tokens, scores = run_beam(SHORT_VS_LONG, length_penalty=2.0, num_return_sequences=2)

    def lp(n):
        return ((5 + n) / 6) ** 2

    expected = sorted((np.log(p) / lp(len(h)) for h, p in CANDIDATES.items()), reverse=True)
    np.testing.assert_allclose(scores[0], expected[:2], atol=1e-5)
    np.testing.assert_array_equal(tokens[0, 0, :4], [3, 4, 5, END])


def test_coverage_penalty_is_the_gnmt_formula():
    # The scripted attention of step i is one-hot on source position min(i, 2),
    # so a hypothesis of n tokens covers min(n, 3) of the 3 source positions.
    tokens, scores = run_beam(SHORT_VS_LONG, coverage_penalty=0.5, source_length=3)

    def cp(n):
        return 0.5 * (3 - min(n, 3)) * np.log(1e-10)

    candidates = {h: np.log(p) + cp(len(h)) for h, p in CANDIDATES.items()}
    best = max(candidates, key=candidates.get)
    assert best == (3, 4, END)
    np.testing.assert_array_equal(tokens[0, 0, : len(best)], best)
    np.testing.assert_allclose(scores[0, 0], candidates[best], rtol=1e-5)


def test_rows_of_a_batch_are_searched_independently():
    tables = np.stack([EOS_FIRST, SHORT_VS_LONG])
    tokens, scores = run_beam(tables, batch_size=2, length_penalty=2.0)
    np.testing.assert_array_equal(tokens[0, 0, :1], [END])
    np.testing.assert_array_equal(tokens[1, 0, :4], [3, 4, 5, END])


def test_never_finishing_rows_stop_at_max_length_and_prompt_is_forced():
    never = log_table(V, {START: {3: 1.0}, 3: {4: 0.5, 3: 0.5}, 4: {3: 1.0}})
    tokens, _ = run_beam(never, max_length=4)
    assert (tokens[0, 0] != END).all() and (tokens[0, 0] != PAD).all()
    prompt = np.array([[4, 3]], "int32")
    tokens, _ = run_beam(EOS_FIRST, max_length=4, prompt=prompt)
    np.testing.assert_array_equal(tokens[0, 0, :3], [4, 3, END])


def random_log_table(rng, shape, scale):
    """Random next-token log-probabilities that never emit PAD or START."""
    logits = rng.normal(size=shape).astype("float32") * scale
    logits[..., [PAD, START]] = -np.inf
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), batch=st.integers(1, 3))
def test_one_beam_equals_greedy_on_random_tables(seed, batch):
    rng = np.random.default_rng(seed)
    logits = random_log_table(rng, (batch, V, V), 3)
    greedy, greedy_scores = run_greedy(logits, max_length=6, batch_size=batch)
    beam, beam_scores = run_beam(logits, num_beams=1, max_length=6, batch_size=batch)
    np.testing.assert_array_equal(beam[:, 0], greedy)
    np.testing.assert_allclose(beam_scores[:, 0], greedy_scores, atol=1e-5)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000))
def test_beam_scores_are_sorted_and_equal_recomputed_log_probs(seed):
    rng = np.random.default_rng(seed)
    logits = random_log_table(rng, (V, V), 2)
    tokens, scores = run_beam(logits, num_beams=3, max_length=4, num_return_sequences=3)
    assert (np.diff(scores[0]) <= 1e-6).all()
    for hypothesis, score in zip(tokens[0], scores[0]):
        previous, total = START, 0.0
        for token in hypothesis:
            if token == PAD:
                break
            total += logits[previous, token]
            previous = token
        np.testing.assert_allclose(score, total, atol=1e-4)


def test_the_source_entry_of_a_state_is_not_reordered():
    from keras import ops

    from keras_attention.decoding import SOURCE_STATE
    from keras_attention.decoding.beam_search import gather_state

    cache = np.arange(4 * 3, dtype="float32").reshape(4, 3)  # B=2 sources, K=2 beams
    source = np.repeat(np.array([[7.0], [9.0]], "float32"), 2, axis=0)
    beam_index = np.array([[1, 1], [0, 1]], "int32")  # row b * K + k takes beam k' of b
    state = {"cache": cache, SOURCE_STATE: {"keys": source}}
    gathered = gather_state(state, beam_index, 2)
    np.testing.assert_array_equal(ops.convert_to_numpy(gathered["cache"]), cache[[1, 1, 2, 3]])
    assert gathered[SOURCE_STATE]["keys"] is source  # carried as it is, not copied
    # Any other structure: every tensor reordered, as before.
    (reordered,) = gather_state((cache,), beam_index, 2)
    np.testing.assert_array_equal(ops.convert_to_numpy(reordered), cache[[1, 1, 2, 3]])


@settings(max_examples=15 if keras.config.backend() == "jax" else 40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 9), st.integers(0, 10_000))
def test_best_continuations_equal_one_top_k_over_every_beam_ties_included(B, K, V, seed):
    # (Fewer examples on JAX, where each shape compiles its ops.)
    from keras import ops

    from keras_attention.decoding.beam_search import _best_continuations

    rng = np.random.default_rng(seed)
    if keras.config.backend() == "torch":
        # torch.topk orders ties as it likes, in one round or two: distinct values.
        values = rng.permutation(B * K * V).reshape(B, K, V).astype("float32")
    else:
        # Few distinct values (and -inf, a banned token), so that ties are common.
        values = rng.integers(-3, 2, (B, K, V)).astype("float32")
        values[values == -3] = -np.inf
    count = min(2 * K, K * V)
    scores, beam, token = (ops.convert_to_numpy(x) for x in _best_continuations(values, count))
    expected_scores, flat = (ops.convert_to_numpy(x)
                             for x in ops.top_k(values.reshape(B, K * V), count))
    np.testing.assert_array_equal(scores, expected_scores)
    np.testing.assert_array_equal(beam, flat // V)
    np.testing.assert_array_equal(token, flat % V)


def _log_softmax_then_ban(logits, banned):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return np.where(banned, -np.inf, log_probs)


def test_top_log_probs_are_those_of_the_log_softmax_then_the_bans():
    from keras import ops

    from keras_attention.decoding.beam_search import _top_log_probs

    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, (5, 40)).astype("float32")
    banned = rng.random((5, 40)) < 0.2
    banned[:, logits.argmax(-1)[0]] = False
    # Row 1: a banned token far above the rest (its exp would overflow once
    # shifted by the best allowed logit); row 2: every token banned.
    logits[1, 7] = 300.0
    banned[1, 7] = True
    banned[2] = True
    banned[3, logits[3].argmax()] = True  # the maximum banned
    allowed = np.where(banned, -np.inf, logits).astype("float32")
    log_probs, tokens = (ops.convert_to_numpy(x)
                         for x in _top_log_probs(ops.convert_to_tensor(logits),
                                                 ops.convert_to_tensor(allowed), 4))
    expected = _log_softmax_then_ban(logits.astype("float64"), banned)
    order = np.argsort(-expected, axis=-1, kind="stable")[:, :4]
    for row in (0, 1, 3, 4):
        np.testing.assert_array_equal(tokens[row], order[row])
        np.testing.assert_allclose(log_probs[row], np.take(expected[row], order[row]),
                                   rtol=1e-5, atol=1e-4)
    assert np.all(np.isfinite(log_probs[[0, 1, 3, 4]]))
    assert np.all(log_probs[1] < -280)  # the banned token keeps its probability mass
    assert np.all(log_probs[2] == -np.inf)  # as after the log-softmax, never NaN


def test_rules_applied_to_logits_give_the_search_of_rules_on_log_probs():
    # GenerationRules that only ban tokens are applied to the logits (no
    # (B * K, V) log-softmax); the same rules hidden in a plain function go
    # the general way, after the log-softmax. Both must agree.
    from keras_attention.decoding import GenerationRules

    rules = GenerationRules(no_repeat_ngram_size=1, suppress_token_ids=[2])
    process = rules.processor(start_id=START, end_id=END, max_length=6, vocab_size=V)
    assert process.rules_out_only
    rng = np.random.default_rng(3)
    table = rng.normal(0, 2, (V, V)).astype("float32")
    by_logits = run_beam(table, num_beams=3, max_length=6, process_scores=process)
    by_log_probs = run_beam(table, num_beams=3, max_length=6,
                            process_scores=lambda s, i, t: process(s, i, t))
    np.testing.assert_array_equal(by_logits[0], by_log_probs[0])
    np.testing.assert_allclose(by_logits[1], by_log_probs[1], rtol=1e-6)


@settings(max_examples=10 if keras.config.backend() == "jax" else 40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(2, 5), st.integers(0, 40),
       st.integers(0, 10_000))
def test_top_k_by_chunks_equals_one_top_k_ties_included(N, k, chunk, extra, seed):
    from keras import ops

    from keras_attention.decoding.beam_search import _top_k_by_chunks

    rng = np.random.default_rng(seed)
    V = 2 * k * chunk + extra  # whole chunks enough to cut, and a tail
    if keras.config.backend() == "torch":
        # torch.topk orders ties as it likes: distinct values.
        logits = rng.permutation(N * V).reshape(N, V).astype("float32")
    else:
        logits = rng.integers(-3, 3, (N, V)).astype("float32")  # ties are common
    allowed = np.where(rng.random((N, V)) < 0.3, -np.inf, logits).astype("float32")
    top, tokens, row_max = (ops.convert_to_numpy(x) for x in _top_k_by_chunks(
        ops.convert_to_tensor(logits), ops.convert_to_tensor(allowed), k, chunk=chunk))
    expected, expected_tokens = (ops.convert_to_numpy(x) for x in ops.top_k(allowed, k))
    np.testing.assert_array_equal(top, expected)
    np.testing.assert_array_equal(tokens, expected_tokens)
    np.testing.assert_array_equal(row_max, logits.max(axis=-1, keepdims=True))
