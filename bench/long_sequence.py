"""Time and peak memory of attention on long sequences, ours against Keras.

Run by hand (not a test):

    .venv/bin/python bench/long_sequence.py [--lengths 1024,2048,4096,8192,16384]
        [--keras-max 8192] [--reps 2] [--plot bench/long_sequence.png]

Batch 1, model dim 256, 8 heads, float32; one measurement = forward +
backward (gradients of mean(y^2) with respect to the input and the layer's
weights) inside `tf.function`, graph mode. Each (implementation, length)
runs in its own subprocess so that its peak resident memory (`ru_maxrss`)
is its own; "extra memory" is that peak minus the resident memory just
before the first call. Implementations:

- `keras_mha`: `keras.layers.MultiHeadAttention(8, 32)`;
- `ours_mha`: `keras_attention.layers.MultiHeadAttention(8, 32)` with its
  default `query_block_size="auto"` (512-query blocks with recomputation
  from 2048 x 2048 scores on);
- `ours_exact`: the same layer with `query_block_size=None` (run up to
  `--keras-max`, like Keras).

Prints one JSON line per run, a markdown table and writes a PNG plot.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

D, H = 256, 8


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_one(impl, length, reps):
    """Runs in the subprocess: returns median seconds and extra peak MiB."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_attention import layers

    keras.utils.set_random_seed(0)
    if impl == "keras_mha":
        layer = keras.layers.MultiHeadAttention(H, D // H)
    else:
        layer = layers.MultiHeadAttention(
            H, D // H, query_block_size="auto" if impl == "ours_mha" else None
        )
    x = tf.Variable(np.random.default_rng(0).normal(size=(1, length, D)).astype("float32"))
    small = tf.zeros((1, 8, D))
    layer(small, small)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            y = layer(x, x)
            loss = tf.reduce_mean(tf.square(y))
        grads = tape.gradient(loss, [x] + layer.trainable_variables)
        return loss, tf.add_n([tf.reduce_sum(g) for g in grads])

    step.get_concrete_function()
    before = rss_mib()
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        _, total = step()
        float(total)
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"impl": impl, "length": length, "first_s": round(times[0], 3),
            "median_s": round(sorted(times[1:])[len(times[1:]) // 2], 3),
            "extra_mib": round(peak - before, 1), "finite": bool(np.isfinite(float(total)))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    parser.add_argument("--keras-max", type=int, default=8192)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--plot", default=os.path.join(os.path.dirname(__file__),
                                                       "long_sequence.png"))
    parser.add_argument("--child", nargs=2, metavar=("IMPL", "LENGTH"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child[0], int(args.child[1]), args.reps)))
        return
    results = []
    for length in [int(n) for n in args.lengths.split(",")]:
        impls = ["ours_mha"]
        if length <= args.keras_max:
            impls = ["keras_mha", "ours_exact", "ours_mha"]
        for impl in impls:
            completed = subprocess.run(
                [sys.executable, __file__, "--child", impl, str(length), "--reps",
                 str(args.reps)], capture_output=True, text=True, check=False,
            )
            lines = [l for l in completed.stdout.splitlines() if l.startswith("{")]
            record = json.loads(lines[-1]) if lines else {
                "impl": impl, "length": length, "error": completed.stderr[-300:]}
            print(json.dumps(record), flush=True)
            results.append(record)
    table(results)
    plot(results, args.plot)


def table(results):
    by = {(r["impl"], r["length"]): r for r in results if "median_s" in r}
    lengths = sorted({r["length"] for r in results})
    print("\n| T | Keras MHA s | Keras extra MiB | ours exact s | ours blocked s | "
          "ours blocked extra MiB | speed vs Keras | memory vs Keras |")
    print("|---|---|---|---|---|---|---|---|")
    for n in lengths:
        k, e, o = by.get(("keras_mha", n)), by.get(("ours_exact", n)), by.get(("ours_mha", n))
        cell = lambda r, key: "-" if r is None else r[key]  # noqa: E731
        speed = f"{k['median_s'] / o['median_s']:.2f}x" if k and o else "-"
        memory = f"{o['extra_mib'] / k['extra_mib']:.2f}" if k and o else "-"
        print(f"| {n} | {cell(k, 'median_s')} | {cell(k, 'extra_mib')} | "
              f"{cell(e, 'median_s')} | {cell(o, 'median_s')} | {cell(o, 'extra_mib')} | "
              f"{speed} | {memory} |")


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for impl, label in (("keras_mha", "keras.layers.MultiHeadAttention"),
                        ("ours_exact", "ours, exact"), ("ours_mha", "ours, auto (blocked)")):
        rows = sorted((r for r in results if r["impl"] == impl and "median_s" in r),
                      key=lambda r: r["length"])
        if rows:
            lengths = [r["length"] for r in rows]
            left.plot(lengths, [r["median_s"] for r in rows], marker="o", label=label)
            right.plot(lengths, [r["extra_mib"] for r in rows], marker="o", label=label)
    for axis, title in ((left, "forward + backward time (s)"), (right, "extra peak memory (MiB)")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("sequence length T (batch 1, d=256, 8 heads)")
        axis.set_title(title)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
