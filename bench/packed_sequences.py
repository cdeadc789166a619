"""Training throughput of the translation recipe: packed rows against
length-bucketed batches, the same model, in one run.

Run by hand (not a test):

    .venv/bin/python bench/packed_sequences.py [--data PATH.tsv] [--steps 60]
        [--rounds 4] [--warmup 15]

The data is Tatoeba English->German (`eng-deu.tsv` of the shared data folder:
`--data`, else the `shared/data/translation/` folder beside the checkout,
when present), else the recipe's built-in date pairs. The configuration is the
recipe's `eng_deu` preset (2+2 layers, d=256, 8 heads, FFN 512, SentencePiece
4000 per language, sentences cut to 24 tokens, batches of 128 pairs) with the
execution the recipe picks on this machine (`execution_defaults`).

Variants, the same initial weights, trained in rotation (bucketed, packed,
then packed, bucketed, ...), `--steps` steps a round after a warm-up of
`--warmup` steps each (tracing):

- `bucketed`: `make_dataset(...)`, the recipe's length-bucketed batches;
- `packed`: `make_dataset(..., pack=True)` and the model built with
  `packed=True`: rows of 24 source and 24 target tokens, each batch about
  128 pairs (`batch_size` counts pairs in both), so both variants take
  the same optimisation steps and the difference is the padding.

The figure is non-pad target tokens (labels != 0) per second of `fit`, per
round; the ratio packed / bucketed is the median of the per-round ratios
(rounds run within a minute of each other on this shared machine). Also
printed: the share of target slots that hold a real token, and the mean
loss of each variant's last round (the two should train alike).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402 (after the backend is chosen)
import keras  # noqa: E402 (after the backend is chosen)
import numpy as np  # noqa: E402 (after the backend is chosen)
import tensorflow as tf  # noqa: E402 (after the backend is chosen)

from keras_attention import data  # noqa: E402 (after the backend is chosen)
from keras_attention.recipes.translation import config as recipe_config  # noqa: E402
from keras_attention.recipes.translation import train as recipe  # noqa: E402

DATA_FOLDERS = ("../shared/data/translation",  # beside the checkout: from its root, or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                             "data", "translation"))  # wherever this is run from


def find_data(path):
    """`path`, else the shared eng-deu file, else "" (the built-in dates)."""
    if path:
        return path
    for folder in DATA_FOLDERS:
        candidate = os.path.join(folder, "eng-deu.tsv")
        if os.path.exists(candidate):
            return candidate
    return ""


def pairs_in(batch):
    """The number of sentence pairs in a batch, packed or not."""
    inputs, labels = batch
    if "decoder_segment_ids" in inputs:
        return int(inputs["decoder_segment_ids"].max(axis=1).sum())
    return int((labels != 0).any(axis=1).sum())


def slot_use(batches):
    """Share of target slots (labels) holding a real token."""
    tokens = sum(int(np.count_nonzero(y)) for _, y in batches)
    return tokens / sum(int(y.size) for _, y in batches)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=15)
    args = parser.parse_args()
    config = dict(recipe_config.get_eng_deu_config(), data=find_data(args.data))
    execution = recipe.execution_defaults(config)
    keras.utils.set_random_seed(0)  # before the tokenizers (see common.train_tokenizers)
    train, _, _ = recipe.split_pairs(recipe.load_pairs(config), config)
    source_tokenizer, target_tokenizer = common.train_tokenizers(train, config["vocabulary_size"])
    needed = args.warmup + args.steps * args.rounds

    names = ("bucketed", "packed")
    models, batches, initial_weights = {}, {}, None
    for name in names:
        settings = dict(config, pack=name == "packed")
        model = recipe.build_model(settings, source_tokenizer, target_tokenizer)
        initial_weights = common.compile_from(model, initial_weights, config["learning_rate"],
                                              jit_compile=execution["jit_compile"])
        dataset = data.make_dataset(
            train, source_tokenizer, target_tokenizer, batch_size=config["batch_size"],
            max_source_length=config["max_length"], max_target_length=config["max_length"],
            seed=0, pack=settings["pack"],
            pad_to_multiple=recipe.PAD_TO_MULTIPLE if execution["jit_compile"] else None,
        ).repeat()
        models[name] = model
        batches[name] = list(dataset.take(needed).as_numpy_iterator())  # outside the timing
    per_batch = {name: statistics.mean(pairs_in(batch) for batch in batches[name])
                 for name in names}
    common.emit({"machine": common.machine_info(), "loadavg_before": common.loadavg(),
                 "date": time.ctime(), "data": config["data"] or "built-in dates",
                 "train_pairs": len(train), "execution": str(execution),
                 "pairs_per_batch": per_batch,
                 "target_slot_use": {n: round(slot_use(batches[n]), 3) for n in names},
                 "versions": common.versions(tf, keras)})

    def run(name, start, count):
        """Trains `count` steps on batches[start:start + count]; returns (tokens, s, loss)."""
        chunk = batches[name][start:start + count]
        dataset = tf.data.Dataset.from_generator(
            lambda: iter(chunk), output_signature=_signature(chunk[0]),
        ).apply(tf.data.experimental.assert_cardinality(len(chunk)))
        tokens = sum(int(np.count_nonzero(y)) for _, y in chunk)
        seconds, _, loss = common.timed_fit(models[name], dataset)
        return tokens, seconds, loss

    for name in names:
        run(name, 0, args.warmup)
    rates = {name: [] for name in names}
    losses = {}
    for r in range(args.rounds):
        for name in common.rotation(names, r):
            tokens, seconds, losses[name] = run(name, args.warmup + r * args.steps, args.steps)
            rates[name].append(tokens / seconds)
            common.emit({"variant": name, "round": r, "tokens": tokens,
                         "seconds": round(seconds, 2), "tokens_per_s": round(tokens / seconds),
                         "loss": round(losses[name], 4), "loadavg": common.loadavg()[0]})
    ratios = [p / b for p, b in zip(rates["packed"], rates["bucketed"])]
    common.emit({"packed_over_bucketed_median_round_ratio": round(statistics.median(ratios), 3),
                 "round_ratios": [round(x, 3) for x in ratios],
                 "loadavg_after": common.loadavg()})
    print("\n| variant | pairs per batch | target slots used | tokens/s (median of rounds) "
          "| last-round loss |")
    print("|---|---|---|---|---|")
    for name in names:
        print(f"| {name} | {per_batch[name]:.1f} | {slot_use(batches[name]):.0%} "
              f"| {statistics.median(rates[name]):,.0f} | {losses[name]:.3f} |")
    print(f"\npacked / bucketed: {statistics.median(ratios):.2f}x (median of per-round "
          f"ratios {', '.join(f'{x:.2f}' for x in ratios)})")


def _signature(batch):
    inputs, labels = batch
    spec = {key: tf.TensorSpec((None, None), tf.int32) for key in inputs}
    return spec, tf.TensorSpec((None, None), tf.int32)


if __name__ == "__main__":
    main()
