"""The Keras backend of `keras-attention generate` and `evaluate`.

Answering a line needs no TensorFlow: a run folder's model loads on any
backend and its `.spm` files are read in plain Python. On JAX the command
starts faster (TensorFlow's import is about half of a second one-sentence
call: bench/RESULTS.md) and its compiled search is
kept between calls (`runtime.cache_compilations`). So when this process is
the `keras-attention` script running `generate` or `evaluate`, and the user
chose no backend (no `KERAS_BACKEND`, and Keras' config file
`$KERAS_HOME/keras.json`, default `~/.keras/keras.json`, names none other
than TensorFlow: Keras writes that file with its default, TensorFlow, the
first time it is imported, so that entry is no choice), JAX is chosen where
it is installed, unless the machine has an NVIDIA GPU that JAX cannot use (no
`jax_cuda*_plugin`: TensorFlow's GPU build would be faster there). The
outputs are the same tokens (`tests/models/seq2seq_model_test.py` generates
with one saved model on every backend). `KERAS_BACKEND=tensorflow` keeps
TensorFlow.

It must run before Keras is imported (Keras reads its backend once): the
package calls it first thing (`keras_attention/__init__.py`).
"""

import importlib.util
import json
import os
import sys

__all__ = ["SERVING_COMMANDS", "choose_serving_backend"]

#: The `keras-attention` commands that run a saved model and nothing else.
SERVING_COMMANDS = ("generate", "evaluate", "serve")


def choose_serving_backend(argv=None, environ=None):
    """Sets `KERAS_BACKEND=jax` in `environ` (default `os.environ`) for a
    serving command of the `keras-attention` script (`argv`, default
    `sys.argv`) where the user chose no backend and JAX fits (see the module
    docstring).

    Returns:
        `"jax"` where it set it, else `None` (nothing changed).
    """
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    if environ.get("KERAS_BACKEND") or "keras" in sys.modules:
        return None
    if _command(argv) not in SERVING_COMMANDS or _configured_backend(environ):
        return None
    if importlib.util.find_spec("jax") is None or _gpu_jax_cannot_use():
        return None
    environ["KERAS_BACKEND"] = "jax"
    return "jax"


def _command(argv):
    """The command of a `keras-attention` command line (`None` for another
    program): its first argument that is not an option."""
    if not argv or os.path.basename(argv[0]) != "keras-attention":
        return None
    return next((argument for argument in argv[1:] if not argument.startswith("-")), None)


def _configured_backend(environ):
    """The `"backend"` of Keras' config file, or `None` (also for Keras'
    default, TensorFlow, which Keras writes there itself)."""
    home = environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as file:
            config = json.load(file)
    except (OSError, ValueError):
        return None
    backend = config.get("backend") if isinstance(config, dict) else None
    return None if backend == "tensorflow" else backend


def _gpu_jax_cannot_use():
    """An NVIDIA driver is loaded and JAX has no CUDA plugin installed."""
    if not os.path.exists("/proc/driver/nvidia/version"):
        return False
    return not any(importlib.util.find_spec(name) is not None
                   for name in ("jax_cuda12_plugin", "jax_cuda13_plugin"))
