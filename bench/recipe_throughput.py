"""Training throughput of the translation recipe's model: the recipe's
automatic execution defaults against Keras' defaults.

Run by hand (not a test):

    .venv/bin/python bench/recipe_throughput.py [--pairs 4000] [--epochs 5]
        [--variants keras_defaults,xla_padded,graph_bf16] [--threads 1]

The model and the data pipeline are the translation recipe's default
(built-in date pairs, SentencePiece 800, length-bucketed batches of 64,
`transformer_seq2seq` 2+2 layers, d=128, 4 heads, FFN 256). Variants, each
its own model with the same initial weights, trained epoch by epoch in
rotation (A, B, C, then B, C, A, ...):

- `keras_defaults`: `model.compile(...)` with Keras' defaults: float32 and
  `jit_compile="auto"` (on a CPU-only machine Keras resolves it to graph
  mode; on a GPU to XLA), on the recipe's bucketed batches;
- `auto`: what the recipe picks with `precision="auto"`,
  `jit_compile="auto"` (`execution_defaults` in examples/translation/train.py,
  i.e. `keras_attention.runtime.fast_defaults(bf16_on_cpu=False)`), with the
  recipe's batches for that choice (padded to multiples of 16 under XLA);
- `xla_padded`: XLA, float32, batches padded to multiples of 16 tokens and
  to full batches (one shape on the default data: one compile);
- `graph_bf16`: graph mode with `mixed_bfloat16` (the CPU default for
  matmul-bound models where bf16 is native);
- `xla_bucketed`: XLA, float32, on unpadded bucketed batches (one compile
  per batch shape);
- `graph_float32`: `jit_compile=False`, float32;
- `graph_spe16`: the same with `steps_per_execution=16` (16 steps per
  call of the compiled function: less Python work per step).

Reports target tokens per second (non-pad labels) of the first epoch (with
tracing / compilation), the median of the later epochs, and the median of
the per-round ratios to `keras_defaults` (each round runs every variant
once, so a ratio compares epochs run within a minute of each other; the
machine is shared), and the same for the process CPU time per epoch
(`time.process_time`, all threads), which moves less than wall time when
other jobs hold the cores.
"""

import argparse
import importlib
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402 (after the backend is chosen)
import keras  # noqa: E402 (after the backend is chosen)
import numpy as np  # noqa: E402 (after the backend is chosen)
import tensorflow as tf  # noqa: E402 (after the backend is chosen)

from keras_attention import data, runtime  # noqa: E402 (after the backend is chosen)


def load_recipe():
    return importlib.import_module("keras_attention.recipes.translation.train")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=4000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--variants", default="keras_defaults,auto,xla_padded,graph_bf16")
    parser.add_argument("--threads", type=int, default=0,
                        help="TF intra- and inter-op threads (0 = all cores)")
    args = parser.parse_args()
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    recipe = load_recipe()
    config = dict(recipe.recipe_config.get_config(), num_examples=args.pairs)
    auto = recipe.execution_defaults(config)
    # (dtype policy, jit_compile, pad_to_multiple, steps_per_execution)
    choices = {
        "keras_defaults": ("float32", "auto", None, 1),
        "auto": (auto["dtype_policy"], auto["jit_compile"],
                 recipe.PAD_TO_MULTIPLE if auto["jit_compile"] else None, 1),
        "graph_bf16": ("mixed_bfloat16", False, None, 1),
        "xla_padded": ("float32", True, recipe.PAD_TO_MULTIPLE, 1),
        "xla_bucketed": ("float32", True, None, 1),
        "graph_float32": ("float32", False, None, 1),
        "graph_spe16": ("float32", False, None, 16),
    }
    variants = {name: choices[name] for name in args.variants.split(",")}
    # Seed once, before the tokenizers: `set_random_seed` invalidates the
    # SentencePiece resources of tokenizers made before it.
    keras.utils.set_random_seed(0)
    pairs = recipe.load_pairs(config)
    source_tokenizer, target_tokenizer = common.train_tokenizers(pairs, config["vocabulary_size"])

    def dataset(pad_to_multiple):
        return data.make_dataset(
            pairs, source_tokenizer, target_tokenizer, batch_size=config["batch_size"],
            max_source_length=config["max_length"], max_target_length=config["max_length"],
            seed=0, pad_to_multiple=pad_to_multiple)

    tokens = int(sum(np.count_nonzero(labels) for _, labels in dataset(None).as_numpy_iterator()))
    models, datasets, initial_weights = {}, {}, None
    for name, (policy, jit_compile, pad_to_multiple, steps) in variants.items():
        with runtime.dtype_policy_scope(policy):
            model = recipe.build_model(config, source_tokenizer, target_tokenizer)
        initial_weights = common.compile_from(model, initial_weights, config["learning_rate"],
                                              jit_compile=jit_compile, steps_per_execution=steps)
        models[name] = model
        datasets[name] = dataset(pad_to_multiple)
        shapes = {(x["encoder_token_ids"].shape, x["decoder_token_ids"].shape)
                  for x, _ in datasets[name].as_numpy_iterator()}
        common.emit({"variant": name, "dtype_policy": policy, "jit_compile": jit_compile,
                     "pad_to_multiple": pad_to_multiple, "batch_shapes": len(shapes)})
    common.emit({"machine": common.machine_info(), "loadavg_before": common.loadavg(),
                 "auto": auto, "target_tokens_per_epoch": tokens, "date": time.ctime(),
                 "versions": common.versions(tf, keras)})
    names = list(variants)
    seconds = {name: [] for name in names}
    cpu_seconds = {name: [] for name in names}
    losses = {name: [] for name in names}
    for epoch in range(args.epochs):
        for name in common.rotation(names, epoch):
            wall, cpu, loss = common.timed_fit(models[name], datasets[name])
            seconds[name].append(wall)
            cpu_seconds[name].append(cpu)
            losses[name].append(round(loss, 4))
            common.emit({"variant": name, "epoch": epoch, "seconds": round(seconds[name][-1], 2),
                         "cpu_seconds": round(cpu_seconds[name][-1], 2),
                         "loss": losses[name][-1], "loadavg": common.loadavg()[0]})
    rows = {}
    base = names[0]
    for name, times in seconds.items():
        steady = statistics.median(times[1:]) if len(times) > 1 else times[0]
        ratios = [b / t for b, t in zip(seconds[base][1:], times[1:])]
        ratios = ratios or [seconds[base][0] / times[0]]
        cpu = cpu_seconds[name][1:] or cpu_seconds[name]
        cpu_ratios = [b / t for b, t in zip(cpu_seconds[base][1:], cpu_seconds[name][1:])]
        rows[name] = {"first_epoch_tokens_per_s": round(tokens / times[0], 1),
                      "steady_tokens_per_s": round(tokens / steady, 1),
                      "median_round_ratio": round(statistics.median(ratios), 3),
                      "tokens_per_cpu_s": round(tokens / statistics.median(cpu), 1),
                      "median_round_cpu_ratio": round(statistics.median(cpu_ratios or [1.0]), 3),
                      "losses": losses[name]}
    common.emit({"results": rows, "loadavg_after": common.loadavg()})
    print(f"\n| variant | first epoch tokens/s | later epochs tokens/s "
          f"| vs {base} (median of rounds) | tokens per CPU-second | vs {base} (CPU time) "
          f"| vs {base} (first epoch) |")
    print("|---|---|---|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['first_epoch_tokens_per_s']:,.0f} "
              f"| {row['steady_tokens_per_s']:,.0f} | {row['median_round_ratio']:.2f}x "
              f"| {row['tokens_per_cpu_s']:,.0f} | {row['median_round_cpu_ratio']:.2f}x | "
              f"{row['first_epoch_tokens_per_s'] / rows[base]['first_epoch_tokens_per_s']:.2f}x |")


if __name__ == "__main__":
    main()
