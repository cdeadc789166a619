"""
Title: Question answering on bAbI stories with an attention seq2seq model
Description: Read a story and a question, generate the answer: a Transformer
encoder-decoder from keras_attention trained on the bAbI tasks (or on
built-in bAbI-like stories), with per-task accuracy on the test files and
SQuAD-style exact match and F1 overall.
Accelerator: none needed (2 CPU cores).

## Introduction

Each example becomes a translation problem: the source is the (last
`max_sentences`) story sentences followed by the question, the target is the
answer (one or a few words). The decoder's cross-attention shows which
sentences the model read to answer.

Run: `python examples/question_answering/train.py [--data=../shared/data/qa/babi/en] [--tasks=1-20]`
"""

import argparse
import collections
import importlib.util
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention import data, metrics, runs  # noqa: E402
from keras_attention.models import transformer_seq2seq  # noqa: E402



def _load_config_module():
    """This recipe's `config.py`, loaded by path (recipes do not share names)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.py")
    spec = importlib.util.spec_from_file_location("question_answering_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recipe_config = _load_config_module()


## Data: (source, answer, task) triples


def parse_tasks(spec):
    """"1-3,5" -> [1, 2, 3, 5]."""
    tasks = []
    for part in str(spec).split(","):
        low, _, high = part.partition("-")
        tasks.extend(range(int(low), int(high or low) + 1))
    return tasks


def as_source(example, max_sentences, question_first=False):
    """The encoder's text: the story, then the question, or the question
    first with `question_first=True` (measured: no better, see
    examples/RESULTS.md)."""
    story = " ".join(example["story"][-max_sentences:])
    if question_first:
        return f"{example['question']} | {story}"
    return f"{story} | {example['question']}"


def load_examples(config):
    """Train and test triples `(source, answer, task)`."""
    if not config["data"]:
        stories = data.make_stories(config["num_examples"], seed=config["seed"])
        triples = [(as_source(e, config["max_sentences"], config["question_first"]), e["answer"], 1)
                   for e in stories]
        train, _, test = data.split_examples(
            triples, validation_fraction=0.0, test_fraction=config["test_fraction"],
            seed=config["seed"],
        )
        return train, test
    splits = {"train": [], "test": []}
    for task in parse_tasks(config["tasks"]):
        for split in splits:
            for example in data.load_babi_task(config["data"], task, split):
                splits[split].append(
                    (as_source(example, config["max_sentences"], config["question_first"]),
                     example["answer"], task)
                )
    return splits["train"], splits["test"]


## Evaluation


def answer(model, sources, source_tokenizer, target_tokenizer, config):
    token_ids = data.encode_sources(sources, source_tokenizer, config["max_length"])
    generated = model.generate(
        token_ids, max_length=config["max_answer_length"], batch_size=128, verbose=1
    )
    return data.detokenize(target_tokenizer, generated)


def score(predictions, test):
    """Per-task accuracy (exact answer) and SQuAD exact match / F1 overall."""
    by_task = collections.defaultdict(list)
    for prediction, (_, gold, task) in zip(predictions, test):
        by_task[task].append(metrics.normalize_answer(prediction) == metrics.normalize_answer(gold))
    per_task = {task: 100.0 * float(np.mean(hits)) for task, hits in sorted(by_task.items())}
    golds = [[gold] for _, gold, _ in test]
    return {
        "per_task_accuracy": per_task,
        "mean_accuracy": float(np.mean(list(per_task.values()))),
        "exact_match": metrics.exact_match(predictions, golds),
        "f1": metrics.f1_score(predictions, golds),
    }


def main(config):
    keras.utils.set_random_seed(config["seed"])
    train, test = load_examples(config)
    print(f"{len(train)} training and {len(test)} test questions.")
    source_tokenizer = data.train_tokenizer([s for s, _, _ in train], config["vocabulary_size"])
    target_tokenizer = data.train_tokenizer([a for _, a, _ in train], config["vocabulary_size"])
    dataset = data.make_dataset(
        [(s, a) for s, a, _ in train], source_tokenizer, target_tokenizer,
        batch_size=config["batch_size"], max_source_length=config["max_length"],
        max_target_length=config["max_answer_length"], seed=config["seed"],
        bucket_boundaries=(32, 64, 96, 128),
    )
    model = transformer_seq2seq(
        source_tokenizer.vocabulary_size(),
        target_vocabulary_size=target_tokenizer.vocabulary_size(),
        num_layers=config["num_layers"], hidden_dim=config["hidden_dim"],
        num_heads=config["num_heads"], intermediate_dim=config["intermediate_dim"],
        dropout=config["dropout"], max_length=config["max_length"] + 2,
        **data.special_token_ids(target_tokenizer),
    )
    model.compile(
        optimizer=keras.optimizers.Adam(config["learning_rate"]),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        metrics=["accuracy"],
    )
    start = time.time()
    model.fit(dataset, epochs=config["epochs"], shuffle=False, verbose=2)
    train_seconds = time.time() - start

    predictions = answer(model, [s for s, _, _ in test], source_tokenizer, target_tokenizer,
                         config)
    scores = dict(score(predictions, test), train_seconds=round(train_seconds, 1),
                  parameters=model.count_params())
    print(f"\nMean accuracy over {len(scores['per_task_accuracy'])} task(s): "
          f"{scores['mean_accuracy']:.1f}% (exact match {scores['exact_match']:.1f}, "
          f"F1 {scores['f1']:.1f}); trained in {train_seconds:.0f} s.")
    for task, accuracy in scores["per_task_accuracy"].items():
        print(f"  task {task:2d}: {accuracy:5.1f}%")
    for (source, gold, _), prediction in list(zip(test, predictions))[:3]:
        print(f"  {source[:70]!r}... -> {prediction!r} (gold {gold!r})")
    runs.save_run(config["output_dir"], model, source_tokenizer, target_tokenizer,
                  recipe="question_answering", config=config, scores=scores)
    return scores


def parse_overrides():
    config = recipe_config.get_config()
    parser = argparse.ArgumentParser(description="Train a question-answering model.")
    parser.add_argument("--preset", choices=["default", "quick", "babi"], default="default")
    for key, value in config.items():
        parser.add_argument(f"--{key}", type=type(value), default=None)
    args = vars(parser.parse_args())
    preset = {
        "default": recipe_config.get_config,
        "quick": recipe_config.get_quick_config,
        "babi": recipe_config.get_babi_config,
    }[args.pop("preset")]()
    preset.update({k: v for k, v in args.items() if v is not None})
    return preset


if __name__ == "__main__":
    main(parse_overrides())
