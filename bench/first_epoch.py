"""The first epoch of `fit` on TensorFlow: Keras' own `fit` against ours.

Keras makes the optimizer's variables inside the first trace of the train
step when no distribution strategy is set, and TensorFlow traces a
`tf.function` that made variables a second time. `Seq2SeqModel.fit` builds
the optimizer first (`keras_attention.runtime.build_optimizer_before_fit`),
so the step is traced once. This script times the first epoch (tracing and,
under XLA, compiling included) and counts the traces, for Keras' `fit`
(`keras.Model.fit(model, ...)`) and ours, round-robin, each run on a fresh
model with the same weights and data.

Run: `KERAS_BACKEND=tensorflow python bench/first_epoch.py [--reps 2]`
(TensorFlow only: on JAX Keras builds the optimizer before tracing, and
torch runs eagerly).
"""

import argparse
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402 (after KERAS_BACKEND)

from keras_attention.data import make_task  # noqa: E402
from keras_attention.models import transformer_seq2seq  # noqa: E402
from tests.test_case import count_train_step_traces  # noqa: E402

FITS = {"keras": lambda model, *a, **k: keras.Model.fit(model, *a, **k),
        "ours": lambda model, *a, **k: model.fit(*a, **k)}


def first_epoch(fit_name, jit_compile, pointer_generator, data):
    """`(seconds, traces)` of one epoch of a fresh one-layer model."""
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(40, num_layers=1, hidden_dim=32, num_heads=2,
                                intermediate_dim=64, dropout=0.0, max_length=16,
                                pointer_generator=pointer_generator)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=jit_compile,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                  ignore_class=0))
    traces = count_train_step_traces(model)
    started = time.perf_counter()
    FITS[fit_name](model, *data, batch_size=64, epochs=1, verbose=0)
    return time.perf_counter() - started, len(traces)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--pointer-generator", action="store_true")
    args = parser.parse_args()
    if keras.config.backend() != "tensorflow":
        raise SystemExit(f"TensorFlow only. Received: KERAS_BACKEND={keras.config.backend()}")
    print(f"{platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
          f"keras {keras.__version__}, pointer_generator={args.pointer_generator}")
    data = make_task("copy", 1500, vocab_size=40, max_length=8, seed=0)
    results = {}
    for rep in range(args.reps):
        for mode, jit_compile in (("graph", False), ("xla", True)):
            for fit_name in FITS:
                seconds, traces = first_epoch(fit_name, jit_compile, args.pointer_generator,
                                              data)
                results.setdefault((mode, fit_name), []).append((seconds, traces))
                print(f"rep {rep} {mode:5} {fit_name:5} {seconds:6.1f} s, {traces} trace(s)",
                      flush=True)
    print("\nmode   Keras fit (s)  ours (s)  ratio   traces Keras/ours")
    for mode in ("graph", "xla"):
        keras_s = statistics.median(s for s, _ in results[(mode, "keras")])
        ours_s = statistics.median(s for s, _ in results[(mode, "ours")])
        print(f"{mode:5} {keras_s:13.1f} {ours_s:9.1f} {keras_s / ours_s:6.2f}x   "
              f"{results[(mode, 'keras')][0][1]}/{results[(mode, 'ours')][0][1]}")
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
