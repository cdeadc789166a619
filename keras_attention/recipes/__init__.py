"""The recipes: train, evaluate and save a model for one task, end to end.

Each recipe is a subpackage with a `config` module (its defaults, presets and
the rules of its settings) and a `train` module (the recipe itself, its
explanation in the module docstring), and exposes `main(argv=None)`: it reads
`--preset=NAME` and `--key=value` arguments, checks the whole configuration
before any training, trains, saves a run folder and returns the scores.

- `keras_attention.recipes.translation`: sentence pairs (or built-in dates),
  a Transformer or a Bahdanau-attention RNN, BLEU and chrF.
- `keras_attention.recipes.summarization`: a pointer-generator Transformer,
  ROUGE against the lead-1 baseline.
- `keras_attention.recipes.question_answering`: an End-To-End Memory Network
  or a Transformer on bAbI stories, per-task accuracy, exact match and F1.

Each recipe is one registration in `keras_attention.runs.registry` and one
`RecipeSpec` (its configuration, data, model, decoding settings and
evaluation) that `keras_attention.recipes.skeleton.run_recipe` runs: the
setup and the ending (folders, seeds, distribution, saving the run) are
written once, there.

`keras-attention train RECIPE [--key=value ...]` and
`python examples/RECIPE/train.py [--key=value ...]` both call `main`.
The submodules are imported on use (each brings TensorFlow and Keras).
"""

import importlib

from keras_attention.runs import registry

RECIPES = registry.recipe_names()  # the built-in ones; see `registry` for the rest


def recipe_module(name):
    """The module of the built-in recipe `name` (`keras_attention.recipes.<name>`:
    its `main(argv)` and its `SPEC`); imports Keras and TensorFlow.

    Raises:
        ValueError: naming `recipe`, for a name that is not registered, one
            whose `main` is registered rather than built in, or a built-in
            recipe whose module this installation lacks.
    """
    if registry.recipe(name).main is not None:
        raise ValueError(f"Argument `recipe` must be a built-in recipe: {name!r} is registered "
                         f"with its own `main`. Received: recipe={name!r}")
    module = f"{__name__}.{name}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or not (module + ".").startswith(error.name + "."):
            raise  # a module the recipe imports is missing: not the user's doing
        raise ValueError(
            f"Argument `recipe` names a recipe this installation lacks ({module} is missing; "
            f"reinstall keras_attention). Received: recipe={name!r}"
        ) from None


def recipe_main(name):
    """What `keras-attention train NAME` runs: the registered recipe's `main`,
    or the built-in recipe's (`recipe_module(name).main`).

    Raises:
        ValueError: naming `recipe`, for a name that is not registered.
    """
    main = registry.recipe(name).main
    return main if main is not None else recipe_module(name).main


def recipe_spec(name):
    """The `RecipeSpec` of the built-in recipe `name` (imports Keras, TensorFlow)."""
    return recipe_module(name).SPEC


__all__ = ["RECIPES", "recipe_main", "recipe_module", "recipe_spec"]
