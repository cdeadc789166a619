"""Writing run folders: which output folders a run may use (`check_output_dir`),
the one writer (`save_run`), and the rescue copy of a run that could not be
saved where it was asked (`save_run_or_rescue`)."""

import json
import os
import shutil
import tempfile
import time

from keras_attention import files
from keras_attention.runs import registry
from keras_attention.runs.generation import GenerationConfig
from keras_attention.runs.layout import (
    FORMAT_VERSION,
    MARKER,
    MODEL_FILE,
    RUN_CONFIG_FILE,
    TOKENIZER_FILES,
    TOKENIZER_FOLDER,
)
from keras_attention.runs.legacy import LEGACY_DECODING, legacy_source_format
from keras_attention.runs.reader import is_run_folder, unrecorded_length_penalty_form
from keras_attention.runs.source_formats import check_source_format
from keras_attention.version import __version__

#: The keys `config.json` sets itself (`save_run`'s `extra` may not).
RESERVED_KEYS = ("format_version", "keras_attention", "recipe", "config", "scores",
                 "tokenizers", "decoding", "source_format")

_MARKER_TEXT = (
    "This folder is a keras_attention run folder (format {version}).\n"
    "A later run may replace it as a whole, with `--overwrite=true`; see\n"
    "docs/guides/run_folders.md.\n"
)


class RunNotSavedError(OSError):
    """A trained run that could not be saved in its output folder (a full disk,
    another run or other files appearing there during training).

    The message says why, and where the rescue copy of the run is (a new
    folder `OUTPUT.rescue-<time>` beside the output folder), or why none
    could be written. `rescue_dir` holds that folder, or `None`.
    """

    def __init__(self, message, rescue_dir=None):
        super().__init__(message)
        self.rescue_dir = rescue_dir


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
    files.restore_set_aside(shown)  # the run an interrupted replacement set aside
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


def make_metadata(recipe, config, scores, decoding, source_format, extra, tokenizers=None):
    """The contents of `config.json`, checked (see `save_run`); `tokenizers`:
    its `{"source": name, "target": name}` (default `TOKENIZER_FILES`)."""
    if recipe not in registry.recipe_names():
        raise ValueError(
            f"Argument `recipe` must be one of {', '.join(map(repr, registry.recipe_names()))}. "
            f"Received: recipe={recipe!r}"
        )
    for name, value in (("config", config), ("scores", scores), ("extra", extra)):
        if not isinstance(value, dict):
            raise ValueError(f"Argument `{name}` must be a dict. Received: {name}={value!r}")
    clashes = sorted(set(extra) & set(RESERVED_KEYS))
    if clashes:
        raise ValueError(
            f"Argument `extra` must not set keys config.json uses itself ({', '.join(clashes)}). "
            f"Received: extra keys {sorted(extra)}"
        )
    kind = registry.kind_of_metadata(extra)
    memory = extra.get("answer_classes") is not None
    if decoding is None and kind.decodes:
        try:
            decoding = LEGACY_DECODING[recipe](config)
        except KeyError as error:
            raise ValueError(
                f"Argument `decoding` must be given: `config` has no {error} to read the "
                f"{recipe} recipe's decoding settings from. Received: decoding=None"
            ) from None
    if decoding is not None:
        decoding = _check_decoding(decoding, unrecorded_length_penalty_form(extra)).to_dict()
    if source_format is None:
        source_format = legacy_source_format(recipe, config, memory)
    check_source_format(source_format)
    return {
        "format_version": FORMAT_VERSION, "keras_attention": __version__, "recipe": recipe,
        "config": config, "scores": scores, "tokenizers": dict(tokenizers or TOKENIZER_FILES),
        "decoding": decoding, "source_format": source_format, **extra,
    }


def _check_decoding(decoding, length_penalty_form):
    """`decoding` (a `GenerationConfig`, or the dict of its JSON form) as a
    `GenerationConfig`, or a `ValueError` naming what is wrong with it;
    `length_penalty_form`: the form of a dict that does not record its own."""
    if isinstance(decoding, GenerationConfig):
        return decoding
    return GenerationConfig.from_dict(decoding, length_penalty_form)


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
             decoding=None, source_format=None, extra=None, overwrite=False,
             tokenizer_files=None):
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
        recipe: a registered recipe's name (`keras_attention.runs.registry`).
        config: dict, the recipe's settings (JSON-able).
        scores: dict, the recipe's test scores (JSON-able).
        decoding: the run's `GenerationConfig` (or the dict of its JSON
            form, `GenerationConfig.to_dict`), saved once as `decoding`;
            `None`: the recipe's, read from `config` as folders before
            format 1 are read (and none for a run with `answer_classes` or
            `selection` in `extra`).
        source_format: how one input line is made: `"text"` (the line is the
            source) or a template naming `SOURCE_FIELDS`, e.g.
            `"{context} | {question}"`; `None`: the recipe's (see
            `runs.open_run`).
        extra: dict merged into `config.json`, e.g. the `answer_classes` of
            a memory-network run, or the `selection` of an extractive
            summarizer (`{"max_length": T, "max_sentences": S}`: it reads
            documents as `data.encode_sentence_documents` does and answers
            with the sentence of the highest logit; no decoding).
        overwrite: bool, whether an existing run folder may be replaced.
        tokenizer_files: `None` (the tokenizers are SentencePiece models,
            saved as `source.spm` and `target.spm`), or a list of files
            copied unchanged into the folder's `tokenizer/` (a converted
            checkpoint's tokenizer files; `source_tokenizer` and
            `target_tokenizer` are then not written, and `config.json`'s
            `tokenizers` names `tokenizer` for both sides).

    Returns:
        The run folder, as an absolute `str`.

    Raises:
        OSError: naming the file, for a `tokenizer_files` entry that is not
            a readable file (before anything is written).
        ValueError: naming the argument, for an `output_dir` refused by
            `check_output_dir`, an unknown recipe, bad decoding settings or
            source format, or `extra` keys that `config.json` uses itself;
            all before anything is written.
    """
    check_output_dir(output_dir, overwrite=overwrite)
    tokenizers = None
    if tokenizer_files is not None:
        tokenizer_files = _readable_files(tokenizer_files)
        tokenizers = {"source": TOKENIZER_FOLDER, "target": TOKENIZER_FOLDER}
    metadata = make_metadata(recipe, config, scores, decoding, source_format, extra or {},
                             tokenizers)
    text = json.dumps(metadata, indent=2)  # fails here, before writing, if not JSON-able
    return files.write_folder_atomically(
        output_dir, _writer(model, source_tokenizer, target_tokenizer, text, tokenizer_files),
        replace=overwrite)


def _readable_files(paths):
    """`paths` as a list of `str`, each a readable file with a distinct name."""
    paths = [os.fspath(path) for path in paths]
    for path in paths:
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise FileNotFoundError(
                f"Argument `tokenizer_files` must name readable files: {path} is not one. "
                f"Received: tokenizer_files={paths!r}")
    names = [os.path.basename(path) for path in paths]
    if len(set(names)) != len(names):
        raise ValueError(f"Argument `tokenizer_files` must name files of distinct names. "
                         f"Received: tokenizer_files={paths!r}")
    return paths


def _writer(model, source_tokenizer, target_tokenizer, text, tokenizer_files=None):
    """`write(folder)`: the run's files into `folder`."""
    from keras_attention import data

    def write(folder):
        model.save(os.path.join(folder, MODEL_FILE))
        if tokenizer_files is None:
            data.save_tokenizer(source_tokenizer, os.path.join(folder, TOKENIZER_FILES["source"]))
            data.save_tokenizer(target_tokenizer, os.path.join(folder, TOKENIZER_FILES["target"]))
        else:
            os.makedirs(os.path.join(folder, TOKENIZER_FOLDER))
            for path in tokenizer_files:
                shutil.copyfile(path, os.path.join(folder, TOKENIZER_FOLDER,
                                                   os.path.basename(path)))
        with open(os.path.join(folder, RUN_CONFIG_FILE), "w", encoding="utf-8") as file:
            file.write(text + "\n")
        with open(os.path.join(folder, MARKER), "w", encoding="utf-8") as file:
            file.write(_MARKER_TEXT.format(version=FORMAT_VERSION))

    return write


def rescue_dir_for(output_dir):
    """A new folder beside `output_dir`: `OUTPUT.rescue-<YYYYmmdd-HHMMSS>`
    (`-2`, `-3`, ... appended while that name is taken). Nothing is created."""
    base = f"{os.path.abspath(os.fspath(output_dir)).rstrip(os.sep)}.rescue-" \
           f"{time.strftime('%Y%m%d-%H%M%S')}"
    path, number = base, 1
    while os.path.lexists(path):
        number += 1
        path = f"{base}-{number}"
    return path


def save_run_or_rescue(output_dir, model, source_tokenizer, target_tokenizer, **kwargs):
    """`save_run`, for a run that has trained: if it fails (a full disk, another
    run or other files that appeared in `output_dir` during training), the run
    is written to a new rescue folder beside it (`rescue_dir_for`), which
    never replaces anything, and `RunNotSavedError` says why and where.

    Args:
        output_dir, model, source_tokenizer, target_tokenizer, **kwargs: as
            `save_run`.

    Returns:
        The run folder, as an absolute `str`.

    Raises:
        RunNotSavedError: one line naming `output_dir`, the reason, and the
            rescue folder (or why it could not be written either).
    """
    try:
        return save_run(output_dir, model, source_tokenizer, target_tokenizer, **kwargs)
    except (OSError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
    rescue = rescue_dir_for(output_dir)
    try:
        tokenizer_files = kwargs.get("tokenizer_files")
        text = json.dumps(make_metadata(
            kwargs["recipe"], kwargs["config"], kwargs["scores"], kwargs.get("decoding"),
            kwargs.get("source_format"), kwargs.get("extra") or {},
            None if tokenizer_files is None else {"source": TOKENIZER_FOLDER,
                                                  "target": TOKENIZER_FOLDER}), indent=2)
        files.write_folder_atomically(rescue, _writer(model, source_tokenizer, target_tokenizer,
                                                      text, tokenizer_files))
    except (OSError, ValueError) as rescue_error:
        raise RunNotSavedError(
            f"The trained run could not be saved in `output_dir` ({reason}), nor in a rescue "
            f"folder {rescue} ({' '.join(str(rescue_error).split())}): free some space and "
            f"train again. Received: output_dir={os.fspath(output_dir)!r}") from None
    raise RunNotSavedError(
        f"The trained run could not be saved in `output_dir` ({reason}); it is kept in the "
        f"rescue folder {rescue} (a complete run folder: use it as it is, or move it to "
        f"where you want it). Received: output_dir={os.fspath(output_dir)!r}",
        rescue_dir=rescue) from None


__all__ = ["RunNotSavedError", "check_output_dir", "make_metadata", "rescue_dir_for",
           "save_run", "save_run_or_rescue"]


