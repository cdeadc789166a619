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
