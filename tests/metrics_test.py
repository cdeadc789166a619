import doctest

import keras
import numpy as np
import pytest
import sacrebleu

from keras_attention import metrics
from keras_attention.data import make_task, strip_special
from keras_attention.metrics import (
    ROUGE_TYPES,
    GenerationMetricsCallback,
    bleu,
    chrf,
    exact_match,
    f1_score,
    normalize_answer,
    rouge,
    scores,
)
from keras_attention.models import GenerationResult, transformer_seq2seq

# The example of sacrebleu's README (two reference streams): BLEU 48.53.
HYPOTHESES = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
STREAM_1 = ["The dog bit the man.", "It was not unexpected.", "The man bit him first."]
STREAM_2 = ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."]


def test_docstring_examples_run():
    result = doctest.testmod(metrics, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_identical_text_scores_100():
    text = ["the quick brown fox jumps over the lazy dog", "a second sentence is here"]
    assert bleu(text, text) == pytest.approx(100.0)
    assert chrf(text, text) == pytest.approx(100.0)
    assert rouge(text, text) == pytest.approx({"rouge1": 100.0, "rouge2": 100.0, "rougeL": 100.0})


def test_bleu_and_chrf_equal_sacrebleu_single_reference():
    assert bleu(HYPOTHESES, STREAM_1) == sacrebleu.corpus_bleu(HYPOTHESES, [STREAM_1]).score
    assert chrf(HYPOTHESES, STREAM_1) == sacrebleu.corpus_chrf(HYPOTHESES, [STREAM_1]).score
    assert round(bleu(HYPOTHESES, STREAM_1), 2) == 45.07


def test_bleu_and_chrf_equal_sacrebleu_multi_reference():
    per_example = [list(refs) for refs in zip(STREAM_1, STREAM_2)]
    assert round(bleu(HYPOTHESES, per_example), 2) == 48.53  # sacrebleu's README
    assert bleu(HYPOTHESES, per_example) == pytest.approx(
        sacrebleu.corpus_bleu(HYPOTHESES, [STREAM_1, STREAM_2]).score
    )
    assert chrf(HYPOTHESES, per_example) == pytest.approx(
        sacrebleu.corpus_chrf(HYPOTHESES, [STREAM_1, STREAM_2]).score
    )


def test_unequal_reference_counts():
    # Example 1 has one reference, the others two (or three). A repeated
    # reference changes neither BLEU nor chrF, so the expected value is
    # sacrebleu's on full streams that repeat example 1's only reference.
    references = [[STREAM_1[0]], [STREAM_1[1], STREAM_2[1]],
                  [STREAM_1[2], STREAM_2[2], "The man had bitten him."]]
    streams = [STREAM_1, [STREAM_1[0]] + STREAM_2[1:],
               [STREAM_1[0], STREAM_1[1], "The man had bitten him."]]
    expected_bleu = sacrebleu.corpus_bleu(HYPOTHESES, streams).score
    expected_chrf = sacrebleu.corpus_chrf(HYPOTHESES, streams).score
    assert bleu(HYPOTHESES, references) == pytest.approx(expected_bleu)
    assert chrf(HYPOTHESES, references) == pytest.approx(expected_chrf)
    # Differs from the single-reference score: the extra references count.
    assert bleu(HYPOTHESES, references) != pytest.approx(bleu(HYPOTHESES, STREAM_1))
    # Strings and lists may be mixed; a tuple is a list of references.
    assert bleu(HYPOTHESES, [STREAM_1[0], tuple(references[1]), references[2]]) == (
        pytest.approx(expected_bleu)
    )


def test_rouge_hand_checked_values():
    scores = rouge(["the cat sat"], ["the cat sat on the mat"])
    # rouge1: P = 3/3, R = 3/6; rouge2: P = 2/2, R = 2/5; rougeL = rouge1 here.
    assert scores == pytest.approx({"rouge1": 200 / 3, "rouge2": 400 / 7, "rougeL": 200 / 3})
    # The stemmer: "cats"/"cat" and "sitting"/"sits" share stems.
    assert rouge(["cats sitting"], ["cat sits"])["rouge1"] == pytest.approx(100.0)


def test_rouge_takes_the_best_reference_per_example():
    hypothesis = ["the cat sat on the mat"]
    single = rouge(hypothesis, ["a dog ran in a park today"])
    better = "the cat sat on a mat"
    multi = rouge(hypothesis, [["a dog ran in a park today", better]])
    for key in ("rouge1", "rouge2", "rougeL"):
        assert multi[key] > single[key]
    assert multi == pytest.approx(rouge(hypothesis, [better]))
    # Averaged over examples.
    both = rouge(hypothesis * 2, ["a dog ran in a park today", better])
    for key in both:
        assert both[key] == pytest.approx((single[key] + multi[key]) / 2)


def test_squad_normalisation():
    assert normalize_answer("The Denver Broncos!") == "denver broncos"
    assert normalize_answer("  an   Apple, a day ") == "apple day"
    assert normalize_answer("banana theory") == "banana theory"  # whole words only
    with pytest.raises(TypeError, match="Received: text=3"):
        normalize_answer(3)


def test_squad_exact_match_and_f1_official_examples():
    assert exact_match(["the Denver Broncos"], ["Denver Broncos"]) == 100.0
    assert f1_score(["the Denver Broncos"], ["Denver Broncos"]) == 100.0
    assert exact_match(["Denver"], ["Denver Broncos"]) == 0.0
    assert round(f1_score(["Denver"], ["Denver Broncos"]), 2) == 66.67
    # Best over the gold answers (SQuAD lists up to three).
    golds = [["Denver Broncos", "Denver", "The Broncos"]]
    assert exact_match(["Denver"], golds) == 100.0
    assert exact_match(["broncos."], golds) == 100.0
    assert f1_score(["Santa Clara"], golds) == 0.0
    # Averaged over examples: (100 + 0) / 2 and (100 + 2/3 * 100) / 2.
    predictions = ["the Denver Broncos", "Denver"]
    answers = ["Denver Broncos", "Denver Broncos"]
    assert exact_match(predictions, answers) == 50.0
    assert f1_score(predictions, answers) == pytest.approx(250 / 3)


@pytest.mark.parametrize("function", [bleu, chrf, rouge, exact_match, f1_score])
def test_bad_inputs_raise(function):
    with pytest.raises(ValueError, match=r"same length.*Received: len\(.*\)=2, len\(.*\)=1"):
        function(["a b", "c d"], ["a b"])
    with pytest.raises(ValueError, match="must not be empty"):
        function([], [])
    with pytest.raises(TypeError, match="must be a string"):
        function(["a b", 3], ["a b", "c"])
    with pytest.raises(TypeError, match="string or a list of strings"):
        function(["a b"], [None])
    with pytest.raises(TypeError, match="must be a string"):
        function(["a b"], [["a b", 1]])
    with pytest.raises(TypeError, match="list of strings"):
        function("a b", ["a b"])
    with pytest.raises(ValueError, match="at least one reference"):
        function(["a b"], [[]])


# GenerationMetricsCallback ----------------------------------------------------
WORDS = ["<pad>", "<s>", "</s>", "the", "cat", "sat", "on", "mat", "dog"]


def detokenize(token_ids):
    return [" ".join(WORDS[t] for t in row) for row in strip_special(token_ids)]


class FakeModel:
    """A stand-in for a `Seq2SeqModel`: fixed outputs, recorded calls."""

    def __init__(self, token_ids):
        self.token_ids = np.asarray(token_ids, "int32")
        self.calls = []

    def generate(self, encoder_token_ids, max_length, sampler="greedy", **kwargs):
        self.calls.append((np.asarray(encoder_token_ids).shape, max_length, sampler, kwargs))
        return self.token_ids


SOURCE = np.array([[3, 4, 5, 0], [3, 8, 0, 0]], "int32")
GENERATED = [[3, 4, 5, 6, 3, 7, 2, 0], [3, 8, 5, 6, 3, 7, 2, 0]]  # "the cat sat on the mat"
REFERENCES = ["the cat sat on the mat", ["the cat sat on a mat", "the dog sat on the mat"]]


def test_scores_give_each_named_metric_as_its_own_function_does():
    hypotheses = ["the cat sat on the mat", "a dog ran off"]
    names = ["bleu", "chrf", "rouge1", "rouge2", "rougeL", "exact_match", "f1"]
    got = scores(names, hypotheses, REFERENCES)
    assert list(got) == names
    assert got["bleu"] == bleu(hypotheses, REFERENCES)
    assert got["chrf"] == chrf(hypotheses, REFERENCES)
    assert got["exact_match"] == exact_match(hypotheses, REFERENCES)
    assert got["f1"] == f1_score(hypotheses, REFERENCES)
    assert {k: got[k] for k in ROUGE_TYPES} == rouge(hypotheses, REFERENCES)
    assert 0.0 < got["bleu"] < 100.0 and got["exact_match"] == 50.0  # one of two exact
    for bad in (["meteor"], [], "bleu", ("bleu", 3)):
        with pytest.raises(ValueError, match=r"`names` must be a non-empty list.*Received"):
            scores(bad, hypotheses, REFERENCES)


def test_callback_decodes_with_a_runs_generation_settings():
    """`generation=` (a run's `GenerationConfig`): its sampler, length and
    suppressed ids, as `keras-attention evaluate` decodes the saved run."""
    from keras_attention.decoding.samplers import BeamSampler
    from keras_attention.runs import GenerationConfig

    generation = GenerationConfig(source_length=4, target_length=6, strategy="beam",
                                  num_beams=2, length_penalty=0.6, length_penalty_form="hf",
                                  suppress_token_ids=[1, 0])
    model = FakeModel(GENERATED)
    callback = GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, generation=generation,
                                         metric="chrf")
    callback.set_model(model)
    logs = {}
    callback.on_epoch_end(0, logs)
    hypotheses = ["the cat sat on the mat", "the dog sat on the mat"]
    assert logs == {"val_chrf": pytest.approx(chrf(hypotheses, REFERENCES))}
    [(shape, max_length, sampler, kwargs)] = model.calls
    assert (shape, max_length) == ((2, 4), 6)
    assert sampler == BeamSampler(num_beams=2, length_penalty=0.6, length_penalty_form="hf")
    assert kwargs == {"batch_size": 64, "suppress_token_ids": (0, 1)}
    for kwargs, message in (
            (dict(generation=generation, max_length=8), r"`max_length` must be None with "
                                                        r"`generation`.*Received: max_length=8"),
            (dict(generation=generation, suppress_token_ids=[1]), r"`suppress_token_ids` must "
                                                                  r"be None with `generation`"),
            (dict(generation={"max_length": 6}), r"`generation` must have `generate_kwargs\(\)`"),
            (dict(), r"`max_length` must be given without `generation`")):
        with pytest.raises(ValueError, match=message):
            GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, **kwargs)


def test_callback_writes_the_score_to_logs():
    model = FakeModel(GENERATED)
    callback = GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, max_length=8,
                                         batch_size=16)
    callback.set_model(model)
    logs = {"loss": 1.0}
    callback.on_epoch_end(0, logs)
    expected = bleu(["the cat sat on the mat", "the dog sat on the mat"], REFERENCES)
    assert logs == {"loss": 1.0, "val_bleu": pytest.approx(expected)}
    assert isinstance(logs["val_bleu"], float)
    assert model.calls == [((2, 4), 8, "greedy", {"batch_size": 16})]


@pytest.mark.parametrize("metric", ["chrf", "rouge1", "rouge2", "rougeL", "exact_match", "f1"])
def test_callback_metrics(metric):
    callback = GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, 8, metric=metric)
    callback.set_model(FakeModel(GENERATED))
    logs = {}
    callback.on_epoch_end(0, logs)
    hypotheses = ["the cat sat on the mat", "the dog sat on the mat"]
    expected = {
        "chrf": lambda: chrf(hypotheses, REFERENCES),
        "exact_match": lambda: exact_match(hypotheses, REFERENCES),
        "f1": lambda: f1_score(hypotheses, REFERENCES),
    }.get(metric, lambda: rouge(hypotheses, REFERENCES)[metric])()
    assert list(logs) == [f"val_{metric}"]
    assert logs[f"val_{metric}"] == pytest.approx(expected)


def test_callback_respects_every():
    model = FakeModel(GENERATED)
    callback = GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, 8, every=2)
    callback.set_model(model)
    written = []
    for epoch in range(5):
        logs = {"loss": 0.0}
        callback.on_epoch_end(epoch, logs)
        written.append("val_bleu" in logs)
    assert written == [False, True, False, True, False]
    assert len(model.calls) == 2


def test_callback_accepts_a_generation_result():
    model = FakeModel(GENERATED)
    model.token_ids = GenerationResult(model.token_ids, None, None, None)
    callback = GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, 8, metric="f1")
    callback.set_model(model)
    logs = {}
    callback.on_epoch_end(0, logs)
    assert logs["val_f1"] == pytest.approx(100.0)


def test_callback_argument_checks():
    def make(**kwargs):
        args = dict(encoder_token_ids=SOURCE, references=REFERENCES, detokenize=detokenize,
                    max_length=8)
        return GenerationMetricsCallback(**{**args, **kwargs})

    with pytest.raises(ValueError, match="Received: metric='meteor'"):
        make(metric="meteor")
    with pytest.raises(ValueError, match="Received: every=0"):
        make(every=0)
    with pytest.raises(ValueError, match="Received: max_length=0"):
        make(max_length=0)
    with pytest.raises(ValueError, match="Received: batch_size=-1"):
        make(batch_size=-1)
    with pytest.raises(ValueError, match="one entry per row"):
        make(references=["only one"])
    with pytest.raises(ValueError, match="integer array"):
        make(encoder_token_ids=np.zeros((2, 3), "float32"))
    with pytest.raises(TypeError, match="must be callable"):
        make(detokenize="not callable")
    with pytest.raises(TypeError, match="must be a string"):
        make(references=["a", 3])
    callback = make(detokenize=lambda ids: ["just one"])
    callback.set_model(FakeModel(GENERATED))
    with pytest.raises(ValueError, match="one string per row"):
        callback.on_epoch_end(0, {})


def test_callback_passes_suppressed_ids_and_checks_them_before_the_first_epoch():
    model = FakeModel(GENERATED)
    callback = GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, 8,
                                         suppress_token_ids=[1, 0, 1])
    callback.set_model(model)
    callback.on_epoch_end(0, {})
    assert model.calls == [((2, 4), 8, "greedy",
                            {"batch_size": 64, "suppress_token_ids": (0, 1)})]
    with pytest.raises(ValueError, match=r"`suppress_token_ids` must be a list.*Received: "
                                         r"suppress_token_ids=1"):
        GenerationMetricsCallback(SOURCE, REFERENCES, detokenize, 8, suppress_token_ids=1)

    keras.utils.set_random_seed(0)
    x, y = make_task("copy", 32, vocab_size=9, min_length=2, max_length=4, seed=0)
    seq2seq = transformer_seq2seq(9, num_layers=1, hidden_dim=16, num_heads=2,
                                  intermediate_dim=32, max_length=16)
    seq2seq.compile(optimizer="adam",
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    for ids, message in (([9], r"\[0, 9\)"), ([seq2seq.end_token_id], "end token")):
        callback = GenerationMetricsCallback(x["encoder_token_ids"][:4], ["a"] * 4, detokenize,
                                             max_length=5, suppress_token_ids=ids)
        with pytest.raises(ValueError, match=message):  # at train begin: no epoch has run
            seq2seq.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[callback])
    assert int(keras.ops.convert_to_numpy(seq2seq.optimizer.iterations)) == 0


@pytest.mark.large
def test_callback_with_a_real_model_in_fit():
    keras.utils.set_random_seed(0)
    x, y = make_task("copy", 64, vocab_size=9, min_length=2, max_length=4, seed=0)
    references = [" ".join(WORDS[t] for t in row) for row in strip_special(y[:8])]
    model = transformer_seq2seq(9, num_layers=1, hidden_dim=16, num_heads=2,
                                intermediate_dim=32, max_length=16)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callback = GenerationMetricsCallback(x["encoder_token_ids"][:8], references, detokenize,
                                         max_length=5, batch_size=8)
    stopping = keras.callbacks.EarlyStopping(monitor="val_bleu", mode="max", patience=5)
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0,
                        callbacks=[callback, stopping])
    assert len(history.history["val_bleu"]) == 2
    assert all(0.0 <= v <= 100.0 for v in history.history["val_bleu"])
    assert stopping.best is not None and np.isfinite(stopping.best)
