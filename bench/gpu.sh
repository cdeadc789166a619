#!/usr/bin/env bash
# The benchmark suite on a GPU, in one command, from the repository root:
#
#   bash bench/gpu.sh --backend jax          # JAX (XLA, fused attention), no TensorFlow needed
#   bash bench/gpu.sh --backend tensorflow   # TensorFlow under XLA, where it is installed
#
# JAX mode needs only Keras, keras-hub and this package beside JAX (CUDA): on a machine with no
# package registry, carry them as wheels (../shared/tools/gpu-wheels.sh .whl) and install them with
# `pip install --no-deps --no-index --target /tmp/site .whl/*.whl`, PYTHONPATH=/tmp/site. It runs:
# the MHA training step against keras.layers.MultiHeadAttention at T=256, 4096 and 16384 under
# float32 and mixed_bfloat16 (implementation "auto", which takes the fused kernel on a GPU, and
# each implementation explicitly), and generation tokens/s against keras-hub's compiled sampler.
# JAX mode also runs bench/pretrained_decode.py for our JAX generate alone (needs transformers
# and torch to write its checkpoint). TensorFlow mode also runs the long-sequence memory
# benchmark and the recipe's throughput.
# Logs (one JSON line per measurement) go to bench/gpu-results/<date>/ (or $OUT when set), with
# nvidia-smi's view of the machine. Copy the figures into bench/RESULTS.md (section "GPU") with
# the command, the machine and the date. Refuses to run where the backend sees no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
backend=tensorflow
while [[ $# -gt 0 ]]; do
    case $1 in
        --backend) backend=${2:?--backend needs jax or tensorflow}; shift 2 ;;
        --backend=*) backend=${1#--backend=}; shift ;;
        *) echo "bench/gpu.sh: unknown argument $1 (use --backend jax|tensorflow)" >&2; exit 2 ;;
    esac
done
case $backend in jax|tensorflow) ;; *)
    echo "bench/gpu.sh: --backend must be jax or tensorflow. Received: $backend" >&2; exit 2 ;;
esac
if [[ -x .venv/bin/python ]]; then PYTHON=${PYTHON:-.venv/bin/python}; else PYTHON=${PYTHON:-python3}; fi
export KERAS_BACKEND=$backend TF_CPP_MIN_LOG_LEVEL=3 BENCH_JIT_COMPILE=1 PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # peak memory means something

gpu_check='import sys
try:
    import keras
except ImportError as error:
    print(f"bench/gpu.sh: {error} (install the wheels first, see the top of bench/gpu.sh)")
    sys.exit(3)
b = keras.config.backend()
if b == "jax":
    import jax; ok = any(d.platform == "gpu" for d in jax.devices())
else:
    import tensorflow as tf; ok = bool(tf.config.list_physical_devices("GPU"))
sys.exit(0 if ok else 1)'
status=0; "$PYTHON" -c "$gpu_check" || status=$?
if [[ $status -eq 3 ]]; then exit 1; elif [[ $status -ne 0 ]]; then
    echo "bench/gpu.sh: $backend sees no GPU here; run the scripts in bench/ directly on a CPU." >&2
    exit 1
fi

out=${OUT:-bench/gpu-results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
run() {  # run NAME SCRIPT ARGS...: one benchmark, its log kept even when it fails
    local name=$1; shift
    echo "== $name: $*"
    if "$PYTHON" "$@" > "$out/$name.log" 2>&1; then tail -n 12 "$out/$name.log"; else
        echo "   failed (see $out/$name.log)"; tail -n 5 "$out/$name.log"; fi
}
variants=keras_mha,ours_mha,keras_mha_causal,ours_mha_causal,ours_exact,ours_blocked,ours_fused
run attention_t256 bench/attention_train.py --backend "$backend" --reps 20 --length 256 \
    --policies float32,mixed_bfloat16 --variants "$variants,hub_encoder,ours_encoder"
run attention_t4096 bench/attention_train.py --backend "$backend" --reps 10 --length 4096 \
    --batch 2 --policies mixed_bfloat16 --variants "$variants"
run attention_t16384 bench/attention_train.py --backend "$backend" --reps 5 --length 16384 \
    --batch 1 --policies mixed_bfloat16 --variants "$variants"
run decode bench/decode.py --reps 10 --no-eager
if [[ $backend == jax ]]; then
    # Our generate on a Marian-base-sized checkpoint, JAX only (the checkpoint is written with
    # transformers and torch, CPU wheels are enough; the comparison engines run on the CPU box).
    if "$PYTHON" -c "import transformers, torch" 2>/dev/null; then
        run pretrained_decode bench/pretrained_decode.py --engines ours_jax --reps 5
    else
        echo "== pretrained_decode: skipped (needs transformers and torch to write the checkpoint)"
    fi
fi
if [[ $backend == tensorflow ]]; then
    run long_sequence bench/long_sequence.py --reps 5 --lengths 1024,2048,4096,8192,16384,32768 \
        --keras-max 16384 --plot "$out/long_sequence.png"
    run recipe_throughput bench/recipe_throughput.py --pairs 4000 --epochs 5 \
        --variants keras_defaults,auto,xla_padded
fi
echo "Logs in $out/"
