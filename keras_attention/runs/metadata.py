"""A run folder's `config.json`: made and checked when saving, read and checked
when loading (older layouts converted by `keras_attention.runs.legacy`)."""

import json
import os

from keras_attention.runs import registry
from keras_attention.runs.generation import GenerationConfig
from keras_attention.runs.layout import (
    FORMAT_VERSION,
    RUN_CONFIG_FILE,
    TOKENIZER_FILES,
    RunFolderError,
)
from keras_attention.runs.legacy import LEGACY_DECODING, from_legacy, legacy_source_format
from keras_attention.runs.source_formats import check_source_format
from keras_attention.version import __version__

RESERVED_KEYS = ("format_version", "keras_attention", "recipe", "config", "scores",
                 "tokenizers", "decoding", "source_format")


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
        decoding = check_decoding(decoding, kind.length_penalty_form).to_dict()
    if source_format is None:
        source_format = legacy_source_format(recipe, config, memory)
    check_source_format(source_format)
    return {
        "format_version": FORMAT_VERSION, "keras_attention": __version__, "recipe": recipe,
        "config": config, "scores": scores, "tokenizers": dict(tokenizers or TOKENIZER_FILES),
        "decoding": decoding, "source_format": source_format, **extra,
    }


def check_decoding(decoding, length_penalty_form="gnmt"):
    """`decoding` (a `GenerationConfig`, or the dict of its JSON form) as a
    `GenerationConfig`, or a `ValueError` naming what is wrong with it;
    `length_penalty_form`: the form of a dict that does not record its own
    (the model kind's)."""
    if isinstance(decoding, GenerationConfig):
        return decoding
    return GenerationConfig.from_dict(decoding, length_penalty_form)


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
    if metadata["recipe"] not in kind.recipes:
        raise refuse(f"names the {metadata['recipe']} recipe but sets `{kind.marker}`, which "
                     f"only a {' or '.join(kind.recipes)} run has")
    try:
        if metadata.get("decoding") is not None or kind.decodes:
            check_decoding(metadata.get("decoding"), kind.length_penalty_form)
        check_source_format(metadata.get("source_format"))
    except ValueError as error:
        raise refuse(f"has bad settings ({error})") from None
    if memory and metadata["source_format"] != "{story} | {question}":
        raise refuse("gives a memory network a source format other than '{story} | {question}'")


__all__ = ["check_decoding", "check_metadata", "make_metadata", "read_metadata"]
