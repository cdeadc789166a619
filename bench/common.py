"""Shared helpers for the hand-run benchmarks in `bench/` (not tests).

The machine these numbers come from is a shared 2-vCPU VM, so every
comparison is made inside one process: variants are timed round-robin
(interleaved), after warm-up, and the figure reported is the median of the
repetitions. See ../shared/reference/performance.md (beside the checkout) for the method.
"""

import json
import os
import platform
import statistics
import sys
import time


def jit_compile():
    """Whether the benchmarks compile their steps with XLA: `BENCH_JIT_COMPILE=1`
    (set by `bench/gpu.sh`); graph mode otherwise, the fast choice on CPU."""
    return os.environ.get("BENCH_JIT_COMPILE", "0") == "1"


def cpu_model():
    """The CPU model name from /proc/cpuinfo (or `platform.processor()`)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


#: XLA's YNNPACK dot fusions off (they choose AVX-512 kernels by CPUID and
#: ignore `--xla_cpu_max_isa`; bench/RESULTS.md, issue 53).
NO_YNN = "--xla_cpu_experimental_ynn_fusion_type="
#: Every engine limited to AVX2: oneDNN (TensorFlow, CTranslate2's GEMMs),
#: the code XLA generates, CTranslate2's own kernels.
AVX2_ENV = {"ONEDNN_MAX_CPU_ISA": "AVX2", "XLA_FLAGS": "--xla_cpu_max_isa=AVX2",
            "CT2_FORCE_CPU_ISA": "AVX2"}


def cpu_flags():
    """The flags of /proc/cpuinfo (`[]` where unreadable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for row in file:
                if row.startswith("flags"):
                    return row.split(":", 1)[1].split()
    except OSError:
        pass
    return []


def cpu_isa(flags):
    """`"AVX-512"`, `"AVX2"` or `"below AVX2"` from /proc/cpuinfo's flags."""
    flags = set(flags)
    if "avx512f" in flags:
        return "AVX-512"
    return "AVX2" if "avx2" in flags else "below AVX2"


def isa_env(isa, environ=None, no_ynn=False):
    """The environment variables that limit every server to `isa`
    (`"native"`: none); XLA_FLAGS keeps `environ`'s other flags. `no_ynn`:
    XLA's YNNPACK dot fusions off too (they ignore `--xla_cpu_max_isa`)."""
    if isa == "native":
        return {}
    env = dict(AVX2_ENV)
    if no_ynn:
        env["XLA_FLAGS"] += " " + NO_YNN
    previous = (environ or {}).get("XLA_FLAGS", "").strip()
    if previous:
        env["XLA_FLAGS"] = f"{previous} {env['XLA_FLAGS']}"
    return env


def loadavg():
    """The 1, 5 and 15-minute load averages, or None where unavailable."""
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def machine_info():
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def versions(*modules):
    """`{name: __version__}` for the modules given (imported already)."""
    return {m.__name__: getattr(m, "__version__", "?") for m in modules}


def format_table(rows, header):
    """A Markdown table of `rows` (lists) under `header`, columns padded."""
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def emit(record, stream=None):
    """Prints one JSON object on one line and flushes it."""
    stream = stream or sys.stdout
    stream.write(json.dumps(record, sort_keys=False) + "\n")
    stream.flush()


def train_tokenizers(pairs, vocabulary_size):
    """`(source, target)` tokenizers of `(source, target)` text pairs, as the
    translation recipe trains them. (Seed with `keras.utils.set_random_seed`
    before: it invalidates the SentencePiece resources of earlier tokenizers.)"""
    from keras_attention import data  # here: the scripts choose the backend first

    return (data.train_tokenizer([s for s, _ in pairs], vocabulary_size),
            data.train_tokenizer([t for _, t in pairs], vocabulary_size))


def compile_from(model, initial_weights, learning_rate, **compile_options):
    """Compiles a variant of the translation recipe's model as the recipe does
    (Adam, cross-entropy ignoring the pad label 0, accuracy), from the same
    starting point as the others.

    Args:
        model: the variant's `keras.Model`.
        initial_weights: the first variant's weights, or None for the first.
        learning_rate: float.
        **compile_options: more `model.compile` arguments (`jit_compile`, ...).

    Returns:
        The weights every variant starts from (the model's own when
        `initial_weights` is None).
    """
    import keras  # here: the scripts choose the backend first

    if initial_weights is None:
        initial_weights = model.get_weights()
    else:
        model.set_weights(initial_weights)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        metrics=["accuracy"], **compile_options,
    )
    return initial_weights


def rotation(names, round_index):
    """`names` in the order of round `round_index`: each round starts one
    variant later, so that no variant always runs right after the same
    neighbour (with two variants: A, B, then B, A, ...)."""
    shift = round_index % len(names)
    return names[shift:] + names[:shift]


def timed_fit(model, dataset):
    """One epoch of `model.fit(dataset)`: `(wall seconds, process CPU
    seconds (all threads), the epoch's loss)`."""
    start, cpu_start = time.perf_counter(), time.process_time()
    history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return seconds, cpu_seconds, history.history["loss"][-1]


def _time_calls(fn, inner):
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def bench_interleaved(variants, reps, min_measure_s=0.5, on_measure=None):
    """Times callables round-robin and returns per-variant statistics.

    Args:
        variants: dict `name -> zero-argument callable`. Each call is one
            unit of work (here: one full generation).
        reps: timed repetitions per variant, after warm-up.
        min_measure_s: fast variants are called `inner` times in a row per
            measurement so that one measurement lasts at least this long
            (`inner` is chosen from the second warm-up call).
        on_measure: optional callback `(name, rep, seconds_per_call, inner)`.

    Warm-up: every variant is called twice before timing; the first call
    (tracing / XLA compilation) is reported as `first_call_s`, the second
    sets `inner`. Then, for each repetition, every variant is measured once;
    the starting variant rotates from one repetition to the next so that no
    variant always runs right after the same neighbour.

    Returns:
        dict `name -> {"first_call_s", "inner", "times"}`, with `times` the
        list of seconds per call, one per repetition.
    """
    names = list(variants)
    stats = {}
    for name in names:
        first = _time_calls(variants[name], 1)
        second = _time_calls(variants[name], 1)
        inner = max(1, int(round(min_measure_s / max(second, 1e-6))))
        stats[name] = {"first_call_s": first, "second_call_s": second, "inner": inner, "times": []}
    for rep in range(reps):
        for name in rotation(names, rep):
            seconds = _time_calls(variants[name], stats[name]["inner"])
            stats[name]["times"].append(seconds)
            if on_measure is not None:
                on_measure(name, rep, seconds, stats[name]["inner"])
    for s in stats.values():
        s["median_s"] = statistics.median(s["times"])
        s["min_s"] = min(s["times"])
        s["max_s"] = max(s["times"])
    return stats


def check_at_least_one(parser, args, names):
    """`parser.error` naming the first of `names` (attributes of `args`)
    below 1, as `--name must be at least 1. Received: name=value`."""
    for name in names:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1. "
                         f"Received: {name}={getattr(args, name)}")
