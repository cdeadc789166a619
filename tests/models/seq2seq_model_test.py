"""`Seq2SeqModel.generate` / `search`: samplers, token id checks,
compilation per backend and the same tokens on every backend."""

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_attention import decoding
from keras_attention.models import GenerationResult, rnn_seq2seq, transformer_seq2seq
from keras_attention.models.transformer_seq2seq import TransformerSeq2Seq
from tests.models.generation_checks import SOURCE
from tests.test_case import count_train_step_traces

SMALL = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
             max_length=32)
BACKEND = keras.config.backend()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    return transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)


@pytest.mark.large
@pytest.mark.backend_independent(
    "names and config dicts name the same sampler objects (Python); on JAX the samplers' "
    "compiled tokens equal TensorFlow's (test_a_saved_model_generates_the_same_tokens_on_every_"
    "backend) and the suppression and rule tests below generate with them")
def test_sampler_names_and_configs_give_the_tokens_of_their_samplers(model):
    top_p = decoding.TopPSampler(p=0.7, temperature=0.8, seed=1)
    pairs = [
        (decoding.GreedySampler(), "greedy"),
        (decoding.BeamSampler(), "beam"),
        (decoding.TopKSampler(k=4, seed=3),
         {"class_name": "TopKSampler", "config": {"k": 4, "seed": 3}}),
        (top_p, decoding.serialize_sampler(top_p)),
        (decoding.RandomSampler(), "sample"),
    ]
    for sampler, described in pairs:
        expected = model.generate(SOURCE, 6, sampler, return_scores=True)
        got = model.generate(SOURCE, 6, described, return_scores=True)
        np.testing.assert_array_equal(got.token_ids, expected.token_ids)
        np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6)


@pytest.mark.same_path_on("jax", reason=(
    "the result's type and shapes are Python around the samplers' keras.ops, the same on "
    "every backend; JAX generates beams with scores in test_suppressed_token_ids_are_never_"
    "generated[beam]"))
def test_one_result_type_and_n_best_shapes(model):
    result = model.generate(SOURCE, 5, decoding.BeamSampler(num_beams=3, num_return_sequences=2),
                            return_scores=True, return_attention=True)
    assert isinstance(result, GenerationResult)
    assert result.token_ids.shape == (2, 2, 5) and result.scores.shape == (2, 2)
    assert result.attention.shape == (2, 2, 5, 5)
    result = model.generate(SOURCE, 5, "top_p", return_logits=True)
    assert isinstance(result, GenerationResult) and result.logits.shape == (2, 5, 24)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"sampler": decoding.TopKSampler(k=25)}, r"vocab_size=24.*Received: k=25"),
        ({"sampler": decoding.BeamSampler(), "return_logits": True},
         r"return_logits.*BeamSampler"),
        ({"sampler": "nucleus"}, r"`sampler`.*Received: sampler='nucleus'"),
        ({"max_length": 0}, r"max_length.*Received: max_length=0"),
    ],
)
def test_bad_sampler_arguments(kwargs, pattern, model):
    kwargs = {"max_length": 4, **kwargs}
    with pytest.raises(ValueError, match=pattern):
        model.generate(SOURCE, **kwargs)


# Token ids outside the vocabulary ---------------------------------------------


@pytest.mark.parametrize("jit_compile", [True, False], ids=["compiled", "eager"])
@pytest.mark.parametrize(
    "argument, value, where, pattern",
    [
        ("encoder_token_ids", 20, (1, 3),
         r"`encoder_token_ids`.*\[0, 20\)\. Received: 20 at \[1, 3\]"),
        ("encoder_token_ids", -1, (0, 0),
         r"`encoder_token_ids`.*\[0, 20\)\. Received: -1 at \[0, 0\]"),
        ("decoder_prompt", 24, (1, 1), r"`decoder_prompt`.*\[0, 24\)\. Received: 24 at \[1, 1\]"),
        ("decoder_prompt", -3, (0, 1), r"`decoder_prompt`.*\[0, 24\)\. Received: -3 at \[0, 1\]"),
    ],
)
def test_token_ids_outside_the_vocabulary_are_refused(model, jit_compile, argument, value, where,
                                                      pattern):
    inputs = {"encoder_token_ids": SOURCE.copy(), "decoder_prompt": np.full((2, 2), 5, "int32")}
    inputs[argument][where] = value
    traces = model.generate_trace_count()
    for sampler in ("greedy", decoding.BeamSampler(num_beams=2)):
        with pytest.raises(ValueError, match=pattern):
            model.generate(inputs["encoder_token_ids"], 4, sampler,
                           decoder_prompt=inputs["decoder_prompt"], jit_compile=jit_compile)
    with pytest.raises(ValueError, match=pattern):
        model.search(inputs["encoder_token_ids"], "greedy", 4,
                     decoder_prompt=inputs["decoder_prompt"])
    assert model.generate_trace_count() == traces  # refused before any work


def test_the_largest_ids_are_accepted(model):
    source = SOURCE.copy()
    source[0, 0] = 19
    assert model.generate(source, 4, decoder_prompt=np.full((2, 1), 23, "int32")).shape == (2, 4)


def test_rnn_models_check_source_and_target_vocabularies():
    rnn = rnn_seq2seq(12, target_vocabulary_size=9, embedding_dim=4, units=8)
    assert (rnn.source_vocabulary_size, rnn.target_vocabulary_size) == (12, 9)
    with pytest.raises(ValueError, match=r"`encoder_token_ids`.*\[0, 12\)\. Received: 12"):
        rnn.generate(np.array([[3, 12]]), 3)
    with pytest.raises(ValueError, match=r"`decoder_prompt`.*\[0, 9\)\. Received: 10"):
        rnn.generate(np.array([[3, 11]]), 3, decoder_prompt=np.array([[10]]))


@pytest.mark.parametrize(
    "build, pattern",
    [
        (lambda: transformer_seq2seq(20, target_vocabulary_size=10, end_token_id=10, **SMALL),
         r"`end_token_id`.*\[0, 10\).*Received: end_token_id=10"),
        (lambda: transformer_seq2seq(8, pad_token_id=9, **SMALL),
         r"`pad_token_id`.*\[0, 8\).*Received: pad_token_id=9"),
        (lambda: rnn_seq2seq(12, target_vocabulary_size=4, start_token_id=5, embedding_dim=4,
                             units=8),
         r"`start_token_id`.*\[0, 4\).*Received: start_token_id=5"),
    ],
)
def test_special_token_ids_are_checked_against_the_target_vocabulary(build, pattern):
    with pytest.raises(ValueError, match=pattern):
        build()


# Compilation ------------------------------------------------------------------


@pytest.mark.large
def test_no_retrace_for_same_shapes_and_new_sampler_numbers():
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(20, **SMALL)
    model.generate(SOURCE, 5, decoding.TopKSampler(k=3, seed=1))
    model.generate(SOURCE, 5, decoding.BeamSampler(num_beams=2))
    traces = model.generate_trace_count()
    expected = 0 if BACKEND == "torch" else 2  # torch runs eagerly: nothing traced
    assert traces == expected
    model.generate(SOURCE + (SOURCE > 0), 5, decoding.TopKSampler(k=3, temperature=0.5, seed=9))
    model.generate(SOURCE[:, :3], 5, decoding.TopKSampler(k=3, seed=2))  # same length bucket
    model.generate(SOURCE, 5, decoding.BeamSampler(num_beams=2, length_penalty=1.0,
                                                   coverage_penalty=0.5))
    assert model.generate_trace_count() == traces
    model.generate(np.tile(SOURCE, (2, 1)), 5, decoding.TopKSampler(k=3))  # a new batch size
    assert model.generate_trace_count() == traces + (0 if BACKEND == "torch" else 1)


@pytest.mark.same_path_on("jax", reason=(
    "generate compiles `search` itself (jax.jit of the same function on JAX); JAX checks "
    "search against generate, with rules, in test_search_takes_the_rules_of_generate"))
def test_search_is_the_loop_of_generate(model):
    sampler = decoding.BeamSampler(num_beams=2, length_penalty=0.5)
    source = np.pad(SOURCE, ((0, 0), (0, 3)))  # the bucket generate pads to
    result = model.search(source, sampler, 6, return_attention=True)
    expected = model.generate(SOURCE, 6, sampler, return_scores=True)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(result.token_ids),
                                  expected.token_ids)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(result.scores), expected.scores,
                               rtol=1e-5)


@pytest.mark.tf_only("a symbolic tf.function over a (None, None) source, as export builds")
def test_search_traces_inside_tf_function_with_unknown_shapes(model):
    import tensorflow as tf

    sampler = decoding.BeamSampler(num_beams=2)

    @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32)], jit_compile=True,
                 autograph=False)
    def serve(source):
        return model.search(source, sampler, 6).token_ids

    source = np.pad(SOURCE, ((0, 0), (0, 3)))
    expected = model.generate(SOURCE, 6, sampler)
    np.testing.assert_array_equal(serve(source).numpy(), expected)
    # One row, known only at run time: searched as two (`at_least_two_rows`).
    np.testing.assert_array_equal(serve(source[:1]).numpy(), expected[:1])


_ROW_PADDING = ("the row padding is keras.ops around the compiled search, the same for every "
                "sampler; JAX runs the greedy case")


@pytest.mark.parametrize("sampler", [
    "greedy",
    pytest.param(decoding.BeamSampler(num_beams=2), id="beam",
                 marks=pytest.mark.same_path_on("jax", reason=_ROW_PADDING)),
    pytest.param(decoding.TopKSampler(k=3, seed=4), id="top_k",
                 marks=pytest.mark.same_path_on("jax", reason=_ROW_PADDING)),
])
def test_one_source_gives_what_its_row_gives_in_a_batch(model, sampler):
    # A single source runs as two rows on the compiled backends
    # (`at_least_two_rows`); every field comes back for that one source.
    fields = {"return_scores": True, "return_attention": True,
              "return_logits": not isinstance(sampler, decoding.BeamSampler)}
    alone = model.generate(SOURCE[:1], 6, sampler, **fields)
    batch = model.generate(SOURCE, 6, sampler, **fields)
    for field in ("token_ids", "scores", "attention") + ("logits",) * fields["return_logits"]:
        one, first = getattr(alone, field), getattr(batch, field)[:1]
        assert one.shape == first.shape, field
        np.testing.assert_allclose(one, first, rtol=1e-5, atol=1e-5, err_msg=field)


def test_at_least_two_rows_repeats_only_a_single_row():
    from keras_attention.models.seq2seq_model import at_least_two_rows

    one, three = np.array([[5, 6]], "int32"), np.arange(6, dtype="int32").reshape(3, 2)
    expected_one = one if BACKEND == "torch" else np.array([[5, 6], [5, 6]])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(at_least_two_rows(one)),
                                  expected_one)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(at_least_two_rows(three)), three)


@pytest.mark.tf_only("a batch known only at run time, as the exported serving graph has")
def test_at_least_two_rows_with_a_batch_known_at_run_time():
    import tensorflow as tf

    from keras_attention.models.seq2seq_model import at_least_two_rows

    @tf.function(input_signature=[tf.TensorSpec((None, 2), tf.int32)], autograph=False)
    def padded(x):
        return at_least_two_rows(x)

    np.testing.assert_array_equal(padded(np.array([[5, 6]], "int32")).numpy(),
                                  [[5, 6], [5, 6]])
    three = np.arange(6, dtype="int32").reshape(3, 2)
    np.testing.assert_array_equal(padded(three).numpy(), three)
    assert padded(np.zeros((0, 2), "int32")).numpy().shape == (0, 2)


# The same tokens on every backend ---------------------------------------------

_SAVE = """
import keras, numpy as np
from keras_attention.models import transformer_seq2seq
keras.utils.set_random_seed(0)
from keras_attention.data import make_task
model = transformer_seq2seq(40, num_layers=2, hidden_dim=32, num_heads=4,
                            intermediate_dim=64, dropout=0.0, max_length=32)
# A little training, so that the tokens depend on the source.
x, y = make_task("reverse", 512, vocab_size=40, max_length=9, seed=0)
model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False,
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
model.fit(x, y, batch_size=64, epochs=3, verbose=0)
projection = model.output_projection
# Well separated logits: near ties would make float rounding pick tokens.
projection.kernel.assign(projection.kernel * 8.0)
model.save({path!r})
"""

_GENERATE = """
import json, keras, numpy as np
from keras_attention import decoding
model = keras.saving.load_model({path!r})
source = np.array({source!r}, "int32")
samplers = {{
    "greedy": decoding.GreedySampler(),
    "beam": decoding.BeamSampler(num_beams=3, length_penalty=0.6, num_return_sequences=2),
    "top_k": decoding.TopKSampler(k=5, seed=11),
    "top_p": decoding.TopPSampler(p=0.8, temperature=1.2, seed=4),
    "hf_beam": decoding.BeamSampler(num_beams=3, length_penalty=1.0, length_penalty_form="hf",
                                    early_stopping=True),
}}
tokens = {{name: model.generate(source, 10, s).tolist() for name, s in samplers.items()}}
tokens["hf_rules"] = model.generate(
    source, 10, decoding.BeamSampler(num_beams=3, length_penalty=2.0, length_penalty_form="hf"),
    min_length=3, no_repeat_ngram_size=2, bad_words_ids=[[5], [6, 7]], forced_eos_token_id=2,
    suppress_token_ids=[8]).tolist()
print(json.dumps(tokens))
"""


def _python(code, backend):
    """The last line `code` prints, run in a fresh interpreter under `backend`
    (with this run's XLA_FLAGS: the Makefile's light LLVM optimization)."""
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def _python_here(code):
    """The last line `code` prints, run in this process: the test runs
    under TensorFlow (`tf_only`), so TensorFlow's side needs no interpreter
    of its own; `code` is the very text the other backends' interpreters run."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(textwrap.dedent(code), "<saved_model_tokens>", "exec"), {})
    lines = printed.getvalue().strip().splitlines()
    return lines[-1] if lines else ""


@pytest.fixture(scope="module")
def saved_model_tokens(tmp_path_factory):
    """A model saved under TensorFlow and the tokens TensorFlow generates
    with it, both in this process (the test's backend is TensorFlow)."""
    assert BACKEND == "tensorflow"
    path = str(tmp_path_factory.mktemp("saved") / "model.keras")
    _python_here(_SAVE.format(path=path))
    rng = np.random.default_rng(0)
    source = rng.integers(3, 40, size=(4, 9))
    source[2, 5:] = 0
    code = _GENERATE.format(path=path, source=source.tolist())
    return code, json.loads(_python_here(code))


@pytest.mark.large
@pytest.mark.tf_only("saves under TensorFlow, then loads in one subprocess per backend")
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_saved_model_generates_the_same_tokens_on_every_backend(saved_model_tokens, backend):
    # torch is an optional extra (`make install-torch`; CI installs it before `make test`).
    pytest.importorskip(backend)
    code, expected = saved_model_tokens
    assert len(np.unique(expected["greedy"])) > 3  # not one repeated token
    assert expected["top_k"] != expected["greedy"]  # really sampled
    tokens = json.loads(_python(code, backend))
    for name in ("greedy", "beam", "top_k", "top_p", "hf_beam", "hf_rules"):
        assert tokens[name] == expected[name], name


# Suppressed token ids ---------------------------------------------------------

SUPPRESSING_SAMPLERS = {
    "greedy": decoding.GreedySampler(),
    "beam": decoding.BeamSampler(num_beams=3),
    "top_k": decoding.TopKSampler(k=4, seed=3),
    "top_p": decoding.TopPSampler(p=0.9, seed=1),
    "random": decoding.RandomSampler(seed=2),
}


@pytest.fixture(scope="module")
def unending_model():
    """The small model with its end token made unlikely (bias -20), so that
    rows run to `max_length` and pick many ids on every backend."""
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)
    bias = model.output_projection.bias
    bias.assign(bias - 20.0 * keras.ops.one_hot(model.end_token_id, 24))
    return model


# On JAX the beam (its own suppression of log-probabilities) and top-k (the
# logits rule every other sampler shares, with JAX's random numbers) cases run.
SUPPRESSION_ON_JAX = ("beam", "top_k")


@pytest.mark.large
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name in SUPPRESSION_ON_JAX else pytest.mark.same_path_on(
        "jax", reason="the logits rule of the top_k case, compiled; TensorFlow runs every "
                      "sampler"))
    for name in sorted(SUPPRESSING_SAMPLERS)
])
def test_suppressed_token_ids_are_never_generated(unending_model, name):
    """Compiled generation with suppressed ids, and `search` (uncompiled)
    giving its tokens. The tokens without suppression come from `search`
    too: the compiled samplers without suppression are
    test_sampler_names_and_configs_give_the_tokens_of_their_samplers' (and, on
    every backend, test_a_saved_model_generates_the_same_tokens_on_every_backend's)."""
    model, sampler = unending_model, SUPPRESSING_SAMPLERS[name]
    source = np.pad(SOURCE, ((0, 0), (0, 3)))  # the bucket generate pads to
    plain = keras.ops.convert_to_numpy(model.search(source, sampler, 6).token_ids)
    assert (plain != model.end_token_id).all()  # no row ends: no pad filling either
    picked = sorted(set(plain.ravel().tolist()))  # every id it picks without suppression
    result = model.generate(SOURCE, 6, sampler, jit_compile=True, suppress_token_ids=picked,
                            return_scores=True)
    assert not np.isin(result.token_ids, picked).any()  # so the tokens differ, too
    assert (result.token_ids != model.end_token_id).all()
    assert np.isfinite(result.scores).all()
    searched = model.search(source, sampler, 6, suppress_token_ids=picked).token_ids
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(searched), result.token_ids)


@pytest.mark.same_path_on("jax", reason=(
    "the prompt's forcing and the suppression are the loop's keras.ops, the same on every "
    "backend; on JAX prompts are kept in tests/models/transformer_seq2seq_test.py::"
    "test_prompt_is_kept_and_batches_give_the_same_tokens and ids suppressed in "
    "test_suppressed_token_ids_are_never_generated"))
def test_a_prompt_may_hold_a_suppressed_id(model):
    prompt = np.full((2, 2), 5, "int32")
    for sampler in ("greedy", decoding.BeamSampler(num_beams=2)):
        tokens = model.generate(SOURCE, 6, sampler, decoder_prompt=prompt,
                                suppress_token_ids=[5, 7])
        np.testing.assert_array_equal(tokens[:, :2], prompt)  # forced, not chosen
        assert not np.isin(tokens[:, 2:], [5, 7]).any()


@pytest.mark.parametrize(
    "ids, pattern",
    [
        ([3, 24], r"\[0, 24\).*24 is not\. Received: suppress_token_ids=\[3, 24\]"),
        ([-2], r"\[0, 24\).*-2 is not\. Received: suppress_token_ids=\[-2\]"),
        ([2], r"end token id 2.*Received: suppress_token_ids=\[2\]"),
        (list(range(24)), r"at least one of the 24.*Received: suppress_token_ids=\[0, 1,"),
        ([1.5], r"int token ids\. Received: suppress_token_ids=\[1\.5\]"),
        (5, r"int token ids\. Received: suppress_token_ids=5"),
    ],
)
def test_bad_suppressed_ids_are_refused_before_any_work(model, ids, pattern, monkeypatch):
    traces = model.generate_trace_count()
    monkeypatch.setattr(model, "encode", _no_work)
    for sampler in ("greedy", decoding.BeamSampler(num_beams=2)):
        with pytest.raises(ValueError, match=r"Argument `suppress_token_ids` .*" + pattern):
            model.generate(SOURCE, 4, sampler, suppress_token_ids=ids)
    with pytest.raises(ValueError, match=pattern):
        model.search(SOURCE, "greedy", 4, suppress_token_ids=ids)
    assert model.generate_trace_count() == traces


def _no_work(*args, **kwargs):
    raise AssertionError("encoded before the arguments were checked")


@pytest.mark.large
def test_each_suppression_compiles_once_and_is_reused():
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)
    one = 0 if BACKEND == "torch" else 1  # torch runs eagerly: nothing traced
    first = model.generate(SOURCE, 5, suppress_token_ids=[5, 9])
    assert model.generate_trace_count() == one
    # The same ids, in another order, with duplicates or as an array: no retrace.
    for ids in ([9, 5], (5, 9, 5), np.array([5, 9])):
        np.testing.assert_array_equal(model.generate(SOURCE, 5, suppress_token_ids=ids), first)
    assert model.generate_trace_count() == one
    model.generate(SOURCE, 5, suppress_token_ids=[5])
    assert model.generate_trace_count() == 2 * one
    model.generate(SOURCE, 5)
    model.generate(SOURCE, 5, suppress_token_ids=[])  # nothing suppressed: the same function
    assert model.generate_trace_count() == 3 * one


# Generation rules, Hugging Face beams, the decoder start token -----------------

RULE_SAMPLERS = {
    "greedy": decoding.GreedySampler(),
    "beam": decoding.BeamSampler(num_beams=3, length_penalty=0.6),
    "hf_beam": decoding.BeamSampler(num_beams=3, length_penalty=1.0, length_penalty_form="hf",
                                    early_stopping="never"),
    "top_k": decoding.TopKSampler(k=4, seed=3),
}


@pytest.fixture(scope="module")
def ending_model():
    """The small model with its end token made likely (bias +20)."""
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)
    bias = model.output_projection.bias
    bias.assign(bias + 20.0 * keras.ops.one_hot(model.end_token_id, 24))
    return model


@pytest.mark.large
@pytest.mark.slow_on("jax", reason=(
    "generates eagerly: JAX compiles each op per shape; there the compiled rules equal "
    "transformers' (tests/decoding/hf_beam_search_test.py) and generate's "
    "(test_search_takes_the_rules_of_generate)"))
@pytest.mark.parametrize("name", sorted(RULE_SAMPLERS))
def test_generation_rules_reach_every_sampler(unending_model, ending_model, name):
    """(Uncompiled, to save time: the compiled rules are checked against
    `transformers` in tests/decoding and on every backend above.)"""
    sampler, end = RULE_SAMPLERS[name], unending_model.end_token_id

    def run(model, **rules):
        return model.generate(SOURCE, 6, sampler, jit_compile=False, **rules)

    assert (run(ending_model)[:, 0] == end).all()
    tokens = run(ending_model, min_length=3)
    assert (tokens[:, :3] != end).all() and (tokens[:, 3] == end).all()
    tokens = run(unending_model, forced_bos_token_id=7, forced_eos_token_id=end)
    assert (tokens[:, 0] == 7).all() and (tokens[:, -1] == end).all()
    tokens = run(unending_model, no_repeat_ngram_size=1)
    for row in tokens:  # unigrams: no id twice, nor the start token
        assert len(set(row.tolist()) | {unending_model.start_token_id}) == len(row) + 1
    picked = sorted(set(run(unending_model).ravel().tolist()))
    tokens = run(unending_model, bad_words_ids=[[i] for i in picked])
    assert not np.isin(tokens, picked).any()
    tokens = run(unending_model, begin_suppress_token_ids=picked)
    assert not np.isin(tokens[:, 0], picked).any()


@pytest.mark.large
@pytest.mark.same_path_on("jax", reason=(
    "which rule the hf beam form applies is Python, the same on every backend; JAX's "
    "compiled hf beam search equals transformers' in tests/decoding/hf_beam_search_test.py "
    "and suppresses ids in test_suppressed_token_ids_are_never_generated[beam]"))
def test_a_hf_beam_sampler_suppresses_on_log_probabilities(unending_model):
    """With the "hf" beam form, `suppress_token_ids` become the rule
    `transformers` applies (-inf on the log-probabilities, no
    renormalisation), not the logits wrapper of the other samplers."""
    model, sampler = unending_model, RULE_SAMPLERS["hf_beam"]
    picked = sorted(set(model.generate(SOURCE, 6, sampler).ravel().tolist()))
    result = model.generate(SOURCE, 6, sampler, suppress_token_ids=picked, return_scores=True)
    assert not np.isin(result.token_ids, picked).any()
    source = np.pad(SOURCE, ((0, 0), (0, 3)))
    as_rule = model.search(source, sampler, 6,
                           rules=decoding.GenerationRules(suppress_token_ids=picked))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(as_rule.token_ids),
                                  result.token_ids)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(as_rule.scores), result.scores,
                               rtol=1e-5)
    wrapped = model.search(source, sampler, 6, rules=decoding.GenerationRules(
        suppress_token_ids=picked, renormalize_logits=True))  # what the wrapper would give
    assert (keras.ops.convert_to_numpy(wrapped.scores) > result.scores + 1e-4).all()


@pytest.mark.slow_on("jax", reason=(
    "generates eagerly: JAX compiles each op per shape; there test_search_takes_the_rules_"
    "of_generate generates compiled from another decoder start token"))
def test_the_decoder_start_token_is_the_first_input(unending_model):
    model = unending_model
    plain = model.generate(SOURCE, 6, jit_compile=False)
    start, tokens = next(
        (start, tokens) for start in range(3, 24)
        for tokens in [model.generate(SOURCE, 6, decoder_start_token_id=start, jit_compile=False)]
        if not np.array_equal(tokens, plain)
    )
    decoder_in = np.concatenate([np.full((2, 1), start), tokens[:, :-1]], axis=1)
    logits = np.asarray(model({"encoder_token_ids": SOURCE, "decoder_token_ids": decoder_in}))
    for row in range(2):
        ends = np.flatnonzero(tokens[row] == model.end_token_id)
        upto = ends[0] + 1 if len(ends) else 6
        np.testing.assert_array_equal(tokens[row, :upto], logits[row, :upto].argmax(-1))


def test_search_takes_the_rules_of_generate(unending_model):
    model, sampler = unending_model, RULE_SAMPLERS["hf_beam"]
    rules = decoding.GenerationRules(min_length=2, no_repeat_ngram_size=2,
                                     bad_words_ids=[[3, 4]], forced_bos_token_id=9)
    generated = model.generate(SOURCE, 6, sampler, decoder_start_token_id=4,
                               **rules.get_config())
    searched = model.search(np.pad(SOURCE, ((0, 0), (0, 3))), sampler, 6, rules=rules,
                            decoder_start_token_id=4).token_ids
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(searched), generated)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"min_length": -1}, r"Received: min_length=-1"),
        ({"forced_bos_token_id": 24}, r"\[0, 24\).*Received: forced_bos_token_id=24"),
        ({"bad_words_ids": [[3, 30]]}, r"Received: bad_words_ids=\(\(3, 30\),\)"),
        ({"no_repeat_ngram_size": 1.0}, r"Received: no_repeat_ngram_size=1.0"),
        ({"decoder_start_token_id": 24}, r"Received: decoder_start_token_id=24"),
        ({"decoder_start_token_id": True}, r"Received: decoder_start_token_id=True"),
    ],
)
def test_bad_generation_rules_are_refused_before_any_work(model, kwargs, pattern, monkeypatch):
    traces = model.generate_trace_count()
    monkeypatch.setattr(model, "encode", _no_work)
    for sampler in ("greedy", RULE_SAMPLERS["hf_beam"]):
        with pytest.raises(ValueError, match=pattern):
            model.generate(SOURCE, 4, sampler, **kwargs)
    assert model.generate_trace_count() == traces


def test_arguments_a_hf_beam_search_cannot_use_are_refused_before_any_work(model,
                                                                           monkeypatch):
    monkeypatch.setattr(model, "encode", _no_work)
    with pytest.raises(ValueError, match=r"return_attention.*Received: return_attention=True"):
        model.generate(SOURCE, 4, RULE_SAMPLERS["hf_beam"], return_attention=True)
    with pytest.raises(ValueError, match=r"`rules`.*Received: rules=\{'min_length': 2\}"):
        model.search(SOURCE, "greedy", 4, rules={"min_length": 2})


@pytest.mark.large
def test_each_set_of_rules_compiles_once():
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)
    one = 0 if BACKEND == "torch" else 1
    first = model.generate(SOURCE, 5, bad_words_ids=[[3], [4, 5]], min_length=1)
    model.generate(SOURCE, 5, bad_words_ids=((3,), (4, 5)), min_length=1)
    assert model.generate_trace_count() == one
    model.generate(SOURCE, 5, bad_words_ids=[[3]], min_length=1)
    model.generate(SOURCE, 5, decoder_start_token_id=3)
    assert model.generate_trace_count() == 3 * one
    assert first.shape == (2, 5)


@pytest.mark.parametrize("flag", ["return_scores", "return_logits", "return_attention",
                                  "jit_compile"])
def test_generation_flags_refuse_what_is_not_a_bool_before_any_work(model, flag, monkeypatch):
    monkeypatch.setattr(model, "encode", _no_work)
    for bad in ("no", 0):
        with pytest.raises(TypeError, match=rf"Argument `{flag}` must be True or False\. "
                                            rf"Received: {flag}={bad!r}$"):
            model.generate(SOURCE, 4, **{flag: bad})
    if flag in ("return_logits", "return_attention"):
        with pytest.raises(TypeError, match=rf"Received: {flag}='no'$"):
            model.search(SOURCE, "greedy", 4, **{flag: "no"})


def test_a_max_length_beyond_memory_is_refused_before_any_work(model, monkeypatch):
    per_position = model.decoder_cache_bytes_per_position()
    assert per_position == 2 * SMALL["num_layers"] * SMALL["hidden_dim"] * 4  # keys, values
    monkeypatch.setattr(model, "encode", _no_work)
    for sampler in ("greedy", decoding.BeamSampler(num_beams=3)):
        with pytest.raises(ValueError, match=r"Argument `max_length` needs at least .* GiB .* "
                                             r"more than this machine's .* GiB of memory\. "
                                             r"Received: max_length=1000000000$"):
            model.generate(SOURCE, 10**9, sampler)


@pytest.mark.large
@pytest.mark.parametrize("architecture", [
    "transformer_tied",
    pytest.param("rnn", marks=pytest.mark.same_path_on("jax", reason=(
        "the rebuilding and reloading of transformer_tied's case; JAX quantizes the RNN "
        "decoder's projections and loads them in tests/layers/quantization_test.py::"
        "test_rnn_decoder_quantizes_its_projections_and_loads_the_raw_layout"))),
])
def test_a_quantized_model_round_trips_through_a_keras_file(architecture, tmp_path):
    """The model is rebuilt in float from its constructor arguments: the
    sublayers recorded as quantized in its config are quantized again before
    their variables load (it failed: "expected 1 variables, but received 0")."""
    keras.utils.set_random_seed(0)
    if architecture == "rnn":
        model = rnn_seq2seq(20, target_vocabulary_size=24, embedding_dim=8, units=16)
    else:
        model = transformer_seq2seq(24, share_embeddings=True, tie_embeddings=True, **SMALL)
    model.quantize("int8")
    assert "int8" in {v.dtype for v in model.weights}
    model.save(tmp_path / "int8.keras")
    loaded = keras.saving.load_model(tmp_path / "int8.keras")
    assert loaded.get_config() == model.get_config()
    assert loaded.get_config()["quantized_sublayers"]
    assert ([(v.shape, v.dtype) for v in loaded.weights]
            == [(v.shape, v.dtype) for v in model.weights])
    # Compiled generation with its logits: every weight, through the cached
    # decoder (an eager call compiles each op on JAX).
    expected = model.generate(SOURCE, 6, return_logits=True)
    result = loaded.generate(SOURCE, 6, return_logits=True)
    np.testing.assert_array_equal(result.token_ids, expected.token_ids)
    np.testing.assert_array_equal(result.logits, expected.logits)


def test_compiled_generate_reads_the_weights_at_each_call():
    """The variables are listed once, their values read at every call: new
    weights are used at once, without a new trace."""
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)
    keras.utils.set_random_seed(1)
    other = transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)
    before = model.generate(SOURCE, 6, return_logits=True).logits
    traces = model.generate_trace_count()
    model.set_weights(other.get_weights())
    after = model.generate(SOURCE, 6, return_logits=True).logits
    assert not np.allclose(after, before)
    np.testing.assert_allclose(after, other.generate(SOURCE, 6, return_logits=True).logits,
                               atol=1e-5)
    assert model.generate_trace_count() == traces


@pytest.mark.large
@pytest.mark.slow_on("jax", reason=(
    "generates eagerly: JAX compiles each op per shape; which compiled function generate "
    "keeps is Python, checked on TensorFlow, and JAX generates compiled with int8 weights in "
    "test_a_quantized_model_round_trips_through_a_keras_file"))
def test_quantize_drops_the_compiled_generation_of_the_float_weights():
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(20, target_vocabulary_size=24, **SMALL)
    before = model.generate(SOURCE, 6, return_logits=True).logits  # compiled, cached
    model.quantize("int8")
    compiled = model.generate(SOURCE, 6, return_logits=True).logits
    eager = model.generate(SOURCE, 6, return_logits=True, jit_compile=False).logits
    assert not np.array_equal(compiled, before)  # the cached float function is gone
    np.testing.assert_allclose(compiled, eager, atol=0.1)  # int8 rounding on boundaries


def test_quantized_sublayers_must_be_a_dict():
    with pytest.raises(ValueError, match=r"Received: quantized_sublayers=\['query'\]"):
        TransformerSeq2Seq(20, quantized_sublayers=["query"], **SMALL)


@pytest.mark.tf_only("tf.function traces again a step that created variables")
def test_fit_traces_the_train_step_once():
    """Seq2SeqModel.fit builds the optimizer before Keras traces the step
    (Keras alone makes Adam's moments in the first trace, and TensorFlow then
    traces a second time)."""
    from keras_attention.data import make_task

    keras.utils.set_random_seed(0)
    seq2seq = transformer_seq2seq(16, **SMALL)
    seq2seq.compile(optimizer="adam", jit_compile=False,
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    traces = count_train_step_traces(seq2seq)
    x, y = make_task("copy", 16, max_length=4)
    history = seq2seq.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert len(traces) == 1
    assert seq2seq.optimizer.iterations.numpy() == 4
    assert history.history["loss"][1] < history.history["loss"][0]
