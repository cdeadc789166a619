"""The translation recipe's training settings: `label_smoothing`, `warmup_steps`
(a warmup and inverse square root schedule) and `average_last_epochs`."""

import json

import keras
import numpy as np
import pytest

from keras_attention import runs
from keras_attention.losses import SmoothedSparseCrossentropy
from keras_attention.schedules import WarmupInverseSqrtDecay
from tests.recipes import load_recipe

SETTINGS = ["--label_smoothing=0.1", "--warmup_steps=8", "--average_last_epochs=2"]


def test_defaults_leave_the_training_as_it_was():
    recipe = load_recipe("translation")
    config = recipe.parse_settings([])
    assert (config["label_smoothing"], config["warmup_steps"], config["average_last_epochs"]) == (
        0.0, 0, 1)
    compiled = recipe.compile_settings(config)
    assert isinstance(compiled["loss"], keras.losses.SparseCategoricalCrossentropy)
    assert float(compiled["optimizer"].learning_rate) == pytest.approx(config["learning_rate"])


def test_settings_choose_the_smoothed_loss_and_the_schedule():
    recipe = load_recipe("translation")
    config = recipe.parse_settings(["--preset=quick", "--learning_rate=0.003", *SETTINGS])
    compiled = recipe.compile_settings(config)
    assert isinstance(compiled["loss"], SmoothedSparseCrossentropy)
    assert compiled["loss"].label_smoothing == 0.1 and compiled["loss"].ignore_class == 0
    schedule = compiled["optimizer"].get_config()["learning_rate"]
    assert schedule["registered_name"] == "keras_attention>WarmupInverseSqrtDecay"
    assert schedule["config"] == {"peak_learning_rate": 0.003, "warmup_steps": 8}
    assert float(WarmupInverseSqrtDecay(0.003, 8)(7)) == pytest.approx(0.003)


@pytest.mark.parametrize("argv, message", [
    (["--label_smoothing=1.0"], r"`label_smoothing` must be < 1.*Received: label_smoothing=1.0"),
    (["--warmup_steps=-1"], r"`warmup_steps` must be >= 0.*Received: warmup_steps=-1"),
    (["--average_last_epochs=0"], r"`average_last_epochs` must be >= 1.*"
                                  r"Received: average_last_epochs=0"),
])
def test_out_of_range_settings_are_refused(argv, message):
    with pytest.raises(ValueError, match=message):
        load_recipe("translation").parse_settings(["--preset=quick", *argv])


def test_averaging_more_epochs_than_trained_is_refused_before_training(tmp_path):
    recipe = load_recipe("translation")
    with pytest.raises(ValueError, match=r"`average_last_epochs` must be at most `epochs`.*"
                                         r"Received: average_last_epochs=3, epochs=2"):
        recipe.main(["--preset=quick", "--average_last_epochs=3",
                     f"--output_dir={tmp_path / 'run'}"])
    assert not (tmp_path / "run").exists()


@pytest.mark.large
def test_quick_recipe_trains_with_every_setting_and_saves_a_run_that_loads(tmp_path, capsys):
    recipe = load_recipe("translation")
    output = tmp_path / "run"
    config = recipe.parse_settings(["--preset=quick", "--pack=true", "--num_examples=300",
                                    "--max_test_examples=4", *SETTINGS,
                                    f"--output_dir={output}"])
    scores = recipe.train_and_evaluate(config)
    assert 0.0 <= scores["bleu"] <= 100.0 and scores["test_examples"] == 4
    assert "Averaged the weights of epochs [1, 2]" in capsys.readouterr().out
    saved = json.loads((output / "config.json").read_text())["config"]
    assert (saved["label_smoothing"], saved["warmup_steps"], saved["average_last_epochs"]) == (
        0.1, 8, 2)
    model, *_ = runs.load_run(output)  # the custom loss and schedule deserialize
    assert isinstance(model.loss, SmoothedSparseCrossentropy)
    assert model.generate(np.array([[5, 6, 7, 0]]), max_length=6).shape == (1, 6)



def test_eng_deu_preset_trains_with_the_settings_of_its_results_row():
    recipe = load_recipe("translation")
    config = recipe.parse_settings(["--preset=eng_deu"])
    assert recipe.check_config(config) == config
    assert config["pack"] and config["architecture"] == "transformer"
    assert config["label_smoothing"] == 0.1 and config["warmup_steps"] > 0
    assert 1 < config["average_last_epochs"] <= config["epochs"]
    compiled = recipe.compile_settings(config)
    assert isinstance(compiled["loss"], SmoothedSparseCrossentropy)
    first_rate = float(compiled["optimizer"].learning_rate)  # step 0 of the warmup
    assert first_rate == pytest.approx(config["learning_rate"] / config["warmup_steps"])
