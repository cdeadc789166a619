"""`TextGenerator` (the model kind that decodes, a `TextToText`): made in
Python from a model, tokenizers and a `GenerationConfig`, it answers as the
run folder saved from the same parts (`open_run`, the CLI's path) does,
evaluates pairs or a file, refuses bad arguments before any work, and a
line longer than its source length unless asked to cut it. (Made from a converted checkpoint:
tests/runs/convert_test.py.)"""

import pickle

import keras
import numpy as np
import pytest

from keras_attention import data, metrics, runs
from keras_attention.models import transformer_seq2seq

GENERATION = runs.GenerationConfig(source_length=24, target_length=8, strategy="beam",
                                   num_beams=2, suppress_token_ids=[0, 1, 2])
SOURCES = ["March 3, 2021", "May 1, 1999", "the 1st of june, 2001"]
#: A line of exactly `GENERATION.source_length` tokens, and one of a token more
#: (checked by `test_the_lines_are_as_long_as_the_tests_need`).
AT_THE_LIMIT = "March 3, 2021 March 3, 2021"
ONE_TOO_MANY = "March 3, 2021, March 3, 2021"


@pytest.fixture(scope="module")
def tokenizer():
    pairs = data.make_date_pairs(200)
    return data.train_tokenizer([s for p in pairs for s in p], 80)


@pytest.fixture(scope="module")
def translator(tokenizer):
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(tokenizer.vocabulary_size(), num_layers=1, hidden_dim=16,
                                num_heads=2, intermediate_dim=16, max_length=32,
                                **data.special_token_ids(tokenizer))
    return runs.TextGenerator(model, tokenizer, tokenizer, GENERATION)


def test_the_parts_answer_as_their_run_folder(translator, tmp_path):
    runs.save_run(tmp_path / "run", translator.model, translator.source_tokenizer,
                  translator.target_tokenizer, recipe="translation", config={}, scores={},
                  decoding=translator.generation)
    saved = runs.open_run(tmp_path / "run")
    assert type(saved) is runs.TextGenerator and saved.generation == GENERATION
    assert saved.run_dir == str(tmp_path / "run") and saved.metadata["recipe"] == "translation"
    for search in ({}, {"strategy": "greedy"}, {"num_beams": 3}):
        outputs = translator.generate(SOURCES, **search)
        assert len(outputs) == 3 and all(isinstance(text, str) for text in outputs)
        assert saved.generate(SOURCES, **search) == outputs, search


def test_generate_is_the_detokenized_search(translator):
    result = translator.search(SOURCES, return_scores=True)
    assert result.token_ids.shape[0] == 3
    assert translator.detokenize(result.token_ids) == translator.generate(SOURCES)
    assert translator.generate([]) == []


def test_evaluate_pairs_in_python_and_in_a_file(translator, tmp_path):
    pairs = [(source, "2021-03-03") for source in SOURCES]
    scores = translator.evaluate(pairs)
    assert set(scores) == {"bleu", "chrf", "examples"} and scores["examples"] == 3
    (tmp_path / "pairs.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs),
                                        encoding="utf-8")
    assert translator.evaluate(str(tmp_path / "pairs.tsv")) == scores
    assert translator.evaluate(pairs, max_examples=1)["examples"] == 1
    # One scoring path: the recipe's registered metrics through metrics.scores.
    outputs = translator.generate(SOURCES)
    expected = metrics.scores(["bleu", "chrf"], outputs, [t for _, t in pairs])
    assert translator.score(outputs, [t for _, t in pairs]) == expected
    assert {key: scores[key] for key in expected} == expected


def test_a_recipe_with_an_unknown_metric_is_refused_before_generating(translator, monkeypatch):
    from keras_attention.runs import registry

    monkeypatch.setattr(translator, "generate", lambda *a, **k: pytest.fail("generated"))
    recipe = registry.recipe("translation")
    registry.register_recipe(registry.Recipe(name="translation", examples=recipe.examples,
                                             metrics=("bleu", "meteor")))
    try:
        with pytest.raises(ValueError, match=r"`names`.*Received: names=\('bleu', 'meteor'\)"):
            translator.evaluate([(SOURCES[0], "2021-03-03")])
    finally:
        registry.register_recipe(recipe)


@pytest.mark.parametrize("call, message", [
    (lambda t: t.evaluate([("a", 3)]), r"`data` must be .*Received: a pair \('a', 3\)"),
    (lambda t: t.evaluate([]), r"`data` must hold at least one"),
    (lambda t: t.generate(["a", 1]), r"`texts` must be a list of str"),
    (lambda t: t.generate(["a"], strategy="top_k"), r"Received: strategy='top_k'"),
    (lambda t: t.generate(["a"], num_beams=0), r"Received: num_beams=0"),
])
def test_bad_arguments_are_refused_before_any_work(translator, monkeypatch, call, message):
    monkeypatch.setattr(translator.model, "generate", None)  # never reached
    with pytest.raises(ValueError, match=message):
        call(translator)


def test_bad_parts_are_refused_at_construction(translator):
    model, tokenizer = translator.model, translator.source_tokenizer
    with pytest.raises(ValueError, match=r"`generation` must be a `GenerationConfig`"):
        runs.TextGenerator(model, tokenizer)
    with pytest.raises(ValueError, match=r"`recipe` must be one this model kind serves"):
        runs.TextGenerator(model, tokenizer, generation=GENERATION, recipe="poetry")
    with pytest.raises(ValueError, match=r"`jit_compile` must be a bool"):
        runs.TextGenerator(model, tokenizer, generation=GENERATION, jit_compile=1)
    as_dict = runs.TextGenerator(model, tokenizer, generation=GENERATION.to_dict())
    assert as_dict.generation == GENERATION and as_dict.target_tokenizer is tokenizer


## A line longer than the source length


def test_the_lines_are_as_long_as_the_tests_need(translator, tokenizer):
    assert translator.source_limit == GENERATION.source_length == 24
    assert [len(tokenizer(text)) for text in (AT_THE_LIMIT, ONE_TOO_MANY)] == [24, 25]
    assert max(len(tokenizer(text)) for text in SOURCES) < 24


@pytest.mark.parametrize("call", [
    lambda t, texts: t.encode(texts),
    lambda t, texts: t.search(texts),
    lambda t, texts: t.generate(texts),
    lambda t, texts: t.generate(texts, "greedy", truncate=False),
])
def test_a_line_longer_than_the_source_length_is_refused_before_any_search(
        translator, tokenizer, monkeypatch, call):
    monkeypatch.setattr(translator.model, "generate", None)  # never reached
    long = " ".join(SOURCES * 3)
    with pytest.raises(runs.SourceTooLongError) as error:
        call(translator, [SOURCES[0], ONE_TOO_MANY, long])
    assert isinstance(error.value, ValueError)
    assert (error.value.index, error.value.length, error.value.limit) == (1, 25, 24)
    assert str(error.value) == (
        "Argument `texts` holds a line longer than this model accepts: line 2 has 25 tokens, "
        "more than the run's source length of 24. Shorten it, or ask for truncation "
        "(`truncate=True`; `--truncate` on the command line) to cut it to 24 tokens. "
        "Received: texts[1] of 25 tokens")
    with pytest.raises(runs.SourceTooLongError) as error:
        call(translator, [long])
    assert (error.value.index, error.value.length) == (0, len(tokenizer(long)))
    copy = pickle.loads(pickle.dumps(error.value))  # e.g. from a worker process
    assert (copy.index, copy.length, copy.limit, str(copy)) == (
        0, len(tokenizer(long)), 24, str(error.value))


def test_a_line_of_exactly_the_source_length_is_accepted(translator, tokenizer):
    ids = translator.encode([AT_THE_LIMIT, SOURCES[1]])
    assert ids.dtype == np.int32 and ids.shape == (2, 24)
    np.testing.assert_array_equal(ids[0], tokenizer(AT_THE_LIMIT))
    np.testing.assert_array_equal(ids[1, :9], tokenizer(SOURCES[1]))
    assert (ids[1, 9:] == translator.model.pad_token_id).all()
    np.testing.assert_array_equal(ids, translator.encode([AT_THE_LIMIT, SOURCES[1]],
                                                         truncate=True))
    assert len(translator.generate([AT_THE_LIMIT])) == 1


def test_truncate_cuts_as_the_kind_always_has(translator, tokenizer):
    """`truncate=True`: the ids the tokenizer cuts to the source length
    (`encode_lines`: a recipe's first ids), so the outputs of the cut lines
    themselves."""
    texts = [ONE_TOO_MANY, SOURCES[0], " ".join(SOURCES * 3)]
    ids = translator.encode(texts, truncate=True)
    rows = [[int(i) for i in tokenizer(text)][:24] for text in texts]
    np.testing.assert_array_equal(ids, [row + [0] * (24 - len(row)) for row in rows])
    assert ids.shape == (3, 24)
    cut = [tokenizer.detokenize([row[row != 0]])[0] for row in ids]
    np.testing.assert_array_equal(translator.encode(cut), ids)  # each cut line fits
    expected = translator.generate(cut)
    assert translator.generate(texts, truncate=True) == expected
    searched = translator.search(texts, truncate=True)
    assert translator.detokenize(searched) == expected
    np.testing.assert_array_equal(searched, translator.generate_ids(ids))


def test_generate_ids_searches_with_the_run_settings_and_overrides(translator, monkeypatch):
    calls = []
    monkeypatch.setattr(translator.model, "generate",
                        lambda token_ids, **kwargs: calls.append((token_ids, kwargs)))
    ids = translator.encode(SOURCES)
    translator.generate_ids(ids, "greedy", batch_size=8, return_scores=True)
    translator.generate_ids(ids, jit_compile=False)
    (first_ids, first), (_, second) = calls
    assert first_ids is ids
    expected = GENERATION.with_search("greedy").generate_kwargs()
    assert first == {"batch_size": 8, "verbose": 0, "jit_compile": True, "return_scores": True,
                     **expected}
    assert second == {"batch_size": 64, "verbose": 0, "jit_compile": False,
                      **GENERATION.generate_kwargs()}
    assert second != first  # the run's beam search, not the greedy override
    with pytest.raises(ValueError, match=r"Received: num_beams=0"):
        translator.generate_ids(ids, num_beams=0)


def test_evaluate_cuts_long_sources_as_training_does(translator, monkeypatch):
    long = " ".join(SOURCES * 3)
    seen = []
    generate = runs.TextToText.generate

    def recording(self, texts, *args, **kwargs):
        seen.append(kwargs.get("truncate"))
        return generate(self, texts, *args, **kwargs)

    monkeypatch.setattr(runs.TextToText, "generate", recording)
    scores = translator.evaluate([(long, "2021-03-03"), (SOURCES[0], "2021-03-03")])
    assert scores["examples"] == 2 and seen == [True]


@pytest.mark.parametrize("call, message", [
    (lambda t: t.generate(["a"], truncate="yes"), r"`truncate` must be a bool. "
                                                  r"Received: truncate='yes'"),
    (lambda t: t.encode(["a"], truncate=1), r"Received: truncate=1"),
    (lambda t: t.encode([]), r"`texts` must hold at least one line. Received: texts=\[\]"),
    (lambda t: t.search(["a", None]), r"`texts` must be a list of str"),
])
def test_bad_encode_arguments_are_refused(translator, monkeypatch, call, message):
    monkeypatch.setattr(translator.model, "generate", None)  # never reached
    with pytest.raises(ValueError, match=message):
        call(translator)
