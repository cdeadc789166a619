"""The translation recipe with `--pack=true`: packed rows train the packed
model and the run it saves generates like any other."""

import json

import numpy as np
import pytest

from keras_attention import runs
from tests.recipes import load_recipe


@pytest.mark.large
def test_quick_recipe_trains_packed_and_saves_a_run_that_generates(tmp_path):
    recipe = load_recipe("translation")
    output = tmp_path / "run"
    config = recipe.parse_settings(["--preset=quick", "--pack=true", "--num_examples=200",
                                    "--epochs=1", "--max_test_examples=4",
                                    f"--output_dir={output}"])
    assert config["pack"] is True
    scores = recipe.train_and_evaluate(config)
    assert 0.0 <= scores["bleu"] <= 100.0 and scores["test_examples"] == 4
    assert json.loads((output / "config.json").read_text())["config"]["pack"] is True
    model, source_tokenizer, _, _ = runs.load_run(output)
    assert model.get_config()["packed"] is True
    assert "decoder_segment_ids" in model.input
    token_ids = model.generate(np.array([[5, 6, 7, 0]]), max_length=6)
    assert token_ids.shape == (1, 6)


def test_pack_is_refused_with_the_rnn_before_training(tmp_path):
    recipe = load_recipe("translation")
    with pytest.raises(ValueError, match=r"`pack=true` needs `architecture=transformer`.*"
                                         r"Received: architecture='rnn'"):
        recipe.main(["--preset=quick", "--pack=true", "--architecture=rnn",
                     f"--output_dir={tmp_path / 'run'}"])
    assert not (tmp_path / "run").exists()
