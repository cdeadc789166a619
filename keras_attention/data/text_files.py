"""Reading local UTF-8 text files: lines, JSON records and errors that name the file and line.

The helpers every loader shares. A malformed input raises a `ValueError` that
names the file and the 1-based line number, says what was expected and shows
what was found (`Received: ...`, cut to about `MAX_RECEIVED_CHARS` characters).
"""

import json
import re

MAX_RECEIVED_CHARS = 80
_LINE_END = re.compile(rb"\r\n|\r|\n")
_CHUNK_BYTES = 1 << 20


def shorten(value):
    """`repr(value)`, cut to about `MAX_RECEIVED_CHARS` characters."""
    if isinstance(value, (str, bytes)) and len(value) > MAX_RECEIVED_CHARS:
        return repr(value[: MAX_RECEIVED_CHARS - 3]) + "..."
    text = repr(value)
    if len(text) > MAX_RECEIVED_CHARS:
        text = text[: MAX_RECEIVED_CHARS - 3] + "..."
    return text


def line_error(path, line_number, expected, received):
    """A `ValueError` naming the file, the line and what was expected."""
    where = f"File '{path}'" if line_number is None else f"File '{path}', line {line_number}"
    return ValueError(f"{where}: expected {expected}. Received: {received}")


def empty_error(path, expected):
    """A `ValueError` for a file with no non-blank line."""
    return ValueError(
        f"File '{path}' is empty: expected at least one {expected}. "
        "Received: no non-blank lines"
    )


def read_lines(path):
    """Yields `(line_number, text)` for every line, without its line ending.

    A line ends at `\\n` (Unix), `\\r\\n` (Windows) or a lone `\\r` (classic
    Mac OS); a UTF-8 byte order mark at the start is ignored. Each line is
    decoded separately, so an encoding error names its line. The file is read
    in chunks, never whole.
    """
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(_raw_lines(handle), start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"File '{path}', line {line_number}: is not valid UTF-8 "
                    f"(byte {raw[error.start]:#04x} at byte offset {error.start} of the "
                    "line); the file must be UTF-8 encoded. Re-save it as UTF-8. "
                    f"Received: {shorten(raw)}"
                ) from None
            if line_number == 1:
                text = text.removeprefix("\ufeff")
            yield line_number, text


def _raw_lines(handle):
    """The lines of a binary file, without their line ends (see `read_lines`)."""
    pending = b""
    while chunk := handle.read(_CHUNK_BYTES):
        data = pending + chunk
        # A `\r` at the end of a chunk may be the first half of `\r\n`.
        cut = len(data) - 1 if data.endswith(b"\r") else len(data)
        lines = _LINE_END.split(data[:cut])
        pending = lines.pop() + data[cut:]
        yield from lines
    lines = _LINE_END.split(pending)
    last = lines.pop()
    yield from lines
    if last:
        yield last


def parse_json_line(path, line_number, text):
    """Parses one JSONL line that must hold a JSON object."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise line_error(
            path, line_number, f"one JSON object per line (invalid JSON: {error.msg})",
            shorten(text),
        ) from None
    if not isinstance(record, dict):
        raise line_error(path, line_number, "a JSON object ({...}) per line", shorten(text))
    return record


def require_key(path, line_number, record, key):
    """`record[key]`, or a `ValueError` naming the file, the line and the missing key."""
    if key not in record:
        keys = ", ".join(repr(k) for k in record)
        raise line_error(
            path, line_number, f"a record with the key {key!r}",
            shorten(f"a record with the keys {keys}"),
        )
    return record[key]


def nonblank_text(path, line_number, key, value):
    """`value` if it is a non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise line_error(
            path, line_number, f"{key!r} to be a non-empty string", f"{key}={shorten(value)}"
        )
    return value


def nonblank_texts(path, line_number, key, value):
    """A list of stripped non-blank strings from a string or a list of them."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise line_error(
            path, line_number, f"{key!r} to be a string or a list of strings",
            f"{key}={shorten(value)}",
        )
    items = [item.strip() for item in items if item.strip()]
    if not items:
        raise line_error(
            path, line_number, f"{key!r} to hold at least one non-empty string",
            f"{key}={shorten(value)}",
        )
    return items
