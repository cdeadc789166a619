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
