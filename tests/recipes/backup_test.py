"""Backup folders that know their configuration: same settings resume, others are refused."""

import json

import pytest

from keras_attention.recipes import backup

CONFIG = {"hidden_dim": 32, "epochs": 2, "output_dir": "runs/a", "seed": 0}


def test_the_record_leaves_out_what_a_resumed_run_may_change():
    assert backup.backup_record(CONFIG, ("epochs", "output_dir")) == {"hidden_dim": 32, "seed": 0}


def test_a_backup_of_the_same_settings_resumes_and_another_is_refused(tmp_path):
    folder = tmp_path / "backup"
    record = backup.backup_record(CONFIG, ("epochs", "output_dir"))
    assert backup.check_backup_dir(str(folder), record) == str(folder)  # nothing there yet
    backup.write_backup_record(str(folder), record)
    assert json.loads((folder / "config.json").read_text()) == record
    (folder / "latest.weights.h5").write_bytes(b"weights")  # what BackupAndRestore leaves
    assert backup.check_backup_dir(str(folder), dict(record)) == str(folder)
    other = dict(record, hidden_dim=64, seed=1)
    with pytest.raises(ValueError, match=r"`backup_dir` holds the backup of another "
                                         r"configuration \(hidden_dim=32 there, 64 now; seed=0 "
                                         r"there, 1 now\).*Received: backup_dir="):
        backup.check_backup_dir(str(folder), other)


def test_a_record_without_a_backup_or_a_backup_without_a_record_is_accepted(tmp_path):
    folder = tmp_path / "backup"
    backup.write_backup_record(str(folder), {"hidden_dim": 32})
    assert backup.check_backup_dir(str(folder), {"hidden_dim": 64})  # a finished run's record
    (folder / "config.json").unlink()
    (folder / "restart_1").mkdir()
    (folder / "restart_1" / "latest.weights.h5").write_bytes(b"w")
    assert backup.check_backup_dir(str(folder), {"hidden_dim": 64})  # made before records
    backup.write_backup_record(str(folder), {"hidden_dim": 32})
    with pytest.raises(ValueError, match=r"hidden_dim=32 there, 64 now"):  # in a subfolder
        backup.check_backup_dir(str(folder), {"hidden_dim": 64})
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"`backup_dir`: .*config.json cannot be read"):
        backup.check_backup_dir(str(folder), {"hidden_dim": 32})
    assert backup.check_backup_dir("", {"hidden_dim": 32}) == ""


def test_a_backup_folder_we_write_carries_the_marker_and_resumes(tmp_path):
    folder = tmp_path / "backup"
    backup.write_backup_record(str(folder), {"hidden_dim": 32})
    assert (folder / backup.MARKER).is_file()
    (folder / "notes.txt").write_text("left by a resumed run")  # ours: the marker says so
    (folder / "latest.weights.h5").write_bytes(b"weights")
    assert backup.check_backup_dir(str(folder), {"hidden_dim": 32},
                                   output_dir=str(tmp_path / "run")) == str(folder)


def test_a_folder_holding_a_users_files_is_refused_and_kept(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match=r"`backup_dir` must not be a folder holding other "
                                         r"files.*Received: backup_dir="):
        backup.check_backup_dir(str(folder), {}, output_dir=str(tmp_path / "run"))
    (folder / "thesis.tex").unlink()
    (folder / "deep").mkdir()
    (folder / "deep" / "latest.weights.h5").write_bytes(b"w")
    (folder / "deep" / "data.csv").write_text("1,2")  # anywhere below it
    with pytest.raises(ValueError, match=r"holding other files"):
        backup.check_backup_dir(str(folder), {})
    (folder / "deep" / "data.csv").unlink()
    assert backup.check_backup_dir(str(folder), {}) == str(folder)  # a backup's files only
    empty = tmp_path / "empty"
    empty.mkdir()
    assert backup.check_backup_dir(str(empty), {}) == str(empty)


@pytest.mark.parametrize("where", [".", "cwd", "parent", "root"])
def test_the_working_directory_and_its_parents_are_refused(where, tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    path = {".": ".", "cwd": str(tmp_path / "work"), "parent": "..", "root": "/"}[where]
    with pytest.raises(ValueError, match=r"`backup_dir` must not be the working directory or "
                                         rf"one of its parents.*Received: backup_dir='{path}'"):
        backup.check_backup_dir(path, {})


def test_the_output_folder_what_holds_it_and_what_lies_in_it_are_refused(tmp_path):
    output = tmp_path / "runs" / "a"
    for path, why in [(output, "the output folder or a folder holding it"),
                      (tmp_path / "runs", "the output folder or a folder holding it"),
                      (output / "backup", "inside the output folder")]:
        with pytest.raises(ValueError, match=rf"`backup_dir` must not be {why}.*"
                                             rf"Received: backup_dir='{path}'"):
            backup.check_backup_dir(str(path), {}, output_dir=str(output))
    assert backup.check_backup_dir(str(tmp_path / "b"), {}, output_dir=str(output))


def test_a_file_or_a_link_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"must not be a file.*Received: backup_dir="):
        backup.check_backup_dir(str(tmp_path / "file"), {})
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(ValueError, match=r"must not be a symbolic link"):
        backup.check_backup_dir(str(tmp_path / "link"), {})
