"""`SentenceSelector`: made in Python from an extractive summarizer, it keeps
one sentence of each document as its run folder does and refuses bad parts
at construction. (Read from a run folder and checked: tests/runs_test.py.)"""

import pytest

from keras_attention import data, runs
from keras_attention.models import extractive_summarizer

SELECTION = {"max_length": 40, "max_sentences": 3}
DOCUMENTS = ["The cat sat. The dog ran far. A bird sang.", "Only one sentence here."]


@pytest.fixture(scope="module")
def parts():
    pairs = data.make_date_pairs(100)
    tokenizer = data.train_tokenizer([s for p in pairs for s in p] + DOCUMENTS, 60)
    model = extractive_summarizer(tokenizer.vocabulary_size(), max_sentences=3, hidden_dim=8,
                                  num_heads=2, intermediate_dim=16, num_layers=1)
    return model, tokenizer


def test_made_in_python_it_answers_as_its_run_folder(parts, tmp_path):
    model, tokenizer = parts
    selector = runs.SentenceSelector(model, tokenizer, SELECTION)
    assert (selector.kind.name, selector.recipe, selector.generation) == (
        "sentence_selector", "summarization", None)
    summaries = selector.generate(DOCUMENTS)
    assert summaries[0] in ["The cat sat.", "The dog ran far.", "A bird sang."]
    assert summaries[1] == "Only one sentence here."
    runs.save_run(tmp_path / "ext", model, tokenizer, tokenizer, recipe="summarization",
                  config={}, scores={}, source_format="text", extra={"selection": SELECTION})
    saved = runs.open_run(tmp_path / "ext")
    assert type(saved) is runs.SentenceSelector and saved.selection == SELECTION
    assert saved.generate(DOCUMENTS) == summaries


@pytest.mark.parametrize("selection", [{"max_length": 0, "max_sentences": 3},
                                       {"max_length": 40}, [40, 3]])
def test_bad_parts_are_refused_at_construction(parts, selection):
    with pytest.raises(ValueError, match=r"`selection` must be a dict of positive ints .*"
                                         r"Received: selection="):
        runs.SentenceSelector(*parts, selection)
    with pytest.raises(ValueError, match=r"Received: num_beams=3"):
        runs.SentenceSelector(*parts, SELECTION).generate(DOCUMENTS, num_beams=3)
