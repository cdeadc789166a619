"""Tests of `keras_attention.recipes`, and `load_recipe` for the tests of other modules."""

import importlib


def load_recipe(name):
    """The `train` module of the recipe `name` (e.g. `"translation"`)."""
    return importlib.import_module(f"keras_attention.recipes.{name}.train")
