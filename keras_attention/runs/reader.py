"""Reading run folders: `open_run`, the one reader, which checks the folder's
parts against each other before any work and gives the folder's model kind
(a `TextToText`: `TextGenerator`, `AnswerClassifier`, `SentenceSelector`);
`read_metadata`, its `config.json` checked; and `is_run_folder`, what makes
a folder a run folder."""

import json
import os
import zipfile

from keras_attention import files
from keras_attention.runs import registry
from keras_attention.runs.generation import GenerationConfig
from keras_attention.runs.layout import (
    CONVERTED_RECIPES,
    FORMAT_VERSION,
    MARKER,
    MODEL_FILE,
    RUN_CONFIG_FILE,
    RUN_FILES,
    RunFolderError,
)
from keras_attention.runs.legacy import from_legacy
from keras_attention.runs.source_formats import check_source_format
from keras_attention.version import __version__


def open_run(run_dir):
    """The model kind of a run folder, read and checked: what `keras-attention
    generate`, `evaluate`, `serve` and `export` answer with.

    Folders saved before format 1 (no marker, `config.json` holding only
    `recipe`, `config` and `scores`) load too: their decoding settings and
    source format are read from the recipe's `config`.

    The parts are checked against each other when the folder is read, before
    any decoding: `model.keras` must be the model kind `config.json`
    describes for its recipe (`keras_attention.runs.registry`), and each
    tokenizer's vocabulary size the model's (a memory network's answer
    classes, its output size; a converted checkpoint's tokenizer may be
    smaller than its embedding, as T5's 32100 ids for 32128 rows). A
    tokenizer or model copied from another run is one `RunFolderError`
    naming the file.

    Args:
        run_dir: str or path-like, a folder saved by `save_run` (or
            `convert_checkpoint`).

    Returns:
        A `TextToText` of the folder's kind, with `run_dir` and `metadata`
        (the whole `config.json`, converted for older folders) set; its
        tokenizers are the SentencePiece models `config.json`'s `tokenizers`
        names (`data.SentencePieceModel`s), or for a converted checkpoint
        (`converted_from`) the checkpoint's tokenizer read from `tokenizer/`
        (one object for both sides); its `generation` the `GenerationConfig`
        of `config.json`'s `decoding`.

    Raises:
        RunFolderError: naming the file, for a missing folder or file, a
            `config.json` that is not valid JSON or lacks settings, an unknown
            recipe, a truncated or corrupt `model.keras` or tokenizer file,
            or parts that do not belong together.

    Example:

    >>> open_run("no-such-folder")
    Traceback (most recent call last):
    ...
    keras_attention.runs.layout.RunFolderError: Argument `run_dir` must be a run folder \
saved by a recipe (no such folder). Received: run_dir='no-such-folder'
    """
    run_dir = os.fspath(run_dir)
    files.restore_set_aside(run_dir)  # the run an interrupted replacement set aside
    if os.path.isdir(run_dir):
        path_in_run(run_dir, MODEL_FILE)  # the file that makes a run, named first
    metadata = read_metadata(run_dir)
    kind = registry.kind_of_metadata(metadata)
    converted = metadata.get("converted_from") is not None
    decoding = metadata["decoding"]
    generation = None if decoding is None else GenerationConfig.from_dict(
        decoding, unrecorded_length_penalty_form(metadata))
    path_in_run(run_dir, MODEL_FILE)
    read_tokenizers = _checkpoint_tokenizers if converted else _sentencepiece_tokenizers
    source_tokenizer, target_tokenizer = read_tokenizers(run_dir, metadata)
    model = _load_model(run_dir)
    _check_kind(kind, model, run_dir, metadata["recipe"])
    run = kind.from_run_parts(model, source_tokenizer, target_tokenizer, generation,
                              recipe=metadata["recipe"], source_format=metadata["source_format"],
                              config=metadata["config"], metadata=metadata)
    run.run_dir, run.metadata = run_dir, metadata
    _check_sizes(run, smaller_tokenizer_allowed=converted)
    return run


def load_run(run_dir):
    """Returns `(model, source_tokenizer, target_tokenizer, metadata)` of a run
    folder: `open_run`'s attributes, for callers that want the pieces.

    Raises:
        RunFolderError: as `open_run`.
    """
    run = open_run(run_dir)
    return run.model, run.source_tokenizer, run.target_tokenizer, run.metadata


def path_in_run(run_dir, name, folder=False):
    """The path of `name` in the run folder (a file; a folder with
    `folder=True`), or a `RunFolderError` naming it when it is missing or not
    inside the folder (an absolute name, `..`, a link out of it)."""
    path = os.path.join(run_dir, name)
    outside = files.outside_folder(run_dir, name)
    if outside is not None:
        raise folder_error(run_dir, path, f"{outside}, named in {RUN_CONFIG_FILE} (only files "
                                          f"inside the run folder are read)")
    if not (os.path.isdir(path) if folder else os.path.isfile(path)):
        raise RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe: {path} is missing. "
            f"Received: run_dir={run_dir!r}")
    return path


def folder_error(run_dir, path, what):
    """The `RunFolderError` of a part of the folder: `{path} is {what}`."""
    return RunFolderError(
        f"Argument `run_dir` must be a run folder saved by a recipe: {path} is {what}. "
        f"Received: run_dir={run_dir!r}")


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
        with open(os.path.join(path, RUN_CONFIG_FILE), encoding="utf-8") as file:
            metadata = json.load(file)
    except (OSError, ValueError):
        return False
    return isinstance(metadata, dict) and metadata.get("recipe") in registry.recipe_names()


## The parts


def _sentencepiece_tokenizers(run_dir, metadata):
    """`(source, target)`: the SentencePiece models `config.json`'s
    `tokenizers` names (the recipes' runs), as `data.SentencePieceModel`s:
    plain Python, no TensorFlow."""
    from keras_attention.data.subwords import SentencePieceModel

    def load(name):
        path = path_in_run(run_dir, name)
        try:
            tokenizer = SentencePieceModel(path)
            tokenizer.vocabulary_size()
        except Exception as error:  # the backends raise different errors for a bad proto
            message = str(error).strip().splitlines()[-1:] or [type(error).__name__]
            raise folder_error(run_dir, path, f"not a SentencePiece model, corrupt or "
                                              f"truncated ({message[0][:200]})") from None
        return tokenizer

    names = metadata["tokenizers"]
    path_in_run(run_dir, names["source"])
    path_in_run(run_dir, names["target"])
    return load(names["source"]), load(names["target"])


def _checkpoint_tokenizers(run_dir, metadata):
    """`(tokenizer, tokenizer)`: a converted checkpoint's tokenizer (one
    object for both sides; Marian's target side is `tokenize_targets`) from
    the folder's `tokenizer/`."""
    from keras_attention.pretrained import families

    family = metadata["converted_from"].get("family")
    name = metadata["tokenizers"]["source"]
    folder = path_in_run(run_dir, name, folder=True)
    try:
        tokenizer_class = families.with_tokenizer(family).tokenizer
    except ValueError:
        names = ", ".join(map(repr, families.names_with_tokenizers()))
        raise folder_error(run_dir, os.path.join(run_dir, RUN_CONFIG_FILE),
                           f"naming converted_from.family={family!r}, not one of "
                           f"{names}") from None
    try:
        tokenizer_files = tokenizer_class.files_in(folder)
    except (OSError, ValueError):  # no complete layout: the run folder error names a file
        tokenizer_files = tokenizer_class.LAYOUTS[0]
    for file_name in tokenizer_files:
        path_in_run(run_dir, os.path.join(name, file_name))
    try:
        tokenizer = families.load_checkpoint_tokenizer(folder, family)
    except Exception as error:  # sentencepiece, JSON or keras-hub errors of a bad file
        message = str(error).strip().splitlines()[-1:] or [type(error).__name__]
        raise folder_error(run_dir, folder, f"not a {family} tokenizer's files, corrupt or "
                                            f"from another family ({message[0][:200]})") from None
    return tokenizer, tokenizer


def _load_model(run_dir):
    import keras

    path = path_in_run(run_dir, MODEL_FILE)
    if not zipfile.is_zipfile(path):
        raise folder_error(run_dir, path, "not a .keras archive (truncated or corrupt)")
    try:
        return keras.saving.load_model(path)
    except Exception as error:  # a corrupt member, an unknown layer, ...
        message = str(error).strip().splitlines()[:1] or [type(error).__name__]
        raise folder_error(run_dir, path, f"a .keras archive that does not load "
                                          f"({type(error).__name__}: {message[0][:200]})") from None


def _check_kind(kind, model, run_dir, recipe):
    """The model is of the kind `config.json` describes."""
    if kind.matches(model):
        return
    found = next((other for other in registry.model_kinds() if other.matches(model)), None)
    what = found.description if found else f"a {type(model).__name__} of no known kind"
    raise RunFolderError(
        f"Argument `run_dir` must hold the model its {RUN_CONFIG_FILE} describes: "
        f"{os.path.join(run_dir, MODEL_FILE)} holds {what} ({model.name!r}), but a {recipe} "
        f"run of this folder's settings needs {kind.description} (a model.keras of another "
        f"run?). Received: run_dir={run_dir!r}")


def _check_sizes(run, smaller_tokenizer_allowed):
    """The tokenizers' sizes are the model's (a part copied from another run is
    named); a converted checkpoint's tokenizer may be smaller, not larger."""
    for side, size, model_size, what in run.vocabulary_sizes():
        name = RUN_CONFIG_FILE if side is None else run.metadata["tokenizers"][side]
        if model_size is None or size == model_size or (smaller_tokenizer_allowed
                                                        and size < model_size):
            continue
        path = os.path.join(run.run_dir, name)
        if smaller_tokenizer_allowed:
            raise RunFolderError(
                f"Argument `run_dir` must hold parts of one run: {path} gives a {what} of "
                f"{size}, more than the {model_size} ids of {MODEL_FILE} (a smaller tokenizer is "
                f"allowed, as T5's 32100 ids for 32128 embedding rows; a larger one would give "
                f"ids the model lacks: a tokenizer of another checkpoint?). "
                f"Received: run_dir={run.run_dir!r}")
        raise RunFolderError(
            f"Argument `run_dir` must hold parts of one run: {path} gives a {what} of {size}, "
            f"but {MODEL_FILE} was trained with {model_size} (a file of another run?). "
            f"Received: run_dir={run.run_dir!r}")


## config.json


def read_metadata(run_dir):
    """The checked contents of a run folder's `config.json` (converted to
    format 1's keys for older folders, with `format_version` 0).

    Raises:
        RunFolderError: naming the file.
    """
    received = f"Received: run_dir={run_dir!r}"
    if not os.path.isdir(run_dir):
        raise RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe (no such folder). "
            f"{received}"
        )
    path = os.path.join(run_dir, RUN_CONFIG_FILE)
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
        metadata = from_legacy(metadata, run_dir, path)
    check_metadata(metadata, path, received)
    return metadata


def check_metadata(metadata, path, received):
    """A `RunFolderError` naming `path` for a `config.json` (a dict) that does
    not describe a run this version reads."""
    def refuse(problem):
        return RunFolderError(f"Argument `run_dir` must be a run folder saved by a recipe: "
                              f"{path} {problem}. {received}")

    version = metadata["format_version"]
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise refuse(f"has format_version={version!r}; this keras_attention ({__version__}) "
                     f"reads up to {FORMAT_VERSION}")
    recipes = registry.recipe_names()
    if metadata.get("recipe") not in recipes:
        raise refuse(f"names an unknown recipe {metadata.get('recipe')!r} (known: "
                     f"{', '.join(recipes)})")
    for key in ("config", "tokenizers"):
        if not isinstance(metadata.get(key), dict):
            raise refuse(f"has no `{key}` object")
    tokenizers = metadata["tokenizers"]
    for side in ("source", "target"):
        name = tokenizers.get(side)
        if not isinstance(name, str) or name in ("", ".", "..") or (
                os.path.basename(name) != name):
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
    kind = registry.kind_of_metadata(metadata)
    _check_recipe_of(metadata, kind, refuse)
    try:
        if metadata.get("decoding") is not None or kind.decodes:
            GenerationConfig.from_dict(metadata.get("decoding"),
                                       unrecorded_length_penalty_form(metadata))
        check_source_format(metadata.get("source_format"))
    except ValueError as error:
        raise refuse(f"has bad settings ({error})") from None
    if memory and metadata["source_format"] != "{story} | {question}":
        raise refuse("gives a memory network a source format other than '{story} | {question}'")


def unrecorded_length_penalty_form(metadata):
    """How the beams of a `config.json` (a dict) whose `decoding` records no
    `length_penalty_form` are scored: a converted checkpoint's (it sets
    `converted_from`) the Hugging Face way, a recipe's the GNMT way (what
    runs saved before the form was recorded were trained and evaluated with)."""
    return "hf" if metadata.get("converted_from") is not None else "gnmt"


def _check_recipe_of(metadata, kind, refuse):
    """The recipe is one the kind serves (a converted checkpoint: translation
    or summarization)."""
    recipe = metadata["recipe"]
    if recipe not in kind.recipes:
        raise refuse(f"names the {recipe} recipe but sets `{kind.marker}`, which only a "
                     f"{' or '.join(kind.recipes)} run has")
    if metadata.get("converted_from") is not None and recipe not in CONVERTED_RECIPES:
        raise refuse(f"names the {recipe} recipe but sets `converted_from`, which only a "
                     f"{' or '.join(CONVERTED_RECIPES)} run has")


__all__ = ["check_metadata", "folder_error", "is_run_folder", "load_run", "open_run",
           "path_in_run", "read_metadata", "unrecorded_length_penalty_form"]
