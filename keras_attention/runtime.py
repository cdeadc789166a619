"""Fast, correct execution defaults for the machine at hand.

Measured on CPUs (see `bench/RESULTS.md` and
`../shared/reference/performance.md`): for matmul-bound models, graph mode
with oneDNN is the fastest way to train on a CPU (XLA on CPU is slower and
does not reach the AMX bf16 kernels), and `mixed_bfloat16` pays off
only where the CPU has native bf16 instructions (AMX or AVX512-BF16). Small
models are the exception, each measured: the memory network (d=50, fixed
shapes) trains faster under XLA (`xla_on_cpu=True`), and the recipes'
d=128 Transformers are fastest in plain float32 graph mode
(`bf16_on_cpu=False`). On GPUs, XLA and `mixed_bfloat16` are the fast
path. On JAX, XLA is the only compiled mode (JAX has no graph mode:
`jit_compile=False` runs op by op, far slower than under XLA), so "auto" compiles there.
`fast_defaults()` turns that into two settings a recipe passes to Keras,
each of which the user can override.
"""

import contextlib
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


def fast_defaults(precision="auto", jit_compile="auto", *, xla_on_cpu=False, bf16_on_cpu=True,
                  gpu=None, native_bf16=None):
    """The dtype policy and `jit_compile` flag to train with.

    Args:
        precision: `"auto"`, `"float32"`, `"mixed_bfloat16"` or
            `"mixed_float16"`. `"auto"` picks `mixed_bfloat16` on a GPU, or
            on a CPU with native bf16 in graph mode when `bf16_on_cpu`;
            `float32` otherwise (XLA on a CPU does not use the bf16 units:
            0.5-0.6x).
        jit_compile: `"auto"`, `"true"` or `"false"` (or a bool). `"auto"`
            compiles with XLA on a GPU, on a CPU when `xla_on_cpu`, and
            always on JAX (where `"false"` means eager, op by op).
        xla_on_cpu: bool, the caller's measured choice for its model: True
            for small, overhead-bound models fed a few fixed input shapes
            (XLA compiles one program per shape), where XLA's fusion beats
            graph mode on a CPU too.
        bf16_on_cpu: bool, the caller's measured choice: False for models
            too small for bf16 matmuls to pay for the casts around them (the
            recipes' d=128 Transformers train at 0.56x the float32 rate per
            CPU-second in bf16).
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
    >>> cpu = fast_defaults(xla_on_cpu=True, gpu=False, native_bf16=True)
    >>> cpu["jit_compile"], cpu["dtype_policy"]
    (True, 'float32')
    """
    precision = check_choice("precision", _lower(precision), PRECISIONS)
    if isinstance(jit_compile, bool):
        jit_compile = "true" if jit_compile else "false"
    jit_compile = check_choice("jit_compile", _lower(jit_compile), JIT_CHOICES)
    gpu = has_gpu() if gpu is None else bool(gpu)
    if native_bf16 is None:
        native_bf16 = gpu or cpu_has_native_bf16()
    jit_reason = precision_reason = None
    if jit_compile == "auto":
        on_jax = _backend() == "jax"
        compile_xla = gpu or bool(xla_on_cpu) or on_jax
        if gpu:
            jit_reason = "XLA on GPU"
        elif on_jax and not xla_on_cpu:
            jit_reason = "XLA on JAX: without it JAX runs op by op"
        elif compile_xla:
            jit_reason = "XLA on CPU: small model, few fixed shapes"
        else:
            jit_reason = "graph mode + oneDNN on CPU"
    else:
        compile_xla = jit_compile == "true"
    if precision == "auto":
        if gpu:
            precision, precision_reason = "mixed_bfloat16", "bf16 is native here"
        elif compile_xla:
            precision = "float32"
            precision_reason = "float32: XLA on CPU does not use the bf16 units"
        elif native_bf16 and bf16_on_cpu:
            precision, precision_reason = "mixed_bfloat16", "bf16 is native here"
        elif native_bf16:
            precision, precision_reason = "float32", "float32: bf16 does not pay off for this model"
        else:
            precision, precision_reason = "float32", "no native bf16 on this CPU"
    reasons = [r for r in (precision_reason, jit_reason) if r]
    return {
        "dtype_policy": precision,
        "jit_compile": compile_xla,
        "device": "gpu" if gpu else "cpu",
        "reason": "; ".join(reasons) or "set by the caller",
    }


def quick_jit_compile():
    """The `jit_compile` setting of the recipes' quick (test) presets:
    `"false"` (graph mode, no compile time) on TensorFlow and torch,
    `"true"` on JAX, where `"false"` would run eagerly, op by op (tens of
    times slower a step on the quick translation recipe)."""
    return "true" if _backend() == "jax" else "false"


def build_optimizer_before_fit(model):
    """Creates `model`'s optimizer variables now, before `fit` traces its
    train step; returns `model`.

    On TensorFlow without a distribution strategy, Keras creates the
    optimizer's variables (Adam's moments, say) inside the first trace of
    the train step, and a `tf.function` that creates variables is traced a
    second time: every `fit` traced its step twice.
    Measured on 2 CPU cores (`bench/first_epoch.py`, bench/RESULTS.md), the
    first epoch of a one-layer `transformer_seq2seq`: 11.5 s in graph mode,
    6.0 s with the optimizer built first; under XLA, 25.7 s and 21.8 s. On
    JAX Keras builds the optimizer before tracing, and torch runs eagerly:
    nothing to do there. The optimizer is built in the model's distribution
    scope, as Keras does under a strategy. Nothing happens to a model
    without an optimizer, an unbuilt model (its variables do not exist yet)
    or an optimizer already built.

    `Seq2SeqModel.fit` calls it; so do the recipes for their other models.

    Example:

    >>> import keras, numpy as np
    >>> from keras_attention.runtime import build_optimizer_before_fit
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="adam", loss="mse")
    >>> build_optimizer_before_fit(model).optimizer.built
    True
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    """
    optimizer = getattr(model, "optimizer", None)
    if (_backend() != "tensorflow" or optimizer is None or optimizer.built
            or not model.built):
        return model
    with model.distribute_strategy.scope():
        optimizer.build(model.trainable_variables)
    return model


def cache_compilations(directory=None):
    """On JAX, keeps the programs XLA compiles in a folder, so that a later
    process compiling the same program (the same model, shapes and settings,
    the same JAX version) reads it instead of compiling: JAX's persistent
    compilation cache, for programs of any size and compile time (JAX's
    default keeps only those that took a second or more), including those of
    the weight initializers that loading a `.keras` file runs. A cache folder
    set already (`JAX_COMPILATION_CACHE_DIR`, `jax.config`) is kept; an
    unreadable entry is compiled again (JAX warns). `keras-attention
    generate` and `evaluate` call it: their second call on a run starts
    without compiling its search.

    Nothing on TensorFlow and torch: TensorFlow's own persistent XLA cache
    (`--tf_xla_persistent_cache_directory`) fails the call that reads a file
    cut short (a `DataLossError`, and the process keeps the failure), so it is
    not used.

    Args:
        directory: the folder; default: `jax` under `KERAS_ATTENTION_CACHE_DIR`
            where it is set, else under `keras_attention` in `XDG_CACHE_HOME`
            (`~/.cache`). Made where missing.

    Returns:
        The folder in use (str), or `None` on the other backends or where the
        folder cannot be made (nothing is cached then).
    """
    if _backend() != "jax":
        return None
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    if jax.config.jax_compilation_cache_dir:
        return jax.config.jax_compilation_cache_dir
    if directory is None:
        root = os.environ.get("KERAS_ATTENTION_CACHE_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
            "keras_attention")
        directory = os.path.join(root, "jax")
    directory = os.fspath(directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    compilation_cache.reset_cache()  # JAX settles on "no cache" at its first compile
    return directory


def _backend():
    import keras

    return keras.config.backend()


def _lower(value):
    return value.lower() if isinstance(value, str) else value


@contextlib.contextmanager
def dtype_policy_scope(policy):
    """Sets Keras' global dtype policy inside the block, and restores the
    previous one after it: layers built inside take `policy`.

    Example:

    >>> import keras
    >>> from keras_attention.runtime import dtype_policy_scope
    >>> with dtype_policy_scope("mixed_bfloat16"):
    ...     keras.layers.Dense(2).dtype_policy.name
    'mixed_bfloat16'
    >>> keras.config.dtype_policy().name
    'float32'
    """
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def describe(defaults):
    """One line for a recipe's log."""
    return (
        f"Execution: {defaults['device']}, dtype policy {defaults['dtype_policy']}, "
        f"jit_compile={defaults['jit_compile']} ({defaults['reason']}; "
        f"KERAS_BACKEND={os.environ.get('KERAS_BACKEND', 'tensorflow')})."
    )


__all__ = [
    "JIT_CHOICES",
    "PRECISIONS",
    "build_optimizer_before_fit",
    "cache_compilations",
    "cpu_flags",
    "cpu_has_native_bf16",
    "describe",
    "dtype_policy_scope",
    "fast_defaults",
    "has_gpu",
    "quick_jit_compile",
]
