"""File loaders: exact output on small files, line-numbered errors, real data."""

import doctest
import json
import pathlib
import re

import pytest

from keras_attention.data import (
    load_babi,
    load_babi_task,
    load_sentence_pairs,
    load_squad,
    load_summaries,
    split_examples,
)
from keras_attention.data import loaders

SHARED_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"


def write(folder, name, text, encoding="utf-8"):
    path = folder / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def at(path, line):
    """Regex for the start of a loader error about `path` at `line`."""
    return re.escape(f"File '{path}', line {line}:")


def test_docstring_examples_run():
    result = doctest.testmod(loaders, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted >= 6


# --------------------------------------------------------------------------
# Sentence pairs.
# --------------------------------------------------------------------------


def test_sentence_pairs_exact_output(tmp_path):
    path = write(
        tmp_path, "pairs.tsv",
        "\ufeffGo.\tGeh.\n"
        "Hi.\tHallo!\tCC-BY 2.0 (France) Attribution: tatoeba.org #538123 (CM)\r\n"
        "\n"
        "   \n"
        " Hi. \t Grüß Gott! \n"
        "Tom ran.\tTom rannte.",
    )
    assert load_sentence_pairs(path) == [
        ("Go.", "Geh."),
        ("Hi.", "Hallo!"),
        ("Hi.", "Grüß Gott!"),
        ("Tom ran.", "Tom rannte."),
    ]
    assert load_sentence_pairs(str(path), max_pairs=2, lowercase=True) == [
        ("go.", "geh."),
        ("hi.", "hallo!"),
    ]


def test_sentence_pairs_line_without_tab(tmp_path):
    path = write(tmp_path, "pairs.tsv", "Go.\tGeh.\n\nHello there\n")
    with pytest.raises(ValueError, match=at(path, 3) + ".*missing target column.*Received: 'Hello there'"):
        load_sentence_pairs(path)


def test_sentence_pairs_empty_column(tmp_path):
    path = write(tmp_path, "pairs.tsv", "Go.\tGeh.\nHi.\t  \n")
    with pytest.raises(ValueError, match=at(path, 2) + ".*non-empty target.*Received: 'Hi.\\\\t  '"):
        load_sentence_pairs(path)
    path = write(tmp_path, "pairs2.tsv", "\tGeh.\n")
    with pytest.raises(ValueError, match=at(path, 1) + ".*non-empty source"):
        load_sentence_pairs(path)


def test_sentence_pairs_long_line_is_truncated(tmp_path):
    path = write(tmp_path, "pairs.tsv", "x" * 500 + "\n")
    with pytest.raises(ValueError, match=at(path, 1)) as info:
        load_sentence_pairs(path)
    received = str(info.value).split("Received: ")[1]
    assert received.endswith("...") and len(received) < 90


@pytest.mark.parametrize("text", ["", "\n  \n\n"])
def test_sentence_pairs_empty_file(tmp_path, text):
    path = write(tmp_path, "empty.tsv", text)
    with pytest.raises(ValueError, match=re.escape(f"File '{path}' is empty") + ".*Received:"):
        load_sentence_pairs(path)


def test_sentence_pairs_wrong_encoding(tmp_path):
    path = write(tmp_path, "latin1.tsv", "Go.\tGeh.\nHi.\tHallo!\nGreet.\tGrüß Gott!\n", "latin-1")
    with pytest.raises(ValueError, match=at(path, 3) + ".*not valid UTF-8.*must be UTF-8.*Received: b'Greet"):
        load_sentence_pairs(path)


def test_missing_files_raise_file_not_found(tmp_path):
    missing = tmp_path / "nope.tsv"
    for loader in (load_sentence_pairs, load_summaries, load_babi, load_squad):
        with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
            loader(missing)


def test_sentence_pairs_bad_arguments(tmp_path):
    path = write(tmp_path, "pairs.tsv", "Go.\tGeh.\n")
    with pytest.raises(ValueError, match="max_pairs.*Received: max_pairs=0"):
        load_sentence_pairs(path, max_pairs=0)
    with pytest.raises(TypeError, match="lowercase.*Received: lowercase='yes'"):
        load_sentence_pairs(path, lowercase="yes")


# --------------------------------------------------------------------------
# Summaries.
# --------------------------------------------------------------------------


def jsonl(*records):
    return "".join(json.dumps(record) + "\n" for record in records)


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
    path = write(tmp_path, "bad.jsonl", jsonl({"document": "d", "summary": "s"}) + '{"document": "d",\n')
    with pytest.raises(ValueError, match=at(path, 2) + ".*invalid JSON.*Received: '{\"document\": \"d\",'"):
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
        path = write(tmp_path, f"bad{index}.jsonl", jsonl({"document": "ok", "summary": "ok"}, record))
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


# --------------------------------------------------------------------------
# bAbI.
# --------------------------------------------------------------------------

BABI = """\
1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Sandra moved to the garden.
6 Where is Daniel? \thallway\t4
1 Sandra travelled to the office.
2 Sandra went to the bathroom.
3 Where is the apple?\tapple,milk\t1 2
"""


def test_babi_two_stories_exact_output(tmp_path):
    path = write(tmp_path, "qa1_single-supporting-fact_train.txt", BABI)
    assert load_babi(path) == [
        {
            "story": ["Mary moved to the bathroom.", "John went to the hallway."],
            "question": "Where is Mary?",
            "answer": "bathroom",
            "supporting_facts": [1],
        },
        {
            "story": [
                "Mary moved to the bathroom.",
                "John went to the hallway.",
                "Daniel went back to the hallway.",
                "Sandra moved to the garden.",
            ],
            "question": "Where is Daniel?",
            "answer": "hallway",
            "supporting_facts": [4],
        },
        {
            "story": ["Sandra travelled to the office.", "Sandra went to the bathroom."],
            "question": "Where is the apple?",
            "answer": "apple,milk",
            "supporting_facts": [1, 2],
        },
    ]


@pytest.mark.parametrize(
    "lines, line, expected",
    [
        (["1 Mary went home.", "Mary went out.", "2 Where?\thome\t1"], 2,
         "integer ID.*Received: 'Mary went out.'"),
        (["1 Mary went home.", "2 Where is Mary?\thome"], 2,
         "3 tab-separated fields after the ID, found 2"),
        (["1 Mary went home.", "2 Where is Mary?\thome\t1\textra"], 2, "found 4"),
        (["1 Mary went home.", "2 John left.", "4 Where is Mary?\thome\t1"], 3,
         "ID 3 .*Received: ID 4"),
        (["2 Mary went home.", "3 Where is Mary?\thome\t2"], 1, "ID 1 on the first line"),
        (["1 Mary went home.", "2 Where is Mary?\thome\t2"], 2,
         "supporting IDs of story sentences.*Received: supporting ID 2"),
        (["1 Mary went home.", "2 Where is Mary?\thome\tone"], 2,
         "integer IDs.*Received: 'one'"),
        (["1 Mary went home.", "2 Where is Mary?\t\t1"], 2, "non-empty question and answer"),
        (["1 Mary went home.", "2 "], 2, "a sentence after the ID"),
    ],
)
def test_babi_malformed_lines(tmp_path, lines, line, expected):
    path = write(tmp_path, "qa1_bad_train.txt", "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=at(path, line) + ".*" + expected):
        load_babi(path)


def test_babi_empty_file_no_question_and_encoding(tmp_path):
    path = write(tmp_path, "empty.txt", "")
    with pytest.raises(ValueError, match=re.escape(f"File '{path}' is empty")):
        load_babi(path)
    path = write(tmp_path, "story_only.txt", "1 Mary went home.\n")
    with pytest.raises(ValueError, match=re.escape(f"File '{path}'") + ".*question line"):
        load_babi(path)
    path = write(tmp_path, "latin1.txt", "1 Mary went home.\n2 Where is Jürgen?\thome\t1\n", "latin-1")
    with pytest.raises(ValueError, match=at(path, 2) + ".*must be UTF-8"):
        load_babi(path)


def test_babi_task_finds_file_by_number_and_split(tmp_path):
    write(tmp_path, "qa1_single-supporting-fact_train.txt", BABI)
    write(tmp_path, "qa10_indefinite-knowledge_train.txt", "1 A b.\n2 Q?\tyes\t1\n")
    assert load_babi_task(tmp_path, 1, "train") == load_babi(tmp_path / "qa1_single-supporting-fact_train.txt")
    assert [e["answer"] for e in load_babi_task(str(tmp_path), 10, "train")] == ["yes"]
    # Official names win over extra variants; a single renamed file is found too.
    write(tmp_path, "qa1_single-supporting-fact_short_train.txt", "1 X y.\n2 Q?\tno\t1\n")
    assert len(load_babi_task(tmp_path, 1, "train")) == 3
    write(tmp_path, "qa2_custom_test.txt", "1 X y.\n2 Q?\tno\t1\n")
    assert [e["answer"] for e in load_babi_task(tmp_path, 2, "test")] == ["no"]
    write(tmp_path, "qa2_other_test.txt", "1 X y.\n2 Q?\tno\t1\n")
    with pytest.raises(ValueError, match="one bAbI file matching 'qa2_\\*_test.txt'.*Received:"):
        load_babi_task(tmp_path, 2, "test")


def test_babi_task_bad_arguments_and_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape("qa1_*_test.txt")):
        load_babi_task(tmp_path, 1, "test")
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "missing"))):
        load_babi_task(tmp_path / "missing", 1, "test")
    for task in (0, 21, "1", True):
        with pytest.raises(ValueError, match=f"task.*Received: task={re.escape(repr(task))}"):
            load_babi_task(tmp_path, task, "train")
    with pytest.raises(ValueError, match="split.*Received: split='valid'"):
        load_babi_task(tmp_path, 1, "valid")


# --------------------------------------------------------------------------
# SQuAD.
# --------------------------------------------------------------------------

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
    {"id": "q3", "context": "Rome is in Italy.", "question": "Where is Rome?", "answers": ["Italy"]},
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


# --------------------------------------------------------------------------
# Splitting.
# --------------------------------------------------------------------------


def test_split_examples_sizes_determinism_and_coverage():
    examples = list(range(100))
    train, validation, test = split_examples(examples, validation_fraction=0.2, test_fraction=0.1)
    assert (len(train), len(validation), len(test)) == (70, 20, 10)
    assert sorted(train + validation + test) == examples
    assert train != sorted(train)  # shuffled
    assert split_examples(examples, validation_fraction=0.2, test_fraction=0.1) == (
        train, validation, test
    )
    assert split_examples(examples, seed=1)[2] != split_examples(examples, seed=0)[2]
    train, validation, test = split_examples(examples, validation_fraction=0.0, test_fraction=0.0)
    assert (len(train), validation, test) == (100, [], [])


def test_split_examples_group_key_keeps_groups_together():
    pairs = [(f"src{i % 30}", f"tgt{i}") for i in range(90)]  # 30 sources, 3 targets each
    train, validation, test = split_examples(
        pairs, validation_fraction=0.2, test_fraction=0.2, seed=3, group_key=lambda p: p[0]
    )
    assert sorted(train + validation + test) == sorted(pairs)
    sources = [{s for s, _ in split} for split in (train, validation, test)]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    assert (len(train), len(validation), len(test)) == (54, 18, 18)
    assert split_examples(
        pairs, validation_fraction=0.2, test_fraction=0.2, seed=3, group_key=lambda p: p[0]
    ) == (train, validation, test)


def test_split_examples_bad_arguments():
    with pytest.raises(ValueError, match="examples.*Received: examples=\\[\\]"):
        split_examples([])
    with pytest.raises(ValueError, match="test_fraction.*Received: test_fraction=1.5"):
        split_examples([1, 2], test_fraction=1.5)
    with pytest.raises(ValueError, match="sum to less than 1.*validation_fraction=0.5, test_fraction=0.5"):
        split_examples([1, 2], validation_fraction=0.5, test_fraction=0.5)
    with pytest.raises(TypeError, match="group_key.*Received: group_key='source'"):
        split_examples([1, 2], group_key="source")
    with pytest.raises(ValueError, match="no training examples"):
        split_examples([("a", "x"), ("a", "y")], test_fraction=0.5, group_key=lambda p: p[0])


# --------------------------------------------------------------------------
# The real files in the shared data folder.
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found: {SHARED_DATA}")
    return SHARED_DATA


@pytest.mark.parametrize(
    "name, pairs, sources", [("eng-deu.tsv", 48_745, 36_765), ("eng-fra.tsv", 16_819, 10_254)]
)
def test_real_sentence_pairs(shared_data, name, pairs, sources):
    loaded = load_sentence_pairs(shared_data / "translation" / name)
    assert len(loaded) == pairs
    assert len({source for source, _ in loaded}) == sources
    assert all(source and target and "\t" not in source + target for source, target in loaded)
    first_line = (shared_data / "translation" / name).read_text(encoding="utf-8").split("\n")[0]
    assert loaded[0] == tuple(first_line.split("\t"))
    train, validation, test = split_examples(loaded, group_key=lambda pair: pair[0])
    assert len(train) + len(validation) + len(test) == pairs
    assert abs(len(test) - pairs / 10) < 50 and abs(len(validation) - pairs / 10) < 50
    splits = [{source for source, _ in split} for split in (train, validation, test)]
    assert not (splits[0] & splits[1] or splits[0] & splits[2] or splits[1] & splits[2])


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


def test_real_babi(shared_data):
    folder = shared_data / "qa" / "babi"
    for task in range(1, 21):
        train = load_babi_task(folder / "en", task, "train")
        test = load_babi_task(folder / "en", task, "test")
        assert len(train) == 1_000, task
        assert len(test) == (976 if task in (15, 17, 20) else 975), task
        for example in train + test:
            assert example["story"] and example["question"] and example["answer"]
            assert example["supporting_facts"] and all(example["story"])
    assert load_babi_task(folder / "en", 1, "train")[0] == {
        "story": ["Mary moved to the bathroom.", "John went to the hallway."],
        "question": "Where is Mary?",
        "answer": "bathroom",
        "supporting_facts": [1],
    }
    for task in (1, 2):
        assert len(load_babi_task(folder / "en-10k", task, "train")) == 10_000


def test_real_xquad(shared_data):
    examples = load_squad(shared_data / "qa" / "xquad_en" / "xquad_en.jsonl")
    assert len(examples) == 970
    assert len({example["id"] for example in examples}) == 970
    assert len({example["context"] for example in examples}) == 190
    for example in examples:
        assert example["id"] and example["context"] and example["question"]
        assert len(example["answers"]) == 1 and example["answers"][0] in example["context"]
