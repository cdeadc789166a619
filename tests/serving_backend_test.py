"""`keras_attention.serving_backend`: the backend of `keras-attention generate` and `evaluate`."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from keras_attention import serving_backend

ROOT = pathlib.Path(__file__).resolve().parents[1]
HAS_JAX = importlib.util.find_spec("jax") is not None
pytestmark = pytest.mark.backend_independent("which backend the command picks: environment "
                                             "and files, in fresh interpreters")


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
    assert serving_backend.choose_serving_backend(argv, keras_home) == "jax"
    assert keras_home["KERAS_BACKEND"] == "jax"


@pytest.mark.parametrize("argv", [["keras-attention", "train", "translation"],
                                  ["keras-attention", "export", "run", "out"],
                                  ["python", "generate"], ["keras-attention"], []])
def test_other_commands_and_programs_keep_the_default(keras_home, argv):
    assert serving_backend.choose_serving_backend(argv, keras_home) is None
    assert "KERAS_BACKEND" not in keras_home


def test_a_users_choice_is_kept(keras_home, tmp_path):
    argv = ["keras-attention", "generate", "run"]
    chosen = dict(keras_home, KERAS_BACKEND="tensorflow")
    assert serving_backend.choose_serving_backend(argv, chosen) is None
    assert chosen["KERAS_BACKEND"] == "tensorflow"
    (tmp_path / "keras.json").write_text(json.dumps({"backend": "torch"}))
    assert serving_backend.choose_serving_backend(argv, keras_home) is None
    assert "KERAS_BACKEND" not in keras_home


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed (the `jax` extra)")
def test_the_config_file_keras_writes_itself_is_no_choice(keras_home, tmp_path):
    # Keras' first import writes keras.json with its default backend.
    (tmp_path / "keras.json").write_text(json.dumps(
        {"floatx": "float32", "epsilon": 1e-07, "backend": "tensorflow",
         "image_data_format": "channels_last"}))
    assert serving_backend.choose_serving_backend(["keras-attention", "generate", "run"],
                                                  keras_home) == "jax"


def test_after_keras_is_imported_nothing_changes(tmp_path):
    import keras  # noqa: F401 (imported: its backend is read already)

    environ = {"KERAS_HOME": str(tmp_path)}
    assert serving_backend.choose_serving_backend(["keras-attention", "generate", "r"],
                                                  environ) is None


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed (the `jax` extra)")
def test_the_package_makes_the_choice_before_keras_reads_its_backend(tmp_path):
    code = ("import sys; sys.argv = ['keras-attention', 'generate', 'run']\n"
            "import keras_attention, keras; print(keras.backend.backend())")
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    env.update(KERAS_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "jax", result.stderr[-2000:]
