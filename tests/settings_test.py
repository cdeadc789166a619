"""The one settings parser of the recipes: types, booleans, rules, unknown keys."""

import pytest

from keras_attention import settings

DEFAULTS = {"epochs": 3, "learning_rate": 1e-3, "architecture": "transformer",
            "overwrite": False, "data": ""}
RULES = {"epochs": settings.at_least(1), "learning_rate": settings.greater_than(0),
         "architecture": settings.one_of("transformer", "rnn")}
PRESETS = {"default": lambda: dict(DEFAULTS), "quick": lambda: dict(DEFAULTS, epochs=1)}


def parse(*argv):
    return settings.parse(list(argv), PRESETS, RULES)


def test_overrides_take_the_type_of_the_default():
    config = parse("--epochs=5", "--learning_rate", "2", "--data=a=b.tsv", "--architecture=rnn")
    assert config == dict(DEFAULTS, epochs=5, learning_rate=2.0, data="a=b.tsv",
                          architecture="rnn")
    assert isinstance(config["learning_rate"], float)
    assert parse("--preset=quick")["epochs"] == 1
    assert parse("--preset", "quick", "--epochs=4")["epochs"] == 4
    assert parse("--epochs=2", "--epochs=6")["epochs"] == 6  # the last one wins


@pytest.mark.parametrize("text, value", [
    ("true", True), ("TRUE", True), ("1", True), ("Yes", True),
    ("false", False), ("False", False), ("0", False), ("NO", False),
])
def test_booleans_accept_true_false_one_zero_yes_no(text, value):
    assert parse(f"--overwrite={text}")["overwrite"] is value
    assert parse("--overwrite", text)["overwrite"] is value


def test_a_bare_boolean_flag_means_true():
    assert parse("--overwrite")["overwrite"] is True
    assert parse("--overwrite", "--epochs=2") == dict(DEFAULTS, overwrite=True, epochs=2)


@pytest.mark.parametrize("text", ["flase", "t", "", "2", "on", "none"])
def test_any_other_boolean_is_refused(text):
    with pytest.raises(ValueError, match=rf"Setting `overwrite` must be true or false.*"
                                         rf"Received: overwrite={text!r}"):
        parse(f"--overwrite={text}")


@pytest.mark.parametrize("argument, message", [
    ("--epochs=0", r"`epochs` must be >= 1. Received: epochs=0"),
    ("--epochs=2.5", r"`epochs` must be an integer. Received: epochs='2.5'"),
    ("--learning_rate=-0.1", r"`learning_rate` must be > 0. Received: learning_rate=-0.1"),
    ("--learning_rate=0", r"`learning_rate` must be > 0. Received: learning_rate=0.0"),
    ("--learning_rate=nan", r"`learning_rate` must be a finite number. Received: "
                            r"learning_rate=nan"),
    ("--learning_rate=fast", r"`learning_rate` must be a number. Received: "
                             r"learning_rate='fast'"),
    ("--architecture=lstm", r"`architecture` must be one of 'transformer', 'rnn'. "
                            r"Received: architecture='lstm'"),
    ("--preset=huge", r"`preset` must be one of 'default', 'quick'. Received: preset='huge'"),
    ("--epochs", r"`epochs` needs a value.*Received: --epochs"),
    ("--preset", r"`preset` needs a value.*Received: --preset"),
    ("epochs=3", r"Expected `--key=value` settings. Received: 'epochs=3'"),
])
def test_bad_values_are_refused_naming_the_setting(argument, message):
    with pytest.raises(ValueError, match=message):
        parse(argument)


def test_an_unknown_setting_lists_the_known_ones_sorted():
    known = "architecture, data, epochs, learning_rate, overwrite"
    with pytest.raises(ValueError, match=rf"Unknown setting `epoch`. Known settings: {known}. "
                                         r"Received: epoch='3'"):
        parse("--epoch=3")
    with pytest.raises(ValueError, match=r"Unknown setting `hidden`.*Received: hidden=8"):
        settings.check(dict(DEFAULTS, hidden=8), DEFAULTS, RULES)


def test_check_verifies_a_configuration_given_in_python():
    assert settings.check(dict(DEFAULTS, learning_rate=1), DEFAULTS, RULES)["learning_rate"] == 1.0
    with pytest.raises(ValueError, match=r"`overwrite` must be of type bool. "
                                         r"Received: overwrite=1"):
        settings.check(dict(DEFAULTS, overwrite=1), DEFAULTS, RULES)
    with pytest.raises(ValueError, match=r"`epochs` must be of type int. Received: epochs=True"):
        settings.check(dict(DEFAULTS, epochs=True), DEFAULTS, RULES)
    with pytest.raises(ValueError, match=r"`epochs` must be >= 1. Received: epochs=-2"):
        settings.check(dict(DEFAULTS, epochs=-2), DEFAULTS, RULES)
    with pytest.raises(ValueError, match=r"Missing settings: data, epochs"):
        settings.check({k: v for k, v in DEFAULTS.items() if k not in ("data", "epochs")},
                       DEFAULTS, RULES)


def test_fraction_is_zero_to_one_excluded():
    rule = settings.fraction()
    assert rule.check("test_fraction", 0.0) == 0.0 and rule.check("test_fraction", 0.99) == 0.99
    with pytest.raises(ValueError, match=r"`test_fraction` must be < 1.0. Received: "
                                         r"test_fraction=1.0"):
        rule.check("test_fraction", 1.0)
    with pytest.raises(ValueError, match=r"must be >= 0.0. Received: test_fraction=-0.1"):
        rule.check("test_fraction", -0.1)


def test_help_lists_presets_settings_and_rules(capsys):
    with pytest.raises(SystemExit) as exit_info:
        settings.parse(["--epochs=2", "--help"], PRESETS, RULES, description="Train it.")
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("Train it.") and "Presets (--preset=NAME): default, quick" in out
    for line in ("--epochs=3 (int, >= 1)", "--overwrite=false (bool)",
                 "--architecture='transformer' (transformer|rnn)",
                 "--learning_rate=0.001 (float, > 0)"):
        assert line in out


def test_a_hyphenated_setting_is_the_underscored_one():
    assert parse("--learning-rate", "2")["learning_rate"] == 2.0
    with pytest.raises(ValueError, match=r"Unknown setting `learning-rat`"):
        parse("--learning-rat=2")


def _unused(config):
    return {"learning_rate": "with architecture='rnn'"} if config["architecture"] == "rnn" else {}


def test_changing_a_setting_the_configuration_does_not_read_is_refused():
    def parse_with_unused(*argv):
        return settings.parse(list(argv), PRESETS, RULES, unused=_unused)

    with pytest.raises(ValueError, match=r"Setting `learning_rate` is not used with "
                                         r"architecture='rnn'.*Received: learning_rate=0.5"):
        parse_with_unused("--architecture=rnn", "--learning_rate=0.5")
    # The preset's own value, or a setting that is read, is no change.
    assert parse_with_unused("--architecture=rnn", "--learning_rate=0.001")["architecture"] == "rnn"
    assert parse_with_unused("--learning_rate=0.5")["learning_rate"] == 0.5
