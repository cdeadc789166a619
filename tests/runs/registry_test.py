"""One registry of recipes and model kinds: a new kind is one class and one
registration, and `open_run`, the CLI and `export` find it there."""

import json

import pytest

from keras_attention import cli, data, export, metrics, recipes, runs
from keras_attention.models import transformer_seq2seq
from keras_attention.runs import evaluation, registry


def test_the_built_in_recipes_and_kinds():
    assert registry.recipe_names() == ("translation", "summarization", "question_answering")
    assert recipes.RECIPES == registry.recipe_names()  # the built-in ones
    assert {kind.name: kind for kind in registry.model_kinds()} == {
        "seq2seq": runs.TextGenerator, "answer_classifier": runs.AnswerClassifier,
        "sentence_selector": runs.SentenceSelector}
    assert registry.kind_of_metadata({"answer_classes": ["a"]}) is runs.AnswerClassifier
    assert registry.kind_of_metadata({"selection": {}}) is runs.SentenceSelector
    # A converted checkpoint's run is a TextGenerator too: one class per kind.
    assert registry.kind_of_metadata({"converted_from": {}}) is runs.TextGenerator
    assert registry.kind_of_metadata({}) is runs.TextGenerator
    for name in registry.recipe_names():  # the functions themselves; training in recipes
        recipe = registry.recipe(name)
        assert recipe.examples is getattr(evaluation, f"{name}_examples")
        assert recipe.metrics and all(metric in metrics.METRICS for metric in recipe.metrics)
        assert recipe.main is None and recipes.recipe_spec(name).name == name
    for kind in registry.model_kinds():
        assert issubclass(kind, runs.TextToText) and kind is not runs.TextToText
        for method in ("matches", "from_run_parts", "vocabulary_sizes", "answer"):
            assert getattr(kind, method) is not getattr(runs.TextToText, method), method
        assert kind.exports == (kind.name in export.ARCHIVES)
        assert kind.decodes == hasattr(kind, "encode") == hasattr(kind, "detokenize")


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match=r"`recipe` must be one of .*Received: recipe='poetry'"):
        registry.recipe("poetry")
    with pytest.raises(ValueError, match=r"Received: kind='nope'"):
        registry.model_kind("nope")
    with pytest.raises(ValueError, match=r"must set `marker`.*Received: kind='other'"):
        registry.register_model_kind(type("Other", (runs.TextGenerator,), {"name": "other"}))
    with pytest.raises(ValueError, match=r"subclass of `TextToText`.*Received: kind="):
        registry.register_model_kind(lambda *args: None)
    with pytest.raises(TypeError, match=r"base class of the model kinds"):
        runs.TextToText(None, None)


class Shouter(runs.TextToText):
    """A model kind (for the test): a `Seq2SeqModel` whose answer is the
    input, upper-cased."""

    name, marker, description = "shouter", "shouts", "a shouting model"
    recipes, decodes, exports = ("translation",), False, False

    @classmethod
    def matches(cls, model):
        return runs.TextGenerator.matches(model)

    @classmethod
    def from_run_parts(cls, model, source_tokenizer, target_tokenizer, generation, *, recipe,
                       source_format, config, metadata):
        assert metadata["shouts"] == "loudly"
        return cls(model, source_tokenizer, recipe=recipe, source_format=source_format,
                   config=config)

    def vocabulary_sizes(self):
        return [("source", self.source_tokenizer.vocabulary_size(),
                 self.model.source_vocabulary_size, "source vocabulary")]

    def answer(self, texts, generation, *, verbose=0, truncate=False):
        assert generation is None and truncate is False
        return [text.upper() for text in texts]


@pytest.fixture
def shouter():
    yield registry.register_model_kind(Shouter)
    registry.remove_model_kind("shouter")


def test_a_new_model_kind_is_one_class_and_one_registration(shouter, tmp_path, capsys):
    pairs = data.make_date_pairs(100)
    tokenizer = data.train_tokenizer([s for p in pairs for s in p], 60)
    model = transformer_seq2seq(tokenizer.vocabulary_size(), num_layers=1, hidden_dim=8,
                                num_heads=2, intermediate_dim=8, max_length=16,
                                **data.special_token_ids(tokenizer))
    runs.save_run(tmp_path / "run", model, tokenizer, tokenizer, recipe="translation",
                  config={}, scores={}, extra={"shouts": "loudly"})
    run = runs.open_run(tmp_path / "run")
    assert run.kind is Shouter and run.generate(["may 1"]) == ["MAY 1"]
    (tmp_path / "in.txt").write_text("march 3\n", encoding="utf-8")
    cli.main(["generate", str(tmp_path / "run"), "--input", str(tmp_path / "in.txt")])
    assert capsys.readouterr().out == "MARCH 3\n"
    with pytest.raises(SystemExit, match=r"shouting model, which has no cached"):
        cli.main(["export", str(tmp_path / "run"), str(tmp_path / "out")])
    # Its recipes only: the kind's marker in a summarization run is refused.
    metadata = json.loads((tmp_path / "run" / "config.json").read_text())
    (tmp_path / "run" / "config.json").write_text(json.dumps(dict(metadata,
                                                                  recipe="summarization")))
    with pytest.raises(runs.RunFolderError, match=r"names the summarization recipe but sets "
                                                  r"`shouts`"):
        runs.open_run(tmp_path / "run")


def test_a_new_recipe_is_one_registration(monkeypatch):
    registry.register_recipe(registry.Recipe(
        name="poetry", examples=evaluation.translation_examples,
        metrics=("bleu",), main=main))
    try:
        assert "poetry" in registry.recipe_names()
        assert cli.main(["train", "poetry", "--epochs=1"]) == ["--epochs=1"]
    finally:
        registry.remove_recipe("poetry")


def main(argv):
    """The `poetry` recipe's `main` (for the test): returns its arguments."""
    return argv
