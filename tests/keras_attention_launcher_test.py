"""`keras_attention_launcher`, the `keras-attention` command's entry point: the
command picks JAX for `generate`, `evaluate` and `serve` where nothing else is
chosen, and keeps TensorFlow's C++ start-up lines off stderr unless asked
for; importing `keras_attention` does neither (no import-time side effect)."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

import keras_attention_launcher as launcher

ROOT = pathlib.Path(__file__).resolve().parents[1]
HAS_JAX = importlib.util.find_spec("jax") is not None
pytestmark = pytest.mark.backend_independent("the command's start-up: environment, files and "
                                             "stderr, in fresh interpreters")


## Importing the package: nothing changes


def _run(code, **env):
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL",
                                  "KERAS_ATTENTION_VERBOSE")}
    environment.update(PYTHONPATH=str(ROOT), **env)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_importing_the_package_changes_no_environment_and_installs_no_hook(tmp_path):
    """Even in a process that looks like the command (`sys.argv` of
    `keras-attention generate`): beyond what importing Keras and TensorFlow
    does, the package sets no environment variable and leaves `sys.meta_path`
    as it was; Keras keeps its own default backend."""
    command = "import os, sys; sys.argv = ['keras-attention', 'generate', 'run']\n"
    after_keras = _run(
        command + "import keras, tensorflow\n"
        "before = (dict(os.environ), list(sys.meta_path))\n"
        "import keras_attention\n"
        "changed = {k: v for k, v in os.environ.items() if before[0].get(k) != v}\n"
        "print(sorted(changed), len(sys.meta_path) - len(before[1]))")
    assert after_keras == "[] 0"
    first = _run(command + "import keras_attention, keras\n"
                 "print(keras.backend.backend(), os.environ.get('KERAS_BACKEND'), "
                 "any(type(f).__name__ == '_QuietImport' for f in sys.meta_path))",
                 KERAS_HOME=str(tmp_path))
    assert first == "tensorflow None False"


## The command's backend

@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """A Keras home without a config file, and this process's Keras set aside
    (the choice is made only before Keras is imported)."""
    monkeypatch.delitem(sys.modules, "keras", raising=False)
    return {"KERAS_HOME": str(tmp_path)}


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed (the `jax` extra)")
@pytest.mark.parametrize("argv", [["/venv/bin/keras-attention", "generate", "run"],
                                  ["keras-attention", "--verbose", "evaluate", "run",
                                   "--data", "x.tsv"]])
def test_generate_and_evaluate_pick_jax_when_nothing_is_chosen(keras_home, argv):
    assert launcher.choose_serving_backend(argv, keras_home) == "jax"
    assert keras_home["KERAS_BACKEND"] == "jax"


@pytest.mark.parametrize("argv", [["keras-attention", "train", "translation"],
                                  ["keras-attention", "export", "run", "out"],
                                  ["python", "generate"], ["keras-attention"], []])
def test_other_commands_and_programs_keep_the_default(keras_home, argv):
    assert launcher.choose_serving_backend(argv, keras_home) is None
    assert "KERAS_BACKEND" not in keras_home


def test_a_users_choice_is_kept(keras_home, tmp_path):
    argv = ["keras-attention", "generate", "run"]
    chosen = dict(keras_home, KERAS_BACKEND="tensorflow")
    assert launcher.choose_serving_backend(argv, chosen) is None
    assert chosen["KERAS_BACKEND"] == "tensorflow"
    (tmp_path / "keras.json").write_text(json.dumps({"backend": "torch"}))
    assert launcher.choose_serving_backend(argv, keras_home) is None
    assert "KERAS_BACKEND" not in keras_home


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed (the `jax` extra)")
def test_the_config_file_keras_writes_itself_is_no_choice(keras_home, tmp_path):
    # Keras' first import writes keras.json with its default backend.
    (tmp_path / "keras.json").write_text(json.dumps(
        {"floatx": "float32", "epsilon": 1e-07, "backend": "tensorflow",
         "image_data_format": "channels_last"}))
    assert launcher.choose_serving_backend(["keras-attention", "generate", "run"],
                                                  keras_home) == "jax"


def test_after_keras_is_imported_nothing_changes(tmp_path):
    import keras  # noqa: F401 (imported: its backend is read already)

    environ = {"KERAS_HOME": str(tmp_path)}
    assert launcher.choose_serving_backend(["keras-attention", "generate", "r"],
                                                  environ) is None


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed (the `jax` extra)")
def test_the_command_makes_the_choice_before_keras_reads_its_backend(tmp_path):
    code = ("import sys; sys.argv = ['keras-attention', 'generate', 'run']\n"
            "import keras_attention_launcher as launcher; launcher.choose_serving_backend()\n"
            "import keras_attention, keras; print(keras.backend.backend())")
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    env.update(KERAS_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "jax", result.stderr[-2000:]


## TensorFlow's start-up lines


def _stderr_of(code, **env):
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("TF_CPP_MIN_LOG_LEVEL", "KERAS_ATTENTION_VERBOSE")}
    environment.update(KERAS_BACKEND="tensorflow", PYTHONPATH=str(ROOT), **env)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


def test_a_program_that_asks_keeps_tensorflows_start_up_lines_off_stderr():
    """What the command and the example scripts do before importing the
    package (`silence_tensorflow_start()`)."""
    code = ("import keras_attention_launcher as launcher; launcher.silence_tensorflow_start(); "
            "import keras_attention, os, tensorflow as tf; "
            "print(int(tf.constant(1) + 1), os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    stdout, stderr = _stderr_of(code)
    assert stdout.split() == ["2", "3"] and stderr == ""
    # What it hides: the same import asking for TensorFlow's messages prints them.
    _, verbose = _stderr_of(code.replace("os.environ['TF_CPP_MIN_LOG_LEVEL']", "0"),
                            TF_CPP_MIN_LOG_LEVEL="0")
    assert verbose.strip(), "TensorFlow printed nothing at level 0: the check shows nothing"


def test_stderr_silenced_restores_file_descriptor_2(capfd):
    with launcher.stderr_silenced():
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
