"""The question-answering recipe on its quick config, and its scoring."""

import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_recipe():
    path = ROOT / "examples" / "question_answering" / "train.py"
    spec = importlib.util.spec_from_file_location("qa_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parse_tasks_and_scoring():
    recipe = load_recipe()
    assert recipe.parse_tasks("1-3,5") == [1, 2, 3, 5]
    test = [("s", "kitchen", 1), ("s", "garden", 1), ("s", "yes", 2)]
    scores = recipe.score(["Kitchen", "office", "yes"], test)
    assert scores["per_task_accuracy"] == {1: 50.0, 2: 100.0}
    assert scores["mean_accuracy"] == 75.0
    assert round(scores["exact_match"], 2) == 66.67


def test_quick_config_trains_saves_and_scores(tmp_path):
    recipe = load_recipe()
    output = tmp_path / "qa"
    scores = recipe.main(dict(recipe.recipe_config.get_quick_config(), output_dir=str(output)))
    assert 0.0 <= scores["mean_accuracy"] <= 100.0
    for name in ("model.keras", "source.spm", "target.spm", "config.json"):
        assert (output / name).exists()
    assert json.loads((output / "config.json").read_text())["recipe"] == "question_answering"
