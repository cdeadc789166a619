"""Time and peak memory of attention on long sequences, ours against Keras.

Run by hand (not a test):

    .venv/bin/python bench/long_sequence.py [--lengths 1024,2048,4096,8192,16384]
        [--keras-max 8192] [--reps 5] [--plot bench/long_sequence.png]

Batch 1, model dim 256, 8 heads, float32; one measurement = forward +
backward (gradients of mean(y^2) with respect to the input and the layer's
weights) inside `tf.function`, graph mode. For each length:

- time: one subprocess builds every implementation, warms each up, then
  runs `--reps` rounds, each round calling every implementation once in
  turn (so that load from other jobs falls on all of them alike); the
  median per implementation and the ratio to Keras are reported;
- memory: each implementation then runs once in a subprocess of its own,
  so that its peak resident memory (`ru_maxrss`) is its own; "extra
  memory" is that peak minus the resident memory just before the call.

Implementations:

- `keras_mha`: `keras.layers.MultiHeadAttention(8, 32)`;
- `ours_mha`: `keras_attention.layers.MultiHeadAttention(8, 32)` with its
  default `query_block_size="auto"` (query blocks with the flash-style
  gradient from 2048 x 2048 scores on);
- `ours_exact`: the same layer with `implementation="exact"`;
- `ours_remat` (only with `--remat`): `implementation="blocked"`, blocks of
  512 recomputed by
  `keras.remat`, the previous method, for comparison.

`keras_mha` and `ours_exact` run up to `--keras-max`. Prints one JSON line
per measurement, a markdown table, the load average before and after, and
writes a PNG plot.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

# This checkout's keras_attention, not an installed one.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

D, H = 256, 8


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def make_step(impl, length):
    """A compiled forward + backward step of `impl` at `length`."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_attention import layers

    keras.utils.set_random_seed(0)
    if impl == "keras_mha":
        layer = keras.layers.MultiHeadAttention(H, D // H)
    else:
        implementation = {"ours_mha": "auto", "ours_exact": "exact", "ours_remat": "blocked"}[impl]
        layer = layers.MultiHeadAttention(H, D // H, implementation=implementation)
        if impl == "ours_remat":  # the remat path: no flash operands
            layer._flash_operands = lambda key, value: None
    x = tf.Variable(np.random.default_rng(0).normal(size=(1, length, D)).astype("float32"))
    small = tf.zeros((1, 8, D))
    layer(small, small)

    @tf.function(jit_compile=os.environ.get("BENCH_JIT_COMPILE", "0") == "1")  # bench/gpu.sh
    def step():
        with tf.GradientTape() as tape:
            y = layer(x, x)
            loss = tf.reduce_mean(tf.square(y))
        grads = tape.gradient(loss, [x] + layer.trainable_variables)
        return tf.add_n([tf.reduce_sum(g) for g in grads])

    step.get_concrete_function()
    return step


def timed(step):
    """Wall seconds, process CPU seconds (all threads) and the result."""
    start, cpu = time.perf_counter(), time.process_time()
    total = float(step())
    return time.perf_counter() - start, time.process_time() - cpu, total


def time_all(impls, length, reps):
    """Runs in the subprocess: interleaved medians of every implementation."""
    import numpy as np

    steps = {impl: make_step(impl, length) for impl in impls}
    first = {impl: timed(step)[0] for impl, step in steps.items()}
    times = {impl: [] for impl in impls}
    cpu_times = {impl: [] for impl in impls}
    finite = {impl: True for impl in impls}
    for _ in range(reps):
        for impl, step in steps.items():
            seconds, cpu_seconds, total = timed(step)
            times[impl].append(seconds)
            cpu_times[impl].append(cpu_seconds)
            finite[impl] &= bool(np.isfinite(total))

    def median(values):
        return round(sorted(values)[len(values) // 2], 3)

    return [{"impl": impl, "length": length, "first_s": round(first[impl], 3),
             "median_s": median(times[impl]), "median_cpu_s": median(cpu_times[impl]),
             "times_s": [round(t, 3) for t in times[impl]], "finite": finite[impl]}
            for impl in impls]


def memory_one(impl, length):
    """Runs in the subprocess: extra peak MiB of one call."""
    import tensorflow as tf

    step = make_step(impl, length)
    if tf.config.list_physical_devices("GPU"):  # device memory, not the host's
        tf.config.experimental.reset_memory_stats("GPU:0")
        before = tf.config.experimental.get_memory_info("GPU:0")["current"] / 2**20
        step()
        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
        return {"impl": impl, "length": length, "extra_mib": round(peak - before, 1)}
    before = rss_mib()
    step()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"impl": impl, "length": length, "extra_mib": round(peak - before, 1)}


def child(args):
    completed = subprocess.run(
        [sys.executable, __file__, "--reps", str(args.reps), "--child", *args.child],
        capture_output=True, text=True, check=False)
    lines = [line for line in completed.stdout.splitlines() if line.startswith(("{", "["))]
    if not lines:
        return {"error": completed.stderr[-300:]}
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    parser.add_argument("--keras-max", type=int, default=8192)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--remat", action="store_true")
    parser.add_argument("--plot", default=os.path.join(os.path.dirname(__file__),
                                                       "long_sequence.png"))
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, length, *impls = args.child
        if kind == "time":
            print(json.dumps(time_all(impls, int(length), args.reps)))
        else:
            print(json.dumps(memory_one(impls[0], int(length))))
        return
    print(f"load average before: {os.getloadavg()}", flush=True)
    results = []
    for length in [int(n) for n in args.lengths.split(",")]:
        impls = ["ours_mha"]
        if length <= args.keras_max:
            impls = ["keras_mha", "ours_exact", "ours_mha"]
            impls += ["ours_remat"] if args.remat else []
        timing = child(argparse.Namespace(reps=args.reps, child=["time", str(length), *impls]))
        if isinstance(timing, dict):
            timing = [{"impl": impl, "length": length, **timing} for impl in impls]
        for record in timing:
            memory = child(argparse.Namespace(
                reps=args.reps, child=["memory", str(length), record["impl"]]))
            record["extra_mib"] = memory.get("extra_mib")
            print(json.dumps(record), flush=True)
            results.append(record)
    print(f"load average after: {os.getloadavg()}")
    table(results)
    plot(results, args.plot)


def table(results):
    by = {(r["impl"], r["length"]): r for r in results
          if "median_s" in r and r.get("extra_mib") is not None}
    lengths = sorted({r["length"] for r in results})
    remat = any(r["impl"] == "ours_remat" for r in results)
    print("\n| T | Keras MHA s | Keras extra MiB | ours exact s | ours auto s | "
          "ours auto extra MiB | speed, auto vs Keras (wall) | (CPU time) | memory, auto / Keras |"
          + (" remat s | speed, auto vs remat |" if remat else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if remat else ""))

    def cell(r, key):
        return "-" if r is None else r[key]

    for n in lengths:
        k, e, o = by.get(("keras_mha", n)), by.get(("ours_exact", n)), by.get(("ours_mha", n))
        r = by.get(("ours_remat", n))

        speed = f"{k['median_s'] / o['median_s']:.2f}x" if k and o else "-"
        cpu = f"{k['median_cpu_s'] / o['median_cpu_s']:.2f}x" if k and o else "-"
        memory = f"{o['extra_mib'] / k['extra_mib']:.2f}" if k and o else "-"
        row = (f"| {n} | {cell(k, 'median_s')} | {cell(k, 'extra_mib')} | "
               f"{cell(e, 'median_s')} | {cell(o, 'median_s')} | {cell(o, 'extra_mib')} | "
               f"{speed} | {cpu} | {memory} |")
        if remat:
            vs = f"{r['median_s'] / o['median_s']:.2f}x" if r and o else "-"
            row += f" {cell(r, 'median_s')} | {vs} |"
        print(row)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for impl, label in (("keras_mha", "keras.layers.MultiHeadAttention"),
                        ("ours_exact", "ours, exact"), ("ours_remat", "ours, blocks + remat"),
                        ("ours_mha", "ours, auto (blocks + flash gradient)")):
        rows = sorted((r for r in results if r["impl"] == impl and "median_s" in r
                       and r.get("extra_mib") is not None),
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
