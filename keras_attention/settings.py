"""The recipes' settings: `--key=value` overrides of a configuration dict, checked.

A recipe's configuration is a flat dict of defaults (its `get_config()`),
named presets (other dicts with the same keys) and a `Rule` per setting that
needs more than its type: a list of choices, or a range. `parse` reads
`--preset=NAME` and `--key=value` (or `--key value`) arguments into a full
configuration; `check` verifies one, from the command line or from Python,
before any work. Every refusal is a `ValueError` naming the setting and
saying `Received: ...`.

- A setting's type is its default's: `int`, `float` (an integer is read as
  a float), `str` or `bool`.
- A boolean is one of true/false, 1/0, yes/no (any case); a bare
  `--flag` means true. Anything else is refused.
- An unknown setting is refused with the sorted list of the known ones;
  `--output-dir` is read as `--output_dir`.
- A recipe may name the settings a configuration does not read (`unused`):
  changing one on the command line is refused, not silently ignored.

Example:

>>> from keras_attention import settings
>>> defaults = {"epochs": 3, "learning_rate": 1e-3, "overwrite": False}
>>> rules = {"epochs": settings.at_least(1), "learning_rate": settings.greater_than(0)}
>>> settings.parse(["--epochs=5", "--overwrite=yes"], {"default": defaults}, rules)
{'epochs': 5, 'learning_rate': 0.001, 'overwrite': True}
>>> settings.parse(["--epochs=0"], {"default": defaults}, rules)
Traceback (most recent call last):
...
ValueError: Setting `epochs` must be >= 1. Received: epochs=0
"""

import dataclasses
import math

BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclasses.dataclass(frozen=True)
class Rule:
    """What a setting accepts beyond its type.

    Attributes:
        choices: tuple, the only accepted values (empty: any value).
        minimum, maximum: optional bounds of a number.
        minimum_excluded, maximum_excluded: bools, whether a bound itself is
            refused.
    """

    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None
    minimum_excluded: bool = False
    maximum_excluded: bool = False

    def check(self, name, value):
        """Returns `value`, or raises a `ValueError` naming `name`."""
        if self.choices and value not in self.choices:
            options = ", ".join(repr(c) for c in self.choices)
            _refuse(name, value, f"must be one of {options}")
        if self.minimum is not None:
            below = value <= self.minimum if self.minimum_excluded else value < self.minimum
            if below or (isinstance(value, float) and math.isnan(value)):
                _refuse(name, value, f"must be {'>' if self.minimum_excluded else '>='} "
                                     f"{self.minimum}")
        if self.maximum is not None:
            above = value >= self.maximum if self.maximum_excluded else value > self.maximum
            if above or (isinstance(value, float) and math.isnan(value)):
                _refuse(name, value, f"must be {'<' if self.maximum_excluded else '<='} "
                                     f"{self.maximum}")
        return value


def one_of(*choices):
    """A `Rule`: the value is one of `choices`."""
    return Rule(choices=tuple(choices))


def at_least(minimum):
    """A `Rule`: the value is >= `minimum`."""
    return Rule(minimum=minimum)


def greater_than(minimum):
    """A `Rule`: the value is > `minimum`."""
    return Rule(minimum=minimum, minimum_excluded=True)


def fraction():
    """A `Rule`: the value lies in [0, 1)."""
    return Rule(minimum=0.0, maximum=1.0, maximum_excluded=True)


def parse_bool(name, text):
    """`"true"`/`"1"`/`"yes"` -> True, `"false"`/`"0"`/`"no"` -> False (any case)."""
    value = BOOLEANS.get(str(text).strip().lower())
    if value is None:
        _refuse(name, text, "must be true or false (or 1/0, yes/no)")
    return value


def parse_value(name, text, default):
    """`text` read as the type of `default` (bool, int, float or str)."""
    if isinstance(default, bool):
        return parse_bool(name, text)
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            _refuse(name, text, "must be an integer")
    if isinstance(default, float):
        try:
            return float(text)
        except ValueError:
            _refuse(name, text, "must be a number")
    return text


def parse_overrides(argv, defaults):
    """The settings given in `argv` (`--key=value`, `--key value`, or a bare
    `--flag` for a boolean), typed by `defaults`; only those given.

    Args:
        argv: list of str.
        defaults: dict, every known setting with its default value.

    Returns:
        A dict of the settings `argv` sets (the last one wins).
    """
    overrides = {}
    argv = list(argv)
    index = 0
    while index < len(argv):
        argument = argv[index]
        index += 1
        if not argument.startswith("--") or argument == "--":
            raise ValueError(f"Expected `--key=value` settings. Received: {argument!r}")
        key, has_value, text = argument[2:].partition("=")
        if key not in defaults and key.replace("-", "_") in defaults:
            key = key.replace("-", "_")  # --output-dir means --output_dir
        _check_known(key, defaults, text if has_value else None)
        if not has_value:
            if index < len(argv) and not argv[index].startswith("--"):
                text = argv[index]
                index += 1
            elif isinstance(defaults[key], bool):
                text = "true"
            else:
                raise ValueError(f"Setting `{key}` needs a value (`--{key}=VALUE`). "
                                 f"Received: --{key}")
        overrides[key] = parse_value(key, text, defaults[key])
    return overrides


def check(config, defaults, rules):
    """Returns `config` if it holds every setting of `defaults`, no other,
    each of its default's type and within its `rules`.

    An integer given for a float setting is returned as a float.

    Args:
        config: dict, a full configuration.
        defaults: dict, every known setting with its default value.
        rules: dict from a setting to its `Rule`.

    Raises:
        ValueError: naming the first setting that is unknown, missing, of
            the wrong type or outside its rule.
    """
    for key in config:
        _check_known(key, defaults, config[key])
    missing = sorted(set(defaults) - set(config))
    if missing:
        raise ValueError(f"Missing settings: {', '.join(missing)}. "
                         f"Received: a configuration without them")
    checked = {}
    for key, value in config.items():
        value = _check_type(key, value, defaults[key])
        checked[key] = rules[key].check(key, value) if key in rules else value
    return checked


def parse(argv, presets, rules, *, description="", unused=None):
    """A full, checked configuration from `--preset=NAME` and `--key=value`
    arguments; `--help` prints the presets and settings and exits.

    Args:
        argv: list of str (e.g. `sys.argv[1:]`).
        presets: dict from a preset name to its configuration dict (or a
            function returning it); `"default"` is used without `--preset`.
        rules: dict from a setting to its `Rule`.
        description: str, the first line of `--help`.
        unused: optional function from a checked configuration to
            `{setting: when it is not read}` (e.g. `"with
            architecture='rnn'"`): a setting given on the command line with
            another value than the preset's, that this configuration does
            not read, is refused rather than silently ignored.
    """
    presets = {name: preset() if callable(preset) else preset
               for name, preset in presets.items()}
    defaults = presets["default"]
    argv = list(argv)
    if {"-h", "--help"} & set(argv):
        print(describe(presets, rules, description))
        raise SystemExit(0)
    preset, rest = _pop_preset(argv, presets)
    config = dict(presets[preset])
    overrides = parse_overrides(rest, defaults)
    config = check({**config, **overrides}, defaults, rules)
    if unused is not None:
        _refuse_unused(overrides, presets[preset], unused(config))
    return config


def _refuse_unused(overrides, preset, unused):
    """Raises a ValueError naming the first override that changes a setting
    the configuration does not read (`unused`: `{setting: when}`)."""
    for key, value in overrides.items():
        if key in unused and value != preset[key]:
            raise ValueError(
                f"Setting `{key}` is not used {unused[key]}, so changing it would "
                f"do nothing; leave it out. Received: {key}={value!r}"
            )


def describe(presets, rules, description=""):
    """The `--help` text: presets, then each setting with its default and rule."""
    lines = [description, ""] if description else []
    lines += [f"Presets (--preset=NAME): {', '.join(sorted(presets))}", "",
              "Settings (--key=value):"]
    for key, value in presets["default"].items():
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        lines.append(f"  --{key}={shown} ({_describe_rule(value, rules.get(key))})")
    return "\n".join(lines)


def _describe_rule(default, rule):
    """`"int, >= 1"`, `"transformer|rnn"`, ... for `--help`."""
    if rule is not None and rule.choices:
        return "|".join(str(c) for c in rule.choices)
    bounds = []
    if rule is not None and rule.minimum is not None:
        bounds.append(f"{'>' if rule.minimum_excluded else '>='} {rule.minimum}")
    if rule is not None and rule.maximum is not None:
        bounds.append(f"{'<' if rule.maximum_excluded else '<='} {rule.maximum}")
    return ", ".join([type(default).__name__] + bounds)


def _pop_preset(argv, presets):
    """`(preset name, the other arguments)`."""
    preset, rest, index = "default", [], 0
    while index < len(argv):
        argument = argv[index]
        index += 1
        if argument == "--preset":
            if index == len(argv) or argv[index].startswith("--"):
                raise ValueError("Setting `preset` needs a value (`--preset=NAME`). "
                                 "Received: --preset")
            preset = argv[index]
            index += 1
        elif argument.startswith("--preset="):
            preset = argument.partition("=")[2]
        else:
            rest.append(argument)
    if preset not in presets:
        _refuse("preset", preset, f"must be one of {', '.join(repr(p) for p in sorted(presets))}")
    return preset, rest


def _check_known(key, defaults, value):
    if key not in defaults:
        raise ValueError(f"Unknown setting `{key}`. Known settings: "
                         f"{', '.join(sorted(defaults))}. Received: {key}={value!r}")


def _check_type(key, value, default):
    """`value` if it has the type of `default` (an int is accepted as a float)."""
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
        if ok and not math.isfinite(value):
            _refuse(key, value, "must be a finite number")
    else:
        ok = isinstance(value, type(default))
    if not ok:
        _refuse(key, value, f"must be of type {type(default).__name__}")
    return value


def _refuse(name, value, requirement):
    raise ValueError(f"Setting `{name}` {requirement}. Received: {name}={value!r}")
