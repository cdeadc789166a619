"""
Title: Abstractive summarization with a pointer-generator Transformer
Description: Summarize paper abstracts into one-sentence TLDRs (SciTLDR, or
built-in synthetic abstracts) with a Transformer encoder-decoder whose output
layer is keras_attention's `PointerGenerator` (copy attention with coverage,
See et al. 2017); ROUGE-1/2/L against every reference, next to the lead-1
baseline on the same split.
Accelerator: none needed (2 CPU cores).

## Introduction

Summaries reuse the document's rare words (method names, numbers) that a
small vocabulary model cannot generate well. A pointer-generator mixes, at
each step, generating a token from the vocabulary with copying a source
token through an attention distribution; coverage (the sum of past
attention) discourages attending to, and so repeating, the same words. One
SentencePiece vocabulary serves documents and summaries, so a copied token
is the same id.

Before anything is trained, the whole configuration is checked: every
setting (`config.RULES`), the output folder (`runs.check_output_dir`), the
backup folder (`--backup_dir` holds a backup of these settings, or none),
the splits (none empty) and the vocabulary size.

Run: `keras-attention train summarization [--preset scitldr] [--key=value ...]`
or `python examples/summarization/train.py ...` (the settings and presets:
`keras_attention/recipes/summarization/config.py`; `--distribution=mirrored`
for several GPUs on TensorFlow, `--distribution=data_parallel` on JAX:
docs/guides/distributed.md)
"""

import os
import sys

import keras

from keras_attention import data, distribute, runs, runtime, settings, visualize
from keras_attention.models import transformer_seq2seq
from keras_attention.recipes import checks, fine_tuning, skeleton
from keras_attention.recipes.summarization import config as recipe_config
from keras_attention.recipes.summarization import extractive
from keras_attention.tokenizer import encode_lines

## Settings


def parse_settings(argv=None):
    """The configuration from `--preset=NAME` and `--key=value` arguments
    (`sys.argv[1:]` by default), checked (`keras_attention.settings`)."""
    return skeleton.parse_settings(SPEC, sys.argv[1:] if argv is None else argv)


def check_config(config):
    """`config` if every setting is known, of its type and within its rule
    (with `init_from`: none that the converted run fixes)."""
    config = settings.check(config, recipe_config.get_config(), recipe_config.RULES)
    if config["init_from"] and config["summarizer"] != "abstractive":
        raise ValueError(
            "A converted checkpoint writes its summaries: `init_from` needs "
            f"summarizer='abstractive'. Received: summarizer={config['summarizer']!r}")
    fine_tuning.check_init_from(config, [preset() for preset in recipe_config.PRESETS.values()])
    return config


## Data: {"document", "summaries"} records


def load_splits(config):
    """Train, validation and test records (SciTLDR's own splits, or built-in).

    Raises:
        ValueError: naming the setting of a split that came out empty.
    """
    if config["data"]:
        splits = [
            data.load_summaries(os.path.join(config["data"], f"{split}.jsonl"))
            for split in ("train", "dev", "test")
        ]
        for name, split in zip(("training", "validation (dev.jsonl)", "test"), splits):
            checks.check_split(name, split, "data", config["data"])
        return splits
    train, validation, test = data.split_examples(
        data.make_abstracts(config["num_examples"], seed=config["seed"]),
        validation_fraction=config["validation_fraction"],
        test_fraction=config["test_fraction"],
        seed=config["seed"],
    )
    checks.check_split("validation", validation, "validation_fraction",
                       config["validation_fraction"])
    checks.check_split("test", test, "test_fraction", config["test_fraction"])
    return train, validation, test


def training_pairs(records, all_references):
    """`(document, summary)` pairs: one per reference, or the first only."""
    return [
        (record["document"], summary)
        for record in records
        for summary in (record["summaries"] if all_references else record["summaries"][:1])
    ]


def lead(document, num_sentences=1):
    """The first `num_sentences` sentences: the lead baseline."""
    return " ".join(data.split_sentences(document)[:num_sentences])


## Model


def build_model(config, tokenizer):
    return transformer_seq2seq(
        tokenizer.vocabulary_size(),
        num_layers=config["num_layers"], hidden_dim=config["hidden_dim"],
        num_heads=config["num_heads"], intermediate_dim=config["intermediate_dim"],
        dropout=config["dropout"], max_length=config["max_source_length"] + 2,
        pointer_generator=config["pointer_generator"],
        coverage_loss_weight=config["coverage_loss_weight"],
        **data.special_token_ids(tokenizer),
    )


## Training


def pretrain_on_gap_sentences(model, documents, make_dataset, config, strategy):
    """PEGASUS-style pretraining on the training documents: each document
    without its principal sentence(s) -> those sentences (see
    `keras_attention.data.gap_sentence_pairs`). The same model, optimizer and
    tokenizer then go on to the reference summaries."""
    pairs = data.gap_sentence_pairs(documents, num_sentences=config["gap_sentences"])
    print(f"Gap-sentence pretraining: {len(pairs)} pairs from the training documents, "
          f"{config['gap_sentence_epochs']} epoch(s).")
    callbacks = []
    if config["backup_dir"]:  # its own subfolder (a resumed run repeats a finished pretraining)
        callbacks.append(distribute.backup_and_restore(
            os.path.join(config["backup_dir"], "gap_sentences"), strategy))
    model.fit(make_dataset(pairs, True), epochs=config["gap_sentence_epochs"],
              shuffle=False, verbose=2, callbacks=callbacks)


## Evaluation


def decoding_settings(config, tokenizer):
    """How this recipe decodes (`runs.GenerationConfig`), as the run folder
    records it (`runs.save_run`): pad, `<unk>` and start are never generated
    (`data.never_generated_ids`); `None` for the extractive summarizer, which
    picks a sentence instead. With `init_from`: the converted run's
    settings."""
    if config["init_from"]:
        return fine_tuning.decoding_settings(config)
    if config["summarizer"] == "extractive":
        return None
    return runs.GenerationConfig(
        source_length=config["max_source_length"], target_length=config["max_target_length"],
        strategy="beam", num_beams=config["num_beams"], length_penalty=config["length_penalty"],
        coverage_penalty=config["coverage_penalty"],
        suppress_token_ids=data.never_generated_ids(tokenizer))


def evaluate(trained, splits, config, decoding):
    """ROUGE of the test summaries decoded with `decoding`, next to lead-1
    (the extractive summarizer's: `extractive.evaluate`)."""
    if config["summarizer"] == "extractive":
        return extractive.evaluate(trained, splits, config)
    test = splits[2]
    documents = [record["document"] for record in test]
    references = [record["summaries"] for record in test]
    summarizer = trained.text_to_text(decoding, "summarization", config)
    summaries = summarizer.generate(documents, verbose=1, truncate=True)
    scores = {
        "model": summarizer.score(summaries, references),
        "lead_1": summarizer.score([lead(d) for d in documents], references),
        "test_examples": len(test),
    }
    for name, rouge in (("model", scores["model"]), ("lead-1", scores["lead_1"])):
        print(f"{name:>7}: ROUGE-1 {rouge['rouge1']:.1f}  ROUGE-2 {rouge['rouge2']:.1f}  "
              f"ROUGE-L {rouge['rougeL']:.1f}")
    print(f"(rouge-score F1, best reference of {sum(map(len, references))} for "
          f"{len(test)} documents).")
    for document, summary, refs in list(zip(documents, summaries, references))[:3]:
        print(f"\n  document: {document[:200]!r}...\n  summary:  {summary!r}\n"
              f"  reference: {refs[0]!r}")
    return scores


## Training


def load_data(config):
    """`(train, validation, test)` records, the test split cut to `max_test_examples`."""
    train, validation, test = load_splits(config)
    test = test[: config["max_test_examples"]]
    print(f"{len(train)} training, {len(validation)} validation, {len(test)} test documents.")
    return train, validation, test


def execution_defaults(config):
    """The dtype policy and `jit_compile` to train with (`runtime.fast_defaults`).

    "auto": float32 graph mode on a CPU (the translation Transformer of the
    same width measured slower under XLA or bf16 there), XLA and
    mixed_bfloat16 on a GPU. Bucketed batches have many shapes: under XLA
    they are padded to multiples of 32 tokens.
    """
    return runtime.fast_defaults(config["precision"], config["jit_compile"], bf16_on_cpu=False)


def train(config, splits, strategy, execution, extra_callbacks):
    """The tokenizer and model of `config["summarizer"]` trained on the
    training records (`skeleton.Trained`)."""
    if config["summarizer"] == "extractive":
        return extractive.train(config, splits, strategy, execution, extra_callbacks)
    train_records, validation, _ = splits
    if config["init_from"]:  # the converted run's model and tokenizer, fine-tuned
        return fine_tuning.fine_tune(
            config, fine_tuning.check_init_from(config, [config]),
            training_pairs(train_records, config["all_references"]),
            training_pairs(validation, False), execution["jit_compile"], extra_callbacks)
    train_pairs = training_pairs(train_records, config["all_references"])
    tokenizer = checks.train_tokenizer(
        [text for pair in train_pairs for text in pair], config["vocabulary_size"]
    )
    if config["oracle_sentences"]:  # what to copy: each document's closest sentence
        train_pairs += data.oracle_sentence_pairs(train_records)
    buckets = tuple(range(32, config["max_source_length"], 32))
    # Full-size batches where they must split evenly between devices.
    pad = execution["jit_compile"] or distribute.needs_even_batches(strategy)

    def dataset(pairs, shuffle):
        return data.make_dataset(
            pairs, tokenizer, tokenizer, batch_size=config["batch_size"],
            max_source_length=config["max_source_length"],
            max_target_length=config["max_target_length"],
            shuffle=shuffle, seed=config["seed"], bucket_boundaries=buckets,
            pad_to_multiple=32 if pad else None,
        )

    datasets = [dataset(train_pairs, True), dataset(training_pairs(validation, False), False)]

    # Under a strategy, the variables live on every replica and `fit` splits
    # each (global) batch between them (keras.distribution, on JAX, only
    # while its scope is open).
    with strategy.scope():
        with runtime.dtype_policy_scope(execution["dtype_policy"]):
            model = build_model(config, tokenizer)
            model.compile(
                optimizer=keras.optimizers.Adam(config["learning_rate"]),
                # The pointer-generator outputs log-probabilities, which
                # `from_logits=True` leaves unchanged; the coverage loss is added.
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
                metrics=["accuracy"],
                jit_compile=execution["jit_compile"],  # generation is always compiled
            )
        if config["gap_sentence_epochs"]:
            pretrain_on_gap_sentences(model, [record["document"] for record in train_records],
                                      dataset, config, strategy)
        callbacks = []
        if config["backup_dir"]:  # an interrupted run resumes from its last epoch
            callbacks.append(distribute.backup_and_restore(config["backup_dir"], strategy))
        if config["keep_best_epoch"]:  # the weights of the epoch with the lowest validation loss
            callbacks.append(keras.callbacks.EarlyStopping(
                monitor="val_loss", patience=config["epochs"], restore_best_weights=True))
        print(f"Training a pointer-generator Transformer with {model.count_params():,} "
              f"parameters on {strategy.num_replicas_in_sync} replica(s).")
        history = model.fit(datasets[0], validation_data=datasets[1], epochs=config["epochs"],
                            shuffle=False, verbose=2, callbacks=callbacks + extra_callbacks)
    return skeleton.Trained(model, tokenizer, tokenizer, history)


def plot_sample_attention(trained, splits, config, decoding):
    """The copy attention of a summary of the first test document (`decoding`
    with one beam), as a PNG; nothing for the extractive summarizer or a
    fine-tuned checkpoint (no copy attention, no pieces to label it with)."""
    if config["summarizer"] == "extractive" or config["init_from"]:
        return
    tokenizer = trained.source_tokenizer
    document = splits[2][0]["document"]
    source_ids = [int(t) for t in encode_lines(
        data.as_tokenizer(tokenizer), [document], config["max_source_length"])[0] if t != 0]
    summarizer = trained.text_to_text(decoding, "summarization", config)
    sample = summarizer.search([document], num_beams=1, truncate=True, return_attention=True)
    target_ids = [int(t) for t in sample.token_ids[0] if t != 0]
    visualize.plot_attention(
        sample.attention[0, : len(target_ids), : len(source_ids)],
        [tokenizer.id_to_token(i) for i in source_ids],
        [tokenizer.id_to_token(i) for i in target_ids],
        path=os.path.join(config["output_dir"], "attention.png"),
        title="copy attention",
    )


SPEC = skeleton.RecipeSpec(
    name="summarization", description="Train a summarization model.", config=recipe_config,
    check_config=check_config, load_data=load_data, execution=execution_defaults,
    build_model=build_model, train=train, decoding_settings=decoding_settings,
    evaluate=evaluate, finish=plot_sample_attention,
    model_kind=lambda config: ("sentence_selector" if config["summarizer"] == "extractive"
                               and not config["init_from"] else "seq2seq"),
)


def main(argv=None):
    """Trains, evaluates and saves with the settings of `argv` (`--preset=NAME`,
    `--key=value`; `sys.argv[1:]` by default); returns the scores."""
    return train_and_evaluate(parse_settings(argv))


def train_and_evaluate(config, callbacks=()):
    """Trains with `config` (a full configuration dict, checked first), scores
    the test split, saves the run in `config["output_dir"]`; returns the scores
    (`skeleton.run_recipe`; `callbacks` go to `fit` too)."""
    return skeleton.run_recipe(SPEC, config, callbacks=callbacks)
