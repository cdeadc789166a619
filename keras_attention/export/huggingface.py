"""A run folder as a Hugging Face checkpoint folder
(`keras-attention export RUN_DIR OUT_DIR --format huggingface`).

The folder is what `transformers`' `save_pretrained` writes for the run's
architecture: `config.json`, `model.safetensors`, `generation_config.json`
(the run's decoding settings, so that `transformers`' `generate` gives the
strings `keras-attention generate` gives) and the tokenizer files, which
`AutoModelForSeq2SeqLM.from_pretrained` and `AutoTokenizer.from_pretrained`
load with no missing, unexpected or newly initialised weight, and which
`ct2-transformers-converter --model OUT_DIR --output_dir CT2_DIR` turns into
a CTranslate2 model.

A converted run (`keras-attention convert`, fine-tuned or not) goes back to
its checkpoint's family, the tensors under their own names
(`pretrained.save_pretrained`): a checkpoint converted and exported gives
back its own tensors.

Example:

```
keras-attention convert opus-mt-en-de runs/opus-mt-en-de
keras-attention export runs/opus-mt-en-de exported/opus-mt-en-de --format huggingface
ct2-transformers-converter --model exported/opus-mt-en-de --output_dir ct2/opus-mt-en-de
```
"""

import os
import warnings

from keras_attention.pretrained.generation_config import checkpoint_generation_config
from keras_attention.pretrained.saving import check_checkpoint_dir, save_pretrained

#: What the CLI's `--format` takes.
FORMATS = ("savedmodel", "huggingface")


class CTranslate2Warning(UserWarning):
    """An exported folder that `transformers` loads exactly but CTranslate2's
    converter would convert wrongly, silently."""


def export_huggingface(run_dir, export_dir, *, strategy=None, num_beams=None, overwrite=False):
    """Writes a run folder as a Hugging Face checkpoint folder.

    Args:
        run_dir: a run folder of `keras-attention convert` (fine-tuned or
            not).
        export_dir: the folder to write: new, empty, or (with
            `overwrite=True`) a checkpoint folder, replaced once the new one
            is complete; a failure leaves nothing behind.
        strategy: `"greedy"` or `"beam"` in `generation_config.json`;
            default: the run's.
        num_beams: positive int; default: the run's.
        overwrite: bool.

    Returns:
        The export folder, as an absolute `str`.

    Raises:
        ValueError: naming the argument, before anything is written: a run
            folder whose model has no Hugging Face architecture here, an
            export folder that may not be written, a bad `strategy` or
            `num_beams`, a model that would not load back the same.
    """
    from keras_attention import runs

    check_checkpoint_dir(export_dir, overwrite=overwrite, argument="export_dir")
    run = runs.SavedRun(run_dir)
    source = run.metadata.get("converted_from")
    if source is None:
        raise ValueError(
            "Argument `run_dir` must be a run folder of `keras-attention convert` (a Hugging "
            f"Face checkpoint's family) to export as a Hugging Face folder; this one is a "
            f"{run.recipe} recipe's run. Received: run_dir={os.fspath(run_dir)!r}")
    generation = run.generation.with_search(strategy, num_beams)
    config = checkpoint_config_of(run)
    settings = checkpoint_generation_config(
        generation.to_dict(), eos_token_id=run.model.end_token_id,
        pad_token_id=run.model.pad_token_id, bos_token_id=config.get("bos_token_id"))
    tokenizer_files = [run.path(os.path.join("tokenizer", name))
                       for name in source["tokenizer_files"]]
    path = save_pretrained(run.model, export_dir, family=source["family"], config=config,
                           generation=settings, tokenizer_files=tokenizer_files,
                           overwrite=overwrite)
    caveat = ctranslate2_caveat(run.model)
    if caveat:
        warnings.warn(caveat, CTranslate2Warning, stacklevel=2)
    return path


def checkpoint_config_of(run):
    """The `config.json` dict of the checkpoint a converted run comes from:
    its `converted_from` (fine-tuned runs), its recipe config (`keras-attention
    convert`'s runs), or, for a run fine-tuned by an earlier version, the config of the
    run it was fine-tuned from (`fine_tuned_from`).

    Raises:
        ValueError: naming `run_dir` when none is found.
    """
    config = run.metadata["converted_from"].get("checkpoint_config")
    config = config or (run.config or {}).get("checkpoint_config")
    origin = run.metadata.get("fine_tuned_from")
    if config is None and origin and os.path.isdir(origin):
        from keras_attention import runs

        config = runs.read_metadata(origin)["config"].get("checkpoint_config")
    if not isinstance(config, dict):
        raise ValueError(
            "Argument `run_dir` must record the config of the checkpoint it was converted "
            "from (a run fine-tuned by an earlier version reads it from the run it was "
            f"fine-tuned from, which is gone). Received: run_dir={run.run_dir!r}")
    return config


def ctranslate2_caveat(model):
    """Why CTranslate2 (4.8) would convert `model`'s exported folder wrongly,
    or None: its converter of the BART-style families (Marian, BART, mBART,
    Pegasus, M2M100) reads the encoder's attention head count for both
    sides, so a decoder with other heads gives other tokens there."""
    config = getattr(model, "config", None)
    encoder = getattr(config, "num_heads", None)
    decoder = getattr(config, "decoder_num_heads", None)
    if encoder is None or decoder is None or decoder == encoder:
        return None
    return (f"CTranslate2's ct2-transformers-converter (4.8) gives the decoder the encoder's "
            f"{encoder} attention heads, but it has {decoder}: transformers loads this folder "
            f"exactly, CTranslate2 would translate it wrongly without an error")


__all__ = ["CTranslate2Warning", "FORMATS", "ctranslate2_caveat", "export_huggingface"]
