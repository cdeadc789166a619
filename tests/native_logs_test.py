"""TensorFlow's C++ start-up lines stay off stderr when the package is entered
first, and show when `TF_CPP_MIN_LOG_LEVEL` asks for them."""

import os
import pathlib
import subprocess
import sys

import pytest

from keras_attention import native_logs

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _stderr_of(code, **env):
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("TF_CPP_MIN_LOG_LEVEL", "KERAS_ATTENTION_VERBOSE")}
    environment.update(KERAS_BACKEND="tensorflow", PYTHONPATH=str(ROOT), **env)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


@pytest.mark.backend_independent
def test_importing_the_package_first_keeps_tensorflows_start_up_lines_off_stderr():
    code = ("import keras_attention, os, tensorflow as tf; "
            "print(int(tf.constant(1) + 1), os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    stdout, stderr = _stderr_of(code)
    assert stdout.split() == ["2", "3"] and stderr == ""
    # What it hides: the same import asking for TensorFlow's messages prints them.
    _, verbose = _stderr_of(code.replace("os.environ['TF_CPP_MIN_LOG_LEVEL']", "0"),
                            TF_CPP_MIN_LOG_LEVEL="0")
    assert verbose.strip(), "TensorFlow printed nothing at level 0: the check shows nothing"


def test_stderr_silenced_restores_file_descriptor_2(capfd):
    with native_logs.stderr_silenced():
        os.write(2, b"hidden\n")
    os.write(2, b"shown\n")
    assert capfd.readouterr().err == "shown\n"


def _command_stderr(*arguments):
    """stderr of the `keras-attention` script of this interpreter's
    environment with `arguments` (without TF_CPP_MIN_LOG_LEVEL set)."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("TF_CPP_MIN_LOG_LEVEL", "KERAS_ATTENTION_VERBOSE")}
    environment.update(KERAS_BACKEND="tensorflow")
    script = pathlib.Path(sys.executable).with_name("keras-attention")
    done = subprocess.run([str(script), *arguments], env=environment, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.backend_independent
def test_the_command_shows_tensorflows_lines_with_verbose_only():
    """`keras-attention --verbose ...` shows TensorFlow's start-up lines (the
    flag is read before the package imports TensorFlow); without it stderr
    stays empty; after the command's name it is refused, in one line."""
    status, stdout, quiet = _command_stderr("--help")
    assert status == 0 and "--verbose" in stdout and quiet == ""
    status, _, verbose = _command_stderr("--verbose", "--help")
    assert status == 0 and verbose.strip(), "no TensorFlow line with --verbose"
    status, _, refused = _command_stderr("generate", "run", "--verbose")
    assert status == 2 and "unrecognized arguments: --verbose" in refused
