"""Translation data: `(source, target)` pairs from Tatoeba / Anki TSV files."""

from keras_attention.data.text_files import empty_error, line_error, read_lines, shorten
from keras_attention.validation import check_bool, check_file, check_positive_int


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
    path = check_file("path", path)
    max_pairs = check_positive_int("max_pairs", max_pairs, allow_none=True)
    check_bool("lowercase", lowercase)
    expected = "'source<TAB>target' (at least two tab-separated columns)"
    pairs = []
    for line_number, text in read_lines(path):
        if not text.strip():
            continue
        columns = text.split("\t")
        if len(columns) < 2:
            raise line_error(
                path, line_number, expected + ", found no tab (missing target column)",
                shorten(text),
            )
        source, target = columns[0].strip(), columns[1].strip()
        if not source or not target:
            side = "source (first)" if not source else "target (second)"
            raise line_error(
                path, line_number, f"{expected} with a non-empty {side} column", shorten(text)
            )
        if lowercase:
            source, target = source.lower(), target.lower()
        pairs.append((source, target))
        if max_pairs is not None and len(pairs) == max_pairs:
            break
    if not pairs:
        raise empty_error(path, "'source<TAB>target' line")
    return pairs
