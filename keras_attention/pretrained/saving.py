"""`save_pretrained`: a model of a checkpoint family back out as a Hugging Face
checkpoint folder, the inverse of `load_pretrained`.

```python
model, info = load_pretrained("opus-mt-en-de")
model.fit(...)                                     # fine-tune
save_pretrained(model, "opus-mt-en-de-mine", family=info["family"],
                config=info["config"])
# transformers: AutoModelForSeq2SeqLM.from_pretrained("opus-mt-en-de-mine")
```

The folder holds `config.json` (the checkpoint's, with the settings the
model decides set to the model's), `model.safetensors` (float32, the
tensors `transformers` 5 saves, under its names: `Family.checkpoint`),
optionally `generation_config.json` and tokenizer files. Before anything is
written, the tensors are converted back (`Family.build_model`) and must give
our weights exactly: an export that would not load as the same model is
refused in one line, and nothing is written.
"""

import json
import os
import shutil

import keras
import numpy as np

from keras_attention import files
from keras_attention.pretrained.checkpoint import (
    CHECKPOINT_CONFIG_FILE,
    GENERATION_CONFIG_FILE,
    SAFETENSORS_FILE,
)
from keras_attention.pretrained.families import FAMILIES


def save_pretrained(model, folder, *, family, config, generation=None, tokenizer_files=(),
                    written_files=None, overwrite=False):
    """Writes `model` as a Hugging Face checkpoint folder of `family`.

    Args:
        model: a model `load_pretrained` (or `keras-attention convert`) made
            of a `family` checkpoint, trained further or not.
        folder: the folder to write: new, empty, or (with `overwrite=True`)
            a checkpoint folder (one holding `config.json`), replaced once
            the new one is complete.
        family: the `model_type` (`pretrained.families.FAMILIES`).
        config: the `config.json` dict of the checkpoint the model was
            made from.
        generation: a `generation_config.json` dict to write, or None.
        tokenizer_files: paths of tokenizer files to copy in unchanged.
        written_files: `{name: text}` of more files to write (a
            `tokenizer.json` made here).
        overwrite: bool.

    Returns:
        The folder, as an absolute `str`.

    Raises:
        ValueError: naming the argument, before anything is written: an
            unknown family, a folder that may not be written, a model the
            family cannot express or whose tensors would not convert back
            to the same weights.
    """
    if family not in FAMILIES:
        raise ValueError(f"Argument `family` must be one of {', '.join(map(repr, FAMILIES))}. "
                         f"Received: family={family!r}")
    if not isinstance(config, dict):
        raise ValueError(f"Argument `config` must be the checkpoint's config.json dict. "
                         f"Received: config={type(config).__name__}")
    check_checkpoint_dir(folder, overwrite=overwrite)
    row = FAMILIES[family]
    checkpoint_config, tensors = row.checkpoint(model, config)
    checkpoint_config = {key: value for key, value in checkpoint_config.items()
                         if key != "torch_dtype"}
    checkpoint_config.update(architectures=[row.architecture], model_type=family,
                             dtype="float32")
    check_converts_back(model, row, checkpoint_config, tensors)
    tokenizer_files = [os.fspath(path) for path in tokenizer_files]

    def write(staging):
        from safetensors.numpy import save_file

        _write_json(os.path.join(staging, CHECKPOINT_CONFIG_FILE), checkpoint_config)
        save_file(tensors, os.path.join(staging, SAFETENSORS_FILE), metadata={"format": "pt"})
        if generation is not None:
            _write_json(os.path.join(staging, GENERATION_CONFIG_FILE), generation)
        for path in tokenizer_files:
            shutil.copyfile(path, os.path.join(staging, os.path.basename(path)))
        for name, text in (written_files or {}).items():
            with open(os.path.join(staging, name), "w", encoding="utf-8") as file:
                file.write(text)

    return files.write_folder_atomically(folder, write, replace=overwrite)


def check_checkpoint_dir(folder, *, overwrite=False, argument="folder"):
    """Refuses a folder a checkpoint must not be written to: a file, the
    working directory or a parent of it, a folder that is not empty (unless
    `overwrite` and it is a checkpoint folder, holding `config.json`), or
    any folder holding something else.

    Raises:
        ValueError: naming `folder` (or `argument`, the caller's name of
            it; or `overwrite`) and saying why.
    """
    if not isinstance(overwrite, bool):
        raise ValueError(f"Argument `overwrite` must be a bool. Received: overwrite={overwrite!r}")
    shown = os.fspath(folder)
    received = f"Received: {argument}={shown!r}"
    if files.is_working_directory_or_parent(shown):
        raise ValueError(f"Argument `{argument}` must not be the working directory or one of "
                         f"its parents: a checkpoint replaces its whole folder. {received}")
    if not os.path.lexists(shown):
        return
    if not os.path.isdir(shown):
        raise ValueError(f"Argument `{argument}` must be a folder (new or empty). {received} "
                         "(a file)")
    if not os.listdir(shown):
        return
    if not os.path.isfile(os.path.join(shown, CHECKPOINT_CONFIG_FILE)):
        raise ValueError(f"Argument `{argument}` holds files but no checkpoint (no "
                         f"config.json); it is never replaced. {received}")
    if not overwrite:
        raise ValueError(f"Argument `{argument}` already holds a checkpoint; pass "
                         f"overwrite=True (--overwrite=true) to replace it. {received}")


#: Settings that do not change what a model computes at inference.
TRAINING_ONLY_SETTINGS = ("name", "trainable", "dtype", "dropout", "packed",
                          "coverage_loss_weight")


#: Our model settings that hold a token id (renumbered with the tokens).
TOKEN_ID_SETTINGS = ("pad_token_id", "start_token_id", "end_token_id")


def check_converts_back(model, row, config, tensors, new_id=None):
    """The tensors, read back by the family's converter, give `model`'s
    settings and weights exactly (so `transformers` and `load_pretrained`
    load the same model); a `ValueError` in one line naming the first
    setting or weight that differs otherwise.

    With `new_id` (`{model's id: checkpoint's id}`, a renumbering of the
    tokens: `bart.renumber_tokens`), the checkpoint's token ids and the
    rows (or columns) of its token tables are `model`'s renumbered.

    Returns:
        The model the converter builds of the tensors.
    """
    try:
        rebuilt = row.build_model(config, dict(tensors))
    except ValueError as error:
        raise ValueError(f"The model cannot be written as a {row.model_type} checkpoint that "
                         f"loads back as the same model ({error})") from None
    ours, theirs = model.get_config(), rebuilt.get_config()
    if new_id is not None:
        ours.update({key: new_id.get(ours[key], ours[key]) for key in TOKEN_ID_SETTINGS
                     if isinstance(ours.get(key), int)})
    for key in sorted(set(ours) | set(theirs)):
        if key not in TRAINING_ONLY_SETTINGS and ours.get(key) != theirs.get(key):
            raise ValueError(f"The model cannot be written as a {row.model_type} checkpoint: "
                             f"its setting `{key}` is {ours.get(key)!r}, which "
                             f"{row.architecture} computes only as {theirs.get(key)!r}. "
                             f"Received: {key}={ours.get(key)!r}")
    ours, theirs = model.weights, rebuilt.weights
    if len(ours) != len(theirs):
        raise ValueError(f"The model cannot be written as a {row.model_type} checkpoint: it "
                         f"has {len(ours)} weights, the checkpoint's model {len(theirs)}. "
                         f"Received: model={model.name!r}")
    order = None if new_id is None else sorted(new_id, key=new_id.get)
    for mine, back in zip(ours, theirs):
        mine, path = keras.ops.convert_to_numpy(mine), mine.path
        if not _same_weight(mine, keras.ops.convert_to_numpy(back), order):
            raise ValueError(f"The model cannot be written as a {row.model_type} checkpoint: "
                             f"its weight {path!r} would not load back unchanged. "
                             f"Received: model={model.name!r}")
    return rebuilt


def _same_weight(mine, back, order):
    """Whether `back` is `mine`, or (with `order`, the tokens renumbered)
    `mine` with its rows or last axis in `order` (a token table)."""
    if mine.shape != back.shape:
        return False
    if np.array_equal(mine, back):
        return True
    if order is None or not mine.ndim:
        return False
    return ((mine.shape[0] == len(order) and np.array_equal(mine[order], back))
            or (mine.shape[-1] == len(order) and np.array_equal(mine[..., order], back)))


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2, sort_keys=True)
        file.write("\n")


__all__ = ["check_checkpoint_dir", "check_converts_back",
           "save_pretrained"]
