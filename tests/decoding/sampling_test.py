import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_attention.decoding import sampling_search, select_tokens, top_k_logits, top_p_logits
from keras_attention.decoding.sampling import first_max_index, validate_generation_args
from tests.decoding.scripted import END, PAD, START, log_table, row_state, table_step_fn
from tests.decoding.scripted import compiled as compile_fn

V = 6


def pick(logits, strategy, seed=0, step=0, k=2, p=0.5, temperature=1.0):
    return np.asarray(select_tokens(np.asarray(logits, "float32"), strategy=strategy, k=k, p=p,
                                    temperature=temperature, seed=seed, step=step))


@settings(max_examples=20, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**20), k=st.integers(1, 5))
def test_top_k_samples_stay_in_the_top_k_set_and_off_minus_inf(seed, k):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(64, 8)).astype("float32")
    logits[:, 0] = -np.inf  # a banned token
    chosen = pick(logits, "top_k", seed=seed, k=k)
    top = np.argsort(-logits, axis=-1)[:, :k]
    assert all(c in row for c, row in zip(chosen, top))
    assert (chosen != 0).all()


@settings(max_examples=20, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**20), p=st.floats(0.05, 1.0))
def test_top_p_samples_stay_in_the_nucleus(seed, p):
    rng = np.random.default_rng(seed)
    logits = (rng.normal(size=(64, 8)) * 2).astype("float32")
    logits[:, 3] = -np.inf
    chosen = pick(logits, "top_p", seed=seed, p=p)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    for row, c in zip(probs, chosen):
        order = np.argsort(-row)
        before = np.cumsum(row[order]) - row[order]
        nucleus = set(order[(before < p) | (np.arange(8) == 0)])
        assert c in nucleus and c != 3


def test_filters_put_minus_inf_outside_the_support():
    logits = np.array([[1.0, 3.0, 2.0, 0.0]], "float32")
    assert np.isinf(np.asarray(top_k_logits(logits, 2))[0, [0, 3]]).all()
    kept = np.isfinite(np.asarray(top_p_logits(logits, 0.7))[0])  # p(1) = .64
    np.testing.assert_array_equal(kept, [False, True, True, False])


def test_greedy_equivalences():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(32, V)).astype("float32")
    greedy = pick(logits, "greedy")
    np.testing.assert_array_equal(pick(logits, "top_k", k=1), greedy)
    np.testing.assert_array_equal(pick(logits, "top_p", p=1e-6), greedy)
    np.testing.assert_array_equal(pick(logits, "sample", temperature=0.0), greedy)


def test_same_seed_same_tokens_eager_and_xla_and_different_seeds_differ():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(256, V)).astype("float32")
    a = pick(logits, "sample", seed=7, step=3)
    np.testing.assert_array_equal(a, pick(logits, "sample", seed=7, step=3))
    compiled = compile_fn(
        lambda x: select_tokens(x, strategy="sample", k=1, p=1.0, temperature=1.0, seed=7, step=3)
    )
    np.testing.assert_array_equal(np.asarray(compiled(logits)), a)
    assert (pick(logits, "sample", seed=8, step=3) != a).any()
    assert (pick(logits, "sample", seed=7, step=4) != a).any()


def test_sampling_follows_the_distribution():
    logits = np.log(np.array([[0.1, 0.2, 0.7]] * 4000, "float32"))
    counts = np.bincount(pick(logits, "sample", seed=3), minlength=3) / 4000
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.7], atol=0.03)


def greedy(table, max_length=5, prompt=None, batch_size=1):
    out = sampling_search(
        table_step_fn(table), row_state(batch_size), batch_size=batch_size,
        max_length=max_length, start_id=START, end_id=END, pad_id=PAD, prompt=prompt,
        select=lambda logits, i: select_tokens(logits, strategy="greedy", k=1, p=1.0,
                                               temperature=1.0, seed=0, step=i),
    )
    return np.asarray(out.token_ids)


def test_only_newly_generated_end_tokens_stop_and_finished_rows_are_padded():
    table = log_table(V, {START: {3: 1.0}, 3: {4: 1.0}, 4: {END: 1.0}, END: {3: 1.0}})
    np.testing.assert_array_equal(greedy(table), [[3, 4, END, PAD, PAD]])
    # An END inside the prompt does not stop the row.
    prompt = np.array([[END, 3]], "int32")
    np.testing.assert_array_equal(greedy(table, prompt=prompt), [[END, 3, 4, END, PAD]])


def test_end_at_step_zero_and_never_ending_rows():
    table = np.stack([
        log_table(V, {START: {END: 1.0}}),
        log_table(V, {START: {3: 1.0}, 3: {3: 1.0}}),
    ])
    np.testing.assert_array_equal(greedy(table, max_length=3, batch_size=2),
                                  [[END, PAD, PAD], [3, 3, 3]])


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"strategy": "nucleus"}, r"strategy.*Received: strategy='nucleus'"),
        ({"max_length": 1, "prompt_length": 3},
         r"max_length.*prompt length.*Received: max_length=1"),
        ({"num_beams": 0}, r"num_beams.*Received: num_beams=0"),
        ({"strategy": "top_k", "k": 0}, r"`k`.*Received: k=0"),
        ({"strategy": "top_k", "k": 7}, r"vocab_size=6.*Received: k=7"),
        ({"strategy": "top_p", "p": 0.0}, r"`p`.*Received: p=0.0"),
        ({"strategy": "top_p", "p": 1.5}, r"`p`.*Received: p=1.5"),
        ({"temperature": -1.0}, r"temperature.*Received: temperature=-1.0"),
        ({"length_penalty": float("nan")}, r"length_penalty.*Received: length_penalty=nan"),
        ({"strategy": "beam", "num_beams": 2, "num_return_sequences": 3},
         r"num_return_sequences.*Received: num_return_sequences=3"),
    ],
)
def test_invalid_generation_args(kwargs, pattern):
    args = dict(strategy="greedy", max_length=5, prompt_length=0, num_beams=1,
                num_return_sequences=1, k=2, p=0.9, temperature=1.0, length_penalty=0.0,
                coverage_penalty=0.0, vocab_size=V)
    args.update(kwargs)
    with pytest.raises(ValueError, match=pattern):
        validate_generation_args(**args)


def test_first_max_index_is_argmax_with_ties_infinities_and_nans():
    rng = np.random.default_rng(0)
    values = rng.integers(-3, 4, size=(64, 57)).astype("float32")  # many ties
    values[1] = -np.inf
    values[2, [5, 9]] = np.inf
    values[3, [7, 30]] = np.nan
    values[4, :] = np.nan
    got = keras.ops.convert_to_numpy(first_max_index(values))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.argmax(values, axis=-1))
    assert got[1] == 0 and got[2] == 5 and got[3] == 7 and got[4] == 0
