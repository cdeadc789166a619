"""The `keras-attention` command's entry point (`script`), and what the command
does to its own process before the package, and so Keras, is imported. A
program that imports `keras_attention` gets none of it: importing the package
changes no environment variable and installs no import hook.

It lives outside the package because importing any module of
`keras_attention` imports Keras first. Two things, for the command only:

1. **The backend of `generate`, `evaluate` and `serve`.** Answering a line
   needs no TensorFlow: a run folder's model loads on any backend and its
   `.spm` files are read in plain Python. On JAX the command starts faster
   (TensorFlow's import is about half of a second one-sentence call:
   bench/RESULTS.md) and its compiled search is kept between calls
   (`keras_attention.runtime.cache_compilations`). So when the user chose no
   backend (no `KERAS_BACKEND`, and Keras' config file
   `$KERAS_HOME/keras.json`, default `~/.keras/keras.json`, names none other
   than TensorFlow: Keras writes that file with its default, TensorFlow, the
   first time it is imported, so that entry is no choice), JAX is chosen
   where it is installed, unless the machine has an NVIDIA GPU that JAX
   cannot use (no `jax_cuda*_plugin`: TensorFlow's GPU build would be faster
   there). The outputs are the same tokens
   (`tests/models/seq2seq_model_test.py` generates with one saved model on
   every backend). `KERAS_BACKEND=tensorflow` keeps TensorFlow.
2. **TensorFlow's C++ start-up lines kept off stderr.** Importing TensorFlow
   prints lines such as `WARNING: All log messages before
   absl::InitializeLog() is called are written to STDERR` and
   `cudart_stub.cc:31] Could not find cuda drivers on your machine` straight
   to file descriptor 2, before `TF_CPP_MIN_LOG_LEVEL` is read, so that
   variable alone cannot hide them. The command sets `TF_CPP_MIN_LOG_LEVEL=3`
   unless it is set already, and while TensorFlow itself is imported
   (whenever that happens: Keras' TensorFlow backend, tensorflow-text) file
   descriptor 2 points to the null device. Python's errors are raised as
   usual. `keras-attention --verbose COMMAND ...` shows TensorFlow's lines
   (`TF_CPP_MIN_LOG_LEVEL` 0 unless set), as does `TF_CPP_MIN_LOG_LEVEL` set
   to 0, 1 or 2, or `KERAS_ATTENTION_VERBOSE=1`.

`python -m keras_attention_launcher ARGS` is the command too. `python -m
keras_attention.cli ARGS` imports the package before its own code runs, so it
gets neither: Keras' configured backend, and TensorFlow's lines.
"""

import contextlib
import importlib.abc
import importlib.util
import json
import os
import sys

__all__ = ["SERVING_COMMANDS", "VERBOSE_FLAG", "choose_serving_backend", "script",
           "silence_tensorflow_start", "stderr_silenced"]

#: The `keras-attention` commands that run a saved model and nothing else.
SERVING_COMMANDS = ("generate", "evaluate", "serve")

#: The `keras-attention` option that shows TensorFlow's lines (read here,
#: before the command's parser, which accepts it too).
VERBOSE_FLAG = "--verbose"


def script():
    """The `keras-attention` console script: the backend choice and the
    quiet TensorFlow start-up for this process, then
    `keras_attention.cli.script()` (the command line's parser and commands)."""
    choose_serving_backend()
    silence_tensorflow_start()
    from keras_attention import cli

    cli.script()


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


def silence_tensorflow_start(argv=None):
    """Keeps TensorFlow's C++ start-up lines off stderr for the rest of this
    process (see the module docstring); does nothing when TensorFlow is
    imported already, when `KERAS_ATTENTION_VERBOSE` is set, or when
    `TF_CPP_MIN_LOG_LEVEL` asks for TensorFlow's messages (a value below 3).
    `argv`: the command line (default `sys.argv`)."""
    if "tensorflow" in sys.modules or os.environ.get("KERAS_ATTENTION_VERBOSE"):
        return
    if _command_asks_for_verbose(sys.argv if argv is None else argv):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
        return
    if os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3") != "3":
        return
    if not any(isinstance(finder, _QuietImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _QuietImport("tensorflow"))


def _command_asks_for_verbose(argv):
    """Whether `argv` is the `keras-attention` script's, given `--verbose`
    before the command's name (`keras-attention --verbose generate RUN`),
    where its parser takes it."""
    program = os.path.basename(argv[0]) if argv else ""
    if program != "keras-attention":
        return False
    for argument in argv[1:]:
        if not argument.startswith("-"):
            return False  # the command's name: its own arguments follow
        if argument == VERBOSE_FLAG:
            return True
    return False


@contextlib.contextmanager
def stderr_silenced():
    """File descriptor 2 points to the null device inside the block (C++
    libraries write there directly, past `sys.stderr`)."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


class _QuietImport(importlib.abc.MetaPathFinder):
    """Imports the top-level package `name` once, with stderr silenced, then
    leaves `sys.meta_path`."""

    def __init__(self, name):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _SilencedLoader(spec.loader)
        return spec


class _SilencedLoader(importlib.abc.Loader):
    """A loader whose module runs with stderr silenced."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        with stderr_silenced():
            self.loader.exec_module(module)

    def __getattr__(self, name):  # the wrapped loader's other methods
        return getattr(self.loader, name)


if __name__ == "__main__":  # `python -m keras_attention_launcher ARGS`: the command itself
    sys.argv[0] = "keras-attention"
    script()
