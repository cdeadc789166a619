"""Helpers shared by the loader tests: writing small files, the error prefix, real data."""

import json
import pathlib
import re

SHARED_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"


def write(folder, name, text, encoding="utf-8"):
    """Writes `text` (str, encoded with `encoding`, or bytes) to `folder / name`."""
    path = folder / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def at(path, line):
    """Regex for the start of a loader error about `path` at `line`."""
    return re.escape(f"File '{path}', line {line}:")


def jsonl(*records):
    """The JSONL text of `records`, one a line."""
    return "".join(json.dumps(record) + "\n" for record in records)
