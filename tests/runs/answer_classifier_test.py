"""`AnswerClassifier`: made in Python from a memory network, it answers as its
run folder does, refuses bad parts at construction and any search but its
one step. (Read from a run folder and checked: tests/runs_test.py,
tests/runs/reader_test.py.)"""

import pytest

from keras_attention import data, runs
from keras_attention.models import memory_network

CLASSES = ["kitchen", "office", "garden"]
LINES = ["Mary went to the kitchen. John left. | Where is Mary?", "| Who?"]


@pytest.fixture(scope="module")
def parts():
    pairs = data.make_date_pairs(100)
    tokenizer = data.train_tokenizer([s for p in pairs for s in p], 60)
    network = memory_network(tokenizer.vocabulary_size(), len(CLASSES), hidden_dim=8,
                             num_hops=1, max_memories=4, seed=0)
    return network, tokenizer


def test_made_in_python_it_answers_as_its_run_folder(parts, tmp_path):
    network, tokenizer = parts
    classifier = runs.AnswerClassifier(network, tokenizer, CLASSES, 4)
    assert (classifier.kind.name, classifier.recipe, classifier.source_format) == (
        "answer_classifier", "question_answering", "{story} | {question}")
    assert classifier.generation is None and classifier.target_tokenizer is tokenizer
    answers = classifier.generate(LINES)
    assert len(answers) == 2 and set(answers) <= set(CLASSES)
    runs.save_run(tmp_path / "qa", network, tokenizer, tokenizer, recipe="question_answering",
                  config={"max_memories": 4}, scores={}, extra={"answer_classes": CLASSES})
    saved = runs.open_run(tmp_path / "qa")
    assert type(saved) is runs.AnswerClassifier and saved.max_memories == 4
    assert saved.generate(LINES) == answers and classifier.generate([]) == []
    assert classifier.vocabulary_sizes() == [
        ("source", tokenizer.vocabulary_size(), tokenizer.vocabulary_size(), "vocabulary"),
        (None, 3, 3, "number of answer classes")]


@pytest.mark.parametrize("arguments, message", [
    ((["a", 1], 4), r"`answer_classes` must be a non-empty list of str.*Received: "),
    (([], 4), r"`answer_classes` must be a non-empty list"),
    ((CLASSES, 0), r"`max_memories` must be a positive int. Received: max_memories=0"),
    ((CLASSES, True), r"Received: max_memories=True"),
])
def test_bad_parts_are_refused_at_construction(parts, arguments, message):
    with pytest.raises(ValueError, match=message):
        runs.AnswerClassifier(*parts, *arguments)
    with pytest.raises(ValueError, match=r"one this model kind serves \(question_answering\)"):
        runs.AnswerClassifier(*parts, CLASSES, 4, recipe="translation")


def test_a_search_is_refused_naming_the_argument(parts, monkeypatch):
    classifier = runs.AnswerClassifier(*parts, CLASSES, 4)
    monkeypatch.setattr(classifier.model, "predict", None)  # never reached
    for search, name in (({"strategy": "beam"}, "strategy"), ({"num_beams": 2}, "num_beams")):
        with pytest.raises(ValueError, match=rf"`{name}` must be left unset for this run: its "
                                             rf"model is an answer classifier"):
            classifier.generate(LINES, **search)
