"""Loaders for local dataset files: sentence pairs, summaries, bAbI, SQuAD.

Pure Python: each loader reads one local UTF-8 file (nothing is downloaded
and nothing is written) and returns plain lists of strings, tuples and
dicts, ready for a tokenizer. Malformed input raises a `ValueError` that
names the file and the 1-based line number, says what was expected and
shows what was found (`Received: ...`, truncated to about 80 characters).
A missing file raises `FileNotFoundError` naming the path.

Formats:

- `load_sentence_pairs`: Tatoeba / Anki TSV, `source<TAB>target[<TAB>...]`.
- `load_summaries`: JSONL, one document with its reference summaries a line.
- `load_babi` / `load_babi_task`: the raw bAbI v1.2 task files.
- `load_squad`: SQuAD v1.1 JSON, or JSONL with one question a line.
- `split_examples`: deterministic train / validation / test split, with an
  optional group key so that related examples stay in one split.
"""

import bisect
import json
import os
import pathlib
import random
from json import scanner as json_scanner

from keras_attention.validation import check_positive_int, check_rate

MAX_RECEIVED_CHARS = 80
_LINE_END = b"\r\n"
BABI_TASK_NAMES = (
    "single-supporting-fact",
    "two-supporting-facts",
    "three-supporting-facts",
    "two-arg-relations",
    "three-arg-relations",
    "yes-no-questions",
    "counting",
    "lists-sets",
    "simple-negation",
    "indefinite-knowledge",
    "basic-coreference",
    "conjunction",
    "compound-coreference",
    "time-reasoning",
    "basic-deduction",
    "basic-induction",
    "positional-reasoning",
    "size-reasoning",
    "path-finding",
    "agents-motivations",
)
BABI_SPLITS = ("train", "test")


# --------------------------------------------------------------------------
# Shared helpers: messages, reading lines, JSON values.
# --------------------------------------------------------------------------


def _shorten(value):
    """`repr(value)`, cut to about `MAX_RECEIVED_CHARS` characters."""
    if isinstance(value, (str, bytes)) and len(value) > MAX_RECEIVED_CHARS:
        return repr(value[: MAX_RECEIVED_CHARS - 3]) + "..."
    text = repr(value)
    if len(text) > MAX_RECEIVED_CHARS:
        text = text[: MAX_RECEIVED_CHARS - 3] + "..."
    return text


def _line_error(path, line_number, expected, received):
    """A `ValueError` naming the file, the line and what was expected."""
    where = f"File '{path}'" if line_number is None else f"File '{path}', line {line_number}"
    return ValueError(f"{where}: expected {expected}. Received: {received}")


def _empty_error(path, expected):
    return ValueError(
        f"File '{path}' is empty: expected at least one {expected}. "
        "Received: no non-blank lines"
    )


def _check_file(path):
    """Returns `path` as a `pathlib.Path`, raising if it is not a file."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"Argument `path` must be a str or path-like. Received: path={path!r}")
    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(f"File not found: '{path}'")
    if not path.is_file():
        raise ValueError(f"Expected a file, not a directory or device. Received: path='{path}'")
    return path


def _read_lines(path):
    """Yields `(line_number, text)` for every line, without its line ending.

    Lines are split on `\\n` only (a trailing `\\r` is dropped, a UTF-8 byte
    order mark at the start is ignored); each line is decoded separately, so
    an encoding error names its line.
    """
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"File '{path}', line {line_number}: is not valid UTF-8 "
                    f"(byte {raw[error.start]:#04x} at byte offset {error.start} of the "
                    "line); the file must be UTF-8 encoded. Re-save it as UTF-8. "
                    f"Received: {_shorten(raw.rstrip(_LINE_END))}"
                ) from None
            if line_number == 1:
                text = text.removeprefix("\ufeff")
            yield line_number, text.rstrip("\r\n")


def _parse_json_line(path, line_number, text):
    """Parses one JSONL line that must hold a JSON object."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise _line_error(
            path, line_number, f"one JSON object per line (invalid JSON: {error.msg})",
            _shorten(text),
        ) from None
    if not isinstance(record, dict):
        raise _line_error(path, line_number, "a JSON object ({...}) per line", _shorten(text))
    return record


def _require_key(path, line_number, record, key):
    if key not in record:
        keys = ", ".join(repr(k) for k in record)
        raise _line_error(
            path, line_number, f"a record with the key {key!r}",
            _shorten(f"a record with the keys {keys}"),
        )
    return record[key]


def _text(path, line_number, key, value):
    """`value` if it is a non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise _line_error(
            path, line_number, f"{key!r} to be a non-empty string", f"{key}={_shorten(value)}"
        )
    return value


def _texts(path, line_number, key, value):
    """A list of stripped non-blank strings from a string or a list of them."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise _line_error(
            path, line_number, f"{key!r} to be a string or a list of strings",
            f"{key}={_shorten(value)}",
        )
    items = [item.strip() for item in items if item.strip()]
    if not items:
        raise _line_error(
            path, line_number, f"{key!r} to hold at least one non-empty string",
            f"{key}={_shorten(value)}",
        )
    return items


# --------------------------------------------------------------------------
# Translation: TSV sentence pairs.
# --------------------------------------------------------------------------


def load_sentence_pairs(path, *, max_pairs=None, lowercase=False):
    """Loads `(source, target)` sentence pairs from a tab-separated file.

    The Tatoeba / Anki format (manythings.org): UTF-8, one pair per line,
    `source<TAB>target`. Extra columns after the second (such as the Anki
    attribution column) are ignored, surrounding whitespace is stripped and
    blank lines are skipped. File order is kept; use `split_examples` to
    shuffle and split.

    Args:
        path: str or path-like, a local file.
        max_pairs: positive int or `None`; stop after this many pairs.
        lowercase: bool; lower-case both sides.

    Returns:
        A list of `(source, target)` tuples of non-empty strings.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: the file is empty, is not UTF-8, or a line has fewer
            than two tab-separated columns or an empty column; the message
            names the file and the line.

    Example:

    >>> import pathlib, tempfile
    >>> from keras_attention.data import load_sentence_pairs
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder, "eng-deu.tsv")
    ...     _ = path.write_text("Hi.\\tHallo!\\nRun!\\tLauf!\\tCC-BY 2.0\\n", encoding="utf-8")
    ...     load_sentence_pairs(path)
    [('Hi.', 'Hallo!'), ('Run!', 'Lauf!')]
    """
    path = _check_file(path)
    max_pairs = check_positive_int("max_pairs", max_pairs, allow_none=True)
    if not isinstance(lowercase, bool):
        raise TypeError(f"Argument `lowercase` must be a bool. Received: lowercase={lowercase!r}")
    expected = "'source<TAB>target' (at least two tab-separated columns)"
    pairs = []
    for line_number, text in _read_lines(path):
        if not text.strip():
            continue
        columns = text.split("\t")
        if len(columns) < 2:
            raise _line_error(
                path, line_number, expected + ", found no tab (missing target column)",
                _shorten(text),
            )
        source, target = columns[0].strip(), columns[1].strip()
        if not source or not target:
            side = "source (first)" if not source else "target (second)"
            raise _line_error(
                path, line_number, f"{expected} with a non-empty {side} column", _shorten(text)
            )
        if lowercase:
            source, target = source.lower(), target.lower()
        pairs.append((source, target))
        if max_pairs is not None and len(pairs) == max_pairs:
            break
    if not pairs:
        raise _empty_error(path, "'source<TAB>target' line")
    return pairs


# --------------------------------------------------------------------------
# Summarization: JSONL documents with reference summaries.
# --------------------------------------------------------------------------


def load_summaries(
    path,
    *,
    document_key="document",
    summary_key="summary",
    references_key="references",
    max_examples=None,
):
    """Loads documents and their reference summaries from a JSONL file.

    One JSON object per line. The document (`document_key`) may be a string
    or a list of sentences, which are joined with single spaces. The
    references come from `references_key` when the record has that key
    (SciTLDR keeps every gold TLDR there, the first one equal to `summary`),
    otherwise from `summary_key`; either may be a string or a list of
    strings. Raw SciTLDR files load with `document_key="source",
    summary_key="target"`. Blank lines are skipped; other keys are ignored.

    Args:
        path: str or path-like, a local `.jsonl` file.
        document_key: str, the key of the document.
        summary_key: str, the key of the summary (or list of summaries).
        references_key: str or `None`; the key of the list of all reference
            summaries, used in place of `summary_key` when present.
        max_examples: positive int or `None`; stop after this many records.

    Returns:
        A list of dicts `{"document": str, "summaries": [str, ...]}`, with
        at least one non-empty summary each; whitespace around each string
        is stripped.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: the file is empty or not UTF-8, a line is not a JSON
            object, a record lacks a key, or a field is empty or of the
            wrong type; the message names the file and the line.

    Example:

    >>> import pathlib, tempfile
    >>> from keras_attention.data import load_summaries
    >>> line = '{"document": ["First.", "Second."], "summary": "Short."}\\n'
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder, "train.jsonl")
    ...     _ = path.write_text(line, encoding="utf-8")
    ...     load_summaries(path)
    [{'document': 'First. Second.', 'summaries': ['Short.']}]
    """
    path = _check_file(path)
    max_examples = check_positive_int("max_examples", max_examples, allow_none=True)
    for name, key in (("document_key", document_key), ("summary_key", summary_key)):
        if not isinstance(key, str):
            raise TypeError(f"Argument `{name}` must be a str. Received: {name}={key!r}")
    if references_key is not None and not isinstance(references_key, str):
        raise TypeError(
            "Argument `references_key` must be a str or None. "
            f"Received: references_key={references_key!r}"
        )
    examples = []
    for line_number, text in _read_lines(path):
        if not text.strip():
            continue
        record = _parse_json_line(path, line_number, text)
        document = _require_key(path, line_number, record, document_key)
        document = " ".join(_texts(path, line_number, document_key, document))
        if references_key is not None and references_key in record:
            key = references_key
        else:
            key = summary_key
        summaries = _texts(path, line_number, key, _require_key(path, line_number, record, key))
        examples.append({"document": document, "summaries": summaries})
        if max_examples is not None and len(examples) == max_examples:
            break
    if not examples:
        raise _empty_error(path, "JSON object line")
    return examples


# --------------------------------------------------------------------------
# Question answering: bAbI.
# --------------------------------------------------------------------------


def _babi_question(path, line_number, text, rest, story_ids):
    """Parses `question<TAB>answer<TAB>supporting ids` of a bAbI line."""
    fields = rest.split("\t")
    if len(fields) != 3:
        raise _line_error(
            path, line_number,
            "a question line 'ID question<TAB>answer<TAB>supporting IDs' with 3 "
            f"tab-separated fields after the ID, found {len(fields)}",
            _shorten(text),
        )
    question, answer, support = (field.strip() for field in fields)
    if not question or not answer:
        raise _line_error(
            path, line_number, "a non-empty question and answer", _shorten(text)
        )
    tokens = support.split()
    if not tokens or not all(token.isascii() and token.isdigit() for token in tokens):
        raise _line_error(
            path, line_number,
            "supporting facts as space-separated integer IDs", _shorten(support),
        )
    supporting = [int(token) for token in tokens]
    for fact in supporting:
        if fact not in story_ids:
            raise _line_error(
                path, line_number,
                "supporting IDs of story sentences before the question "
                f"(sentence IDs so far: {sorted(story_ids) or 'none'})",
                f"supporting ID {fact} in {_shorten(text)}",
            )
    return question, answer, supporting


def load_babi(path):
    """Loads the questions of a raw bAbI task file (v1.2 format).

    Each line is `ID sentence` or `ID question<TAB>answer<TAB>supporting
    IDs`. IDs start at 1 for each new story and grow by one. Every question
    gets the story sentences (not the earlier questions) of its story up to
    it, as in the Keras `babi_memnn` example.

    Args:
        path: str or path-like, a local file such as
            `qa1_single-supporting-fact_train.txt`.

    Returns:
        A list of dicts, one per question, in file order:
        `{"story": [str, ...], "question": str, "answer": str,
        "supporting_facts": [int, ...]}`. `supporting_facts` holds the
        file's line IDs of the supporting sentences (not indices into
        `story`, which leaves out question lines). Answers of list tasks
        keep their commas, e.g. `"apple,football"`.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: the file is empty or not UTF-8, a line has no leading
            integer ID, the IDs do not restart at 1 or grow by one, a
            question line does not have 3 tab-separated fields, or a
            supporting ID is not an earlier sentence; the message names the
            file and the line.

    Example:

    >>> import pathlib, tempfile
    >>> from keras_attention.data import load_babi
    >>> lines = "1 Mary went home.\\n2 Where is Mary? \\thome\\t1\\n"
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder, "qa1_single-supporting-fact_train.txt")
    ...     _ = path.write_text(lines, encoding="utf-8")
    ...     load_babi(path)
    [{'story': ['Mary went home.'], 'question': 'Where is Mary?', 'answer': 'home', 'supporting_facts': [1]}]
    """
    path = _check_file(path)
    examples = []
    story, story_ids, previous_id = [], set(), 0
    for line_number, text in _read_lines(path):
        if not text.strip():
            continue
        id_text, _, rest = text.partition(" ")
        if not (id_text.isascii() and id_text.isdigit()):
            raise _line_error(
                path, line_number,
                "a line starting with an integer ID and a space ('ID sentence' or "
                "'ID question<TAB>answer<TAB>supporting IDs')",
                _shorten(text),
            )
        line_id = int(id_text)
        if line_id == 1:
            story, story_ids = [], set()
        elif line_id != previous_id + 1:
            expected = (
                "ID 1 on the first line" if previous_id == 0 else
                f"ID {previous_id + 1} (IDs grow by one within a story) or 1 (a new story)"
            )
            raise _line_error(
                path, line_number, expected,
                f"ID {line_id} in {_shorten(text)}",
            )
        previous_id = line_id
        if "\t" in rest:
            question, answer, supporting = _babi_question(
                path, line_number, text, rest, story_ids
            )
            examples.append({
                "story": list(story),
                "question": question,
                "answer": answer,
                "supporting_facts": supporting,
            })
        else:
            sentence = rest.strip()
            if not sentence:
                raise _line_error(path, line_number, "a sentence after the ID", _shorten(text))
            story.append(sentence)
            story_ids.add(line_id)
    if not examples:
        if previous_id == 0:
            raise _empty_error(path, "'ID sentence' line")
        raise _line_error(
            path, None, "at least one question line 'ID question<TAB>answer<TAB>supporting IDs'",
            "story sentences but no question",
        )
    return examples


def load_babi_task(directory, task, split):
    """Loads one bAbI task file, found by task number and split.

    Looks for the official name `qa{task}_{name}_{split}.txt` in
    `directory` (e.g. `tasks_1-20_v1-2/en` or `en-10k`), falling back to the
    single file matching `qa{task}_*_{split}.txt`.

    Args:
        directory: str or path-like, a local folder of bAbI files.
        task: int in 1..20.
        split: `"train"` or `"test"`.

    Returns:
        The list of `load_babi`.

    Raises:
        FileNotFoundError: no file for this task and split in `directory`.
        ValueError: a bad `task` or `split`, several matching files, or a
            malformed file (see `load_babi`).

    Example:

    >>> import pathlib, tempfile
    >>> from keras_attention.data import load_babi_task
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder, "qa1_single-supporting-fact_test.txt")
    ...     _ = path.write_text("1 Mary went home.\\n2 Where is Mary?\\thome\\t1\\n")
    ...     [example["answer"] for example in load_babi_task(folder, 1, "test")]
    ['home']
    """
    if (
        isinstance(task, bool)
        or not isinstance(task, int)
        or not 1 <= task <= len(BABI_TASK_NAMES)
    ):
        raise ValueError(f"Argument `task` must be an int in 1..20. Received: task={task!r}")
    if split not in BABI_SPLITS:
        raise ValueError(
            f"Argument `split` must be one of {BABI_SPLITS}. Received: split={split!r}"
        )
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"bAbI directory not found: '{directory}'")
    official = directory / f"qa{task}_{BABI_TASK_NAMES[task - 1]}_{split}.txt"
    if official.is_file():
        return load_babi(official)
    pattern = f"qa{task}_*_{split}.txt"
    matches = sorted(directory.glob(pattern))
    if not matches:
        raise FileNotFoundError(f"No bAbI file matching '{pattern}' in '{directory}'")
    if len(matches) > 1:
        names = ", ".join(match.name for match in matches)
        raise ValueError(
            f"Expected one bAbI file matching '{pattern}' in '{directory}'. "
            f"Received: {_shorten(names)}"
        )
    return load_babi(matches[0])


# --------------------------------------------------------------------------
# Question answering: SQuAD v1.1 JSON or JSONL.
# --------------------------------------------------------------------------


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
            answers = _require_key(path, line_number, answers, "text")
        if isinstance(answers, list):
            answers = [a.get("text") if isinstance(a, dict) else a for a in answers]
        return _texts(path, line_number, "answers", answers)
    if "answer" in record:
        return _texts(path, line_number, "answer", record["answer"])
    keys = ", ".join(repr(k) for k in record)
    raise _line_error(
        path, line_number, "a record with the key 'answers' or 'answer'",
        _shorten(f"a record with the keys {keys}"),
    )


def _squad_example(path, line_number, record, context):
    question_id = _require_key(path, line_number, record, "id")
    if not isinstance(question_id, (str, int)) or isinstance(question_id, bool):
        raise _line_error(path, line_number, "'id' to be a string", f"id={_shorten(question_id)}")
    question = _require_key(path, line_number, record, "question")
    question = _text(path, line_number, "question", question)
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
            raise _line_error(path, line, expected, received)

    def items(parent, key, where):
        line = line_of(parent, 1)
        check(isinstance(parent, dict), line, f"{where} to be a JSON object", _shorten(parent))
        value = parent.get(key)
        check(
            isinstance(value, list), line, f"{where} to have a list {key!r}",
            f"{key}={_shorten(value)}",
        )
        for index, item in enumerate(value):
            check(
                isinstance(item, dict), line_of(item, line),
                f"{where}.{key}[{index}] to be a JSON object", _shorten(item),
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
                f"{where} to have a non-empty string 'context'", f"context={_shorten(context)}",
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
        raise _line_error(
            path, error.lineno,
            f"SQuAD v1.1 JSON or JSONL (invalid JSON: {error.msg}, column {error.colno})",
            _shorten(line),
        ) from None
    if not isinstance(document, dict) or "data" not in document:
        raise _line_error(
            path, 1, "a SQuAD v1.1 JSON object with a 'data' key, or JSONL",
            _shorten(text.lstrip().splitlines()[0]),
        )
    try:
        examples = _squad_json_examples(path, document, located=False)
    except _SquadStructureError:
        document = _located_decoder(text).decode(text)
        examples = _squad_json_examples(path, document, located=True)
    if not examples:
        raise _line_error(path, 1, "at least one question in 'data'", "no questions")
    return examples


def _load_squad_jsonl(path, lines):
    examples = []
    for line_number, text in lines:
        if not text.strip():
            continue
        record = _parse_json_line(path, line_number, text)
        context = _require_key(path, line_number, record, "context")
        context = _text(path, line_number, "context", context)
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
    path = _check_file(path)
    lines = list(_read_lines(path))
    content = [(number, text) for number, text in lines if text.strip()]
    if not content:
        raise _empty_error(path, "SQuAD JSON object or JSONL line")
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


# --------------------------------------------------------------------------
# Splitting.
# --------------------------------------------------------------------------


def split_examples(
    examples, *, validation_fraction=0.1, test_fraction=0.1, seed=0, group_key=None
):
    """Splits examples into shuffled train, validation and test lists.

    The split is deterministic for a given `seed`. With `group_key`, all
    examples with the same key go to the same split: whole groups are
    shuffled and dealt to test, then validation, until each holds at least
    its fraction of the examples (so sizes can overshoot by up to one group),
    and the rest go to train. For Tatoeba pairs, where one English sentence
    has several translations, use `group_key=lambda pair: pair[0]` (or
    `pair[0].lower()`) so no test source is seen in training.

    Args:
        examples: a sequence (or iterable) of examples of any type.
        validation_fraction: float in [0, 1), the share of validation.
        test_fraction: float in [0, 1), the share of test; the two fractions
            must sum to less than 1.
        seed: int, seeds the shuffle.
        group_key: `None` or a function from an example to a hashable key.

    Returns:
        `(train, validation, test)`, three shuffled lists that together hold
        every example once. Without `group_key`, validation and test hold
        `round(n * fraction)` examples each.

    Raises:
        ValueError: no examples, bad fractions, or no example left for train.

    Example:

    >>> from keras_attention.data import split_examples
    >>> pairs = [("Hi.", "Hallo!"), ("Hi.", "Grüß Gott!"), ("Run!", "Lauf!"),
    ...          ("Wow!", "Potzdonner!"), ("Fire!", "Feuer!")]
    >>> train, validation, test = split_examples(
    ...     pairs, validation_fraction=0.2, test_fraction=0.2,
    ...     group_key=lambda pair: pair[0])
    >>> len(train) + len(validation) + len(test)
    5
    >>> {s for s, _ in train} & {s for s, _ in validation + test}
    set()
    """
    examples = list(examples)
    if not examples:
        raise ValueError(
            "Argument `examples` must hold at least one example. Received: examples=[]"
        )
    validation_fraction = check_rate("validation_fraction", validation_fraction)
    test_fraction = check_rate("test_fraction", test_fraction)
    if validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            "Arguments `validation_fraction` and `test_fraction` must sum to less than 1. "
            f"Received: validation_fraction={validation_fraction}, test_fraction={test_fraction}"
        )
    if group_key is not None and not callable(group_key):
        raise TypeError(
            f"Argument `group_key` must be a function or None. Received: group_key={group_key!r}"
        )
    rng = random.Random(seed)
    size = len(examples)
    n_test = round(size * test_fraction)
    n_validation = round(size * validation_fraction)
    if group_key is None:
        order = list(range(size))
        rng.shuffle(order)
        shuffled = [examples[i] for i in order]
        test = shuffled[:n_test]
        validation = shuffled[n_test : n_test + n_validation]
        train = shuffled[n_test + n_validation :]
    else:
        groups = {}
        for example in examples:
            groups.setdefault(group_key(example), []).append(example)
        members = list(groups.values())
        rng.shuffle(members)
        test, validation, train = [], [], []
        for group in members:
            if len(test) < n_test:
                test.extend(group)
            elif len(validation) < n_validation:
                validation.extend(group)
            else:
                train.extend(group)
        for split in (train, validation, test):
            rng.shuffle(split)
    if not train:
        raise ValueError(
            "The split left no training examples; lower the fractions or pass more "
            f"examples. Received: {size} examples, validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}"
        )
    return train, validation, test
