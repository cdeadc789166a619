"""The shared line reader and errors, through every loader."""

import re

import pytest

from keras_attention.data import (
    load_babi,
    load_sentence_pairs,
    load_squad,
    load_summaries,
    text_files,
)
from tests.data.loader_files import write


def test_missing_files_raise_file_not_found(tmp_path):
    missing = tmp_path / "nope.tsv"
    for loader in (load_sentence_pairs, load_summaries, load_babi, load_squad):
        with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
            loader(missing)


def test_read_lines_drops_line_ends_and_a_leading_byte_order_mark(tmp_path):
    path = write(tmp_path, "lines.txt", "\ufeffone\r\ntwo\n\nthree")
    assert list(text_files.read_lines(path)) == [(1, "one"), (2, "two"), (3, ""), (4, "three")]


def test_read_lines_names_the_line_that_is_not_utf8(tmp_path):
    path = write(tmp_path, "latin1.txt", "fine\nGrüß\n", "latin-1")
    with pytest.raises(ValueError, match=re.escape(f"File '{path}', line 2: is not valid UTF-8")):
        list(text_files.read_lines(path))


def test_shorten_cuts_long_values_to_about_the_limit():
    assert text_files.shorten("short") == "'short'"
    long = text_files.shorten("x" * 500)
    assert long.endswith("...") and len(long) <= text_files.MAX_RECEIVED_CHARS + 5
    assert len(text_files.shorten(list(range(100)))) == text_files.MAX_RECEIVED_CHARS


def test_line_error_and_json_helpers_name_file_line_and_key(tmp_path):
    error = text_files.line_error("f.tsv", 7, "two columns", "'x'")
    assert str(error) == "File 'f.tsv', line 7: expected two columns. Received: 'x'"
    assert str(text_files.line_error("f.tsv", None, "a", "b")).startswith("File 'f.tsv': expected")
    assert text_files.parse_json_line("f", 1, '{"a": 1}') == {"a": 1}
    with pytest.raises(ValueError, match=re.escape("File 'f', line 2: expected a JSON object")):
        text_files.parse_json_line("f", 2, "[1]")
    with pytest.raises(ValueError, match="line 3: expected a record with the key 'b'"):
        text_files.require_key("f", 3, {"a": 1}, "b")
    assert text_files.nonblank_texts("f", 1, "k", [" a ", "", "b"]) == ["a", "b"]
    with pytest.raises(ValueError, match="'k' to be a non-empty string.*Received: k=' '"):
        text_files.nonblank_text("f", 1, "k", " ")


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["unix", "windows", "classic_mac"])
def test_read_lines_ends_lines_at_cr_lf_and_crlf(tmp_path, end, monkeypatch):
    path = tmp_path / "lines.txt"
    path.write_bytes(end.join(["one", "", "two", "three", ""]).encode("utf-8"))
    expected = [(1, "one"), (2, ""), (3, "two"), (4, "three")]
    assert list(text_files.read_lines(path)) == expected
    monkeypatch.setattr(text_files, "_CHUNK_BYTES", 3)  # a `\r\n` split across chunks
    assert list(text_files.read_lines(path)) == expected
    path.write_bytes(b"a\r\rb\n\r\nc\r")  # the three mixed, and empty lines between
    assert list(text_files.read_lines(path)) == [(1, "a"), (2, ""), (3, "b"), (4, ""), (5, "c")]


def test_a_tsv_with_classic_mac_line_ends_is_one_pair_per_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"Go.\tGeh.\rHi.\tHallo!\rRun!\tLauf!\r")
    assert load_sentence_pairs(path) == [("Go.", "Geh."), ("Hi.", "Hallo!"), ("Run!", "Lauf!")]
