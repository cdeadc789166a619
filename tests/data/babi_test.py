"""`load_babi` and `load_babi_task`: exact output, line-numbered errors, real task files."""

import doctest
import re

import pytest

from keras_attention.data import babi, load_babi, load_babi_task
from tests.data.loader_files import at, write


def test_docstring_examples_run():
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(babi, optionflags=flags)
    assert result.failed == 0
    assert result.attempted >= 2


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
    path = write(tmp_path, "latin1.txt", "1 Mary went home.\n2 Where is Jürgen?\thome\t1\n",
                 "latin-1")
    with pytest.raises(ValueError, match=at(path, 2) + ".*must be UTF-8"):
        load_babi(path)


def test_babi_task_finds_file_by_number_and_split(tmp_path):
    write(tmp_path, "qa1_single-supporting-fact_train.txt", BABI)
    write(tmp_path, "qa10_indefinite-knowledge_train.txt", "1 A b.\n2 Q?\tyes\t1\n")
    task_file = tmp_path / "qa1_single-supporting-fact_train.txt"
    assert load_babi_task(tmp_path, 1, "train") == load_babi(task_file)
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
