"""One registry of recipes and model kinds: a new one is one registration, and
`SavedRun`, the CLI and `export` find it there."""

import json

import pytest

from keras_attention import cli, data, export, metrics, recipes, runs
from keras_attention.models import transformer_seq2seq
from keras_attention.runs import converted, evaluation, inference, registry


def shout(text_to_text, texts, generation, verbose, *, truncate):
    """A decoding model kind's answer: the input, upper-cased (for the test),
    with the run's generation settings; neither caller asks to cut a line."""
    assert generation == text_to_text.generation.with_search()
    assert truncate is False
    return [text.upper() for text in texts]


def test_the_built_in_recipes_and_kinds():
    assert registry.recipe_names() == ("translation", "summarization", "question_answering")
    assert recipes.RECIPES == registry.recipe_names()  # the built-in ones
    assert [kind.name for kind in registry.model_kinds()] == [
        "seq2seq", "answer_classifier", "sentence_selector", "converted"]
    assert registry.kind_of_metadata({"answer_classes": ["a"]}).name == "answer_classifier"
    assert registry.kind_of_metadata({"converted_from": {}}).name == "converted"
    assert registry.kind_of_metadata({"selection": {}}).name == "sentence_selector"
    assert registry.kind_of_metadata({}).name == "seq2seq"
    for name in registry.recipe_names():  # the functions themselves; training in recipes
        recipe = registry.recipe(name)
        assert recipe.examples is getattr(evaluation, f"{name}_examples")
        assert recipe.metrics and all(metric in metrics.METRICS for metric in recipe.metrics)
        assert recipe.main is None and recipes.recipe_spec(name).name == name
    for kind in registry.model_kinds():
        for hook in (kind.matches, kind.answer, kind.vocabularies, kind.tokenizers):
            assert callable(hook)
        # One tokenizer contract: no kind encodes or detokenizes its own way.
        assert not hasattr(kind, "encode") and not hasattr(kind, "detokenize")
        assert kind.length_penalty_form in ("gnmt", "hf")
        assert kind.exports == (kind.name in export.ARCHIVES)
    assert registry.model_kind("converted").length_penalty_form == "hf"
    assert registry.model_kind("converted").tokenizers is converted.load_tokenizers
    assert registry.model_kind("seq2seq").tokenizers is inference.sentencepiece_tokenizers


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match=r"`recipe` must be one of .*Received: recipe='poetry'"):
        registry.recipe("poetry")
    with pytest.raises(ValueError, match=r"Received: kind='nope'"):
        registry.model_kind("nope")
    with pytest.raises(ValueError, match=r"must set `marker`.*Received: kind='other'"):
        registry.register_model_kind(registry.ModelKind(
            name="other", marker=None, description="", matches=None, answer=None,
            vocabularies=None, recipes=(), decodes=True, exports=True))


@pytest.fixture
def converted_kind():
    original = registry.model_kind("converted")
    kind = registry.register_model_kind(registry.ModelKind(
        name="converted", marker="converted_from", description="a converted checkpoint",
        matches=inference.is_seq2seq, answer=shout, vocabularies=inference.seq2seq_vocabularies,
        recipes=("translation",), decodes=True, exports=False))
    yield kind
    registry.register_model_kind(original)


def test_a_new_model_kind_is_one_registration(converted_kind, tmp_path, capsys):
    pairs = data.make_date_pairs(100)
    tokenizer = data.train_tokenizer([s for p in pairs for s in p], 60)
    model = transformer_seq2seq(tokenizer.vocabulary_size(), num_layers=1, hidden_dim=8,
                                num_heads=2, intermediate_dim=8, max_length=16,
                                **data.special_token_ids(tokenizer))
    decoding = {"source_length": 8, "target_length": 8}
    runs.save_run(tmp_path / "run", model, tokenizer, tokenizer, recipe="translation",
                  config={}, scores={}, decoding=decoding,
                  extra={"converted_from": "some/checkpoint"})
    run = runs.SavedRun(tmp_path / "run")
    assert run.kind is converted_kind and run.generate(["may 1"]) == ["MAY 1"]
    (tmp_path / "in.txt").write_text("march 3\n", encoding="utf-8")
    cli.main(["generate", str(tmp_path / "run"), "--input", str(tmp_path / "in.txt")])
    assert capsys.readouterr().out == "MARCH 3\n"
    with pytest.raises(SystemExit, match=r"converted checkpoint, which has no cached"):
        cli.main(["export", str(tmp_path / "run"), str(tmp_path / "out")])
    # Its recipes only: the kind's marker in a summarization run is refused.
    metadata = json.loads((tmp_path / "run" / "config.json").read_text())
    (tmp_path / "run" / "config.json").write_text(json.dumps(dict(metadata,
                                                                  recipe="summarization")))
    with pytest.raises(runs.RunFolderError, match=r"names the summarization recipe but sets "
                                                  r"`converted_from`"):
        runs.SavedRun(tmp_path / "run")


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
