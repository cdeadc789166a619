"""`convert_checkpoint`: a local Hugging Face checkpoint folder as a run folder
(`keras-attention convert HF_DIR RUN_DIR`), which `keras-attention generate`,
`evaluate` and `keras_attention.runs.open_run` read like a trained run.

The run folder holds `model.keras` (the converted `Seq2SeqModel`), the
checkpoint's tokenizer files copied unchanged into `tokenizer/` (Marian:
`source.spm`, `target.spm`, `vocab.json`; BART: `vocab.json`, `merges.txt`;
T5: `spiece.model`), `config.json` and the run marker. `config.json` is a
run's (`recipe`, `decoding`, ...) plus `converted_from`: `{"family",
"checkpoint", "architecture", "vocabulary_size", "tokenizer_files"}`, which
tells `open_run` to read the checkpoint's tokenizer from `tokenizer/`. The
model kind is a `TextGenerator`, as a recipe's run. Its `decoding` holds the
checkpoint's generation settings
(`keras_attention.runs.layout.CHECKPOINT_DECODING_KEYS`, Hugging Face's beam
scoring).
"""

import os

from keras_attention.pretrained.families import FAMILIES, names_with_tokenizers
from keras_attention.runs.layout import CONVERTED_RECIPES

#: The source length recorded when the checkpoint has no position limit (T5).
DEFAULT_SOURCE_LENGTH = 512


def convert_checkpoint(checkpoint_dir, run_dir, *, recipe=None, overwrite=False):
    """Converts a Hugging Face checkpoint folder into a run folder.

    Args:
        checkpoint_dir: a local folder of a `MarianMTModel`,
            `BartForConditionalGeneration` or `T5ForConditionalGeneration`
            checkpoint with its tokenizer files (see
            `keras_attention.pretrained.load_pretrained`).
        run_dir: the run folder to write: new, empty, or (with
            `overwrite=True`) a run folder, replaced only once the new one
            is complete; never a folder holding anything else.
        recipe: `"translation"` or `"summarization"`, the recipe whose
            evaluation file and scores `keras-attention evaluate` uses;
            default: the family's (`pretrained.families.FAMILIES`):
            translation for Marian, summarization for BART and T5.
        overwrite: bool, whether an existing run folder may be replaced.

    Returns:
        The run folder, as an absolute `str`.

    Raises:
        ValueError: naming the argument or setting, before anything is
            written: an `run_dir` refused by `runs.check_output_dir`, an
            unknown recipe, a checkpoint of another architecture (mBART's
            tokenizer is not supported here), an unsupported config or
            generation setting (sampling), a tokenizer larger than the
            model's vocabulary.
        FileNotFoundError: naming a missing tokenizer file.

    Example:

    >>> convert_checkpoint("no-such-folder", "run")
    Traceback (most recent call last):
    ...
    ValueError: Argument `folder` must be a local ... Received: folder='no-such-folder'
    """
    from keras_attention.runs.folders import check_output_dir, save_run

    if not isinstance(overwrite, bool):
        raise ValueError(f"Argument `overwrite` must be a bool. Received: overwrite={overwrite!r}")
    _check_recipe(recipe)
    check_output_dir(run_dir, overwrite=overwrite)
    converted, family, config, paths = load_checkpoint(checkpoint_dir, recipe)
    tokenizer = converted.source_tokenizer
    return save_run(
        run_dir, converted.model, tokenizer, tokenizer, recipe=converted.recipe,
        config={"checkpoint_config": config}, scores={}, decoding=converted.generation,
        source_format="text", overwrite=overwrite, tokenizer_files=paths,
        extra={"converted_from": {
            "family": family, "checkpoint": os.fspath(checkpoint_dir),
            "architecture": FAMILIES[family].architecture,
            "vocabulary_size": tokenizer.vocabulary_size(),
            "tokenizer_files": [os.path.basename(path) for path in paths],
        }},
    )


def load_checkpoint(checkpoint_dir, recipe=None):
    """A Hugging Face checkpoint folder as a `TextGenerator`, checked as
    `convert_checkpoint` checks it (`open_checkpoint` gives the
    `TextGenerator` alone).

    Returns:
        `(text_generator, family, config, tokenizer_paths)`: the `TextGenerator`,
        the family (`"marian"`, `"bart"` or `"t5"`), the checkpoint's
        `config.json` dict and its tokenizer files.

    Raises:
        ValueError, FileNotFoundError: as `convert_checkpoint`.
    """
    from keras_attention.pretrained.checkpoint import read_config
    from keras_attention.pretrained.families import load_checkpoint_tokenizer, tokenizer_files
    from keras_attention.pretrained.loading import load_pretrained
    from keras_attention.runs.generation import GenerationConfig
    from keras_attention.runs.text_generator import TextGenerator

    _check_recipe(recipe)
    config = read_config(checkpoint_dir)
    family = config.get("model_type")
    with_runs = names_with_tokenizers()  # each has a run recipe
    if family in FAMILIES and family not in with_runs:
        raise ValueError(
            f"`keras-attention convert` makes run folders of {', '.join(with_runs)} "
            f"checkpoints (their tokenizers are read here); use "
            f"`keras_attention.pretrained.load_pretrained` for a {family} checkpoint. "
            f"Received: model_type={family!r}")
    paths = tokenizer_files(checkpoint_dir, family) if family in with_runs else None
    model, info = load_pretrained(checkpoint_dir)  # refuses another architecture
    tokenizer = load_checkpoint_tokenizer(checkpoint_dir, family)
    vocabulary = min(model.source_vocabulary_size, model.target_vocabulary_size)
    if tokenizer.largest_id >= vocabulary:
        files = ", ".join(os.path.basename(path) for path in paths)
        raise ValueError(
            f"The checkpoint's tokenizer ({files}) gives ids up to {tokenizer.largest_id}, "
            f"beyond the {vocabulary} ids of its model (a smaller tokenizer is allowed, a "
            f"larger one would give ids the model lacks). Received: "
            f"checkpoint_dir={os.fspath(checkpoint_dir)!r}")
    source_length = config.get("max_position_embeddings") or DEFAULT_SOURCE_LENGTH
    generation = GenerationConfig.from_generate_kwargs(info["generation"], source_length)
    converted = TextGenerator(model, tokenizer, tokenizer, generation,
                              recipe=recipe or FAMILIES[family].recipe)
    return converted, family, config, paths


def _check_recipe(recipe):
    if recipe is not None and recipe not in CONVERTED_RECIPES:
        raise ValueError("Argument `recipe` must be 'translation' or 'summarization' for a "
                         f"converted checkpoint. Received: recipe={recipe!r}")


def open_checkpoint(checkpoint_dir, *, recipe=None):
    """The `TextGenerator` of a Hugging Face checkpoint folder, converted in
    memory: its model, tokenizer and generation config, checked as
    `keras-attention convert` checks them; what `runs.open_run` is to a run
    folder. `recipe`: as `convert_checkpoint`'s.

    Raises:
        ValueError: naming the file and setting, for a checkpoint that does
            not convert.
        FileNotFoundError: naming a missing file.

    Example:

    >>> open_checkpoint("no-such-folder")
    Traceback (most recent call last):
    ...
    ValueError: Argument `folder` must be a local ... Received: folder='no-such-folder'
    """
    return load_checkpoint(checkpoint_dir, recipe)[0]


__all__ = ["convert_checkpoint", "load_checkpoint", "open_checkpoint"]
