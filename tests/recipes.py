"""Loads a recipe script (`examples/<name>/train.py`) as a module, by path."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_recipe(name):
    path = ROOT / "examples" / name / "train.py"
    spec = importlib.util.spec_from_file_location(f"{name}_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
