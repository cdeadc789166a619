"""The translation recipe end to end on its quick config, and the CLI on the
saved run: train, save, reload, generate, score."""

import json

import pytest

from tests import recipes


def load_recipe():
    return recipes.load_recipe("translation")


@pytest.mark.large
def test_recipe_saves_a_complete_run_and_no_partial_folder(quick_translation_run):
    output, scores, _ = quick_translation_run
    for name in ("model.keras", "source.spm", "target.spm", "config.json", "attention.png",
                 "training.png"):
        assert (output / name).exists(), name
    assert [path.name for path in output.parent.iterdir()] == ["translation"]  # nothing staged
    saved = json.loads((output / "config.json").read_text())
    assert saved["scores"]["bleu"] == scores["bleu"]
    # What a reader needs to decode, written by the recipe (the quick config decodes greedily;
    # pad, unk and start are never generated).
    assert saved["source_format"] == "text" and saved["decoding"] == {
        "source_length": 32, "target_length": 32, "strategy": "greedy", "num_beams": 4,
        "length_penalty": 0.6, "length_penalty_form": "hf", "early_stopping": False,
        "suppress_token_ids": [0, 1, 2]}



@pytest.mark.large
def test_the_evaluation_decodes_with_the_settings_the_run_records(quick_translation_run):
    output, _, calls = quick_translation_run
    saved = json.loads((output / "config.json").read_text())["decoding"]
    assert calls["never_generated_ids"] == 1  # one decoding_settings(...) for all
    assert calls["suppressed"] and all(s == saved["suppress_token_ids"]
                                       for s in calls["suppressed"])


@pytest.mark.large
def test_cli_generate_matches_the_reloaded_model_and_evaluate_scores(
        quick_translation_run, tmp_path, capsys):
    from keras_attention import cli

    output, _, _ = quick_translation_run
    sources = ["March 3, 2021", "the 1st of may, 1999"]
    (tmp_path / "in.txt").write_text("\n".join(sources) + "\n", encoding="utf-8")
    cli.main(["generate", str(output), "--input", str(tmp_path / "in.txt"),
              "--output", str(tmp_path / "out.txt"), "--strategy", "greedy"])
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    recipe = load_recipe()
    config = json.loads((output / "config.json").read_text())["config"]
    model, source_tokenizer, target_tokenizer, _ = recipe.runs.load_run(output)
    # The same parts made in Python, with the recipe's settings: the CLI's
    # answer is the recipe's evaluation's.
    decoding = recipe.decoding_settings(dict(config, strategy="greedy"), target_tokenizer)
    translator = recipe.runs.TextGenerator(model, source_tokenizer, target_tokenizer, decoding)
    assert lines == translator.generate(sources)
    (tmp_path / "pairs.tsv").write_text("March 3, 2021\t2021-03-03\n", encoding="utf-8")
    scores = cli.main(["evaluate", str(output), "--data", str(tmp_path / "pairs.tsv")])
    assert set(scores) == {"bleu", "chrf", "examples"} and scores["examples"] == 1


def test_execution_keys_resolve_through_fast_defaults():
    recipe = load_recipe()
    config = recipe.parse_settings(["--precision=mixed_bfloat16", "--jit_compile=false"])
    chosen = recipe.execution_defaults(config)
    assert chosen["dtype_policy"] == "mixed_bfloat16" and chosen["jit_compile"] is False
    auto = recipe.execution_defaults(recipe.recipe_config.get_config())
    if not recipe.runtime.has_gpu():  # measured fastest on a CPU: float32 graph mode
        assert auto["jit_compile"] is False and auto["dtype_policy"] == "float32"
    assert recipe.recipe_config.get_quick_config()["jit_compile"] == "false"
