"""`load_squad`: SQuAD v1.1 JSON and JSONL, line-numbered errors, real XQuAD file."""

import doctest
import json
import re

import pytest

from keras_attention.data import load_squad, squad
from tests.data.loader_files import at, jsonl, write


def test_docstring_examples_run():
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(squad, optionflags=flags)
    assert result.failed == 0
    assert result.attempted >= 1


SQUAD = {
    "version": "1.1",
    "data": [
        {
            "title": "Paris",
            "paragraphs": [
                {
                    "context": "Paris is the capital of France.",
                    "qas": [
                        {
                            "id": "q1",
                            "question": "What is Paris?",
                            "answers": [
                                {"text": "the capital of France", "answer_start": 9},
                                {"text": "capital", "answer_start": 13},
                            ],
                        },
                        {
                            "id": "q2",
                            "question": "Paris is the capital of which country?",
                            "answers": [{"text": "France", "answer_start": 24}],
                        },
                    ],
                }
            ],
        },
        {
            "title": "Rome",
            "paragraphs": [
                {
                    "context": "Rome is in Italy.",
                    "qas": [
                        {"id": "q3", "question": "Where is Rome?",
                         "answers": [{"text": "Italy", "answer_start": 11}]}
                    ],
                }
            ],
        },
    ],
}
SQUAD_EXPECTED = [
    {"id": "q1", "context": "Paris is the capital of France.", "question": "What is Paris?",
     "answers": ["the capital of France", "capital"]},
    {"id": "q2", "context": "Paris is the capital of France.",
     "question": "Paris is the capital of which country?", "answers": ["France"]},
    {"id": "q3", "context": "Rome is in Italy.", "question": "Where is Rome?",
     "answers": ["Italy"]},
]


def test_squad_json_exact_output(tmp_path):
    pretty = write(tmp_path, "dev-v1.1.json", json.dumps(SQUAD, indent=2))
    assert load_squad(pretty) == SQUAD_EXPECTED
    one_line = write(tmp_path, "dev-one-line.json", json.dumps(SQUAD))
    assert load_squad(one_line) == SQUAD_EXPECTED


def test_squad_jsonl_answer_layouts(tmp_path):
    path = write(tmp_path, "squad.jsonl", jsonl(
        {"id": "q1", "title": "Paris", "context": "Paris is the capital of France.",
         "question": "What is Paris?", "answer": "the capital of France", "answer_start": 9},
        {"id": "q2", "context": "Rome is in Italy.", "question": "Where is Rome?",
         "answers": {"text": ["Italy", " Italy"], "answer_start": [11, 10]}},
        {"id": 7, "context": "Rome is in Italy.", "question": "What is in Italy?",
         "answers": [{"text": "Rome", "answer_start": 0}]},
        {"id": "q4", "context": "Rome is in Italy.", "question": "Which country?",
         "answers": ["Italy"]},
    ))
    assert load_squad(path) == [
        {"id": "q1", "context": "Paris is the capital of France.", "question": "What is Paris?",
         "answers": ["the capital of France"]},
        {"id": "q2", "context": "Rome is in Italy.", "question": "Where is Rome?",
         "answers": ["Italy", "Italy"]},
        {"id": "7", "context": "Rome is in Italy.", "question": "What is in Italy?",
         "answers": ["Rome"]},
        {"id": "q4", "context": "Rome is in Italy.", "question": "Which country?",
         "answers": ["Italy"]},
    ]


def test_squad_jsonl_errors(tmp_path):
    good = {"id": "q", "context": "c", "question": "q?", "answer": "a"}
    path = write(tmp_path, "bad.jsonl", jsonl(good) + "{'id': 'single quotes'}\n")
    with pytest.raises(ValueError, match=at(path, 2) + ".*invalid JSON.*Received: \"{'id'"):
        load_squad(path)
    missing_question = {k: v for k, v in good.items() if k != "question"}
    path = write(tmp_path, "missing.jsonl", jsonl(good, good, missing_question))
    with pytest.raises(ValueError, match=at(path, 3) + ".*key 'question'"):
        load_squad(path)
    no_answer = {k: v for k, v in good.items() if k != "answer"}
    path = write(tmp_path, "no_answer.jsonl", jsonl(good, no_answer))
    with pytest.raises(ValueError, match=at(path, 2) + ".*'answers' or 'answer'"):
        load_squad(path)
    path = write(tmp_path, "empty_answers.jsonl", jsonl(good, {**no_answer, "answers": []}))
    with pytest.raises(ValueError, match=at(path, 2) + ".*'answers' to hold at least one"):
        load_squad(path)
    path = write(tmp_path, "no_context.jsonl", jsonl(good, {**good, "context": ""}))
    with pytest.raises(ValueError, match=at(path, 2) + ".*'context' to be a non-empty string"):
        load_squad(path)


def test_squad_json_syntax_error_names_its_line(tmp_path):
    text = json.dumps(SQUAD, indent=2).replace('"q2"', '"q2",,', 1)
    bad_line = next(i for i, line in enumerate(text.splitlines(), 1) if '"q2",,' in line)
    path = write(tmp_path, "dev.json", text)
    with pytest.raises(ValueError, match=at(path, bad_line) + ".*invalid JSON"):
        load_squad(path)


def test_squad_json_structure_error_names_the_object_line(tmp_path):
    broken = json.loads(json.dumps(SQUAD))
    del broken["data"][1]["paragraphs"][0]["qas"][0]["question"]
    text = json.dumps(broken, indent=2)
    lines = text.splitlines()
    id_line = next(i for i, line in enumerate(lines, 1) if '"q3"' in line)
    assert lines[id_line - 2].strip() == "{"  # the question object opens on the line before
    path = write(tmp_path, "dev.json", text)
    with pytest.raises(ValueError, match=at(path, id_line - 1) + ".*key 'question'"):
        load_squad(path)
    path = write(tmp_path, "nodata.json", json.dumps({"version": "1.1"}, indent=2))
    with pytest.raises(ValueError, match=at(path, 1) + ".*'data' key"):
        load_squad(path)
    path = write(tmp_path, "paragraphs.json", json.dumps({"data": [{"title": "x"}]}, indent=2))
    with pytest.raises(ValueError, match=at(path, 3) + ".*list 'paragraphs'"):
        load_squad(path)


def test_squad_empty_and_encoding(tmp_path):
    path = write(tmp_path, "empty.json", "  \n")
    with pytest.raises(ValueError, match=re.escape(f"File '{path}' is empty")):
        load_squad(path)
    record = {"id": "q", "context": "Zürich", "question": "Where?", "answer": "Zürich"}
    path = write(tmp_path, "latin1.jsonl", json.dumps(record, ensure_ascii=False) + "\n", "latin-1")
    with pytest.raises(ValueError, match=at(path, 1) + ".*must be UTF-8"):
        load_squad(path)


def test_real_xquad(shared_data):
    examples = load_squad(shared_data / "qa" / "xquad_en" / "xquad_en.jsonl")
    assert len(examples) == 970
    assert len({example["id"] for example in examples}) == 970
    assert len({example["context"] for example in examples}) == 190
    for example in examples:
        assert example["id"] and example["context"] and example["question"]
        assert len(example["answers"]) == 1 and example["answers"][0] in example["context"]
