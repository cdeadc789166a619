"""
Title: Neural machine translation with keras_attention
Description: Train a Transformer (or a Bahdanau-attention RNN) translator from
a file of sentence pairs, or from built-in data (human-written dates to ISO
dates), report BLEU and chrF with sacrebleu on a held-out split, show sample
translations and the attention of one of them, and save a model that
`keras-attention generate` can use.
Accelerator: none needed (2 CPU cores).

## Introduction

The recipe follows the usual steps: split the pairs (sources never shared
between splits), train SentencePiece tokenizers on the training split only,
batch by length, train with `model.fit`, then decode the test split with the
cached, XLA-compiled beam search of `Seq2SeqModel.generate` and score the
detokenized output with sacrebleu.

Before anything is trained, the whole configuration is checked: every
setting (`config.RULES`), the output folder (`runs.check_output_dir`), the
backup folder (`--backup_dir` holds a backup of these settings, or none),
the splits (none empty) and the vocabulary size (one SentencePiece can
train on these sentences).

Run: `keras-attention train translation [--data=PATH.tsv] [--architecture=rnn] [--key=value ...]`
or `python examples/translation/train.py ...` (the settings and presets:
`keras_attention/recipes/translation/config.py`; `--distribution=mirrored`
for several GPUs on TensorFlow, `--distribution=data_parallel` on JAX:
docs/guides/distributed.md)
"""

import os
import sys

import keras

from keras_attention import (
    data,
    distribute,
    losses,
    runs,
    runtime,
    schedules,
    settings,
    visualize,
)
from keras_attention.callbacks import AverageLastEpochs
from keras_attention.models import rnn_seq2seq, transformer_seq2seq
from keras_attention.recipes import checks, fine_tuning, skeleton
from keras_attention.recipes.translation import config as recipe_config
from keras_attention.tokenizer import encode_lines

## Settings


def parse_settings(argv=None):
    """The configuration from `--preset=NAME` and `--key=value` arguments
    (`sys.argv[1:]` by default), checked (`keras_attention.settings`)."""
    return skeleton.parse_settings(SPEC, sys.argv[1:] if argv is None else argv)


def check_config(config):
    """`config` if every setting is known, of its type and within its rule
    (and `pack` only with the transformer)."""
    config = settings.check(config, recipe_config.get_config(), recipe_config.RULES)
    if config["average_last_epochs"] > config["epochs"]:
        raise ValueError(
            "`average_last_epochs` must be at most `epochs` (the epochs to average). "
            f"Received: average_last_epochs={config['average_last_epochs']}, "
            f"epochs={config['epochs']}"
        )
    fine_tuning.check_init_from(config, [preset() for preset in recipe_config.PRESETS.values()])
    if config["pack"] and config["architecture"] != "transformer":
        raise ValueError(
            "`pack=true` needs `architecture=transformer` (the RNN reads a row "
            f"as one sequence). Received: architecture={config['architecture']!r}"
        )
    return config


## Setup: data and tokenizers


def load_pairs(config):
    """Sentence pairs from `config["data"]`, or built-in date pairs."""
    if config["data"]:
        return data.load_sentence_pairs(config["data"], max_pairs=config["max_pairs"] or None)
    return data.make_date_pairs(config["num_examples"], seed=config["seed"])


def split_pairs(pairs, config):
    """Train/validation/test; all translations of a source stay together.

    Raises:
        ValueError: naming the fraction of a split that came out empty.
    """
    train, validation, test = data.split_examples(
        pairs,
        validation_fraction=config["validation_fraction"],
        test_fraction=config["test_fraction"],
        seed=config["seed"],
        group_key=lambda pair: pair[0],
    )
    checks.check_split("validation", validation, "validation_fraction",
                       config["validation_fraction"])
    checks.check_split("test", test, "test_fraction", config["test_fraction"])
    return train, validation, test


## Model

PAD_TO_MULTIPLE = 16  # under XLA: batch lengths 16 or 32, one program each


def execution_defaults(config):
    """The dtype policy and `jit_compile` to train with (`runtime.fast_defaults`).

    "auto" on a CPU is float32 graph mode: for this small model, XLA (on
    batches padded to one shape) and mixed_bfloat16 both measured slower
    (bench/RESULTS.md). On a GPU: XLA and mixed_bfloat16, with the batches
    padded to a few fixed shapes (`pad_to_multiple`) so that XLA compiles
    a few programs once.
    """
    return runtime.fast_defaults(config["precision"], config["jit_compile"], bf16_on_cpu=False)


def train_tokenizers(config, train_pairs):
    """`(source, target)` SentencePiece tokenizers trained on the training
    pairs: one tokenizer on both sides' texts (the same object twice) with
    `shared_vocabulary`, else one per language."""
    sources, targets = [s for s, _ in train_pairs], [t for _, t in train_pairs]
    if config["shared_vocabulary"]:
        tokenizer = checks.train_tokenizer(sources + targets, config["vocabulary_size"])
        return tokenizer, tokenizer
    return (checks.train_tokenizer(sources, config["vocabulary_size"]),
            checks.train_tokenizer(targets, config["vocabulary_size"]))


#: fairseq's first position (M2M100's pad id 1, + 1).
FAIRSEQ_POSITION_OFFSET = 2


def build_model(config, source_tokenizer, target_tokenizer):
    sizes = dict(
        vocabulary_size=source_tokenizer.vocabulary_size(),
        target_vocabulary_size=target_tokenizer.vocabulary_size(),
        **data.special_token_ids(target_tokenizer),
    )
    if config["architecture"] == "rnn":
        return rnn_seq2seq(
            **sizes, embedding_dim=config["hidden_dim"], units=2 * config["hidden_dim"],
            attention="bahdanau", dropout=config["dropout"],
        )
    # Pre-norm blocks with final norms, fairseq's sinusoidal positions counted
    # from 2, LayerNorm epsilon 1e-5 and no output bias: what Hugging Face's
    # M2M100 computes (with one vocabulary; it counts positions from its pad
    # id 1 + 1, CTranslate2 from 2), so that the run exports as a
    # transformers checkpoint with its tokens in fairseq's order.
    return transformer_seq2seq(
        **sizes, num_layers=config["num_layers"], hidden_dim=config["hidden_dim"],
        num_heads=config["num_heads"], intermediate_dim=config["intermediate_dim"],
        dropout=config["dropout"], max_length=config["max_length"] + 2,
        packed=config["pack"], share_embeddings=source_tokenizer is target_tokenizer,
        position="sinusoidal_fairseq", position_offset=FAIRSEQ_POSITION_OFFSET,
        layer_norm_epsilon=1e-5, output_bias=False,
    )


def compile_settings(config):
    """The optimizer and loss of `config`: Adam at `learning_rate` (the peak of
    a warmup and inverse square root decay when `warmup_steps` > 0), and the
    cross-entropy over the non-pad tokens (with `label_smoothing`)."""
    learning_rate = config["learning_rate"]
    if config["warmup_steps"]:
        learning_rate = schedules.WarmupInverseSqrtDecay(learning_rate, config["warmup_steps"])
    if config["label_smoothing"]:
        loss = losses.SmoothedSparseCrossentropy(config["label_smoothing"], ignore_class=0)
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    return {"optimizer": keras.optimizers.Adam(learning_rate), "loss": loss}


## Evaluation


def decoding_settings(config, target_tokenizer):
    """How this recipe decodes (`runs.GenerationConfig`), as the run folder
    records it (`runs.save_run`): pad, `<unk>` and start are never generated
    (`data.never_generated_ids`). With `init_from`: the converted run's
    settings."""
    if config["init_from"]:
        return fine_tuning.decoding_settings(config)
    return runs.GenerationConfig(
        source_length=config["max_length"], target_length=config["max_length"],
        strategy=config["strategy"], num_beams=config["num_beams"],
        length_penalty=config["length_penalty"],
        length_penalty_form=config["length_penalty_form"],
        suppress_token_ids=data.never_generated_ids(target_tokenizer))


def evaluate(trained, splits, config, decoding):
    """BLEU and chrF of the test split, decoded with `decoding`."""
    test = splits[2]
    sources = [s for s, _ in test]
    references = [t for _, t in test]
    translator = trained.text_to_text(decoding, "translation", config)
    hypotheses = translator.generate(sources, verbose=1, truncate=True)
    scores = {**translator.score(hypotheses, references), "test_examples": len(test)}
    print(f"\nTest BLEU {scores['bleu']:.1f}, chrF {scores['chrf']:.1f} "
          f"({decoding.strategy} decoding, sacrebleu, detokenized).")
    for source, hypothesis, reference in list(zip(sources, hypotheses, references))[:5]:
        print(f"  {source!r} -> {hypothesis!r} (reference {reference!r})")
    return scores


## Training


def load_data(config):
    """`(train, validation, test)` pairs, the test split cut to `max_test_examples`."""
    train, validation, test = split_pairs(load_pairs(config), config)
    test = test[: config["max_test_examples"]]
    print(f"{len(train)} training, {len(validation)} validation, {len(test)} test pairs.")
    return train, validation, test


def train(config, splits, strategy, execution, extra_callbacks):
    """Tokenizers and a model trained on the training split (`skeleton.Trained`);
    with `init_from`, the converted run's model and tokenizer fine-tuned."""
    train_pairs, validation, _ = splits
    if config["init_from"]:
        metadata = fine_tuning.check_init_from(config, [config])
        return fine_tuning.fine_tune(config, metadata, train_pairs, validation,
                                     execution["jit_compile"], extra_callbacks)
    source_tokenizer, target_tokenizer = train_tokenizers(config, train_pairs)
    # Padded to a few full-size shapes: a few programs for XLA to compile, and
    # batches that split evenly between devices where they must.
    pad = execution["jit_compile"] or distribute.needs_even_batches(strategy)
    datasets = [
        data.make_dataset(
            split, source_tokenizer, target_tokenizer, batch_size=config["batch_size"],
            max_source_length=config["max_length"], max_target_length=config["max_length"],
            shuffle=shuffle, seed=config["seed"],
            pad_to_multiple=PAD_TO_MULTIPLE if pad else None,
            pack=config["pack"],
        )
        for split, shuffle in ((train_pairs, True), (validation, False))
    ]

    # Under a strategy, the variables live on every replica and `fit` splits
    # each (global) batch between them (keras.distribution, on JAX, only
    # while its scope is open).
    with strategy.scope():
        with runtime.dtype_policy_scope(execution["dtype_policy"]):
            model = build_model(config, source_tokenizer, target_tokenizer)
            model.compile(
                **compile_settings(config),
                metrics=["accuracy"],
                jit_compile=execution["jit_compile"],  # generation is always compiled
            )
        averaging = AverageLastEpochs(config["average_last_epochs"])
        callbacks = [averaging] if config["average_last_epochs"] > 1 else []
        if config["backup_dir"]:  # an interrupted run resumes from its last epoch
            callbacks.append(distribute.backup_and_restore(config["backup_dir"], strategy))
        callbacks += extra_callbacks
        print(f"Training a {config['architecture']} model with {model.count_params():,} "
              f"parameters on {strategy.num_replicas_in_sync} replica(s).")
        history = model.fit(datasets[0], validation_data=datasets[1], epochs=config["epochs"],
                            callbacks=callbacks, shuffle=False, verbose=2)  # shuffled by the data
        if config["average_last_epochs"] > 1:  # the averaged weights, on the validation split
            averaged = model.evaluate(datasets[1], verbose=0, return_dict=True)
            print(f"Averaged the weights of epochs {averaging.averaged_epochs}: "
                  f"validation loss {averaged['loss']:.4f}, accuracy {averaged['accuracy']:.4f}.")
    return skeleton.Trained(model, source_tokenizer, target_tokenizer, history)


def plot_sample_attention(trained, splits, config, decoding):
    """The attention of a greedy translation (`decoding` otherwise) of the
    first test source, as a PNG."""
    if config["init_from"]:
        return  # a checkpoint's tokenizer: no pieces to label the plot with
    source_tokenizer, target_tokenizer = trained.source_tokenizer, trained.target_tokenizer
    sources = [s for s, _ in splits[2][:1]]
    translator = trained.text_to_text(decoding, "translation", config)
    sample = translator.search(sources, "greedy", truncate=True, return_attention=True)
    target_ids = [int(t) for t in sample.token_ids[0] if t != 0]
    source_ids = [int(t) for t in encode_lines(data.as_tokenizer(source_tokenizer), sources,
                                               config["max_length"])[0] if t != 0]
    visualize.plot_attention(
        sample.attention[0, : len(target_ids), : len(source_ids)],
        [source_tokenizer.id_to_token(i) for i in source_ids],
        [target_tokenizer.id_to_token(i) for i in target_ids],
        path=os.path.join(config["output_dir"], "attention.png"),
        title=f"{sources[0]!r}",
    )


SPEC = skeleton.RecipeSpec(
    name="translation", description="Train a translation model.", config=recipe_config,
    check_config=check_config, load_data=load_data, execution=execution_defaults,
    build_model=build_model, train=train, decoding_settings=decoding_settings,
    evaluate=evaluate, finish=plot_sample_attention,
    model_kind=lambda config: "seq2seq",
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
