"""Backup folders (`--backup_dir`) that know the configuration they belong to.

`keras.callbacks.BackupAndRestore` resumes an interrupted `fit` from whatever
its folder holds. A recipe writes `config.json` into the folder, the settings
that shape its model and data, before training; a later run with the same
folder resumes only if its settings are the same, and is refused otherwise,
before any training, naming the settings that differ.
"""

import json
import os

from keras_attention.files import write_atomically

RECORD = "config.json"


def backup_record(config, may_differ):
    """The settings a backup belongs to: `config` without the keys in
    `may_differ` (those a resumed run may change, e.g. `epochs`)."""
    return {key: value for key, value in sorted(config.items()) if key not in may_differ}


def check_backup_dir(backup_dir, record):
    """Returns `backup_dir` if it holds no backup, or one of `record`'s settings.

    A folder with nothing but an old record (a finished run's) holds no
    backup; one with a backup but no record (made before records existed)
    resumes as it always did.

    Raises:
        ValueError: naming `backup_dir` and the settings that differ.
    """
    if not backup_dir or not os.path.isdir(backup_dir):
        return backup_dir
    path = os.path.join(backup_dir, RECORD)
    if not os.path.exists(path) or not _holds_a_backup(backup_dir):
        return backup_dir
    try:
        with open(path, encoding="utf-8") as file:
            saved = json.load(file)
    except (OSError, ValueError) as error:
        raise ValueError(f"Setting `backup_dir`: {path} cannot be read ({error}). "
                         f"Received: backup_dir={backup_dir!r}") from None
    record = json.loads(json.dumps(record))  # as it would read back
    differences = [
        f"{key}={saved.get(key, '(unset)')!r} there, {record.get(key, '(unset)')!r} now"
        for key in sorted(set(saved) | set(record)) if saved.get(key) != record.get(key)
    ]
    if differences:
        raise ValueError(
            f"Setting `backup_dir` holds the backup of another configuration "
            f"({'; '.join(differences)}): resume it with its settings, or use another "
            f"folder. Received: backup_dir={backup_dir!r}")
    return backup_dir


def write_backup_record(backup_dir, record):
    """Writes `record` to `backup_dir/config.json` (creating the folder)."""
    if not backup_dir:
        return
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    write_atomically(os.path.join(backup_dir, RECORD),
                     lambda file: file.write(text.encode("utf-8")))


def _holds_a_backup(backup_dir):
    """Whether anything but the record is in `backup_dir` (or below it)."""
    for folder, _, names in os.walk(backup_dir):
        if any(folder != backup_dir or name != RECORD for name in names):
            return True
    return False
