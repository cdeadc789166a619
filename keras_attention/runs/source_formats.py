"""Source formats: how one input line of a run is made (the QA `context | question`)."""

import string

SOURCE_FIELDS = ("context", "question", "story")  # the fields a `source_format` may name


def check_source_format(source_format):
    """Returns `source_format` if it is `"text"` or a template of `SOURCE_FIELDS`.

    A template is a `str.format` string such as `"{context} | {question}"`,
    `"{question} | {context}"` or `"{story} | {question}"`: each field at
    most once, no conversions or format specs.

    Raises:
        ValueError: naming `source_format`.
    """
    problem = _source_format_problem(source_format)
    if problem:
        raise ValueError(
            f'Argument `source_format` must be "text" or a template such as '
            f'"{{context}} | {{question}}" ({problem}). Received: source_format={source_format!r}'
        )
    return source_format


def _source_format_problem(source_format):
    """What is wrong with `source_format`, or `None`."""
    if source_format == "text":
        return None
    if not isinstance(source_format, str):
        return "not a string"
    try:
        parsed = [(field, spec, conversion) for _, field, spec, conversion
                  in string.Formatter().parse(source_format) if field is not None]
    except ValueError as error:
        return str(error)
    fields = [field for field, _, _ in parsed]
    if not fields:
        return "no field"
    if (set(fields) - set(SOURCE_FIELDS) or len(set(fields)) < len(fields)
            or any(spec or conversion for _, spec, conversion in parsed)):
        return f"fields must be distinct, plain and among {', '.join(SOURCE_FIELDS)}"
    return None


def format_source(source_format, record):
    """One input line from `record` (a dict), as `source_format` says.

    `"text"` takes `record["text"]`; a template fills its fields from the
    record, a list of sentences (a bAbI story) joined by spaces. This is the
    one place where the question-answering input line is built.

    Example:

    >>> format_source("{context} | {question}", {"context": "Mary went home.",
    ...                                          "question": "Where is Mary?"})
    'Mary went home. | Where is Mary?'
    >>> format_source("{question} | {story}", {"story": ["A ran.", "B sat."],
    ...                                        "question": "Who sat?"})
    'Who sat? | A ran. B sat.'
    """
    check_source_format(source_format)
    names = ["text"] if source_format == "text" else [
        field for _, field, _, _ in string.Formatter().parse(source_format) if field]
    missing = [name for name in names if name not in record]
    if missing:
        raise ValueError(
            f"Argument `record` must have the field(s) {', '.join(missing)} of "
            f"source_format={source_format!r}. Received: record keys {sorted(record)}"
        )
    values = {name: " ".join(record[name]) if isinstance(record[name], (list, tuple))
              else record[name] for name in names}
    return values["text"] if source_format == "text" else source_format.format(**values)


__all__ = ["SOURCE_FIELDS", "check_source_format", "format_source"]
