"""Question answering data: the raw bAbI v1.2 task files."""

import pathlib

from keras_attention.data.text_files import empty_error, line_error, read_lines, shorten
from keras_attention.validation import check_file

BABI_SPLITS = ("train", "test")
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


def _babi_question(path, line_number, text, rest, story_ids):
    """Parses `question<TAB>answer<TAB>supporting ids` of a bAbI line."""
    fields = rest.split("\t")
    if len(fields) != 3:
        raise line_error(
            path, line_number,
            "a question line 'ID question<TAB>answer<TAB>supporting IDs' with 3 "
            f"tab-separated fields after the ID, found {len(fields)}",
            shorten(text),
        )
    question, answer, support = (field.strip() for field in fields)
    if not question or not answer:
        raise line_error(
            path, line_number, "a non-empty question and answer", shorten(text)
        )
    tokens = support.split()
    if not tokens or not all(token.isascii() and token.isdigit() for token in tokens):
        raise line_error(
            path, line_number,
            "supporting facts as space-separated integer IDs", shorten(support),
        )
    supporting = [int(token) for token in tokens]
    for fact in supporting:
        if fact not in story_ids:
            raise line_error(
                path, line_number,
                "supporting IDs of story sentences before the question "
                f"(sentence IDs so far: {sorted(story_ids) or 'none'})",
                f"supporting ID {fact} in {shorten(text)}",
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
    [{'story': ['Mary went home.'], 'question': 'Where is Mary?', 'answer': 'home',
      'supporting_facts': [1]}]
    """
    path = check_file("path", path)
    examples = []
    story, story_ids, previous_id = [], set(), 0
    for line_number, text in read_lines(path):
        if not text.strip():
            continue
        id_text, _, rest = text.partition(" ")
        if not (id_text.isascii() and id_text.isdigit()):
            raise line_error(
                path, line_number,
                "a line starting with an integer ID and a space ('ID sentence' or "
                "'ID question<TAB>answer<TAB>supporting IDs')",
                shorten(text),
            )
        line_id = int(id_text)
        if line_id == 1:
            story, story_ids = [], set()
        elif line_id != previous_id + 1:
            expected = (
                "ID 1 on the first line" if previous_id == 0 else
                f"ID {previous_id + 1} (IDs grow by one within a story) or 1 (a new story)"
            )
            raise line_error(
                path, line_number, expected,
                f"ID {line_id} in {shorten(text)}",
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
                raise line_error(path, line_number, "a sentence after the ID", shorten(text))
            story.append(sentence)
            story_ids.add(line_id)
    if not examples:
        if previous_id == 0:
            raise empty_error(path, "'ID sentence' line")
        raise line_error(
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
            f"Received: {shorten(names)}"
        )
    return load_babi(matches[0])
