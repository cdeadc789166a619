"""`load_summaries`: exact output on small JSONL files, line-numbered errors, real data."""

import doctest
import json
import re

import pytest

from keras_attention.data import load_summaries, summaries
from tests.data.loader_files import at, jsonl, write


def test_docstring_examples_run():
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(summaries, optionflags=flags)
    assert result.failed == 0
    assert result.attempted >= 1


def test_summaries_exact_output(tmp_path):
    path = write(tmp_path, "train.jsonl", jsonl(
        {"id": "a", "document": "One. Two.", "summary": "Tl;dr one."},
        {"id": "b", "document": [" First.", "Second. ", ""], "summary": ["S1.", " S2 "]},
        {"id": "c", "document": "Doc.", "summary": "Gold.", "references": ["Gold.", "Other."]},
    ) + "\n")
    assert load_summaries(path) == [
        {"document": "One. Two.", "summaries": ["Tl;dr one."]},
        {"document": "First. Second.", "summaries": ["S1.", "S2"]},
        {"document": "Doc.", "summaries": ["Gold.", "Other."]},
    ]
    assert load_summaries(path, references_key=None, max_examples=3)[2] == {
        "document": "Doc.", "summaries": ["Gold."]
    }
    assert len(load_summaries(path, max_examples=1)) == 1


def test_summaries_raw_scitldr_keys(tmp_path):
    path = write(tmp_path, "raw.jsonl", jsonl(
        {"paper_id": "p", "source": ["A b.", "C d."], "target": ["T one.", "T two."]},
    ))
    assert load_summaries(path, document_key="source", summary_key="target") == [
        {"document": "A b. C d.", "summaries": ["T one.", "T two."]}
    ]


def test_summaries_invalid_json(tmp_path):
    path = write(tmp_path, "bad.jsonl",
                 jsonl({"document": "d", "summary": "s"}) + '{"document": "d",\n')
    with pytest.raises(ValueError,
                       match=at(path, 2) + ".*invalid JSON.*Received: '{\"document\": \"d\",'"):
        load_summaries(path)


def test_summaries_missing_key(tmp_path):
    path = write(tmp_path, "bad.jsonl", jsonl(
        {"document": "d", "summary": "s"}, {"document": "d", "summary": "s"}, {"document": "d"}
    ))
    with pytest.raises(ValueError, match=at(path, 3) + ".*key 'summary'.*Received: .*'document'"):
        load_summaries(path)
    path = write(tmp_path, "bad2.jsonl", jsonl({"text": "d", "summary": "s"}))
    with pytest.raises(ValueError, match=at(path, 1) + ".*key 'document'"):
        load_summaries(path)


def test_summaries_wrong_types_and_empty_fields(tmp_path):
    cases = [
        ({"document": 3, "summary": "s"}, "'document' to be a string or a list of strings"),
        ({"document": "d", "summary": ["s", 4]}, "'summary' to be a string or a list of strings"),
        ({"document": " ", "summary": "s"}, "'document' to hold at least one non-empty string"),
        ({"document": "d", "summary": []}, "'summary' to hold at least one non-empty string"),
        ({"document": "d", "references": [""]}, "'references' to hold at least one"),
    ]
    for index, (record, expected) in enumerate(cases):
        path = write(tmp_path, f"bad{index}.jsonl",
                     jsonl({"document": "ok", "summary": "ok"}, record))
        with pytest.raises(ValueError, match=at(path, 2) + ".*" + re.escape(expected)):
            load_summaries(path)


def test_summaries_line_not_an_object(tmp_path):
    path = write(tmp_path, "bad.jsonl", '["document", "summary"]\n')
    with pytest.raises(ValueError, match=at(path, 1) + ".*JSON object"):
        load_summaries(path)


def test_summaries_empty_file_and_encoding(tmp_path):
    path = write(tmp_path, "empty.jsonl", "\n\n")
    with pytest.raises(ValueError, match=re.escape(f"File '{path}' is empty")):
        load_summaries(path)
    path = write(tmp_path, "utf16.jsonl", jsonl({"document": "d", "summary": "s"}), "utf-16")
    with pytest.raises(ValueError, match=at(path, 1) + ".*must be UTF-8"):
        load_summaries(path)


@pytest.mark.parametrize(
    "split, count, fewest, most", [("train", 1_992, 1, 1), ("dev", 619, 1, 4), ("test", 418, 2, 4)]
)
def test_real_scitldr(shared_data, split, count, fewest, most):
    path = shared_data / "summarization" / "scitldr" / f"{split}.jsonl"
    examples = load_summaries(path)
    assert len(examples) == count
    counts = [len(example["summaries"]) for example in examples]
    assert (min(counts), max(counts)) == (fewest, most)
    assert all(example["document"] and all(example["summaries"]) for example in examples)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert examples[0]["summaries"][0] == first["summary"]
    assert examples[0]["document"] == first["document"]
