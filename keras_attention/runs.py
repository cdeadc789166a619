"""Run folders: what a recipe saves, and the one reader of them (`SavedRun`).

A run folder holds:

- `model.keras`: the trained Keras model;
- `source.spm`, `target.spm`: the SentencePiece tokenizers (the same model
  twice when source and target share a vocabulary);
- `config.json`: everything a reader needs (see `save_run`);
- `.keras_attention_run`: the marker that makes the folder recognisable as a
  run folder, so that a later run may replace it (and nothing else).

Writing a run never loses work: `check_output_dir` refuses, before any
training, a folder that holds anything but a run (and `.` or a parent of the
working directory, always); `save_run` writes a new sibling folder and moves
it into place only once it is complete, so the previous run stays intact
until then. `SavedRun` loads a folder, generates with its decoding settings
and evaluates it; the CLI (`keras-attention generate|evaluate`) and
`keras_attention.export` read runs only through it. Folders saved before the
marker and the self-describing `config.json` existed still load.
"""

import json
import os
import string
import tempfile
import zipfile

from keras_attention import files
from keras_attention.version import __version__

FORMAT_VERSION = 1  # of config.json; 0 names a folder saved before format 1
MARKER = ".keras_attention_run"
MODEL_FILE = "model.keras"
CONFIG_FILE = "config.json"
TOKENIZER_FILES = {"source": "source.spm", "target": "target.spm"}
RUN_FILES = (MODEL_FILE, TOKENIZER_FILES["source"], TOKENIZER_FILES["target"], CONFIG_FILE)
RECIPES = ("translation", "summarization", "question_answering")
DECODING_KEYS = ("source_length", "target_length", "strategy", "num_beams", "length_penalty",
                 "coverage_penalty", "suppress_token_ids")
SOURCE_FIELDS = ("context", "question", "story")  # the fields a `source_format` may name
_RESERVED_KEYS = ("format_version", "keras_attention", "recipe", "config", "scores",
                  "tokenizers", "decoding", "source_format")
_MARKER_TEXT = (
    "This folder is a keras_attention run folder (format {version}).\n"
    "A later run may replace it as a whole, with `--overwrite=true`; see\n"
    "docs/guides/run_folders.md.\n"
)


class RunFolderError(ValueError):
    """A run folder that cannot be read: a file missing, corrupt or truncated.

    The message names the file and the folder (`Received: run_dir=...`).
    """


## Writing


def is_run_folder(path):
    """Whether `path` is a run folder a new run may replace.

    That is a folder holding the marker file `.keras_attention_run`, or a
    folder saved before the marker existed: `model.keras`, `source.spm`,
    `target.spm` and a `config.json` naming a recipe, with nothing else but
    `.png` plots.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        return False
    if os.path.isfile(os.path.join(path, MARKER)):
        return True
    names = set(os.listdir(path))
    if not set(RUN_FILES) <= names or any(
            not name.endswith(".png") for name in names - set(RUN_FILES)):
        return False
    try:
        with open(os.path.join(path, CONFIG_FILE), encoding="utf-8") as file:
            metadata = json.load(file)
    except (OSError, ValueError):
        return False
    return isinstance(metadata, dict) and metadata.get("recipe") in RECIPES


def check_output_dir(output_dir, *, overwrite=False):
    """Refuses an output folder a run must not be written to.

    Recipes call it before training, and `save_run` again before writing.
    Accepted: a new folder in a writable folder, an empty folder, and a run
    folder (see `is_run_folder`) when `overwrite=True`.

    Args:
        output_dir: str or path-like, where the run is to be saved.
        overwrite: bool, whether an existing run folder may be replaced
            (after the new run is complete; see `save_run`).

    Raises:
        ValueError: naming `output_dir`, when it is a file; a folder that
            holds anything but a run; a run folder and `overwrite` is False;
            `.`, the working directory or one of its parents (even with
            `overwrite`); or in a folder where files cannot be created.

    Example:

    >>> check_output_dir(".")
    Traceback (most recent call last):
    ...
    ValueError: Argument `output_dir` must not be the working directory or one of its \
parents: a run replaces its whole folder. Received: output_dir='.'
    """
    if not isinstance(overwrite, bool):
        raise ValueError(f"Argument `overwrite` must be a bool. Received: overwrite={overwrite!r}")
    shown = os.fspath(output_dir)
    received = f"Received: output_dir={shown!r}"
    if files.is_working_directory_or_parent(shown):
        raise ValueError(
            "Argument `output_dir` must not be the working directory or one of its parents: "
            f"a run replaces its whole folder. {received}"
        )
    if os.path.lexists(shown) and not os.path.isdir(shown):
        raise ValueError(
            f"Argument `output_dir` must be a folder (new, empty or a run folder). {received} "
            "(a file)"
        )
    if os.path.isdir(shown) and os.listdir(shown):
        if not is_run_folder(shown):
            raise ValueError(
                "Argument `output_dir` must be a new or empty folder, or a run folder saved by "
                "a recipe; this folder holds other files, which a run would replace. Choose "
                f"another folder. {received}"
            )
        if not overwrite:
            raise ValueError(
                "Argument `output_dir` holds a run already: pass `--overwrite=true` to replace "
                "it (the old run is kept until the new one is complete) or choose another "
                f"folder. {received}"
            )
    _check_writable(os.path.dirname(os.path.abspath(shown)), received)


def _check_writable(folder, received):
    """Creates and removes a file in the nearest existing ancestor of `folder`."""
    ancestor = folder
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise ValueError(
            f"Argument `output_dir` must be inside a folder, but {ancestor} is a file. {received}"
        )
    try:
        handle, probe = tempfile.mkstemp(dir=ancestor, prefix=".keras_attention_write_check-")
        os.close(handle)
        os.remove(probe)
    except OSError as error:
        raise ValueError(
            f"Argument `output_dir` must be in a writable folder; files cannot be created in "
            f"{ancestor} ({error.strerror or error}). {received}"
        ) from None


def save_run(output_dir, model, source_tokenizer, target_tokenizer, *, recipe, config, scores,
             decoding=None, source_format=None, extra=None, overwrite=False):
    """Writes a run folder, never losing the one already there.

    Everything is written to a new hidden sibling folder; only when it is
    complete does it move into place (`files.write_folder_atomically`): a
    previous run folder is renamed aside, the new one renamed in, then the old
    one removed. A failure at any point leaves the previous run byte for byte
    as it was, and no temporary folder behind. `output_dir` is checked first
    with `check_output_dir`. The folder gets the user's normal permissions
    (`0o777` less the umask).

    `config.json` holds `format_version`, `keras_attention` (the version that
    saved it), `recipe`, `config`, `scores`, `tokenizers` (`{"source":
    "source.spm", "target": "target.spm"}`), `decoding`, `source_format` and
    every key of `extra`.

    Args:
        output_dir: str or path-like, the run folder.
        model: a Keras model, saved as `model.keras`.
        source_tokenizer, target_tokenizer: SentencePiece tokenizers.
        recipe: one of `RECIPES`.
        config: dict, the recipe's settings (JSON-able).
        scores: dict, the recipe's test scores (JSON-able).
        decoding: dict of generation settings, `source_length` and
            `target_length` (positive ints) and optionally `strategy`,
            `num_beams`, `length_penalty`, `coverage_penalty` and
            `suppress_token_ids` (a list of target ids never generated,
            e.g. `data.never_generated_ids(target_tokenizer)`); `None`: the
            recipe's, read from `config` as folders before format 1 are read
            (and none for a run with `answer_classes` or `selection` in
            `extra`).
        source_format: how one input line is made: `"text"` (the line is the
            source) or a template naming `SOURCE_FIELDS`, e.g.
            `"{context} | {question}"`; `None`: the recipe's (see
            `SavedRun`).
        extra: dict merged into `config.json`, e.g. the `answer_classes` of
            a memory-network run, or the `selection` of an extractive
            summarizer (`{"max_length": T, "max_sentences": S}`: it reads
            documents as `data.encode_sentence_documents` does and answers
            with the sentence of the highest logit; no decoding).
        overwrite: bool, whether an existing run folder may be replaced.

    Returns:
        The run folder, as an absolute `str`.

    Raises:
        ValueError: naming the argument, for an `output_dir` refused by
            `check_output_dir`, an unknown recipe, bad decoding settings or
            source format, or `extra` keys that `config.json` uses itself;
            all before anything is written.
    """
    from keras_attention import data

    check_output_dir(output_dir, overwrite=overwrite)
    metadata = _metadata(recipe, config, scores, decoding, source_format, extra or {})
    text = json.dumps(metadata, indent=2)  # fails here, before writing, if not JSON-able

    def write(folder):
        model.save(os.path.join(folder, MODEL_FILE))
        data.save_tokenizer(source_tokenizer, os.path.join(folder, TOKENIZER_FILES["source"]))
        data.save_tokenizer(target_tokenizer, os.path.join(folder, TOKENIZER_FILES["target"]))
        with open(os.path.join(folder, CONFIG_FILE), "w", encoding="utf-8") as file:
            file.write(text + "\n")
        with open(os.path.join(folder, MARKER), "w", encoding="utf-8") as file:
            file.write(_MARKER_TEXT.format(version=FORMAT_VERSION))

    return files.write_folder_atomically(output_dir, write)


def _metadata(recipe, config, scores, decoding, source_format, extra):
    """The contents of `config.json`, checked."""
    if recipe not in RECIPES:
        raise ValueError(
            f"Argument `recipe` must be one of {', '.join(map(repr, RECIPES))}. "
            f"Received: recipe={recipe!r}"
        )
    for name, value in (("config", config), ("scores", scores), ("extra", extra)):
        if not isinstance(value, dict):
            raise ValueError(f"Argument `{name}` must be a dict. Received: {name}={value!r}")
    clashes = sorted(set(extra) & set(_RESERVED_KEYS))
    if clashes:
        raise ValueError(
            f"Argument `extra` must not set keys config.json uses itself ({', '.join(clashes)}). "
            f"Received: extra keys {sorted(extra)}"
        )
    memory = extra.get("answer_classes") is not None
    if decoding is None and not memory and extra.get("selection") is None:
        try:
            decoding = _LEGACY_DECODING[recipe](config)
        except KeyError as error:
            raise ValueError(
                f"Argument `decoding` must be given: `config` has no {error} to read the "
                f"{recipe} recipe's decoding settings from. Received: decoding=None"
            ) from None
    if decoding is not None:
        decoding = _check_decoding(decoding, "decoding")
    if source_format is None:
        source_format = _legacy_source_format(recipe, config, memory)
    check_source_format(source_format)
    return {
        "format_version": FORMAT_VERSION, "keras_attention": __version__, "recipe": recipe,
        "config": config, "scores": scores, "tokenizers": dict(TOKENIZER_FILES),
        "decoding": decoding, "source_format": source_format, **extra,
    }


def _check_decoding(decoding, name):
    """`decoding` as a dict, or a ValueError saying what is wrong with it."""
    from keras_attention.validation import check_positive_int

    if not isinstance(decoding, dict):
        raise ValueError(f"Argument `{name}` must be a dict. Received: {name}={decoding!r}")
    unknown = sorted(set(decoding) - set(DECODING_KEYS))
    if unknown:
        raise ValueError(
            f"Argument `{name}` has unknown keys {unknown} (known: {', '.join(DECODING_KEYS)}). "
            f"Received: {name}={decoding!r}"
        )
    for key in ("source_length", "target_length"):
        if key not in decoding:
            raise ValueError(f"Argument `{name}` must set `{key}`. Received: {name}={decoding!r}")
        check_positive_int(f"{name}['{key}']", decoding[key])
    if decoding.get("num_beams") is not None:
        check_positive_int(f"{name}['num_beams']", decoding["num_beams"])
    suppressed = decoding.get("suppress_token_ids", [])
    if not isinstance(suppressed, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in suppressed):
        raise ValueError(
            f"Argument `{name}['suppress_token_ids']` must be a list of token ids (ints >= 0). "
            f"Received: {name}={decoding!r}"
        )
    return dict(decoding)


## Source formats: how one input line is made (the QA `context | question`)


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


## Folders saved before format 1: `{"recipe", "config", "scores"}` only

# How each recipe's config named its decoding settings.
_LEGACY_DECODING = {
    "translation": lambda c: dict(
        source_length=c["max_length"], target_length=c["max_length"],
        strategy=c["strategy"], num_beams=c["num_beams"],
        length_penalty=c["length_penalty"],
    ),
    "summarization": lambda c: dict(
        source_length=c["max_source_length"], target_length=c["max_target_length"],
        strategy="beam", num_beams=c["num_beams"], length_penalty=c["length_penalty"],
        coverage_penalty=c["coverage_penalty"],
    ),
    "question_answering": lambda c: dict(
        source_length=c["max_length"], target_length=c["max_answer_length"],
        strategy="greedy", num_beams=1,
    ),
}


def _legacy_source_format(recipe, config, memory):
    if recipe != "question_answering":
        return "text"
    if memory:
        return "{story} | {question}"
    return "{question} | {context}" if config.get("question_first") else "{context} | {question}"


def _from_legacy(metadata, run_dir, path):
    """A folder saved before format 1, in today's layout (`format_version` 0)."""
    recipe = metadata.get("recipe", "translation")
    config = metadata.get("config", {})
    if recipe not in _LEGACY_DECODING or not isinstance(config, dict):
        return dict(metadata, format_version=0, recipe=recipe)  # refused by _check_metadata
    memory = metadata.get("answer_classes") is not None
    decoding = None
    if not memory:
        try:
            decoding = _LEGACY_DECODING[recipe](config)
        except KeyError as error:
            raise RunFolderError(
                f"Argument `run_dir` must hold the {recipe} recipe's decoding settings: {path} "
                f"has no {error} in its `config`. Received: run_dir={run_dir!r}"
            ) from None
    return {
        "scores": {}, **metadata, "format_version": 0, "recipe": recipe, "config": config,
        "tokenizers": dict(TOKENIZER_FILES), "decoding": decoding,
        "source_format": _legacy_source_format(recipe, config, memory),
    }


## Reading


class SavedRun:
    """A saved run: its model, tokenizers and settings, ready to generate and evaluate.

    The one reader of run folders (the CLI and `keras_attention.export` use
    it). Folders saved before format 1 (no marker, `config.json` holding only
    `recipe`, `config` and `scores`) load too: their decoding settings and
    source format are read from the recipe's `config`.

    Args:
        run_dir: str or path-like, a folder saved by `save_run`.

    Attributes:
        model: the Keras model.
        source_tokenizer, target_tokenizer: the SentencePiece tokenizers.
        recipe: the recipe that saved the run, one of `RECIPES`.
        config: dict, the recipe's settings.
        decoding: dict, the generation settings (`source_length`,
            `target_length`, `strategy`, ..., `suppress_token_ids` where the
            recipe saved them: nothing is suppressed in older folders); `{}`
            for a memory network.
        source_format: how one input line is made (see `format_source`).
        answer_classes: the answers a memory network picks from, or `None`.
        selection: an extractive summarizer's `{"max_length", "max_sentences"}`,
            or `None`.
        metadata: dict, the whole `config.json` (converted for older folders).

    Raises:
        RunFolderError: naming the file, for a missing folder or file, a
            `config.json` that is not valid JSON or lacks settings, an unknown
            recipe, or a truncated or corrupt `model.keras` or `.spm` file.
    """

    def __init__(self, run_dir):
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        self.run_dir = os.fspath(run_dir)
        if os.path.isdir(self.run_dir):
            self._existing(MODEL_FILE)  # the file that makes a run, named first
        self.metadata = read_metadata(self.run_dir)
        self.recipe = self.metadata["recipe"]
        self.config = self.metadata["config"]
        self.decoding = dict(self.metadata["decoding"] or {})
        self.source_format = self.metadata["source_format"]
        self.answer_classes = self.metadata.get("answer_classes")
        self.selection = self.metadata.get("selection")
        names = self.metadata["tokenizers"]
        for name in (MODEL_FILE, names["source"], names["target"]):
            self._existing(name)
        self.source_tokenizer = self._tokenizer(names["source"])
        self.target_tokenizer = self._tokenizer(names["target"])
        self.model = self._model()

    def _existing(self, name):
        path = os.path.join(self.run_dir, name)
        if not os.path.isfile(path):
            raise RunFolderError(
                f"Argument `run_dir` must be a run folder saved by a recipe: {path} is missing. "
                f"Received: run_dir={self.run_dir!r}"
            )
        return path

    def _corrupt(self, path, what):
        return RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe: {path} is {what}. "
            f"Received: run_dir={self.run_dir!r}"
        )

    def _tokenizer(self, name):
        from keras_attention import data

        path = self._existing(name)
        try:
            tokenizer = data.load_tokenizer(path)
            tokenizer.vocabulary_size()
        except Exception as error:  # the backends raise different errors for a bad proto
            message = str(error).strip().splitlines()[-1:] or [type(error).__name__]
            raise self._corrupt(path, f"not a SentencePiece model, corrupt or truncated "
                                      f"({message[0][:200]})") from None
        return tokenizer

    def _model(self):
        import keras

        path = self._existing(MODEL_FILE)
        if not zipfile.is_zipfile(path):
            raise self._corrupt(path, "not a .keras archive (truncated or corrupt)")
        try:
            return keras.saving.load_model(path)
        except Exception as error:  # a corrupt member, an unknown layer, ...
            message = str(error).strip().splitlines()[:1] or [type(error).__name__]
            raise self._corrupt(path, f"a .keras archive that does not load "
                                      f"({type(error).__name__}: {message[0][:200]})") from None

    def generate(self, texts, strategy=None, num_beams=None, verbose=0):
        """Outputs (translations, summaries or answers) for a list of input lines.

        Each line is made as `source_format` says (for question answering,
        e.g. `"context | question"`) and decoded with the run's `decoding`
        settings (its `suppress_token_ids` are never generated). An empty
        list gives `[]` without calling the model.

        Args:
            texts: list of str.
            strategy: `"greedy"` or `"beam"` (or any strategy of
                `Seq2SeqModel.generate`); default: the run's.
            num_beams: positive int; default: the run's.
            verbose: Keras' progress bar (0: none).

        Returns:
            A list of `len(texts)` strings.
        """
        from keras_attention import data
        from keras_attention.validation import check_positive_int

        texts = list(texts)
        if not all(isinstance(text, str) for text in texts):
            raise ValueError(f"Argument `texts` must be a list of str. Received: texts={texts!r}")
        num_beams = check_positive_int("num_beams", num_beams, allow_none=True)
        if not texts:
            return []
        if self.answer_classes is not None:
            return self._answer_from_memory(texts, verbose)
        if self.selection is not None:
            return self._select_sentences(texts, verbose)
        settings = dict(self.decoding)
        source_length = settings.pop("source_length")
        target_length = settings.pop("target_length")
        settings["strategy"] = strategy or settings.get("strategy", "greedy")
        settings["num_beams"] = num_beams or settings.get("num_beams", 1)
        token_ids = data.encode_sources(texts, self.source_tokenizer, source_length)
        generated = self.model.generate(
            token_ids, max_length=target_length, batch_size=64, verbose=verbose, **settings
        )
        return data.detokenize(self.target_tokenizer, generated)

    def _answer_from_memory(self, texts, verbose):
        """Answers of a memory network to `"story | question"` lines."""
        import numpy as np

        from keras_attention import data

        records = [data.story_from_source(text) for text in texts]
        inputs = data.encode_stories(records, self.source_tokenizer,
                                     max_memories=self.config["max_memories"])
        logits = self.model.predict(inputs, batch_size=256, verbose=verbose)
        return [self.answer_classes[i] for i in np.argmax(logits, axis=-1)]

    def _select_sentences(self, texts, verbose):
        """The sentence an extractive summarizer keeps of each document."""
        from keras_attention import data
        from keras_attention.models import chosen_sentences

        inputs, kept = data.encode_sentence_documents(texts, self.source_tokenizer,
                                                      **self.selection)
        return chosen_sentences(self.model.predict(inputs, batch_size=64, verbose=verbose), kept)

    def evaluation_examples(self, path, max_examples=None):
        """`(sources, references)` from a file in the recipe's format.

        Translation: a TSV file of `source<TAB>target` (references: strings);
        summarization: JSONL of document/summaries (references: lists);
        question answering: SQuAD-style JSON/JSONL, each source made from
        `context` and `question` by `source_format` (references: lists).

        Args:
            path: str or path-like.
            max_examples: positive int, the first examples only; `None`: all.

        Raises:
            ValueError: from the loaders, naming the file and line.
        """
        from keras_attention import data
        from keras_attention.validation import check_positive_int

        limit = check_positive_int("max_examples", max_examples, allow_none=True)
        if self.recipe == "translation":
            pairs = data.load_sentence_pairs(path, max_pairs=limit)
            return [s for s, _ in pairs], [t for _, t in pairs]
        if self.recipe == "summarization":
            records = data.load_summaries(path, max_examples=limit)
            return [r["document"] for r in records], [r["summaries"] for r in records]
        if self.source_format == "text":
            raise RunFolderError(
                f"Argument `run_dir` must give question answering a source format naming "
                f"context and question; its {CONFIG_FILE} has source_format='text'. "
                f"Received: run_dir={self.run_dir!r}"
            )
        records = data.load_squad(path)[:limit]
        sources = [format_source(self.source_format,
                                 {"context": r["context"], "story": r["context"],
                                  "question": r["question"]}) for r in records]
        return sources, [r["answers"] for r in records]

    def evaluate(self, path, max_examples=None, strategy=None, num_beams=None, verbose=0):
        """The recipe's scores on a file (see `evaluation_examples`).

        Returns:
            A dict: `bleu` and `chrf` (translation), ROUGE's (summarization)
            or `exact_match` and `f1` (question answering), and `examples`.
        """
        from keras_attention import metrics

        sources, references = self.evaluation_examples(path, max_examples)
        hypotheses = self.generate(sources, strategy, num_beams, verbose=verbose)
        if self.recipe == "translation":
            scores = {"bleu": metrics.bleu(hypotheses, references),
                      "chrf": metrics.chrf(hypotheses, references)}
        elif self.recipe == "summarization":
            scores = metrics.rouge(hypotheses, references)
        else:
            scores = {"exact_match": metrics.exact_match(hypotheses, references),
                      "f1": metrics.f1_score(hypotheses, references)}
        scores["examples"] = len(sources)
        return scores


def read_metadata(run_dir):
    """The checked contents of a run folder's `config.json` (converted to
    format 1's keys for older folders, with `format_version` 0).

    Raises:
        RunFolderError: naming the file.
    """
    run_dir = os.fspath(run_dir)
    received = f"Received: run_dir={run_dir!r}"
    if not os.path.isdir(run_dir):
        raise RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe (no such folder). "
            f"{received}"
        )
    path = os.path.join(run_dir, CONFIG_FILE)
    if not os.path.isfile(path):
        raise RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe: {path} is missing. "
            f"{received}"
        )
    try:
        with open(path, encoding="utf-8") as file:
            metadata = json.load(file)
    except (ValueError, UnicodeDecodeError) as error:
        raise RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe: {path} is not valid "
            f"JSON ({error}). {received}"
        ) from None
    if not isinstance(metadata, dict):
        raise RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe: {path} holds a "
            f"{type(metadata).__name__}, not an object. {received}"
        )
    if "format_version" not in metadata:
        metadata = _from_legacy(metadata, run_dir, path)
    _check_metadata(metadata, path, received)
    return metadata


def _check_metadata(metadata, path, received):
    def refuse(problem):
        return RunFolderError(f"Argument `run_dir` must be a run folder saved by a recipe: "
                              f"{path} {problem}. {received}")

    version = metadata["format_version"]
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise refuse(f"has format_version={version!r}; this keras_attention ({__version__}) "
                     f"reads up to {FORMAT_VERSION}")
    if metadata.get("recipe") not in RECIPES:
        raise refuse(f"names an unknown recipe {metadata.get('recipe')!r} (known: "
                     f"{', '.join(RECIPES)})")
    for key in ("config", "tokenizers"):
        if not isinstance(metadata.get(key), dict):
            raise refuse(f"has no `{key}` object")
    tokenizers = metadata["tokenizers"]
    for side in ("source", "target"):
        name = tokenizers.get(side)
        if not isinstance(name, str) or not name or os.path.basename(name) != name:
            raise refuse(f"has tokenizers[{side!r}]={name!r}, not a file name in the folder")
    memory = metadata.get("answer_classes") is not None
    if memory and not (isinstance(metadata["answer_classes"], list)
                       and "max_memories" in metadata["config"]):
        raise refuse("has answer_classes without a list of answers and config['max_memories']")
    selection = metadata.get("selection")
    if selection is not None and not (
            isinstance(selection, dict) and set(selection) == {"max_length", "max_sentences"}
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                    for v in selection.values())):
        raise refuse(f"has selection={selection!r}, not positive ints max_length and "
                     f"max_sentences")
    try:
        if metadata.get("decoding") is not None or not (memory or selection is not None):
            _check_decoding(metadata.get("decoding"), "decoding")
        check_source_format(metadata.get("source_format"))
    except ValueError as error:
        raise refuse(f"has bad settings ({error})") from None
    if memory and metadata["source_format"] != "{story} | {question}":
        raise refuse("gives a memory network a source format other than '{story} | {question}'")


def load_run(run_dir):
    """Returns `(model, source_tokenizer, target_tokenizer, metadata)` of a run
    folder: `SavedRun`'s attributes, for callers that want the pieces.

    Raises:
        RunFolderError: as `SavedRun`.
    """
    run = SavedRun(run_dir)
    return run.model, run.source_tokenizer, run.target_tokenizer, run.metadata


__all__ = [
    "RunFolderError",
    "SavedRun",
    "check_output_dir",
    "check_source_format",
    "format_source",
    "is_run_folder",
    "load_run",
    "read_metadata",
    "save_run",
]
