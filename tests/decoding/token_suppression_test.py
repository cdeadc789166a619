"""`suppress_tokens`: a suppressed id is never picked by any sampler, eager or
compiled; `check_suppress_token_ids` normalises and refuses bad ids."""

import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.decoding import SUPPRESSED_LOGIT, check_suppress_token_ids, suppress_tokens
from tests.decoding.scripted import END, PAD, START
from tests.decoding.scripted import compiled as compile_fn

V, B, L = 10, 4, 6
FAVOURITES = [4, 7]  # the ids the scripted model prefers at every step


def favouring_step_fn():
    """Logits that depend on the previous token and the step, with the
    argmax always at one of FAVOURITES (END is unlikely, so rows go on)."""
    table = np.random.default_rng(0).normal(size=(V, V)).astype("float32")
    table[:, END] -= 5.0
    table[np.arange(V), np.where(np.arange(V) % 2, 4, 7)] += 12.0

    def step_fn(token_ids, index, state):
        logits = ops.take(table, (token_ids + index) % V, axis=0)
        return logits, state, ops.zeros((ops.shape(token_ids)[0], 1))

    return step_fn


SAMPLERS = {
    "greedy": decoding.GreedySampler(),
    "beam": decoding.BeamSampler(num_beams=3),
    "top_k": decoding.TopKSampler(k=3, seed=1),
    "top_p": decoding.TopPSampler(p=0.9, seed=2),
    "random": decoding.RandomSampler(seed=3),
}


def search(sampler, step_fn):
    def run():
        return sampler.search(
            step_fn, {}, sampler.dynamic_values(), batch_size=B, max_length=L,
            start_id=START, end_id=END, pad_id=PAD, vocab_size=V,
        ).token_ids

    return np.asarray(ops.convert_to_numpy(compile_fn(run)()))


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_no_sampler_picks_a_suppressed_id_even_where_it_is_the_argmax(name):
    sampler = SAMPLERS[name]
    plain = search(sampler, favouring_step_fn())
    assert np.isin(plain, FAVOURITES).any()  # without suppression they are picked
    suppressed = search(sampler, suppress_tokens(favouring_step_fn(), FAVOURITES, V))
    assert not np.isin(suppressed, FAVOURITES).any()
    assert ((suppressed != PAD) & (suppressed != END)).any()  # rows still generate tokens


def test_suppressed_logits_are_large_finite_and_the_others_unchanged():
    logits = np.linspace(-3.0, 3.0, 2 * V, dtype="float32").reshape(2, V)

    def step_fn(token_ids, index, state):
        return ops.cast(logits, "float16"), state + 1, "attention"

    wrapped = suppress_tokens(step_fn, [3, 0, 3], V)
    out, state, attention = wrapped(np.zeros((2,), "int32"), 0, 1)
    out = np.asarray(ops.convert_to_numpy(out))
    assert out.dtype == np.float32 and (state, attention) == (2, "attention")
    np.testing.assert_array_equal(out[:, [0, 3]], np.full((2, 2), SUPPRESSED_LOGIT, "float32"))
    kept = [i for i in range(V) if i not in (0, 3)]
    np.testing.assert_allclose(out[:, kept], logits[:, kept], atol=2e-3)  # float16 rounding
    assert np.isfinite(out).all()


def test_nothing_suppressed_returns_the_step_fn_itself():
    step_fn = favouring_step_fn()
    assert suppress_tokens(step_fn, None, V) is step_fn
    assert suppress_tokens(step_fn, [], V) is step_fn


def test_ids_are_deduplicated_and_sorted():
    assert check_suppress_token_ids([5, 1, 5, 0], V) == (0, 1, 5)
    assert check_suppress_token_ids(np.array([3, 2], "int64"), V, end_id=9) == (2, 3)
    assert check_suppress_token_ids((np.int32(1),), V) == (1,)
    assert check_suppress_token_ids(None, V) == ()


@pytest.mark.parametrize(
    "ids, end_id, pattern",
    [
        ([1, V], None, rf"in \[0, {V}\).*{V} is not\. Received: suppress_token_ids=\[1, {V}\]"),
        ([-1], None, r"in \[0, 10\).*-1 is not\. Received: suppress_token_ids=\[-1\]"),
        ([END, 1], END, rf"end token id {END}.*Received: suppress_token_ids=\[{END}, 1\]"),
        (list(range(V)), None, r"at least one of the 10.*Received: suppress_token_ids=\[0, 1"),
        ([1.0], None, r"int token ids\. Received: suppress_token_ids=\[1\.0\]"),
        (["1"], None, r"int token ids\. Received: suppress_token_ids=\['1'\]"),
        ([True], None, r"int token ids\. Received: suppress_token_ids=\[True\]"),
        ([[1]], None, r"int token ids\. Received: suppress_token_ids=\[\[1\]\]"),
        (3, None, r"int token ids\. Received: suppress_token_ids=3"),
        ("12", None, r"int token ids\. Received: suppress_token_ids='12'"),
        (np.array([[1]]), None, r"int token ids\. Received: suppress_token_ids=array"),
    ],
)
def test_bad_ids_are_refused_naming_the_argument(ids, end_id, pattern):
    with pytest.raises(ValueError, match=r"Argument `suppress_token_ids` must .*" + pattern):
        check_suppress_token_ids(ids, V, end_id=end_id)
    if end_id is None:
        with pytest.raises(ValueError, match=r"`suppress_token_ids`"):
            suppress_tokens(favouring_step_fn(), ids, V)
