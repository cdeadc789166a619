"""Run folders: what a recipe saves and what `keras-attention` loads.

A run folder holds `model.keras`, `source.spm`, `target.spm` and
`config.json` (`{"recipe", "config", "scores"}`). It is written atomically:
everything goes to a temporary sibling folder renamed at the end, so a failure
leaves no half-written run behind.
"""

import json
import os
import shutil
import tempfile

RUN_FILES = ("model.keras", "source.spm", "target.spm", "config.json")


def save_run(output_dir, model, source_tokenizer, target_tokenizer, *, recipe, config, scores,
             extra=None):
    """Writes a run folder atomically (replacing an existing one).

    `extra` (a JSON-able dict) is merged into `config.json`, e.g. the
    answer classes of a memory-network run.
    """
    from keras_attention import data

    parent = os.path.dirname(os.path.abspath(output_dir))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(dir=parent, prefix=".partial-")
    try:
        model.save(os.path.join(staging, "model.keras"))
        data.save_tokenizer(source_tokenizer, os.path.join(staging, "source.spm"))
        data.save_tokenizer(target_tokenizer, os.path.join(staging, "target.spm"))
        with open(os.path.join(staging, "config.json"), "w") as f:
            metadata = {"recipe": recipe, "config": config, "scores": scores, **(extra or {})}
            json.dump(metadata, f, indent=2)
        if os.path.exists(output_dir):
            shutil.rmtree(output_dir)
        os.replace(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_run(run_dir):
    """Returns `(model, source_tokenizer, target_tokenizer, metadata)`.

    Raises:
        FileNotFoundError: naming the first missing file of the run folder.
    """
    import keras

    from keras_attention import data

    for name in RUN_FILES:
        path = os.path.join(run_dir, name)
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} is missing; is {run_dir} a run folder saved by a recipe?"
            )
    with open(os.path.join(run_dir, "config.json")) as f:
        metadata = json.load(f)
    return (
        keras.saving.load_model(os.path.join(run_dir, "model.keras")),
        data.load_tokenizer(os.path.join(run_dir, "source.spm")),
        data.load_tokenizer(os.path.join(run_dir, "target.spm")),
        metadata,
    )
