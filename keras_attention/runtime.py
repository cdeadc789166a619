"""Fast, correct execution defaults for the machine at hand.

Measured on CPUs (see `bench/RESULTS.md` and
`../shared/reference/performance.md`): graph mode with oneDNN is the fastest
way to train on a CPU (XLA on CPU is 0.5-0.9x of it and does not reach the
AMX bf16 kernels); `mixed_bfloat16` pays off only where the CPU has native
bf16 instructions (AMX or AVX512-BF16); on GPUs, XLA and `mixed_bfloat16`
are the fast path. `fast_defaults()` turns that into two settings a recipe
passes to Keras, each of which the user can override.
"""

import os

from keras_attention.validation import check_choice

PRECISIONS = ("auto", "float32", "mixed_bfloat16", "mixed_float16")
JIT_CHOICES = ("auto", "true", "false")
_BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_flags(cpuinfo_path="/proc/cpuinfo"):
    """The CPU feature flags of the first processor in `cpuinfo_path`
    (an empty set where the file does not exist, e.g. not on Linux)."""
    try:
        with open(cpuinfo_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_has_native_bf16(cpuinfo_path="/proc/cpuinfo"):
    """True where the CPU multiplies bf16 natively (AMX-BF16 or AVX512-BF16)."""
    return bool(cpu_flags(cpuinfo_path) & set(_BF16_CPU_FLAGS))


def has_gpu():
    """True when the Keras backend sees a GPU."""
    import keras

    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    if backend == "jax":
        import jax

        return any(d.platform == "gpu" for d in jax.devices())
    if backend == "torch":
        import torch

        return torch.cuda.is_available()
    return False


def fast_defaults(precision="auto", jit_compile="auto", *, gpu=None, native_bf16=None):
    """The dtype policy and `jit_compile` flag to train with.

    Args:
        precision: `"auto"`, `"float32"`, `"mixed_bfloat16"` or
            `"mixed_float16"`. `"auto"` picks `mixed_bfloat16` on a GPU or on
            a CPU with native bf16, else `float32`.
        jit_compile: `"auto"`, `"true"` or `"false"` (or a bool). `"auto"`
            compiles with XLA on a GPU only.
        gpu, native_bf16: optional bools overriding the detection (tests,
            or a machine the detection gets wrong).

    Returns:
        A dict `{"dtype_policy": str, "jit_compile": bool, "device": "gpu" |
        "cpu", "reason": str}`.

    Example:

    >>> from keras_attention.runtime import fast_defaults
    >>> fast_defaults(gpu=False, native_bf16=False)["dtype_policy"]
    'float32'
    >>> fast_defaults(gpu=True)["jit_compile"]
    True
    >>> fast_defaults("float32", "true", gpu=False)["jit_compile"]
    True
    """
    precision = check_choice("precision", precision, PRECISIONS)
    if isinstance(jit_compile, bool):
        jit_compile = "true" if jit_compile else "false"
    jit_compile = check_choice("jit_compile", jit_compile, JIT_CHOICES)
    gpu = has_gpu() if gpu is None else bool(gpu)
    if native_bf16 is None:
        native_bf16 = gpu or cpu_has_native_bf16()
    reasons = []
    if precision == "auto":
        precision = "mixed_bfloat16" if native_bf16 else "float32"
        reasons.append(
            "bf16 is native here" if native_bf16 else "no native bf16 on this CPU"
        )
    if jit_compile == "auto":
        compile_xla = gpu
        reasons.append("XLA on GPU" if gpu else "graph mode + oneDNN on CPU")
    else:
        compile_xla = jit_compile == "true"
    return {
        "dtype_policy": precision,
        "jit_compile": compile_xla,
        "device": "gpu" if gpu else "cpu",
        "reason": "; ".join(reasons) or "set by the caller",
    }


def describe(defaults):
    """One line for a recipe's log."""
    return (
        f"Execution: {defaults['device']}, dtype policy {defaults['dtype_policy']}, "
        f"jit_compile={defaults['jit_compile']} ({defaults['reason']}; "
        f"KERAS_BACKEND={os.environ.get('KERAS_BACKEND', 'tensorflow')})."
    )
