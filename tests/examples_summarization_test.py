"""The summarization recipe end to end on its quick config, its lead
baseline, and the CLI on the saved run."""

import json
import pathlib

import pytest

from tests import recipes

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCITLDR = ROOT.parent / "shared" / "data" / "summarization" / "scitldr"


def load_recipe():
    return recipes.load_recipe("summarization")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    recipe = load_recipe()
    output = tmp_path_factory.mktemp("runs") / "summarization"
    config = dict(recipe.recipe_config.get_quick_config(), output_dir=str(output))
    return output, recipe.train_and_evaluate(config), recipe


def test_lead_and_training_pairs():
    recipe = load_recipe()
    assert recipe.lead("One here. Two? Three!") == "One here."
    assert recipe.lead("One here. Two? Three!", 2) == "One here. Two?"
    records = [{"document": "d", "summaries": ["a", "b"]}]
    assert recipe.training_pairs(records, True) == [("d", "a"), ("d", "b")]
    assert recipe.training_pairs(records, False) == [("d", "a")]


@pytest.mark.large
def test_quick_config_saves_a_run_with_rouge_and_the_lead_baseline(run_dir):
    output, scores, _ = run_dir
    for name in ("model.keras", "source.spm", "target.spm", "config.json", "attention.png",
                 "training.png"):
        assert (output / name).exists(), name
    for key in ("model", "lead_1"):
        assert set(scores[key]) == {"rouge1", "rouge2", "rougeL"}
        assert all(0.0 <= value <= 100.0 for value in scores[key].values())
    # Built-in abstracts open with background: lead-1 shares little with the TLDR.
    assert scores["lead_1"]["rouge2"] < 20.0
    saved = json.loads((output / "config.json").read_text())
    assert saved["recipe"] == "summarization" and saved["config"]["pointer_generator"]
    assert saved["source_format"] == "text" and saved["decoding"] == {
        "source_length": 64, "target_length": 24, "strategy": "beam", "num_beams": 2,
        "length_penalty": 1.0, "length_penalty_form": "gnmt", "coverage_penalty": 0.0,
        "suppress_token_ids": [0, 1, 2]}


@pytest.mark.large
def test_cli_generate_equals_the_recipe_and_evaluate_reports_rouge(run_dir, tmp_path):
    from keras_attention import cli, data

    output, _, recipe = run_dir
    documents = [r["document"] for r in data.make_abstracts(2, seed=5)]
    (tmp_path / "in.txt").write_text("\n".join(documents) + "\n", encoding="utf-8")
    # Documents longer than the run's 64 source tokens are cut, as the recipe cuts them.
    cli.main(["generate", str(output), "--input", str(tmp_path / "in.txt"),
              "--output", str(tmp_path / "out.txt"), "--truncate"])
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")[:-1]
    model, tokenizer, _, metadata = recipe.runs.load_run(output)
    summarizer = recipe.runs.TextGenerator(model, tokenizer, tokenizer,
                                           recipe.decoding_settings(metadata["config"], tokenizer),
                                           recipe="summarization")
    assert lines == summarizer.generate(documents, truncate=True)
    records = [json.dumps({"document": d, "summary": "a summary"}) for d in documents]
    (tmp_path / "test.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    scores = cli.main(["evaluate", str(output), "--data", str(tmp_path / "test.jsonl")])
    assert set(scores) == {"rouge1", "rouge2", "rougeL", "examples"}
    assert scores["examples"] == 2


@pytest.mark.skipif(not SCITLDR.exists(), reason="../shared/data is not beside the repository")
def test_scitldr_splits_load_with_every_reference():
    recipe = load_recipe()
    config = dict(recipe.recipe_config.get_scitldr_config(), data=str(SCITLDR))
    train, validation, test = recipe.load_splits(config)
    assert len(train) > 1000 and len(validation) > 100 and len(test) > 100
    assert max(len(record["summaries"]) for record in test) > 1


def test_execution_keys_are_overridable():
    recipe = load_recipe()
    config = recipe.recipe_config.get_config()
    assert config["precision"] == "auto" and config["jit_compile"] == "auto"
    config = recipe.parse_settings(["--precision=float32", "--jit_compile=true"])
    chosen = recipe.runtime.fast_defaults(config["precision"], config["jit_compile"])
    assert chosen["dtype_policy"] == "float32" and chosen["jit_compile"] is True


def test_gap_sentence_pretraining_fits_on_the_documents_principal_sentences(tmp_path):
    from keras_attention import data, distribute

    recipe = load_recipe()
    documents = [r["document"] for r in data.make_abstracts(6, seed=1)] + ["One sentence."]
    seen = {}

    class Model:
        def fit(self, dataset, epochs, callbacks, **kwargs):
            seen.update(dataset=dataset, epochs=epochs, callbacks=callbacks)

    config = dict(recipe.recipe_config.get_quick_config(), gap_sentence_epochs=2,
                  backup_dir=str(tmp_path))
    recipe.pretrain_on_gap_sentences(Model(), documents, lambda pairs, shuffle: pairs, config,
                                     distribute.get_strategy("default"))
    assert seen["dataset"] == data.gap_sentence_pairs(documents[:6])
    assert seen["epochs"] == 2
    (backup,) = seen["callbacks"]
    assert backup.backup_dir == str(tmp_path / "gap_sentences")  # apart from the summaries'


@pytest.fixture(scope="module")
def extractive_run(tmp_path_factory):
    recipe = load_recipe()
    output = tmp_path_factory.mktemp("runs") / "extractive"
    config = dict(recipe.recipe_config.get_quick_config(), output_dir=str(output),
                  summarizer="extractive", epochs=2, max_sentences=6)
    return output, recipe.train_and_evaluate(config)


@pytest.mark.large
def test_extractive_quick_config_saves_a_run_that_picks_a_sentence(extractive_run, tmp_path):
    from keras_attention import cli, data, runs

    output, scores = extractive_run
    for rouge in (scores["model"], scores["lead_1"], scores["oracle"],
                  *scores["validation"].values()):
        assert set(rouge) == {"rouge1", "rouge2", "rougeL"}
    # The oracle is the best one sentence can do: above lead-1 and the model.
    assert scores["oracle"]["rougeL"] >= max(scores["lead_1"]["rougeL"],
                                             scores["model"]["rougeL"])
    assert 0.0 <= scores["oracle_accuracy"] <= 1.0
    saved = json.loads((output / "config.json").read_text())
    assert saved["selection"] == {"max_length": 64, "max_sentences": 6}
    assert saved["decoding"] is None and saved["config"]["summarizer"] == "extractive"
    documents = [r["document"] for r in data.make_abstracts(3, seed=5)]
    (tmp_path / "in.txt").write_text("\n".join(documents) + "\n", encoding="utf-8")
    cli.main(["generate", str(output), "--input", str(tmp_path / "in.txt"),
              "--output", str(tmp_path / "out.txt")])
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(lines) == 3
    for document, line in zip(documents, lines):
        assert line in data.split_sentences(document)
    assert runs.open_run(output).generate(documents) == lines
    records = [json.dumps({"document": d, "summary": "a summary"}) for d in documents]
    (tmp_path / "test.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    scores = cli.main(["evaluate", str(output), "--data", str(tmp_path / "test.jsonl")])
    assert set(scores) == {"rouge1", "rouge2", "rougeL", "examples"} and scores["examples"] == 3
    from keras_attention import export

    with pytest.raises(ValueError, match=r"`run_dir` must hold a `Seq2SeqModel`.*Received"):
        export.export_run(output, tmp_path / "exported")
    assert not (tmp_path / "exported").exists()


def test_scitldr_preset_is_the_extractive_summarizer():
    recipe = load_recipe()
    assert recipe.recipe_config.get_scitldr_config()["summarizer"] == "extractive"
    assert recipe.recipe_config.get_scitldr_abstractive_config()["summarizer"] == "abstractive"
