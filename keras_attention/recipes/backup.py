"""Backup folders (`--backup_dir`) that are ours alone and know the
configuration they belong to.

`keras.callbacks.BackupAndRestore` resumes an interrupted `fit` from whatever
its folder holds, and removes the whole folder when training ends, whatever
else it holds. So a backup folder is accepted only when it is new, empty, or
one we wrote: a recipe writes the marker file `.keras_attention_backup` and
`config.json`, the settings that shape its model and data, into the folder
before training. `.`, the working directory and its parents, the output
folder, anything that holds the output folder or lies inside it, and a folder
holding a user's files are refused before any work.

A later run with the same folder resumes only if its settings are the same,
and is refused otherwise, before any training, naming the settings that
differ.
"""

import json
import os

from keras_attention.files import write_atomically

RECORD = "config.json"
MARKER = ".keras_attention_backup"
_MARKER_TEXT = ("This folder holds a keras_attention training backup "
                "(keras.callbacks.BackupAndRestore); training removes it when it ends.\n")
# What `BackupAndRestore` writes (and its `.bkp` copies); with `RECORD`, all
# a backup folder made before the marker existed may hold.
_BACKUP_FILES = frozenset(
    name + suffix for name in (RECORD, "latest.weights.h5", "training_metadata.json")
    for suffix in ("", ".bkp"))


def backup_record(config, may_differ):
    """The settings a backup belongs to: `config` without the keys in
    `may_differ` (those a resumed run may change, e.g. `epochs`)."""
    return {key: value for key, value in sorted(config.items()) if key not in may_differ}


def check_backup_dir(backup_dir, record, *, output_dir=None):
    """Returns `backup_dir` if training may back up there: a new folder, an
    empty one, or a backup folder we wrote (with no backup, or one of
    `record`'s settings).

    A folder with nothing but an old record (a finished run's) holds no
    backup; one with a backup but no marker or record (made before those
    existed) resumes as it always did, if it holds only what
    `BackupAndRestore` writes.

    Args:
        backup_dir: str or path-like; `""` or `None`: no backup (returned
            as is).
        record: dict, this configuration's `backup_record`.
        output_dir: str or path-like, the run's output folder, or `None`.

    Raises:
        ValueError: naming `backup_dir`, before anything is written, for `.`,
            the working directory or a parent of it, a symbolic link, a file,
            the output folder, a folder holding it or inside it, a folder
            holding anything but a backup of ours, or a backup of other
            settings (the message names the settings that differ).

    Example:

    >>> check_backup_dir(".", {})
    Traceback (most recent call last):
    ...
    ValueError: Setting `backup_dir` must not be the working directory or one of its parents: \
training removes the backup folder when it ends. Received: backup_dir='.'
    """
    if not backup_dir:
        return backup_dir
    _check_place(os.fspath(backup_dir), output_dir)
    if not os.path.isdir(backup_dir):
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
    """Writes the marker and `record` (as `config.json`) into `backup_dir`
    (creating the folder), making it a backup folder of ours."""
    if not backup_dir:
        return
    write_atomically(os.path.join(backup_dir, MARKER),
                     lambda file: file.write(_MARKER_TEXT.encode("utf-8")))
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    write_atomically(os.path.join(backup_dir, RECORD),
                     lambda file: file.write(text.encode("utf-8")))


def _check_place(backup_dir, output_dir):
    """Refuses a backup folder whose removal would take anything not ours."""
    def refuse(why):
        raise ValueError(f"Setting `backup_dir` must not be {why}: training removes the "
                         f"backup folder when it ends. Received: backup_dir={backup_dir!r}")

    real = os.path.realpath(backup_dir)
    if _contains(real, os.path.realpath(os.getcwd())):
        refuse("the working directory or one of its parents")
    if os.path.islink(backup_dir):
        refuse("a symbolic link")
    if os.path.lexists(backup_dir) and not os.path.isdir(backup_dir):
        refuse("a file")
    if output_dir:
        output = os.path.realpath(os.fspath(output_dir))
        if _contains(real, output):
            refuse(f"the output folder or a folder holding it ({os.fspath(output_dir)!r})")
        if _contains(output, real):
            refuse(f"inside the output folder ({os.fspath(output_dir)!r}), which the run "
                   "replaces")
    if os.path.isdir(backup_dir) and not _is_ours(backup_dir):
        refuse("a folder holding other files (use a new or empty folder, or a backup "
               "folder a recipe wrote)")


def _contains(folder, path):
    """Whether `path` is `folder` or lies inside it (both resolved)."""
    return os.path.commonpath([folder, path]) == folder


def _is_ours(backup_dir):
    """Whether `backup_dir` is empty, holds our marker, or holds nothing but
    what `BackupAndRestore` and a recipe write (a backup made before the
    marker existed)."""
    if os.path.isfile(os.path.join(backup_dir, MARKER)):
        return True
    for folder, subfolders, names in os.walk(backup_dir):
        if any(os.path.islink(os.path.join(folder, name)) for name in subfolders):
            return False
        if any(name not in _BACKUP_FILES for name in names):
            return False
    return True


def _holds_a_backup(backup_dir):
    """Whether anything but the record and marker is in `backup_dir` (or below it)."""
    for folder, _, names in os.walk(backup_dir):
        if any(folder != backup_dir or name not in (RECORD, MARKER) for name in names):
            return True
    return False
