"""The README's main job, on a small configuration."""

import importlib
import importlib.util
import pathlib
import runpy
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_demo():
    spec = importlib.util.spec_from_file_location("reverse_demo",
                                                  ROOT / "examples" / "reverse_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reverse_demo_learns_to_reverse_and_to_align(capsys):
    demo = load_demo()
    config = dict(demo.get_config(), num_train=3000, num_test=100, epochs=6, max_length=6)
    metrics = demo.main(config)
    assert metrics["accuracy"] >= 0.9
    assert metrics["beam_accuracy"] >= 0.9
    assert metrics["anti_diagonal"] >= 0.75
    assert "Held-out exact match" in capsys.readouterr().out


def test_reverse_demo_settings_are_checked():
    demo = load_demo()
    assert demo.parse_settings(["--epochs=2", "--attention=luong_dot"]) == dict(
        demo.get_config(), epochs=2, attention="luong_dot")
    with pytest.raises(ValueError, match=r"`attention` must be one of .*Received: "
                                         r"attention='dot'"):
        demo.parse_settings(["--attention=dot"])


@pytest.mark.parametrize("recipe", ["translation", "summarization", "question_answering"])
def test_each_recipe_script_runs_the_packaged_recipe_with_its_arguments(recipe, monkeypatch):
    package = importlib.import_module(f"keras_attention.recipes.{recipe}")
    called = []
    monkeypatch.setattr(package, "main", lambda: called.append(sys.argv[1:]))
    monkeypatch.setattr(sys, "argv", ["train.py", "--preset=quick", "--epochs=1"])
    runpy.run_path(str(ROOT / "examples" / recipe / "train.py"), run_name="__main__")
    assert called == [["--preset=quick", "--epochs=1"]]
