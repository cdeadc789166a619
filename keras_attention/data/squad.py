"""Question answering data: extractive questions from SQuAD v1.1 JSON or JSONL."""

import bisect
import json
from json import scanner as json_scanner

from keras_attention.data.text_files import (
    empty_error,
    line_error,
    nonblank_text,
    nonblank_texts,
    parse_json_line,
    read_lines,
    require_key,
    shorten,
)
from keras_attention.validation import check_file


class _LocatedDict(dict):
    """A dict that remembers the line its JSON object started on."""

    line = None


def _located_decoder(text):
    """A JSON decoder whose objects are `_LocatedDict`s with a `line`."""
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    decoder = json.JSONDecoder()
    parse_object = decoder.parse_object

    def parse_located(s_and_end, *args):
        start = s_and_end[1] - 1  # the position of "{"
        obj, end = parse_object(s_and_end, *args)
        located = _LocatedDict(obj)
        located.line = bisect.bisect_left(newlines, start) + 1
        return located, end

    decoder.parse_object = parse_located
    decoder.scan_once = json_scanner.py_make_scanner(decoder)
    return decoder


class _SquadStructureError(Exception):
    """Raised by the fast SQuAD pass; the slow pass adds line numbers."""


def _answer_texts(path, line_number, record):
    """Answer strings from `answers` (list or dict of lists) or `answer`."""
    if "answers" in record:
        answers = record["answers"]
        if isinstance(answers, dict):
            answers = require_key(path, line_number, answers, "text")
        if isinstance(answers, list):
            answers = [a.get("text") if isinstance(a, dict) else a for a in answers]
        return nonblank_texts(path, line_number, "answers", answers)
    if "answer" in record:
        return nonblank_texts(path, line_number, "answer", record["answer"])
    keys = ", ".join(repr(k) for k in record)
    raise line_error(
        path, line_number, "a record with the key 'answers' or 'answer'",
        shorten(f"a record with the keys {keys}"),
    )


def _squad_example(path, line_number, record, context):
    question_id = require_key(path, line_number, record, "id")
    if not isinstance(question_id, (str, int)) or isinstance(question_id, bool):
        raise line_error(path, line_number, "'id' to be a string", f"id={shorten(question_id)}")
    question = require_key(path, line_number, record, "question")
    question = nonblank_text(path, line_number, "question", question)
    return {
        "id": str(question_id),
        "context": context,
        "question": question,
        "answers": _answer_texts(path, line_number, record),
    }


def _squad_json_examples(path, document, located):
    """Examples of a parsed SQuAD v1.1 document.

    Without `located` a structure error raises `_SquadStructureError`; with
    it, the objects carry their line and the error is a `ValueError`.
    """

    def line_of(obj, fallback):
        return getattr(obj, "line", None) or fallback

    def check(ok, line, expected, received):
        if not ok:
            if not located:
                raise _SquadStructureError()
            raise line_error(path, line, expected, received)

    def items(parent, key, where):
        line = line_of(parent, 1)
        check(isinstance(parent, dict), line, f"{where} to be a JSON object", shorten(parent))
        value = parent.get(key)
        check(
            isinstance(value, list), line, f"{where} to have a list {key!r}",
            f"{key}={shorten(value)}",
        )
        for index, item in enumerate(value):
            check(
                isinstance(item, dict), line_of(item, line),
                f"{where}.{key}[{index}] to be a JSON object", shorten(item),
            )
            yield index, item

    examples = []
    for a, article in items(document, "data", "the SQuAD document"):
        for p, paragraph in items(article, "paragraphs", f"data[{a}]"):
            where = f"data[{a}].paragraphs[{p}]"
            line = line_of(paragraph, None)
            context = paragraph.get("context")
            check(
                isinstance(context, str) and bool(context.strip()), line,
                f"{where} to have a non-empty string 'context'", f"context={shorten(context)}",
            )
            for _, qa in items(paragraph, "qas", where):
                try:
                    examples.append(_squad_example(path, line_of(qa, None), qa, context))
                except ValueError:
                    if not located:
                        raise _SquadStructureError() from None
                    raise
    return examples


def _load_squad_json(path, text):
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        line = text.splitlines()[error.lineno - 1] if text.splitlines() else ""
        raise line_error(
            path, error.lineno,
            f"SQuAD v1.1 JSON or JSONL (invalid JSON: {error.msg}, column {error.colno})",
            shorten(line),
        ) from None
    if not isinstance(document, dict) or "data" not in document:
        raise line_error(
            path, 1, "a SQuAD v1.1 JSON object with a 'data' key, or JSONL",
            shorten(text.lstrip().splitlines()[0]),
        )
    try:
        examples = _squad_json_examples(path, document, located=False)
    except _SquadStructureError:
        document = _located_decoder(text).decode(text)
        examples = _squad_json_examples(path, document, located=True)
    if not examples:
        raise line_error(path, 1, "at least one question in 'data'", "no questions")
    return examples


def _load_squad_jsonl(path, lines):
    examples = []
    for line_number, text in lines:
        if not text.strip():
            continue
        record = parse_json_line(path, line_number, text)
        context = require_key(path, line_number, record, "context")
        context = nonblank_text(path, line_number, "context", context)
        examples.append(_squad_example(path, line_number, record, context))
    return examples


def load_squad(path):
    """Loads extractive questions from SQuAD v1.1 JSON or from JSONL.

    Two layouts are accepted:

    - SQuAD v1.1 JSON: `{"data": [{"paragraphs": [{"context": ...,
      "qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}`.
    - JSONL, one question a line with `id`, `context`, `question` and either
      `answers` (a list of `{"text", ...}` dicts, a list of strings, or a
      dict of lists `{"text": [...], "answer_start": [...]}`) or a single
      `answer` string (as in XQuAD-en here).

    The layout is told from the first non-blank line: JSONL when that line
    alone is a JSON object other than a one-line SQuAD document.

    Args:
        path: str or path-like, a local file.

    Returns:
        A list of dicts `{"id": str, "context": str, "question": str,
        "answers": [str, ...]}` in file order, with at least one answer each;
        texts are kept as they are (answer offsets stay valid), answers are
        stripped and kept in order, duplicates included.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: the file is empty, not UTF-8 or not valid JSON, a record
            lacks a key, or a field is empty or of the wrong type; the
            message names the file and the line.

    Example:

    >>> import json, pathlib, tempfile
    >>> from keras_attention.data import load_squad
    >>> record = {"id": "q1", "context": "Paris is in France.",
    ...           "question": "Where is Paris?", "answer": "France", "answer_start": 12}
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder, "squad.jsonl")
    ...     _ = path.write_text(json.dumps(record) + "\\n", encoding="utf-8")
    ...     load_squad(path)[0]["answers"]
    ['France']
    """
    path = check_file("path", path)
    lines = list(read_lines(path))
    content = [(number, text) for number, text in lines if text.strip()]
    if not content:
        raise empty_error(path, "SQuAD JSON object or JSONL line")
    try:
        first = json.loads(content[0][1])
    except json.JSONDecodeError:
        first = None
    is_jsonl = isinstance(first, dict) and not (len(content) == 1 and "data" in first)
    if is_jsonl:
        examples = _load_squad_jsonl(path, lines)
    else:
        examples = _load_squad_json(path, "\n".join(text for _, text in lines))
    return examples
