"""Time to first output of `keras-attention generate`: one sentence, first and
later calls, per backend.

A run folder of the quick translation recipe (trained here unless `--run_dir`
names one) answers one line per call, each call a new process as a user's
would be; the calls of the backends are interleaved, each backend with its
own empty compilation cache at the start (`KERAS_ATTENTION_CACHE_DIR`), so
that call 1 compiles and the later ones read the compiled search. Every call
must print the same answer and nothing on stderr. `default` is the command
with no backend chosen (`keras_attention_launcher`: JAX where it is
installed).

Run: `python bench/cli_start.py [--calls 3] [--run_dir RUN]` (a few minutes on
2 cores, most of it the training).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import format_table, loadavg, machine_info  # noqa: E402

SENTENCE = "March 3, 2021"
BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "default": None}


def command():
    """The installed `keras-attention` script beside this Python."""
    script = os.path.join(os.path.dirname(sys.executable), "keras-attention")
    if not os.path.exists(script):
        raise SystemExit(f"bench/cli_start.py: no keras-attention script at {script}: install "
                         f"the package (`make install`)")
    return script


def train(folder):
    """A quick translation run in `folder`/run; returns its path."""
    run_dir = os.path.join(folder, "run")
    subprocess.run([command(), "train", "translation", "--preset=quick",
                    f"--output_dir={run_dir}"], check=True, capture_output=True,
                   env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    return run_dir


def one_call(run_dir, backend, cache, keras_home):
    """`(seconds, answer)` of one `generate` process; stderr must be empty."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL")}
    env.update(KERAS_ATTENTION_CACHE_DIR=cache, KERAS_HOME=keras_home)
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    begun = time.perf_counter()
    result = subprocess.run([command(), "generate", run_dir], input=SENTENCE + "\n",
                            capture_output=True, text=True, env=env, check=True)
    seconds = time.perf_counter() - begun
    if result.stderr:
        raise SystemExit(f"generate wrote to stderr ({backend}): {result.stderr[:500]}")
    return seconds, result.stdout.strip()


def measure(calls, run_dir=None):
    """`({backend: [seconds of each call]}, answer)`: `calls` rounds of one
    call per backend, interleaved; every call must give the same answer."""
    folder = tempfile.mkdtemp(prefix="cli_start_")
    try:
        run_dir = run_dir or train(folder)
        seconds = {name: [] for name in BACKENDS}
        answers = set()
        caches = {name: os.path.join(folder, "cache", name) for name in BACKENDS}
        keras_home = os.path.join(folder, "keras_home")
        for _ in range(calls):
            for name, backend in BACKENDS.items():
                took, answer = one_call(run_dir, backend, caches[name], keras_home)
                seconds[name].append(took)
                answers.add(answer)
        if len(answers) != 1:
            raise SystemExit(f"the backends answered differently: {sorted(answers)}")
        return seconds, answers.pop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def table(seconds):
    rows = [[name, f"{times[0]:.2f}", f"{statistics.median(times[1:]):.2f}",
             " ".join(f"{t:.2f}" for t in times)]
            for name, times in seconds.items()]
    return format_table(rows, ["backend", "call 1 (s)", "later calls, median (s)",
                               "every call (s)"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--run_dir", default=None)
    args = parser.parse_args()
    if args.calls < 2:
        parser.error(f"--calls must be at least 2 (the first compiles). "
                     f"Received: calls={args.calls}")
    seconds, answer = measure(args.calls, args.run_dir)
    print(table(seconds))
    print(json.dumps({"answer": answer, "machine": machine_info(), "loadavg": loadavg()}))


if __name__ == "__main__":
    main()
