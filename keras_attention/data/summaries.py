"""Summarization data: documents and reference summaries from JSONL files."""

from keras_attention.data.text_files import (
    empty_error,
    nonblank_texts,
    parse_json_line,
    read_lines,
    require_key,
)
from keras_attention.validation import check_file, check_positive_int, check_str


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
    path = check_file("path", path)
    max_examples = check_positive_int("max_examples", max_examples, allow_none=True)
    check_str("document_key", document_key)
    check_str("summary_key", summary_key)
    check_str("references_key", references_key, allow_none=True)
    examples = []
    for line_number, text in read_lines(path):
        if not text.strip():
            continue
        record = parse_json_line(path, line_number, text)
        document = require_key(path, line_number, record, document_key)
        document = " ".join(nonblank_texts(path, line_number, document_key, document))
        if references_key is not None and references_key in record:
            key = references_key
        else:
            key = summary_key
        summary = require_key(path, line_number, record, key)
        summaries = nonblank_texts(path, line_number, key, summary)
        examples.append({"document": document, "summaries": summaries})
        if max_examples is not None and len(examples) == max_examples:
            break
    if not examples:
        raise empty_error(path, "JSON object line")
    return examples
