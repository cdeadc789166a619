"""The README's main job, on a small configuration."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_demo():
    spec = importlib.util.spec_from_file_location("reverse_demo", ROOT / "examples" / "reverse_demo.py")
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
