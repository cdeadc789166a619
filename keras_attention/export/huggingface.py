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
back its own tensors. A run the translation recipe trained (its defaults:
one SentencePiece vocabulary, pre-norm blocks, fairseq's positions) goes
out as the `transformers` architecture that computes the same function,
M2M100, with a `tokenizer.json` of its SentencePiece model; a setting no
architecture computes is refused in one line naming it.

Example:

```
keras-attention convert opus-mt-en-de runs/opus-mt-en-de
keras-attention export runs/opus-mt-en-de exported/opus-mt-en-de --format huggingface
ct2-transformers-converter --model exported/opus-mt-en-de --output_dir ct2/opus-mt-en-de
```
"""

import dataclasses
import json
import os
import warnings

from keras_attention.pretrained.bart import renumber_tokens
from keras_attention.pretrained.generation_json import (
    checkpoint_generation_config,
    renumber_token_ids,
)
from keras_attention.pretrained.saving import check_checkpoint_dir, save_pretrained
from keras_attention.runs.reader import path_in_run

#: What the CLI's `--format` takes.
FORMATS = ("savedmodel", "huggingface")


class CTranslate2Warning(UserWarning):
    """An exported folder that `transformers` loads exactly but CTranslate2's
    converter would convert wrongly, silently."""


def export_huggingface(run_dir, export_dir, *, strategy=None, num_beams=None, overwrite=False):
    """Writes a run folder as a Hugging Face checkpoint folder.

    Args:
        run_dir: a run folder of `keras-attention convert` (fine-tuned or
            not), or of a recipe that trained a transformer with one
            vocabulary (the translation recipe's default).
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
    run = runs.open_run(run_dir)
    generation = run.generation.with_search(strategy, num_beams)
    if run.metadata.get("converted_from") is not None:
        outgoing = _converted_checkpoint(run)
    else:
        outgoing = _recipe_checkpoint(run, generation)
    settings = checkpoint_generation_config(
        generation.to_dict(), eos_token_id=run.model.end_token_id,
        pad_token_id=run.model.pad_token_id, bos_token_id=outgoing.run_config.get("bos_token_id"))
    if outgoing.new_id is not None:
        settings = renumber_token_ids(settings, outgoing.new_id)
    path = save_pretrained(outgoing.model, export_dir, family=outgoing.family,
                           config=outgoing.config, generation=settings,
                           tokenizer_files=outgoing.copied, written_files=outgoing.written,
                           overwrite=overwrite)
    caveat = ctranslate2_caveat(outgoing.model)
    if caveat:
        warnings.warn(caveat, CTranslate2Warning, stacklevel=2)
    return path


@dataclasses.dataclass(frozen=True)
class _Outgoing:
    """What a run is written as: the family, the model and its `config.json`
    dict (`run_config`: the same with the run's own token ids), the
    tokenizer files copied and written, and `{run id: exported id}` where
    the export renumbers the tokens (None: the run's ids)."""

    family: str
    model: object
    config: dict
    run_config: dict
    copied: tuple = ()
    written: dict = dataclasses.field(default_factory=dict)
    new_id: dict = None


def _converted_checkpoint(run):
    """A converted run: its checkpoint's family and config, its tokenizer
    files copied unchanged."""
    source = run.metadata["converted_from"]
    files = tuple(path_in_run(run.run_dir, os.path.join("tokenizer", name))
                  for name in source["tokenizer_files"])
    config = checkpoint_config_of(run)
    return _Outgoing(source["family"], run.model, config, config, copied=files)


def _recipe_checkpoint(run, generation):
    """A run our recipes trained: the architecture that computes its model
    (`families.recipe_model_family`: M2M100), a `tokenizer.json` of its one
    SentencePiece vocabulary with the `tokenizer_config.json` that makes
    `AutoTokenizer` read it, and its tokens in fairseq's order when its
    positions are counted from 2 (`fairseq_token_order`).

    Raises:
        ValueError: naming the setting, for a model or decoding no
            `transformers` architecture computes (separate vocabularies,
            an RNN, GNMT's beam scoring), before anything is written.
    """
    from keras_attention.models import TransformerSeq2Seq
    from keras_attention.pretrained.families import recipe_model_family
    from keras_attention.pretrained.saving import check_converts_back
    from keras_attention.pretrained.tokenizer_json import from_sentencepiece
    from keras_attention.runs.layout import TOKENIZER_FILES

    received = f"Received: run_dir={run.run_dir!r}"
    if not isinstance(run.model, TransformerSeq2Seq):
        raise ValueError(f"Argument `run_dir` must hold a transformer to export as a Hugging "
                         f"Face folder; its model is {run.kind.description}. {received}")
    with open(path_in_run(run.run_dir, TOKENIZER_FILES["source"]), "rb") as file:
        source = file.read()
    with open(path_in_run(run.run_dir, TOKENIZER_FILES["target"]), "rb") as file:
        if file.read() != source:
            raise ValueError(
                "The run has a vocabulary per language, which no transformers architecture "
                "of pre-norm models computes (M2M100 has one): train it with "
                f"--shared_vocabulary=true (the default) to export it. {received} "
                "(shared_vocabulary=False)")
    if generation.strategy == "beam" and generation.length_penalty_form == "gnmt":
        raise ValueError(
            "Argument `strategy`: the run's beam search scores with GNMT's length and "
            "coverage penalties, which transformers' generate does not compute; export with "
            "--strategy greedy (the same tokens in both). Received: strategy='beam'")
    row = recipe_model_family()
    run_config = row.config_of_model(run.model)
    order = fairseq_token_order(run.model, run.source_tokenizer.token_to_id("<unk>"))
    model, config, new_id = run.model, run_config, None
    if order is not None:
        new_id = {int(old): new for new, old in enumerate(order)}
        config, tensors = renumber_tokens(*row.checkpoint(run.model, run_config), order)
        model = check_converts_back(run.model, row, config, tensors, new_id=new_id)
    written = {"tokenizer.json": from_sentencepiece(source, order),
               "tokenizer_config.json": json.dumps(_tokenizer_config(run), indent=2)}
    return _Outgoing(row.model_type, model, config, run_config, written=written, new_id=new_id)


def fairseq_token_order(model, unk_token_id):
    """The order a recipe model's tokens are exported in: fairseq's (`<s>`
    0, `<pad>` 1, `</s>` 2, `<unk>` 3, then the other pieces in the run's
    order) for a model whose fairseq positions count from 2, as M2M100's do
    with its pad id 1 (transformers counts them from the pad id + 1,
    CTranslate2's converter from 2 whatever the pad id is); None (the run's
    own ids) for a model whose positions count from its pad id + 1 already.

    Example:

    >>> from keras_attention.models import transformer_seq2seq
    >>> model = transformer_seq2seq(8, num_layers=1, hidden_dim=8, num_heads=2,
    ...                             intermediate_dim=8, position="sinusoidal_fairseq",
    ...                             position_offset=2, pad_token_id=0, start_token_id=2,
    ...                             end_token_id=3)
    >>> fairseq_token_order(model, unk_token_id=1)
    [2, 0, 3, 1, 4, 5, 6, 7]
    """
    config = model.config
    if config.position_offset != 2 or config.pad_token_id == 1:
        return None
    first = [config.start_token_id, config.pad_token_id, config.end_token_id, unk_token_id]
    return first + [i for i in range(config.vocabulary_size) if i not in first]


def _tokenizer_config(run):
    """The `tokenizer_config.json` of a recipe run's `tokenizer.json`: the
    plain fast tokenizer class (not M2M100's, which adds language codes),
    its special tokens, and the run's source length."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>",
            "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
            "model_max_length": run.generation.source_length, "clean_up_tokenization_spaces":
            False}


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
    or None. Its converter of the BART-style families (Marian, BART, mBART,
    Pegasus, M2M100) reads the encoder's attention head count for both
    sides, and reads M2M100's position table as if the pad id were 1
    (fairseq's); a model otherwise gets other tokens there, silently."""
    config = getattr(model, "config", None)
    encoder = getattr(config, "num_heads", None)
    decoder = getattr(config, "decoder_num_heads", None)
    if encoder is not None and decoder is not None and decoder != encoder:
        return (f"CTranslate2's ct2-transformers-converter (4.8) gives the decoder the "
                f"encoder's {encoder} attention heads, but it has {decoder}: transformers loads "
                f"this folder exactly, CTranslate2 would translate it wrongly without an error")
    if getattr(config, "position", None) == "sinusoidal_fairseq" and config.pad_token_id != 1:
        return (f"CTranslate2's ct2-transformers-converter (4.8) reads M2M100's positions as if "
                f"the pad id were 1; this model's is {config.pad_token_id}: transformers loads "
                f"this folder exactly, CTranslate2 would translate it wrongly without an error")
    return None


__all__ = ["CTranslate2Warning", "FORMATS", "ctranslate2_caveat", "export_huggingface",
           "fairseq_token_order"]
