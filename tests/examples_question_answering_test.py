"""The question-answering recipe on its quick config, and its scoring."""

import json

from tests import recipes


def load_recipe():
    return recipes.load_recipe("question_answering")


def test_parse_tasks_and_scoring():
    recipe = load_recipe()
    assert recipe.parse_tasks("1-3,5") == [1, 2, 3, 5]
    test = [("s", "kitchen", 1), ("s", "garden", 1), ("s", "yes", 2)]
    scores = recipe.score(["Kitchen", "office", "yes"], test)
    assert scores["per_task_accuracy"] == {1: 50.0, 2: 100.0}
    assert scores["mean_accuracy"] == 75.0
    assert round(scores["exact_match"], 2) == 66.67


def test_sources_keep_the_last_sentences_and_place_the_question():
    recipe = load_recipe()
    example = {"story": ["A went to the x.", "B went to the y."], "question": "Where is A?"}
    assert recipe.as_source(example, 1, question_first=True) == "Where is A? | B went to the y."
    assert recipe.as_source(example, 2) == "A went to the x. B went to the y. | Where is A?"


def test_quick_config_trains_saves_scores_and_the_cli_answers_the_same(tmp_path):
    from keras_attention import cli

    recipe = load_recipe()
    output = tmp_path / "qa"
    config = dict(recipe.recipe_config.get_quick_config(), output_dir=str(output))
    scores = recipe.main(config)
    assert 0.0 <= scores["mean_accuracy"] <= 100.0
    for name in ("model.keras", "source.spm", "target.spm", "config.json"):
        assert (output / name).exists()
    assert json.loads((output / "config.json").read_text())["recipe"] == "question_answering"

    sources = ["Mary went to the kitchen. | Where is Mary?", "John moved to the office. | Where is John?"]
    (tmp_path / "in.txt").write_text("\n".join(sources) + "\n", encoding="utf-8")
    cli.main(["generate", str(output), "--input", str(tmp_path / "in.txt"),
              "--output", str(tmp_path / "out.txt")])
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")[:-1]
    model, source_tokenizer, target_tokenizer, _ = recipe.runs.load_run(output)
    assert lines == recipe.answer(model, sources, source_tokenizer, target_tokenizer, config)
    record = {"id": "q1", "title": "t", "context": "Mary went to the kitchen.",
              "question": "Where is Mary?", "answer": "kitchen", "answer_start": 17}
    (tmp_path / "qa.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    scores = cli.main(["evaluate", str(output), "--data", str(tmp_path / "qa.jsonl")])
    assert set(scores) == {"exact_match", "f1", "examples"} and scores["examples"] == 1
