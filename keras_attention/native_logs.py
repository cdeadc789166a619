"""TensorFlow's start-up lines from C++, kept off stderr unless asked for.

Importing TensorFlow prints lines such as `WARNING: All log messages before
absl::InitializeLog() is called are written to STDERR` and `cudart_stub.cc:31]
Could not find cuda drivers on your machine` straight to file descriptor 2,
before `TF_CPP_MIN_LOG_LEVEL` is read, so that variable alone cannot hide
them. When the package is imported first (`import keras_attention`, the
`keras-attention` command, the example scripts), `silence_tensorflow_start()`
sets `TF_CPP_MIN_LOG_LEVEL=3` unless it is set already, and while TensorFlow
itself is imported (whenever that happens: Keras' TensorFlow backend,
tensorflow-text) file descriptor 2 points to the null device. Python's
errors are raised as usual.

To see TensorFlow's lines, give the command `--verbose`
(`keras-attention --verbose generate RUN`: `TF_CPP_MIN_LOG_LEVEL` 0 unless
set), or set `TF_CPP_MIN_LOG_LEVEL` to 0, 1 or 2 (or
`KERAS_ATTENTION_VERBOSE=1`) before starting Python:
`TF_CPP_MIN_LOG_LEVEL=0 keras-attention generate RUN`.
"""

import contextlib
import importlib.abc
import importlib.util
import os
import sys

__all__ = ["VERBOSE_FLAG", "silence_tensorflow_start", "stderr_silenced"]

#: The `keras-attention` option that shows TensorFlow's lines. The package is
#: imported (and TensorFlow with it) before the command parses its arguments,
#: so the flag is read here, from the command line of the `keras-attention`
#: script.
VERBOSE_FLAG = "--verbose"


def silence_tensorflow_start():
    """Keeps TensorFlow's C++ start-up lines off stderr (see the module
    docstring); does nothing when TensorFlow is imported already, when
    `KERAS_ATTENTION_VERBOSE` is set, or when `TF_CPP_MIN_LOG_LEVEL` asks
    for TensorFlow's messages (a value below 3)."""
    if "tensorflow" in sys.modules or os.environ.get("KERAS_ATTENTION_VERBOSE"):
        return
    if _command_asks_for_verbose():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
        return
    if os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3") != "3":
        return
    if not any(isinstance(finder, _QuietImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _QuietImport("tensorflow"))


def _command_asks_for_verbose():
    """Whether this process is the `keras-attention` script given
    `--verbose` before the command's name (`keras-attention --verbose
    generate RUN`), where its parser takes it. (`python -m
    keras_attention.cli` imports the package before its own name is in
    `sys.argv`: `KERAS_ATTENTION_VERBOSE=1` there.)"""
    program = os.path.basename(sys.argv[0]) if sys.argv else ""
    if program != "keras-attention":
        return False
    for argument in sys.argv[1:]:
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
