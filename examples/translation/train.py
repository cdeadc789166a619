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

Run: `python examples/translation/train.py [--data=PATH.tsv] [--architecture=rnn] [--key=value ...]`
(`--distribution=mirrored` for several GPUs: docs/guides/distributed.md)
"""

import argparse
import importlib.util
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402

from keras_attention import data, distribute, metrics, runs, runtime, visualize  # noqa: E402
from keras_attention.models import rnn_seq2seq, transformer_seq2seq  # noqa: E402



def _load_config_module():
    """This recipe's `config.py`, loaded by path (recipes do not share names)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.py")
    spec = importlib.util.spec_from_file_location("translation_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recipe_config = _load_config_module()


## Setup: data and tokenizers


def load_pairs(config):
    """Sentence pairs from `config["data"]`, or built-in date pairs."""
    if config["data"]:
        return data.load_sentence_pairs(config["data"], max_pairs=config["max_pairs"] or None)
    return data.make_date_pairs(config["num_examples"], seed=config["seed"])


def split_pairs(pairs, config):
    """Train/validation/test; all translations of a source stay together."""
    return data.split_examples(
        pairs,
        validation_fraction=config["validation_fraction"],
        test_fraction=config["test_fraction"],
        seed=config["seed"],
        group_key=lambda pair: pair[0],
    )


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
    return transformer_seq2seq(
        **sizes, num_layers=config["num_layers"], hidden_dim=config["hidden_dim"],
        num_heads=config["num_heads"], intermediate_dim=config["intermediate_dim"],
        dropout=config["dropout"], max_length=config["max_length"] + 2,
    )


## Evaluation


def translate(model, sources, source_tokenizer, target_tokenizer, config, **kwargs):
    """Detokenized translations of `sources`, and the generation result."""
    token_ids = data.encode_sources(sources, source_tokenizer, config["max_length"])
    result = model.generate(
        token_ids, max_length=config["max_length"], strategy=config["strategy"],
        num_beams=config["num_beams"], length_penalty=config["length_penalty"],
        batch_size=64, verbose=1, return_scores=True, **kwargs,
    )
    return data.detokenize(target_tokenizer, result.token_ids), result


def main(config):
    # First, before any TensorFlow op: multi_worker connects to the other workers.
    strategy = distribute.get_strategy(config["distribution"])
    keras.utils.set_random_seed(config["seed"])
    pairs = load_pairs(config)
    train, validation, test = split_pairs(pairs, config)
    test = test[: config["max_test_examples"]]
    print(f"{len(train)} training, {len(validation)} validation, {len(test)} test pairs.")

    execution = execution_defaults(config)
    print(runtime.describe(execution))

    source_tokenizer = data.train_tokenizer([s for s, _ in train], config["vocabulary_size"])
    target_tokenizer = data.train_tokenizer([t for _, t in train], config["vocabulary_size"])
    datasets = [
        data.make_dataset(
            split, source_tokenizer, target_tokenizer, batch_size=config["batch_size"],
            max_source_length=config["max_length"], max_target_length=config["max_length"],
            shuffle=shuffle, seed=config["seed"],
            pad_to_multiple=PAD_TO_MULTIPLE if execution["jit_compile"] else None,
        )
        for split, shuffle in ((train, True), (validation, False))
    ]

    # Under a strategy, the variables live on every replica and `fit` splits
    # each (global) batch between them.
    with strategy.scope(), runtime.dtype_policy_scope(execution["dtype_policy"]):
        model = build_model(config, source_tokenizer, target_tokenizer)
        model.compile(
            optimizer=keras.optimizers.Adam(config["learning_rate"]),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
            metrics=["accuracy"],
            jit_compile=execution["jit_compile"],  # generation is always compiled
        )
    callbacks = []
    if config["backup_dir"]:  # an interrupted run resumes from its last epoch
        callbacks.append(distribute.backup_and_restore(config["backup_dir"], strategy))
    print(f"Training a {config['architecture']} model with {model.count_params():,} parameters "
          f"on {strategy.num_replicas_in_sync} replica(s).")
    start = time.time()
    history = model.fit(datasets[0], validation_data=datasets[1], epochs=config["epochs"],
                        callbacks=callbacks, shuffle=False, verbose=2)  # shuffled by the dataset
    train_seconds = time.time() - start

    sources = [s for s, _ in test]
    references = [t for _, t in test]
    hypotheses, _ = translate(model, sources, source_tokenizer, target_tokenizer, config)
    scores = {
        "bleu": metrics.bleu(hypotheses, references),
        "chrf": metrics.chrf(hypotheses, references),
        "train_seconds": round(train_seconds, 1),
        "parameters": model.count_params(),
        "test_examples": len(test),
    }
    print(f"\nTest BLEU {scores['bleu']:.1f}, chrF {scores['chrf']:.1f} "
          f"({config['strategy']} decoding, sacrebleu, detokenized), "
          f"trained in {train_seconds:.0f} s.")
    for source, hypothesis, reference in list(zip(sources, hypotheses, references))[:5]:
        print(f"  {source!r} -> {hypothesis!r} (reference {reference!r})")

    if not distribute.is_chief(strategy):
        return scores  # one worker of several: the chief writes the run
    runs.save_run(config["output_dir"], model, source_tokenizer, target_tokenizer,
                  recipe="translation", config=config, scores=scores)
    _, sample = translate(model, sources[:1], source_tokenizer, target_tokenizer,
                          dict(config, strategy="greedy"), return_attention=True)
    target_ids = [int(t) for t in sample.token_ids[0] if t != 0]
    source_ids = [int(t) for t in data.encode_sources(sources[:1], source_tokenizer,
                                                      config["max_length"])[0] if t != 0]
    visualize.plot_attention(
        sample.attention[0, : len(target_ids), : len(source_ids)],
        [source_tokenizer.id_to_token(i) for i in source_ids],
        [target_tokenizer.id_to_token(i) for i in target_ids],
        path=os.path.join(config["output_dir"], "attention.png"),
        title=f"{sources[0]!r}",
    )
    visualize.plot_history(history, path=os.path.join(config["output_dir"], "training.png"))
    print(f"Saved the model, tokenizers, attention plot and training curves in "
          f"{config['output_dir']}/")
    return scores


def parse_overrides(config):
    parser = argparse.ArgumentParser(description="Train a translation model.")
    parser.add_argument("--preset", choices=["default", "quick", "eng_deu"], default="default")
    for key, value in config.items():
        parser.add_argument(f"--{key}", type=type(value), default=None)
    args = vars(parser.parse_args())
    preset = {
        "default": recipe_config.get_config,
        "quick": recipe_config.get_quick_config,
        "eng_deu": recipe_config.get_eng_deu_config,
    }[args.pop("preset")]()
    preset.update({k: v for k, v in args.items() if v is not None})
    return preset


if __name__ == "__main__":
    main(parse_overrides(recipe_config.get_config()))
