"""A/B of `keras-attention generate RUN` on one line under TensorFlow: the
search compiled with XLA (forced, as every call was before) against the
command's rule for a single line (TensorFlow's graph, no XLA).

Each call is a new process running the console script (`cli.script`) on one
sentence from stdin; the two variants alternate. Both must print the same
answer and nothing on stderr.

Run: `python bench/cli_one_line.py --run_dir RUN [--calls 4]` (RUN: a quick
translation run, `keras-attention train translation --preset=quick`).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import loadavg  # noqa: E402

SENTENCE = "March 3, 2021"
# Forces `jit_compile=True` into every search of the process.
FORCE_XLA = ("from keras_attention.runs import text_to_text; "
             "search = text_to_text.TextToText.search; "
             "text_to_text.TextToText.search = lambda self, texts, *a, **k: "
             "search(self, texts, *a, **{**k, 'jit_compile': True}); ")


def one_call(run_dir, force_xla):
    """`(seconds, answer)` of one process answering `SENTENCE`."""
    code = ("import sys; " + (FORCE_XLA if force_xla else "")
            + "from keras_attention import cli; "
            + f"sys.argv = ['keras-attention', 'generate', {run_dir!r}]; cli.script()")
    env = {key: value for key, value in os.environ.items()
           if key not in ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL")}
    env["KERAS_BACKEND"] = "tensorflow"
    begun = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], input=SENTENCE + "\n",
                            capture_output=True, text=True, env=env, check=True)
    seconds = time.perf_counter() - begun
    if result.stderr:
        raise SystemExit(f"generate wrote to stderr: {result.stderr[:500]}")
    return seconds, result.stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run_dir", required=True)
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args()
    print(f"load average before: {loadavg()}")
    seconds, answers = {"XLA (before)": [], "graph (now)": []}, set()
    for _ in range(args.calls):
        for name in seconds:
            took, answer = one_call(os.path.abspath(args.run_dir), name.startswith("XLA"))
            seconds[name].append(took)
            answers.add(answer)
    if len(answers) != 1:
        raise SystemExit(f"the variants answered differently: {sorted(answers)}")
    for name, times in seconds.items():
        print(f"{name}: median {statistics.median(times):.2f} s, every call "
              + " ".join(f"{t:.2f}" for t in times))
    print(f"answer: {answers.pop()!r}; load average after: {loadavg()}")


if __name__ == "__main__":
    main()
