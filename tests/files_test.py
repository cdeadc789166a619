"""The package's one atomic writer, for files and for folders."""

import os

import pytest

from keras_attention import files


def _write_folder(content):
    def write(folder):
        for name, text in content.items():
            with open(os.path.join(folder, name), "w") as file:
                file.write(text)
    return write


def _fail(*args, **kwargs):
    raise OSError("disk full")


def test_write_atomically_keeps_the_old_file_on_failure(tmp_path):
    (tmp_path / "a.txt").write_text("old")
    with pytest.raises(OSError, match="disk full"):
        files.write_atomically(tmp_path / "a.txt", _fail)
    assert (tmp_path / "a.txt").read_text() == "old"
    files.write_atomically(tmp_path / "a.txt", lambda file: file.write(b"new"))
    assert os.listdir(tmp_path) == ["a.txt"] and (tmp_path / "a.txt").read_text() == "new"


def test_write_folder_atomically_replaces_a_folder_only_when_complete(tmp_path):
    files.write_folder_atomically(tmp_path / "out", _write_folder({"a": "1", "b": "2"}))
    with pytest.raises(OSError, match="disk full"):
        files.write_folder_atomically(tmp_path / "out", _fail)
    assert sorted(os.listdir(tmp_path / "out")) == ["a", "b"]
    assert path_texts(tmp_path / "out") == {"a": "1", "b": "2"}
    assert files.write_folder_atomically(tmp_path / "out", _write_folder({"c": "3"})) == str(
        tmp_path / "out")
    assert path_texts(tmp_path / "out") == {"c": "3"}
    assert os.listdir(tmp_path) == ["out"]  # nothing set aside or staged is left


def path_texts(folder):
    return {name: (folder / name).read_text() for name in os.listdir(folder)}


@pytest.mark.parametrize("interrupt", [OSError("rename failed"), KeyboardInterrupt()])
def test_a_failed_swap_puts_the_old_folder_back(tmp_path, monkeypatch, interrupt):
    files.write_folder_atomically(tmp_path / "out", _write_folder({"a": "old"}))
    rename = os.rename

    def fail_on_the_new_folder(source, destination):
        if ".partial-" in str(source):
            raise interrupt
        rename(source, destination)

    monkeypatch.setattr(files.os, "rename", fail_on_the_new_folder)
    with pytest.raises(type(interrupt)):
        files.write_folder_atomically(tmp_path / "out", _write_folder({"a": "new"}))
    monkeypatch.undo()
    assert path_texts(tmp_path / "out") == {"a": "old"}
    assert os.listdir(tmp_path) == ["out"]


def test_a_symbolic_link_is_replaced_and_its_target_kept(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "keep").write_text("x")
    os.symlink(tmp_path / "target", tmp_path / "link")
    files.write_folder_atomically(tmp_path / "link", _write_folder({"a": "1"}))
    assert not os.path.islink(tmp_path / "link")
    assert path_texts(tmp_path / "link") == {"a": "1"}
    assert path_texts(tmp_path / "target") == {"keep": "x"}


def test_new_folders_have_the_users_permissions(tmp_path):
    saved = os.umask(0o027)
    try:
        files.write_folder_atomically(tmp_path / "out", _write_folder({}))
    finally:
        os.umask(saved)
    assert os.stat(tmp_path / "out").st_mode & 0o777 == 0o750


def test_working_directory_and_parents(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assert all(files.is_working_directory_or_parent(p) for p in (".", "..", "/", tmp_path))
    assert not any(files.is_working_directory_or_parent(p) for p in ("b", "../c", "/tmp/x-y"))
