"""`TextToText`: made in Python from a model, tokenizers and a
`GenerationConfig`, it answers as the run folder saved from the same parts
(`SavedRun`, the CLI's path) does, evaluates pairs or a file, and refuses bad
arguments before any work. (Made from a converted checkpoint:
tests/runs/convert_test.py.)"""

import keras
import pytest

from keras_attention import data, runs
from keras_attention.models import transformer_seq2seq

GENERATION = runs.GenerationConfig(source_length=12, target_length=8, strategy="beam",
                                   num_beams=2, suppress_token_ids=[0, 1, 2])
SOURCES = ["March 3, 2021", "May 1, 1999", "the 1st of june, 2001"]


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
    return runs.TextToText(model, tokenizer, tokenizer, GENERATION)


def test_the_parts_answer_as_their_run_folder(translator, tmp_path):
    runs.save_run(tmp_path / "run", translator.model, translator.source_tokenizer,
                  translator.target_tokenizer, recipe="translation", config={}, scores={},
                  decoding=translator.generation)
    saved = runs.TextToText.from_run(tmp_path / "run")
    assert isinstance(saved, runs.SavedRun) and saved.generation == GENERATION
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
        runs.TextToText(model, tokenizer)
    with pytest.raises(ValueError, match=r"Received: kind='tagger'"):
        runs.TextToText(model, tokenizer, generation=GENERATION, kind="tagger")
    with pytest.raises(ValueError, match=r"`recipe` must be one this model kind serves"):
        runs.TextToText(model, tokenizer, generation=GENERATION, kind="converted",
                        recipe="question_answering")
    as_dict = runs.TextToText(model, tokenizer, generation=GENERATION.to_dict())
    assert as_dict.generation == GENERATION and as_dict.target_tokenizer is tokenizer
