"""The one registry of recipes and model kinds, as run folders know them.

A **recipe** is what a run folder's `config.json` names in `recipe`: how a
saved run of it reads an evaluation file and scores it, and (for a recipe
that is not built in) the `main(argv)` that `keras-attention train NAME`
runs. A **model kind** is what a run folder's `model.keras` is and how it
answers an input line: one subclass of `keras_attention.runs.TextToText`
(`TextGenerator`, a `Seq2SeqModel` that decodes; `AnswerClassifier`, a
memory network that picks an answer class; `SentenceSelector`, an extractive
summarizer that picks a sentence). `runs.open_run`, the CLI (`train`,
`generate`, `evaluate`) and `keras_attention.export` look both up here and
nowhere else, so a new model kind is one class and one call:

```python
from keras_attention.runs import TextToText, registry

@registry.register_model_kind
class Tagger(TextToText):
    name, marker, description = "tagger", "tag_classes", "a sequence tagger"
    recipes, decodes, exports = ("tagging",), False, False
    ...  # matches, from_run_parts, vocabulary_sizes, answer
```

The registry holds objects, never names of modules to import: it sits in
`keras_attention.runs`, below the model kinds, the recipes, `export` and the
CLI, and imports nothing above it. A built-in recipe's training lives in
`keras_attention.recipes.<name>` (`keras_attention.recipes.recipe_main`);
how a model kind is exported is `keras_attention.export.savedmodel.ARCHIVES`.
This module imports neither Keras nor TensorFlow itself.
"""

import dataclasses

from keras_attention.runs import evaluation


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A recipe as run folders know it.

    Attributes:
        name: str, as `keras-attention train NAME` and `config.json` name it.
        examples: `examples(path, limit, run)` -> `(sources, references)`
            from an evaluation file of this recipe.
        metrics: tuple of names of `keras_attention.metrics.METRICS`, what
            the recipe's outputs are scored by (`metrics.scores`: its own
            evaluation, `keras-attention evaluate`, `TextToText.score`).
        main: `main(argv)`, what `keras-attention train NAME` runs; `None`
            for the built-in recipes, whose `main` is
            `keras_attention.recipes.<name>.main`.
    """

    name: str
    examples: object
    metrics: tuple
    main: object = None


_RECIPES = {}
_MODEL_KINDS = {}
_KIND_METHODS = ("matches", "from_run_parts", "vocabulary_sizes", "answer")


def register_recipe(recipe):
    """Adds (or replaces) a `Recipe`; returns it."""
    if not isinstance(recipe, Recipe):
        raise ValueError(f"Argument `recipe` must be a `Recipe`. Received: recipe={recipe!r}")
    _RECIPES[recipe.name] = recipe
    return recipe


def register_model_kind(kind):
    """Adds (or replaces) a model kind: a subclass of
    `keras_attention.runs.TextToText` that sets the class attributes `name`,
    `marker`, `description`, `recipes`, `decodes` and `exports` and
    implements `matches`, `from_run_parts`, `vocabulary_sizes` and `answer`.
    Returns it (so it may decorate the class).

    Raises:
        ValueError: naming `kind`, for what is not such a class, or a second
            default kind (`marker=None`).
    """
    if not (isinstance(kind, type) and isinstance(getattr(kind, "name", None), str)
            and all(callable(getattr(kind, method, None)) for method in _KIND_METHODS)
            and isinstance(getattr(kind, "recipes", None), tuple) and kind.recipes):
        raise ValueError(f"Argument `kind` must be a subclass of `TextToText` with a `name` "
                         f"and `recipes`. Received: kind={kind!r}")
    if kind.marker is None and any(k.marker is None and k.name != kind.name
                                   for k in _MODEL_KINDS.values()):
        raise ValueError(f"Argument `kind` must set `marker`: there is a default kind already. "
                         f"Received: kind={kind.name!r}")
    _MODEL_KINDS[kind.name] = kind
    return kind


def remove_recipe(name):
    """Removes the recipe `name` (if registered)."""
    _RECIPES.pop(name, None)


def remove_model_kind(name):
    """Removes the model kind `name` (if registered)."""
    _MODEL_KINDS.pop(name, None)


def recipe_names():
    """The registered recipes' names, in registration order."""
    return tuple(_RECIPES)


def recipe(name):
    """The `Recipe` called `name`.

    Raises:
        ValueError: naming `recipe`, for an unknown name.
    """
    if name not in _RECIPES:
        raise ValueError(f"Argument `recipe` must be one of {', '.join(map(repr, _RECIPES))}. "
                         f"Received: recipe={name!r}")
    return _RECIPES[name]


def model_kinds():
    """The registered model kinds (classes), in registration order."""
    return tuple(_MODEL_KINDS.values())


def model_kind(name):
    """The model kind (class) called `name`."""
    if name not in _MODEL_KINDS:
        raise ValueError(f"Argument `kind` must be one of {', '.join(map(repr, _MODEL_KINDS))}. "
                         f"Received: kind={name!r}")
    return _MODEL_KINDS[name]


def kind_of_metadata(metadata):
    """The model kind (class) a run's `config.json` (a dict) describes: the kind whose
    `marker` key it sets (not `None`), else the default kind."""
    for kind in _MODEL_KINDS.values():
        if kind.marker is not None and metadata.get(kind.marker) is not None:
            return kind
    return next(kind for kind in _MODEL_KINDS.values() if kind.marker is None)


## The built-in recipes and model kinds

for _name, _metrics in (("translation", ("bleu", "chrf")),
                        ("summarization", ("rouge1", "rouge2", "rougeL")),
                        ("question_answering", ("exact_match", "f1"))):
    register_recipe(Recipe(name=_name, examples=getattr(evaluation, f"{_name}_examples"),
                           metrics=_metrics))
del _name, _metrics

# The built-in model kinds register themselves, each in its module
# (`text_generator`, `answer_classifier`, `sentence_selector`), which
# `keras_attention.runs` imports.

__all__ = [
    "Recipe",
    "kind_of_metadata",
    "model_kind",
    "model_kinds",
    "recipe",
    "recipe_names",
    "register_model_kind",
    "register_recipe",
    "remove_model_kind",
    "remove_recipe",
]
