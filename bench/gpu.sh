#!/usr/bin/env bash
# The benchmark suite on a GPU under XLA, in one command:
#
#   bash bench/gpu.sh            # from the repository root, with .venv set up (make install)
#
# Runs each benchmark with its steps compiled by XLA (BENCH_JIT_COMPILE=1; generation and the
# recipe's automatic defaults compile with XLA anyway) and writes the logs, one JSON line per
# measurement, under bench/gpu-results/<date>/, with nvidia-smi's view of the machine. Copy the
# figures into bench/RESULTS.md (section "GPU") with the command, the machine and the date.
# Refuses to run where TensorFlow sees no GPU: CPU figures come from the scripts themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
export KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=3 BENCH_JIT_COMPILE=1

if ! "$PYTHON" -c 'import sys, tensorflow as tf; sys.exit(0 if tf.config.list_physical_devices("GPU") else 1)'; then
    echo "bench/gpu.sh: TensorFlow sees no GPU here; run the scripts in bench/ directly on a CPU." >&2
    exit 1
fi

out="bench/gpu-results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
run() {  # run NAME SCRIPT ARGS...: one benchmark, its log kept even when it fails
    local name=$1; shift
    echo "== $name: $*"
    if "$PYTHON" "$@" > "$out/$name.log" 2>&1; then tail -n 5 "$out/$name.log"; else
        echo "   failed (see $out/$name.log)"; fi
}
run attention_train bench/attention_train.py --reps 20 --policies float32,mixed_bfloat16
run long_sequence bench/long_sequence.py --reps 5 --lengths 1024,2048,4096,8192,16384,32768 \
    --keras-max 16384 --plot "$out/long_sequence.png"
run decode bench/decode.py --reps 10
run recipe_throughput bench/recipe_throughput.py --pairs 4000 --epochs 5 \
    --variants keras_defaults,auto,xla_padded
echo "Logs in $out/"
