"""Training throughput of the translation recipe's model: our automatic
execution defaults against Keras' defaults.

Run by hand (not a test):

    .venv/bin/python bench/recipe_throughput.py [--pairs 4000] [--epochs 3]

The model and the data pipeline are the translation recipe's default
(built-in date pairs, SentencePiece 800, length-bucketed batches of 64,
`transformer_seq2seq` 2+2 layers, d=128, 4 heads, FFN 256). Variants, each
its own model with the same initial weights, trained epoch by epoch in
alternation (A, B, C, A, B, C, ...):

- `keras_defaults`: `model.compile(...)` with Keras' defaults: float32 and
  `jit_compile="auto"` (XLA on the TensorFlow backend, recompiled per bucket
  shape);
- `graph_float32`: graph mode (`jit_compile=False`), float32;
- `auto`: `keras_attention.runtime.fast_defaults()` (on a CPU: graph mode,
  plus `mixed_bfloat16` where the CPU has native bf16).

Reports target tokens per second (non-pad labels) of the first epoch (with
tracing / compilation) and the median of the later epochs.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import common  # noqa: E402
from keras_attention import data, runtime  # noqa: E402
from keras_attention.models import transformer_seq2seq  # noqa: E402


def build(source_tokenizer, target_tokenizer, dtype):
    return transformer_seq2seq(
        source_tokenizer.vocabulary_size(),
        target_vocabulary_size=target_tokenizer.vocabulary_size(),
        num_layers=2, hidden_dim=128, num_heads=4, intermediate_dim=256, dropout=0.1,
        max_length=34, dtype=dtype, **data.special_token_ids(target_tokenizer),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=4000)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    # Seed once, before the tokenizers: `set_random_seed` invalidates the
    # SentencePiece resources of tokenizers made before it.
    keras.utils.set_random_seed(0)
    pairs = data.make_date_pairs(args.pairs, seed=0)
    source_tokenizer = data.train_tokenizer([s for s, _ in pairs], 800)
    target_tokenizer = data.train_tokenizer([t for _, t in pairs], 800)
    dataset = data.make_dataset(pairs, source_tokenizer, target_tokenizer, batch_size=64,
                                max_source_length=32, max_target_length=32, seed=0)
    tokens = int(sum(np.count_nonzero(labels) for _, labels in dataset.as_numpy_iterator()))
    auto = runtime.fast_defaults()
    variants = {
        "keras_defaults": (None, "auto"),
        "graph_float32": (None, False),
        "auto": (auto["dtype_policy"], auto["jit_compile"]),
    }
    models = {}
    initial_weights = None
    for name, (dtype, jit_compile) in variants.items():
        model = build(source_tokenizer, target_tokenizer, dtype)
        if initial_weights is None:
            initial_weights = model.get_weights()
        else:
            model.set_weights(initial_weights)  # the same starting point
        model.compile(
            optimizer=keras.optimizers.Adam(2e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
            jit_compile=jit_compile,
        )
        models[name] = model
    common.emit({"machine": common.machine_info(), "loadavg_before": common.loadavg(),
                 "auto": auto, "target_tokens_per_epoch": tokens,
                 "versions": common.versions(tf, keras)})
    seconds = {name: [] for name in variants}
    for epoch in range(args.epochs):
        order = list(variants)[epoch % 3:] + list(variants)[: epoch % 3]
        for name in order:
            start = time.perf_counter()
            models[name].fit(dataset, epochs=1, verbose=0, shuffle=False)
            seconds[name].append(time.perf_counter() - start)
            common.emit({"variant": name, "epoch": epoch, "seconds": round(seconds[name][-1], 2)})
    rows = {}
    for name, times in seconds.items():
        steady = statistics.median(times[1:]) if len(times) > 1 else times[0]
        rows[name] = {"first_epoch_tokens_per_s": round(tokens / times[0], 1),
                      "steady_tokens_per_s": round(tokens / steady, 1)}
    common.emit({"results": rows, "loadavg_after": common.loadavg()})
    base = rows["keras_defaults"]
    print("\n| variant | first epoch tokens/s | later epochs tokens/s | vs Keras defaults (later) | vs Keras defaults (first) |")
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['first_epoch_tokens_per_s']} | {row['steady_tokens_per_s']} | "
              f"{row['steady_tokens_per_s'] / base['steady_tokens_per_s']:.2f}x | "
              f"{row['first_epoch_tokens_per_s'] / base['first_epoch_tokens_per_s']:.2f}x |")


if __name__ == "__main__":
    main()
