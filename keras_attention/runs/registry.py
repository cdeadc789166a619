"""The one registry of recipes and model kinds, as run folders know them.

A **recipe** is what a run folder's `config.json` names in `recipe`: how a
saved run of it reads an evaluation file and scores it, and (for a recipe
that is not built in) the `main(argv)` that `keras-attention train NAME`
runs. A **model kind** is what a run folder's `model.keras` is and how it
answers an input line: a `Seq2SeqModel` that decodes, a memory network that
picks an answer class, an extractive summarizer that picks a sentence.
`SavedRun`, the CLI (`train`, `generate`, `evaluate`) and
`keras_attention.export` look both up here and nowhere else, so a new recipe
or model kind is one call, with the functions themselves:

```python
from keras_attention.runs import inference, registry

registry.register_model_kind(registry.ModelKind(
    name="tagger", marker="tag_classes", description="a sequence tagger",
    matches=is_tagger, answer=tag_lines, vocabularies=tagger_vocabularies,
    recipes=("tagging",), decodes=False, exports=False,
))
```

where `tag_lines(text_to_text, texts, generation, verbose)` returns one string
per line (`text_to_text`, a `TextToText`, holds the model, tokenizers and
settings).

The registry holds objects, never names of modules to import: it sits in
`keras_attention.runs`, below the recipes, `export` and the CLI, and imports
nothing above it. A built-in recipe's training lives in
`keras_attention.recipes.<name>` (`keras_attention.recipes.recipe_main`);
how a model kind is exported is `keras_attention.export.savedmodel.ARCHIVES`.
This module imports neither Keras nor TensorFlow itself (the package's
`__init__`, which runs first, imports Keras for the core layers).
"""

import dataclasses

from keras_attention.runs import converted, evaluation, inference


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


@dataclasses.dataclass(frozen=True)
class ModelKind:
    """A kind of model a run folder may hold.

    Attributes:
        name: str.
        marker: str or None, the `config.json` key a run of this kind sets
            (`answer_classes`, `selection`); `None` for the default kind
            (one at most: runs without any other kind's marker).
        description: str, what the model is, for messages ("a Seq2SeqModel").
        matches: `matches(model)` -> whether a loaded `model.keras` is of
            this kind (checked before any work).
        answer: `answer(text_to_text, texts, generation, verbose)` -> one
            output string per text (`generation`: the `GenerationConfig`
            with the caller's search, `None` for a kind that does not
            decode). A kind that decodes is also given `truncate=` (a bool,
            keyword only): it must refuse a line longer than
            `text_to_text.source_limit` tokens (`SourceTooLongError`) unless
            `truncate`, and cut it to that length then, as
            `text_to_text.search(texts, ..., truncate=truncate)` does; a
            kind that does not decode is called without it, and reads its
            lines its own way.
        vocabularies: `vocabularies(run)` -> a list of `(file name, tokenizer
            size, model size, what)`: the parts of the folder that must
            agree (equal sizes), or of `(file name, tokenizer size, model
            size, what, True)`: the tokenizer's size may be smaller than the
            model's, not larger (a checkpoint whose embedding is padded, as
            T5's 32128 rows for 32100 ids).
        recipes: the recipes whose runs may hold this kind.
        decodes: bool, whether `strategy="beam"` / `num_beams` mean
            anything (`False`: refused, naming `strategy`).
        exports: bool, whether `keras-attention export` can serve it
            (`keras_attention.export` holds how).
        tokenizers: `tokenizers(run)` -> `(source_tokenizer,
            target_tokenizer)` read from the folder (`run.path(name)` checks
            a file is there; a bad file is a `RunFolderError` naming it:
            `run.folder_error(path, what)`). Default: the SentencePiece
            `source.spm` / `target.spm` files `config.json`'s `tokenizers`
            names.
        length_penalty_form: `"gnmt"` or `"hf"`, how the beams of a run
            of this kind saved before `config.json`'s `decoding` recorded
            its `length_penalty_form` are scored (and so the keys it may
            hold).

    A decoding kind's lines are encoded and its outputs detokenized by its
    tokenizers (`keras_attention.tokenizer.Tokenizer`: `encode_lines`,
    `Tokenizer.detokenize`), whatever the kind.
    """

    name: str
    marker: object
    description: str
    matches: object
    answer: object
    vocabularies: object
    recipes: tuple
    decodes: bool
    exports: bool
    tokenizers: object = inference.sentencepiece_tokenizers
    length_penalty_form: str = "gnmt"


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


## The built-in recipes and model kinds

for _name, _metrics in (("translation", ("bleu", "chrf")),
                        ("summarization", ("rouge1", "rouge2", "rougeL")),
                        ("question_answering", ("exact_match", "f1"))):
    register_recipe(Recipe(name=_name, examples=getattr(evaluation, f"{_name}_examples"),
                           metrics=_metrics))
del _name, _metrics

register_model_kind(ModelKind(
    name="seq2seq", marker=None, description="a Seq2SeqModel (it decodes)",
    matches=inference.is_seq2seq, answer=inference.generate_texts,
    vocabularies=inference.seq2seq_vocabularies,
    recipes=("translation", "summarization", "question_answering"), decodes=True, exports=True,
))
register_model_kind(ModelKind(
    name="answer_classifier", marker="answer_classes",
    description="an answer classifier over stories (a memory network or Universal Transformer)",
    matches=inference.is_story_classifier, answer=inference.answer_from_memory,
    vocabularies=inference.classifier_vocabularies,
    recipes=("question_answering",), decodes=False, exports=False,
))
register_model_kind(ModelKind(
    name="sentence_selector", marker="selection",
    description="an extractive summarizer (it picks a sentence)",
    matches=inference.is_sentence_selector, answer=inference.select_sentences,
    vocabularies=inference.selector_vocabularies,
    recipes=("summarization",), decodes=False, exports=False,
))
register_model_kind(ModelKind(
    name="converted", marker="converted_from",
    description="a Seq2SeqModel converted from a Hugging Face checkpoint",
    matches=inference.is_seq2seq, answer=inference.generate_texts,
    vocabularies=converted.vocabularies, tokenizers=converted.load_tokenizers,
    length_penalty_form="hf",
    recipes=("translation", "summarization"), decodes=True, exports=True,
))

__all__ = [
    "ModelKind",
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
