"""The one registry of recipes and model kinds.

A **recipe** is what `keras-attention train NAME` runs and what a run folder's
`config.json` names in `recipe`: its spec (`RecipeSpec`, in the recipe's
`train` module), and how a saved run of it is evaluated on a file. A **model
kind** is what a run folder's `model.keras` is and how it answers an input
line: a `Seq2SeqModel` that decodes, a memory network that picks an answer
class, an extractive summarizer that picks a sentence. `SavedRun`, the CLI
(`train`, `generate`, `evaluate`) and `keras_attention.export` look both up
here and nowhere else, so a new recipe or model kind is one call:

```python
from keras_attention.recipes import registry

registry.register_model_kind(registry.ModelKind(
    name="tagger", marker="tag_classes",
    description="a sequence tagger", matches="my_package.runs:is_tagger",
    answer="my_package.runs:tag_lines", vocabularies="my_package.runs:tagger_vocabularies",
    recipes=("tagging",), decodes=False, exports=False,
))
```

(The `"converted"` kind of `keras-attention convert` below also names how its
tokenizers are read, its `generate` mapping, decoding keys and export.)

Everything is named by `"module:attribute"` strings, imported on use: reading
the registry imports neither Keras nor TensorFlow.
"""

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A recipe as the registry knows it.

    Attributes:
        name: str, as `keras-attention train NAME` and `config.json` name it.
        module: str, the module (or package) whose `SPEC` is its
            `keras_attention.recipes.skeleton.RecipeSpec` and whose
            `main(argv)` runs it.
        examples: `"module:function"`, `function(path, limit, run)` ->
            `(sources, references)` from an evaluation file of this recipe.
        scores: `"module:function"`, `function(hypotheses, references)` ->
            the scores dict of `keras-attention evaluate`.
    """

    name: str
    module: str
    examples: str
    scores: str


@dataclasses.dataclass(frozen=True)
class ModelKind:
    """A kind of model a run folder may hold.

    Attributes:
        name: str.
        marker: str or None, the `config.json` key a run of this kind sets
            (`answer_classes`, `selection`); `None` for the default kind
            (one at most: runs without any other kind's marker).
        description: str, what the model is, for messages ("a Seq2SeqModel").
        matches: `"module:function"`, `function(model)` -> whether a loaded
            `model.keras` is of this kind (checked before any work).
        answer: `"module:function"`, `function(run, texts, strategy,
            num_beams, verbose)` -> one output string per text.
        vocabularies: `"module:function"`, `function(run)` -> a list of
            `(file name, tokenizer size, model size, what)`: the parts of
            the folder that must agree (equal sizes), or of
            `(file name, tokenizer size, model size, what, True)`: the
            tokenizer's size may be smaller than the model's, not larger
            (a checkpoint whose embedding is padded, as T5's 32128 rows for
            32100 ids).
        recipes: the recipes whose runs may hold this kind.
        decodes: bool, whether `strategy="beam"` / `num_beams` mean
            anything (`False`: refused, naming `strategy`).
        exports: bool, whether `keras-attention export` can serve it.
        tokenizers: `"module:function"`, `function(run)` ->
            `(source_tokenizer, target_tokenizer)` read from the folder
            (`run.path(name)` checks a file is there; a bad file is a
            `RunFolderError` naming it: `run.folder_error(path, what)`).
            Default: the SentencePiece `source.spm` / `target.spm` files
            `config.json`'s `tokenizers` names.
        generation: `"module:function"`, `function(decoding, strategy=None,
            num_beams=None)` -> the keyword arguments of
            `Seq2SeqModel.generate` for a run's `decoding` settings: the one
            mapping of the kind (`SavedRun`, the recipes' evaluation and
            `keras_attention.export` use it). Default:
            `keras_attention.runs.inference:generate_kwargs`.
        decoding_keys: `"module:attribute"`, the keys `config.json`'s
            `decoding` may hold for this kind. Default:
            `keras_attention.runs.layout:DECODING_KEYS`.
        export: `"module:function"`, `function(run, strategy, num_beams)`
            -> the `keras.export.ExportArchive` `keras-attention export`
            writes for a kind with `exports=True` (a bad setting is a
            `ValueError` raised before any work). Default:
            `keras_attention.export:recipe_archive`.
    """

    name: str
    marker: object
    description: str
    matches: str
    answer: str
    vocabularies: str
    recipes: tuple
    decodes: bool
    exports: bool
    tokenizers: str = "keras_attention.runs.saved_run:sentencepiece_tokenizers"
    generation: str = "keras_attention.runs.inference:generate_kwargs"
    decoding_keys: str = "keras_attention.runs.layout:DECODING_KEYS"
    export: str = "keras_attention.export:recipe_archive"


_RECIPES = {}
_MODEL_KINDS = {}


def register_recipe(recipe):
    """Adds (or replaces) a `Recipe`; returns it."""
    if not isinstance(recipe, Recipe):
        raise ValueError(f"Argument `recipe` must be a `Recipe`. Received: recipe={recipe!r}")
    _RECIPES[recipe.name] = recipe
    return recipe


def register_model_kind(kind):
    """Adds (or replaces) a `ModelKind`; returns it.

    Raises:
        ValueError: naming `kind`, for a second default kind (`marker=None`).
    """
    if not isinstance(kind, ModelKind):
        raise ValueError(f"Argument `kind` must be a `ModelKind`. Received: kind={kind!r}")
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


def recipe_spec(name):
    """The `RecipeSpec` of recipe `name` (imports its module: Keras, TensorFlow)."""
    return importlib.import_module(recipe(name).module).SPEC


def model_kinds():
    """The registered `ModelKind`s, in registration order."""
    return tuple(_MODEL_KINDS.values())


def model_kind(name):
    """The `ModelKind` called `name`."""
    if name not in _MODEL_KINDS:
        raise ValueError(f"Argument `kind` must be one of {', '.join(map(repr, _MODEL_KINDS))}. "
                         f"Received: kind={name!r}")
    return _MODEL_KINDS[name]


def kind_of_metadata(metadata):
    """The `ModelKind` a run's `config.json` (a dict) describes: the kind whose
    `marker` key it sets (not `None`), else the default kind."""
    for kind in _MODEL_KINDS.values():
        if kind.marker is not None and metadata.get(kind.marker) is not None:
            return kind
    return next(kind for kind in _MODEL_KINDS.values() if kind.marker is None)


def load(reference):
    """The object a `"module:attribute"` string names."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


## The built-in recipes and model kinds

_EVALUATION = "keras_attention.runs.evaluation"
_INFERENCE = "keras_attention.runs.inference"

for _name in ("translation", "summarization", "question_answering"):
    register_recipe(Recipe(
        name=_name, module=f"keras_attention.recipes.{_name}",
        examples=f"{_EVALUATION}:{_name}_examples", scores=f"{_EVALUATION}:{_name}_scores",
    ))

register_model_kind(ModelKind(
    name="seq2seq", marker=None, description="a Seq2SeqModel (it decodes)",
    matches=f"{_INFERENCE}:is_seq2seq",
    answer=f"{_INFERENCE}:generate_texts", vocabularies=f"{_INFERENCE}:seq2seq_vocabularies",
    recipes=("translation", "summarization", "question_answering"), decodes=True, exports=True,
))
register_model_kind(ModelKind(
    name="answer_classifier", marker="answer_classes",
    description="an answer classifier over stories (a memory network or Universal Transformer)",
    matches=f"{_INFERENCE}:is_story_classifier",
    answer=f"{_INFERENCE}:answer_from_memory",
    vocabularies=f"{_INFERENCE}:classifier_vocabularies",
    recipes=("question_answering",), decodes=False, exports=False,
))
register_model_kind(ModelKind(
    name="sentence_selector", marker="selection",
    description="an extractive summarizer (it picks a sentence)",
    matches=f"{_INFERENCE}:is_sentence_selector",
    answer=f"{_INFERENCE}:select_sentences", vocabularies=f"{_INFERENCE}:selector_vocabularies",
    recipes=("summarization",), decodes=False, exports=False,
))
register_model_kind(ModelKind(
    name="converted", marker="converted_from",
    description="a Seq2SeqModel converted from a Hugging Face checkpoint",
    matches=f"{_INFERENCE}:is_seq2seq",
    answer="keras_attention.runs.converted:generate_texts",
    vocabularies="keras_attention.runs.converted:vocabularies",
    tokenizers="keras_attention.runs.converted:load_tokenizers",
    generation="keras_attention.runs.converted:generate_kwargs",
    decoding_keys="keras_attention.runs.converted:DECODING_KEYS",
    export="keras_attention.pretrained.export_converted:converted_archive",
    recipes=("translation", "summarization"), decodes=True, exports=True,
))
del _name

__all__ = [
    "ModelKind",
    "Recipe",
    "kind_of_metadata",
    "load",
    "model_kind",
    "model_kinds",
    "recipe",
    "recipe_names",
    "recipe_spec",
    "register_model_kind",
    "register_recipe",
    "remove_model_kind",
    "remove_recipe",
]
