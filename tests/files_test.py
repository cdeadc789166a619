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
    assert files.write_folder_atomically(tmp_path / "out", _write_folder({"c": "3"}),
                                         replace=True) == str(tmp_path / "out")
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
        files.write_folder_atomically(tmp_path / "out", _write_folder({"a": "new"}),
                                      replace=True)
    monkeypatch.undo()
    assert path_texts(tmp_path / "out") == {"a": "old"}
    assert os.listdir(tmp_path) == ["out"]


def test_without_replace_a_folder_written_meanwhile_is_kept(tmp_path):
    """Two writers of one new folder: the check that it is free and the move
    are one rename, so the second never replaces the first."""
    out = tmp_path / "out"

    def second_writer_meanwhile(folder):
        _write_folder({"a": "first"})(folder)
        files.write_folder_atomically(out, _write_folder({"a": "second"}))

    with pytest.raises(FileExistsError, match=r"out was written by another process meanwhile: "
                                              r"it is not replaced"):
        files.write_folder_atomically(out, second_writer_meanwhile)
    assert path_texts(out) == {"a": "second"}
    assert os.listdir(tmp_path) == ["out"]  # the refused folder is not kept
    (tmp_path / "empty").mkdir()
    files.write_folder_atomically(tmp_path / "empty", _write_folder({"b": "1"}))
    assert path_texts(tmp_path / "empty") == {"b": "1"}
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        files.write_folder_atomically(tmp_path / "file", _write_folder({}))
    assert (tmp_path / "file").read_text() == "x"


def test_a_folder_set_aside_by_an_interrupted_replacement_is_restored(tmp_path):
    """A process killed between the two renames of a replacement leaves the
    old folder aside and none in its place: `restore_set_aside` puts it back."""
    aside = tmp_path / ".out.previous-0123"
    aside.mkdir()
    (aside / "a").write_text("old")
    assert files.restore_set_aside(tmp_path / "missing") is None
    assert files.restore_set_aside(tmp_path / "out") == str(tmp_path / "out")
    assert path_texts(tmp_path / "out") == {"a": "old"} and os.listdir(tmp_path) == ["out"]
    assert files.restore_set_aside(tmp_path / "out") is None  # nothing to restore


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


def test_outside_folder_names_what_leaves_the_folder(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "inside").write_text("x")
    (tmp_path / "secret").write_text("y")
    (tmp_path / "run" / "out").symlink_to(tmp_path / "secret")
    (tmp_path / "run" / "in").symlink_to(tmp_path / "run" / "inside")
    run = tmp_path / "run"
    assert files.outside_folder(run, "inside") is None
    assert files.outside_folder(run, "in") is None  # a link that stays inside
    assert files.outside_folder(run, "sub/missing") is None  # missing: the caller says so
    for name in ("..", "../secret", "a/../../secret", str(tmp_path / "secret")):
        assert "absolute or with '..'" in files.outside_folder(run, name)
    assert files.outside_folder(run, "out") == "a link to a place outside the folder"
    assert files.outside_folder(run, ".") == "the folder itself, not a file in it"
    assert files.outside_folder(run, "") == "not a file name"
