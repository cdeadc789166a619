"""Serving, in one command: ours against CTranslate2 and `transformers`, and
the command line's first and later calls, with the targets of issue 36
checked.

A benchmark run by hand, not a test (`tests/bench/serving_test.py` checks the
verdicts on made-up results):

    TF_CPP_MIN_LOG_LEVEL=3 .venv/bin/python bench/serving.py \
        [--reps 3] [--new-tokens 64] [--calls 3] [--workdir DIR] [--no-cli] \
        [--isa native|avx2 [--no-ynn]]

Needs the `bench`, `hf` and `jax` extras and the installed `keras-attention`
script (`make install-extras`).

1. **Generation** (`bench/pretrained_decode.py`, its table and settings): a
   Marian-base-sized checkpoint; ours on TensorFlow (XLA) and JAX (`jax.jit`),
   float32 and `quantize("int8")`, CTranslate2 float32 and int8,
   `transformers` float32; greedy and beam 4 at batch 1 and 16, every row
   forced to `--new-tokens` tokens.
2. **The command line** (`bench/cli_start.py`): `keras-attention generate`
   on one sentence, a new process per call, first and later calls, per
   backend (a quick translation run trained first).
It prints the CPU's instruction set first. `--isa avx2` limits every
engine to AVX2 (`bench.common.AVX2_ENV`: oneDNN, the code XLA generates,
CTranslate2's own kernels) for the engines and the command line alike;
jaxlib's YNNPACK dots still choose AVX-512 kernels by CPUID unless
`--no-ynn` turns them off (bench/RESULTS.md, issue 53).

3. **The verdict**, one line per target: ours float32 >= 1.0x CTranslate2
   float32 and ours int8 >= 0.8x CTranslate2 int8 on the four cases, every
   row of ours ahead of `transformers`, ours float32 giving CTranslate2
   float32's tokens, the later CLI calls within 5 s.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from bench import cli_start, pretrained_decode  # noqa: E402
from bench.common import (  # noqa: E402
    check_at_least_one,
    cpu_flags,
    cpu_isa,
    cpu_model,
    format_table,
    isa_env,
)

OURS = ("ours_tensorflow", "ours_jax")
FLOAT_TARGET, INT8_TARGET, CLI_TARGET_S = 1.0, 0.8, 5.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="timed calls per case")
    parser.add_argument("--new-tokens", type=int, default=64, help="new tokens per row")
    parser.add_argument("--calls", type=int, default=3,
                        help="command-line calls per backend (the first compiles)")
    parser.add_argument("--run_dir", default=None,
                        help="a translation run folder for the command line (default: "
                             "train the quick recipe)")
    parser.add_argument("--no-cli", action="store_true", help="skip the command-line calls")
    parser.add_argument("--workdir", default=None,
                        help="keep the checkpoint, tokens and results here (default: a "
                             "temporary folder)")
    parser.add_argument("--isa", choices=("native", "avx2"), default="native",
                        help="avx2: every engine and the command line limited to AVX2 "
                             "(oneDNN, XLA's generated code, CTranslate2)")
    parser.add_argument("--no-ynn", action="store_true",
                        help="with --isa avx2: XLA's YNNPACK dots off too (they ignore "
                             "--xla_cpu_max_isa), so that JAX's matmuls run AVX2 (in Eigen)")
    args = parser.parse_args(argv)
    if args.no_ynn and args.isa != "avx2":
        parser.error("--no-ynn applies with --isa avx2 only. Received: --no-ynn with "
                     f"--isa {args.isa}")
    check_at_least_one(parser, args, ("reps", "new_tokens"))
    if args.calls < 2:
        parser.error(f"--calls must be at least 2 (the first compiles). "
                     f"Received: calls={args.calls}")
    return args


def load_results(workdir):
    """`{(engine, precision, case): result}` from pretrained_decode's files."""
    results = {}
    for engine in pretrained_decode.ENGINES:
        path = os.path.join(workdir, f"result-{engine}.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                for r in json.load(file)["results"]:
                    results[r["engine"], r["precision"], r["case"]] = r
    return results


def token_agreement(workdir, engine, case):
    """% of rows of `engine`'s float32 tokens equal to CTranslate2 float32's
    in `case`, or None when either is missing."""
    name = case.replace(" ", "_")
    paths = [os.path.join(workdir, f"tokens-{e}-float32-{name}.npy")
             for e in (engine, "ctranslate2")]
    if not all(os.path.isfile(p) for p in paths):
        return None
    ours, theirs = (np.load(p) for p in paths)
    width = min(ours.shape[1], theirs.shape[1])
    return 100.0 * float((ours[:, :width] == theirs[:, :width]).all(axis=1).mean())


def verdicts(results, agreement, cli_seconds=None):
    """`[(target, figure, met)]`: every target of issue 36 with its figure.

    `results`: `load_results`' dict; `agreement`: `{(engine, case): % rows
    equal to CTranslate2 float32}`; `cli_seconds`: `cli_start.measure`'s
    `{backend: [seconds]}` or None.
    """
    out = []
    cases = sorted({case for _, _, case in results})
    for engine in OURS:
        for precision, target in (("float32", FLOAT_TARGET), ("int8", INT8_TARGET)):
            for case in cases:
                ours = results.get((engine, precision, case))
                ct2 = results.get(("ctranslate2", precision, case))
                if ours is None or ct2 is None:
                    continue
                ratio = ours["tokens_per_s"] / ct2["tokens_per_s"]
                out.append((f"{pretrained_decode.LABELS[engine, precision]} {case} vs "
                            f"CTranslate2 {precision} >= {target:.1f}x",
                            f"{ratio:.2f}x", ratio >= target))
    for (engine, precision, case), ours in sorted(results.items()):
        reference = results.get(("transformers", "float32", case))
        if engine not in OURS or reference is None:
            continue
        ratio = ours["tokens_per_s"] / reference["tokens_per_s"]
        out.append((f"{pretrained_decode.LABELS[engine, precision]} {case} ahead of "
                    f"transformers", f"{ratio:.2f}x", ratio > 1.0))
    for (engine, case), percent in sorted(agreement.items()):
        out.append((f"{pretrained_decode.LABELS[engine, 'float32']} {case}: CTranslate2 "
                    f"float32's tokens", f"{percent:.0f}% of rows", percent == 100.0))
    for backend, seconds in sorted((cli_seconds or {}).items()):
        later = statistics.median(seconds[1:])
        out.append((f"keras-attention generate, later calls ({backend}) <= "
                    f"{CLI_TARGET_S:.0f} s", f"{later:.2f} s", later <= CLI_TARGET_S))
    return out


def isa_line(isa, env):
    """The first line printed: the CPU, its instruction set and the limit."""
    limit = " ".join(f"{key}={value}" for key, value in sorted(env.items())) or "none"
    return f"CPU: {cpu_model()}, {cpu_isa(cpu_flags())}; --isa {isa}, limits: {limit}"


def main(argv=None):
    args = parse_args(argv)
    env = isa_env(args.isa, os.environ, args.no_ynn)
    print(isa_line(args.isa, env), flush=True)
    os.environ.update(env)  # the engines and the command line run as subprocesses
    temporary = None
    workdir = args.workdir
    if workdir is None:
        temporary = workdir = tempfile.mkdtemp(prefix="serving_")
    os.makedirs(workdir, exist_ok=True)
    try:
        code = pretrained_decode.main(["--reps", str(args.reps), "--new-tokens",
                                       str(args.new_tokens), "--workdir", workdir])
        if code:
            return code
        results = load_results(workdir)
        cases = sorted({case for _, _, case in results})
        agreement = {(engine, case): percent for engine in OURS for case in cases
                     if (percent := token_agreement(workdir, engine, case)) is not None}
        cli_seconds = None
        if not args.no_cli:
            cli_seconds, answer = cli_start.measure(args.calls, args.run_dir)
            print()
            print(f"keras-attention generate RUN <<< {cli_start.SENTENCE!r} -> {answer!r}")
            print(cli_start.table(cli_seconds))
        rows = verdicts(results, agreement, cli_seconds)
        print()
        print(format_table([[t, f, "met" if ok else "MISSED"] for t, f, ok in rows],
                           ["target", "figure", ""]))
        missed = sum(not ok for _, _, ok in rows)
        print(f"{len(rows) - missed} of {len(rows)} targets met")
        return 0
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
