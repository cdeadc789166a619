"""Our Hugging Face beam search (and the generation rules inside our
searches) against `transformers`' own `generate`, on the same next-token
table (see `tests/decoding/hf_reference.py`)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from keras import ops

from keras_attention.decoding import GenerationRules, hf_beam_search, sampling_search
from tests.decoding.scripted import compiled as compile_fn

B, V, L, K = 3, 12, 8, 3
PAD, START, END = 0, 1, 2
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_table(seed):
    """`(B, L, V, V)` logits: a separate random table per item and step."""
    rng = np.random.default_rng(seed)
    table = rng.normal(scale=2.0, size=(B, L, V, V)).astype("float32")
    table[..., END] += 1.0  # hypotheses of every length end
    return table


TABLE = make_table(0)

BEAM_CASES = [
    {"num_beams": K, "length_penalty": lp, "early_stopping": es}
    for lp in (0.6, 1.0, 2.0, -0.5)
    for es in (True, False, "never")
]
# HF counts the start token in min_length and max_length (ours are one less).
RULES = [
    ({"min_length": 5}, GenerationRules(min_length=4)),
    ({"no_repeat_ngram_size": 2}, GenerationRules(no_repeat_ngram_size=2)),
    ({"bad_words_ids": [[3], [4, 5], [6, 7, 8], [END]]},
     GenerationRules(bad_words_ids=[[3], [4, 5], [6, 7, 8], [END]])),
    ({"forced_bos_token_id": 9, "forced_eos_token_id": END},
     GenerationRules(forced_bos_token_id=9, forced_eos_token_id=END)),
    ({"suppress_tokens": [3, 4], "begin_suppress_tokens": [5, END]},
     GenerationRules(suppress_token_ids=[3, 4], begin_suppress_token_ids=[5, END])),
    ({"begin_suppress_tokens": [5], "forced_bos_token_id": 5, "min_length": 3},
     GenerationRules(begin_suppress_token_ids=[5], forced_bos_token_id=5, min_length=2)),
    # min_length past max_length: only the forced end token ends a row.
    ({"min_length": L + 5, "forced_eos_token_id": END},
     GenerationRules(min_length=L + 4, forced_eos_token_id=END)),
    # Marian's settings: a banned pad id, a forced end, renormalised scores.
    ({"bad_words_ids": [[PAD]], "forced_eos_token_id": END, "renormalize_logits": True,
      "no_repeat_ngram_size": 3},
     GenerationRules(bad_words_ids=[[PAD]], forced_eos_token_id=END, renormalize_logits=True,
                     no_repeat_ngram_size=3)),
]
RULE_CASES = [
    {"num_beams": num_beams, "length_penalty": 1.0, **hf_args}
    for num_beams in (1, K)
    for hf_args, _ in RULES
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """`transformers`' tokens and scores for every case, run once."""
    folder = tmp_path_factory.mktemp("hf_reference")
    np.save(folder / "table.npy", TABLE)
    (folder / "cases.json").write_text(json.dumps(BEAM_CASES + RULE_CASES))
    env = {**os.environ, "PYTHONPATH": REPO}
    done = subprocess.run(
        [sys.executable, "-m", "tests.decoding.hf_reference", str(folder / "cases.json"),
         str(folder / "table.npy"), str(folder / "out.json"), str(START), str(END), str(PAD)],
        env=env, cwd=REPO, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((folder / "out.json").read_text())
    return {json.dumps(case, sort_keys=True): result
            for case, result in zip(BEAM_CASES + RULE_CASES, results)}


def table_step_fn(token_ids, index, state):
    flat = ops.reshape(ops.convert_to_tensor(TABLE), (-1, V))
    rows = (state["item"] * L + index) * V + token_ids
    return ops.take(flat, rows, axis=0), state, ops.zeros((ops.shape(token_ids)[0], 1))


def padded(token_ids):
    """`transformers`' tokens as ours: `(B, L)`, `PAD` after the end token.

    (Its beam search fills with the end token instead when the pad id is 0,
    as T5's is: `pad_token_id or eos_token_id` in `_beam_search`.)
    """
    token_ids = np.asarray(token_ids)
    token_ids = np.pad(token_ids, ((0, 0), (0, L - token_ids.shape[1])), constant_values=PAD)
    after_end = np.cumsum(np.cumsum(token_ids == END, axis=1), axis=1) > 1
    return np.where(after_end, PAD, token_ids)


def run_ours(num_beams, compiled=False, rules=None, **beam_args):
    process = None if rules is None else rules.processor(
        start_id=START, end_id=END, max_length=L, vocab_size=V)
    state = {"item": ops.repeat(ops.arange(B, dtype="int32"), num_beams, axis=0)}

    def run():
        if num_beams == 1:
            return sampling_search(
                table_step_fn, state, batch_size=B, max_length=L, start_id=START,
                end_id=END, pad_id=PAD, process_scores=process,
                select=lambda logits, i: ops.cast(ops.argmax(logits, -1), "int32"),
            )
        return hf_beam_search(
            table_step_fn, state, batch_size=B, num_beams=num_beams, max_length=L,
            start_id=START, end_id=END, pad_id=PAD, vocab_size=V, process_scores=process,
            **beam_args,
        )

    out = compile_fn(run)() if compiled else run()
    tokens = ops.convert_to_numpy(out.token_ids)
    scores = ops.convert_to_numpy(out.scores)
    if num_beams > 1:
        tokens, scores = tokens[:, 0], scores[:, 0]
    return tokens, scores


# On JAX, the positive length penalties 0.6 and 1.0 run the code of the 2.0
# cases (the penalty is a number in the same compiled formula; only its sign
# picks the bound of `early_stopping="never"`), and 1.0 runs again in the beam
# cases of test_generation_rules_in_the_search_equal_transformers; TensorFlow
# and torch run every case.
SAME_PATH_ON_JAX = pytest.mark.same_path_on("jax", reason=(
    "a positive length penalty: the code of the lp2.0 cases with another number (1.0 also "
    "in test_generation_rules_in_the_search_equal_transformers[*-beam])"))


def beam_case_param(case):
    """`case` as a parameter with its id, marked `SAME_PATH_ON_JAX` where
    another JAX case runs its code."""
    marks = SAME_PATH_ON_JAX if case["length_penalty"] in (0.6, 1.0) else ()
    return pytest.param(case, marks=marks,
                        id=f"lp{case['length_penalty']}-es{case['early_stopping']}")


@pytest.mark.large
@pytest.mark.parametrize("case", [beam_case_param(case) for case in BEAM_CASES])
def test_beam_tokens_and_scores_equal_transformers(reference, case):
    expected = reference[json.dumps(case, sort_keys=True)]
    tokens, scores = run_ours(K, compiled=True, length_penalty=case["length_penalty"],
                              early_stopping=case["early_stopping"])
    np.testing.assert_array_equal(tokens, padded(expected["token_ids"]))
    np.testing.assert_allclose(scores, expected["scores"], rtol=1e-5)


def test_the_table_makes_the_settings_matter(reference):
    """The cases differ from one another, so equal tokens mean something."""
    outputs = {json.dumps(reference[json.dumps(c, sort_keys=True)]["token_ids"])
               for c in BEAM_CASES}
    assert len(outputs) >= 4


@pytest.mark.large
@pytest.mark.parametrize("num_beams", [1, K], ids=["greedy", "beam"])
@pytest.mark.parametrize("rules_index", range(len(RULES)), ids=lambda i: "-".join(RULES[i][0]))
def test_generation_rules_in_the_search_equal_transformers(reference, num_beams, rules_index):
    hf_args, rules = RULES[rules_index]
    case = {"num_beams": num_beams, "length_penalty": 1.0, **hf_args}
    expected = reference[json.dumps(case, sort_keys=True)]
    beam_args = {} if num_beams == 1 else {"length_penalty": 1.0, "early_stopping": False}
    tokens, scores = run_ours(num_beams, compiled=True, rules=rules, **beam_args)
    np.testing.assert_array_equal(tokens, padded(expected["token_ids"]))
    if num_beams > 1:
        np.testing.assert_allclose(scores, expected["scores"], rtol=1e-5)


def test_eager_equals_compiled():
    for es in (True, False, "never"):
        eager = run_ours(K, length_penalty=0.6, early_stopping=es)
        xla = run_ours(K, compiled=True, length_penalty=0.6, early_stopping=es)
        np.testing.assert_array_equal(eager[0], xla[0])
        np.testing.assert_allclose(eager[1], xla[1], rtol=1e-6)


@pytest.mark.parametrize("bad", [1, 0, "always", None])
def test_early_stopping_is_checked(bad):
    with pytest.raises(ValueError, match=r"early_stopping.*Received: early_stopping="):
        run_ours(K, length_penalty=1.0, early_stopping=bad)
