"""`load_sentence_pairs`: exact output on small TSV files, line-numbered errors, real data."""

import doctest
import re

import pytest

from keras_attention.data import load_sentence_pairs, sentence_pairs, split_examples
from tests.data.loader_files import at, write


def test_docstring_examples_run():
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(sentence_pairs, optionflags=flags)
    assert result.failed == 0
    assert result.attempted >= 1


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
    with pytest.raises(ValueError,
                       match=at(path, 3) + ".*missing target column.*Received: 'Hello there'"):
        load_sentence_pairs(path)


def test_sentence_pairs_empty_column(tmp_path):
    path = write(tmp_path, "pairs.tsv", "Go.\tGeh.\nHi.\t  \n")
    with pytest.raises(ValueError,
                       match=at(path, 2) + ".*non-empty target.*Received: 'Hi.\\\\t  '"):
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
    with pytest.raises(ValueError, match=at(path, 3) + ".*not valid UTF-8.*must be UTF-8"
                                               ".*Received: b'Greet"):
        load_sentence_pairs(path)


def test_sentence_pairs_bad_arguments(tmp_path):
    path = write(tmp_path, "pairs.tsv", "Go.\tGeh.\n")
    with pytest.raises(ValueError, match="max_pairs.*Received: max_pairs=0"):
        load_sentence_pairs(path, max_pairs=0)
    with pytest.raises(TypeError, match="lowercase.*Received: lowercase='yes'"):
        load_sentence_pairs(path, lowercase="yes")


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
