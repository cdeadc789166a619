"""Fine-tuning a converted checkpoint: the `--init_from=RUN_DIR` of the
translation and summarization recipes.

`keras-attention train translation --init_from=RUN_DIR --data=FILE.tsv`
continues from the weights of a run folder written by `keras-attention
convert` (a Marian, BART, mBART, Pegasus, M2M100/NLLB, T5 or mT5
checkpoint) with its own tokenizer: no SentencePiece is trained and the
vocabulary stays the checkpoint's. It trains with the recipe's loop (teacher forcing on
`[decoder_start] + target[:-1]`, the recipe's Adam and warmup schedule,
label smoothing, epochs, batch size), evaluates with the converted run's
generation settings and saves a run folder of the same (converted) kind.

Decisions:

- The learning rate is `fine_tune_learning_rate` (default 5e-5, the default
  of `transformers`' translation and summarization examples), not the
  recipe's `learning_rate` (2e-3, for a small model trained from scratch,
  which would wreck pretrained weights in a few steps); `learning_rate` is
  refused with `init_from`.
- Settings the converted model fixes (`FIXED_SETTINGS`: its architecture,
  vocabulary, sizes, dropout, packing, and the decoding of the evaluation,
  which is the checkpoint's) are refused with `init_from` when they differ
  from the recipe's defaults, before any work.
- `init_from` takes converted run folders only. A run folder trained by a
  recipe is refused: to continue an interrupted run, use `--backup_dir`;
  its tokenizers were trained on its own data, and training it again on
  other data is a new run (a later version may support it).
- A Marian whose decoder start row is zeros (OPUS-MT's checkpoints: Marian
  starts its decoder from a zero vector, which `transformers` stores as the
  pad token's row and CTranslate2 assumes) keeps that row at zero
  (`keep_start_row_zero`), so that the fine-tuned run exported with
  `--format huggingface` gives the same tokens in `transformers` and
  CTranslate2.
- Targets are the checkpoint tokenizer's ids (which end with its end
  token), cut to `max_length` (keeping the end token); the labels' padding
  is ignored by the loss (`ignore_class` = the pad id, as `transformers`'
  -100), and the decoder's first position is never masked, even where the
  start id is the pad id (Marian, T5: `masks.decoder_token_mask`).
"""

import json
import os

# Keras is imported on use: the recipes' config modules import this one, and
# reading the registry imports neither Keras nor TensorFlow.

#: The default learning rate of `--init_from` (see the module docstring).
FINE_TUNE_LEARNING_RATE = 5e-5

#: Settings a converted model fixes: refused with `init_from` when changed.
FIXED_SETTINGS = (
    "architecture", "vocabulary_size", "shared_vocabulary", "num_layers", "hidden_dim", "num_heads",
    "intermediate_dim", "dropout", "pack", "pointer_generator", "coverage_loss_weight",
    "strategy", "num_beams", "length_penalty", "length_penalty_form", "learning_rate",
    "average_last_epochs",
    "distribution", "precision", "backup_dir",
    # summarization
    "summarizer", "max_sentences", "sentence_layers", "gap_sentence_epochs", "gap_sentences",
    "oracle_sentences", "coverage_penalty",
)


def unused_settings(config):
    """`{setting: when}` of the settings `--init_from` does not read."""
    if not config.get("init_from"):
        return {}
    return {key: "with `init_from` (the converted run fixes it)"
            for key in FIXED_SETTINGS if key in config}


def check_init_from(config, presets):
    """Raises a ValueError naming the first setting that cannot apply with
    `config["init_from"]` (one of `FIXED_SETTINGS` with a value no preset of
    `presets`, the recipe's configuration dicts, has), or an `init_from`
    that is not a converted run folder; returns the run folder's
    `config.json` (None without `init_from`)."""
    run_dir = config.get("init_from")
    if not run_dir:
        return None
    for key in FIXED_SETTINGS:
        if key in config and all(config[key] != preset[key] for preset in presets):
            raise ValueError(
                f"Setting `{key}` cannot apply with `init_from`: the converted run fixes "
                f"it (the fine-tuning learning rate is `fine_tune_learning_rate`). "
                f"Received: {key}={config[key]!r}")
    path = os.path.join(run_dir, "config.json")
    try:
        with open(path, encoding="utf-8") as file:
            metadata = json.load(file)
    except (OSError, ValueError):
        metadata = None
    if not isinstance(metadata, dict) or not os.path.isfile(os.path.join(run_dir, "model.keras")):
        raise ValueError(
            "Setting `init_from` must be a run folder written by `keras-attention convert` "
            f"(with config.json and model.keras). Received: init_from={run_dir!r}")
    if not isinstance(metadata.get("converted_from"), dict):
        raise ValueError(
            "Setting `init_from` must be a converted run folder (`keras-attention convert`); "
            "a run trained by a recipe has its own tokenizers: continue an interrupted one "
            f"with `--backup_dir`. Received: init_from={run_dir!r}")
    return metadata


def load_converted(run_dir, metadata):
    """`(model, tokenizer)` of a converted run folder (`check_init_from`'s
    `metadata`): the `Seq2SeqModel` and the checkpoint's tokenizer."""
    import keras

    from keras_attention.pretrained.families import load_checkpoint_tokenizer

    model = keras.saving.load_model(os.path.join(run_dir, "model.keras"))
    family = metadata["converted_from"]["family"]
    tokenizer = load_checkpoint_tokenizer(os.path.join(run_dir, "tokenizer"), family)
    return model, tokenizer


def make_examples(pairs, tokenizer, model, generation, max_length, max_target_length=None):
    """Teacher-forcing arrays of `(source, target)` text pairs: `({
    "encoder_token_ids": (N, S), "decoder_token_ids": (N, T)}, labels (N, T))`
    with `decoder_token_ids = [decoder_start] + labels[:-1]`, padded with the
    model's pad id (ignored by the loss); sources cut to `max_length` ids,
    targets to `max_target_length` (default: `max_length`); the decoder
    starts as `generation` (the checkpoint's `GenerationConfig`) says."""
    import numpy as np

    pad = model.pad_token_id
    start = generation.decoder_start_token_id
    start = model.start_token_id if start is None else start
    sources = [tokenizer.truncate(r, max_length)
               for r in tokenizer.tokenize([s for s, _ in pairs])]
    targets = [tokenizer.truncate(r, max_target_length or max_length)
               for r in tokenizer.tokenize_targets([t for _, t in pairs])]

    def padded(rows):
        width = max(1, max(len(r) for r in rows))
        return np.array([r + [pad] * (width - len(r)) for r in rows], "int32")

    labels = padded(targets)
    decoder = np.concatenate([np.full((len(labels), 1), start, "int32"), labels[:, :-1]], 1)
    return {"encoder_token_ids": padded(sources), "decoder_token_ids": decoder}, labels


def keep_start_row_zero(model, family, start_token_id):
    """Keeps the decoder start row of a family that starts from a zero vector
    (`Family.zero_start_row`: Marian) at zero while it trains (a variable
    constraint, applied after each optimizer step), where it is zero to
    begin with; returns whether it does. Other families, and a Marian whose
    row is not zero, train every row."""
    import keras
    import numpy as np

    from keras_attention.pretrained.families import FAMILIES

    if not FAMILIES[family].zero_start_row:
        return False
    table = model.target_embedding.token_embedding.embeddings
    if np.any(keras.ops.convert_to_numpy(table[start_token_id])):
        return False
    start_row = np.zeros((table.shape[0], 1), bool)
    start_row[start_token_id] = True

    def zero_start_row(value):
        return keras.ops.where(start_row, keras.ops.zeros_like(value), value)

    table.constraint = zero_start_row
    return True


def compile_settings(config, pad_token_id):
    """Adam at `fine_tune_learning_rate` (the peak of the recipe's warmup and
    inverse square root decay when `warmup_steps` > 0) and the cross-entropy
    over the non-pad labels (with `label_smoothing`)."""
    import keras

    from keras_attention import losses, schedules

    learning_rate = config["fine_tune_learning_rate"]
    if config.get("warmup_steps"):
        learning_rate = schedules.WarmupInverseSqrtDecay(learning_rate, config["warmup_steps"])
    if config.get("label_smoothing"):
        loss = losses.SmoothedSparseCrossentropy(config["label_smoothing"],
                                                 ignore_class=pad_token_id)
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                          ignore_class=pad_token_id)
    return {"optimizer": keras.optimizers.Adam(learning_rate), "loss": loss}


def fine_tune(config, metadata, train_pairs, validation_pairs, jit_compile=False,
              callbacks=()):
    """Fits the converted run `config["init_from"]` (`metadata`: its
    `config.json`) on `train_pairs` for `config["epochs"]`, validating on
    `validation_pairs` (the translation recipe's `max_length`, or the
    summarization recipe's `max_source_length` / `max_target_length`, cut
    the examples; `keep_best_epoch` restores the best epoch); returns a
    `skeleton.Trained` whose `extra` makes the saved run a converted one
    (`converted_from`, plus `fine_tuned_from`: the folder it started from)
    and whose `tokenizer_files` are the checkpoint's, copied unchanged."""
    from keras_attention.recipes import skeleton
    from keras_attention.runs import GenerationConfig

    model, tokenizer = load_converted(config["init_from"], metadata)
    generation = GenerationConfig.from_dict(metadata["decoding"], "hf")
    lengths = ((config["max_length"],) if "max_length" in config
               else (config["max_source_length"], config["max_target_length"]))
    arrays = [make_examples(pairs, tokenizer, model, generation, *lengths)
              for pairs in (train_pairs, validation_pairs)]
    callbacks = list(callbacks)
    if config.get("keep_best_epoch"):
        import keras

        callbacks.insert(0, keras.callbacks.EarlyStopping(
            monitor="val_loss", patience=config["epochs"], restore_best_weights=True))
    start = generation.decoder_start_token_id
    keep_start_row_zero(model, metadata["converted_from"]["family"],
                        model.start_token_id if start is None else start)
    model.compile(**compile_settings(config, model.pad_token_id), metrics=["accuracy"],
                  jit_compile=jit_compile)
    print(f"Fine-tuning the {metadata['converted_from']['family']} model of "
          f"{config['init_from']} ({model.count_params():,} parameters).")
    history = model.fit(*arrays[0], validation_data=arrays[1], epochs=config["epochs"],
                        batch_size=config["batch_size"], callbacks=callbacks,
                        shuffle=True, verbose=2)
    folder = os.path.join(config["init_from"], "tokenizer")
    files = [os.path.join(folder, name) for name in sorted(os.listdir(folder))]
    # The checkpoint's config goes with the run, for `keras-attention export
    # --format huggingface` (a converted run keeps it in its recipe config).
    origin = dict(metadata["converted_from"])
    checkpoint_config = (metadata.get("config") or {}).get("checkpoint_config")
    checkpoint_config = origin.get("checkpoint_config") or checkpoint_config
    if checkpoint_config is not None:
        origin["checkpoint_config"] = checkpoint_config
    extra = {"converted_from": origin,
             "fine_tuned_from": os.path.abspath(config["init_from"])}
    return skeleton.Trained(model, tokenizer, tokenizer, history, extra=extra,
                            tokenizer_files=files)


def decoding_settings(config):
    """The converted run's generation settings (its `config.json`'s
    `decoding`, a `runs.GenerationConfig` of the Hugging Face form), which
    the fine-tuned run keeps and evaluates with."""
    from keras_attention.runs import GenerationConfig

    return GenerationConfig.from_dict(check_init_from(config, [config])["decoding"], "hf")


__all__ = ["FINE_TUNE_LEARNING_RATE", "FIXED_SETTINGS", "check_init_from", "compile_settings",
           "decoding_settings", "fine_tune", "load_converted",
           "make_examples", "unused_settings"]
