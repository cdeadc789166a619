"""Every recipe's configuration: presets that pass their own rules, rules of known settings."""

import importlib

import pytest

from keras_attention import settings
from keras_attention.recipes import RECIPES


def config_module(recipe):
    return importlib.import_module(f"keras_attention.recipes.{recipe}.config")


@pytest.mark.parametrize("recipe", RECIPES)
def test_presets_hold_the_default_settings_and_pass_the_rules(recipe):
    module = config_module(recipe)
    defaults = module.get_config()
    assert defaults["overwrite"] is False and "quick" in module.PRESETS
    assert set(module.RULES) <= set(defaults)
    assert set(module.BACKUP_MAY_DIFFER) <= set(defaults)
    assert {"output_dir", "backup_dir", "epochs"} <= set(module.BACKUP_MAY_DIFFER)
    for name, preset in module.PRESETS.items():
        config = preset()
        assert set(config) == set(defaults), name
        assert settings.check(config, defaults, module.RULES) == config, name


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_reads_booleans_by_the_one_rule(recipe):
    module = config_module(recipe)
    train = importlib.import_module(f"keras_attention.recipes.{recipe}.train")
    assert train.parse_settings(["--overwrite=YES"])["overwrite"] is True
    assert train.parse_settings(["--overwrite=0"])["overwrite"] is False
    assert train.parse_settings(["--preset=quick"]) == module.get_quick_config()
    with pytest.raises(ValueError, match=r"`overwrite` must be true or false.*"
                                         r"Received: overwrite='ture'"):
        train.parse_settings(["--overwrite=ture"])


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_preset_parses_and_its_unused_settings_are_known(recipe):
    module = config_module(recipe)
    train = importlib.import_module(f"keras_attention.recipes.{recipe}.train")
    for name, preset in module.PRESETS.items():
        assert train.parse_settings([f"--preset={name}"]) == preset(), name
        assert set(module.unused_settings(preset())) <= set(module.get_config()), name


@pytest.mark.parametrize("recipe, argv, refused", [
    ("summarization", ["--summarizer=extractive", "--num_beams=8"],
     r"`num_beams` is not used with summarizer='extractive'"),
    ("summarization", ["--preset=scitldr", "--pointer_generator=false"],
     r"`pointer_generator` is not used with summarizer='extractive'"),
    ("summarization", ["--max_sentences=8"], r"`max_sentences` is not used with "
                                             r"summarizer='abstractive'"),
    ("summarization", ["--preset=scitldr", "--num_examples=10"],
     r"`num_examples` is not used with a `data` folder"),
    ("translation", ["--architecture=rnn", "--num_heads=2"],
     r"`num_heads` is not used with architecture='rnn'"),
    ("translation", ["--max_pairs=100"], r"`max_pairs` is not used without a `data` file"),
    ("question_answering", ["--max_steps=3"],
     r"`max_steps` is not used with architecture='memory_network'"),
    ("question_answering", ["--preset=babi_ut", "--num_hops=2"],
     r"`num_hops` is not used with architecture='universal_transformer'"),
    ("question_answering", ["--architecture=transformer", "--restarts=2"],
     r"`restarts` is not used with architecture='transformer'"),
])
def test_a_setting_the_run_would_ignore_is_refused(recipe, argv, refused):
    train = importlib.import_module(f"keras_attention.recipes.{recipe}.train")
    with pytest.raises(ValueError, match=refused + r".*Received: "):
        train.parse_settings(argv)
