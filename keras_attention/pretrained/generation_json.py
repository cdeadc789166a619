"""A Hugging Face `generation_config.json` as `Seq2SeqModel.generate` arguments.

`generation_settings(folder)` reads the decoding settings a checkpoint ships
with and returns the keyword arguments of `generate` that give the tokens
`transformers`' `generate` gives with them:

```python
settings = generation_settings("opus-mt-en-de")   # the folder, the file or a dict
model.generate(source_ids, **settings)
```

Supported keys (`transformers` name -> our argument):

- `max_length` (counts the decoder start token) -> `max_length` minus one;
  `max_new_tokens` -> `max_length` (it wins, as in `transformers`); neither:
  `transformers`' default 20, so 19;
- `min_length` -> `min_length` minus one; `min_new_tokens` -> `min_length`
  (the larger wins);
- `num_beams`, `length_penalty`, `early_stopping`, `num_return_sequences` ->
  `sampler=BeamSampler(..., length_penalty_form="hf")` (or
  `GreedySampler()` with one beam);
- `do_sample` with `temperature` and `top_k` (`TopKSampler`), or `top_p`
  with `top_k=0` (`TopPSampler`), or neither (`RandomSampler`); one beam;
- `no_repeat_ngram_size`, `bad_words_ids`, `forced_bos_token_id`,
  `forced_eos_token_id`, `renormalize_logits` -> the same names;
  `suppress_tokens` -> `suppress_token_ids`; `begin_suppress_tokens` ->
  `begin_suppress_token_ids` (see `decoding.GenerationRules`);
- `decoder_start_token_id` (or, unset, `bos_token_id`, as `transformers`
  falls back) -> `decoder_start_token_id`;
- `eos_token_id` (one id) and `pad_token_id`: checked against the model's
  when given (`end_token_id=`, `pad_token_id=`), not returned.

Keys with no effect on the tokens (`transformers_version`, `use_cache`,
`output_scores`, ...) are accepted. Any other key whose value is not
`transformers`' default (None counts as unset) is an error naming it: a
setting is never silently ignored.
"""

import json
import math
import numbers
import os

from keras_attention.decoding.generation_rules import GenerationRules
from keras_attention.decoding.samplers import (
    BeamSampler,
    GreedySampler,
    RandomSampler,
    TopKSampler,
    TopPSampler,
)
from keras_attention.pretrained.checkpoint import GENERATION_CONFIG_FILE, checkpoint_file

#: `transformers`' defaults of the keys we read (applied when a key is unset).
DEFAULTS = {
    "max_length": 20, "max_new_tokens": None, "min_length": 0, "min_new_tokens": None,
    "do_sample": False, "num_beams": 1, "length_penalty": 1.0, "early_stopping": False,
    "num_return_sequences": 1, "temperature": 1.0, "top_k": 50, "top_p": 1.0,
    "no_repeat_ngram_size": 0, "bad_words_ids": None, "forced_bos_token_id": None,
    "forced_eos_token_id": None, "suppress_tokens": None, "begin_suppress_tokens": None,
    "renormalize_logits": False, "decoder_start_token_id": None, "bos_token_id": None,
    "eos_token_id": None, "pad_token_id": None,
}
SUPPORTED = tuple(DEFAULTS)
#: Keys that do not change the tokens.
NO_EFFECT = (
    "transformers_version", "_from_model_config", "_commit_hash", "use_cache",
    "output_scores", "output_attentions", "output_hidden_states", "output_logits",
    "return_dict_in_generate", "cache_implementation", "cache_config", "compile_config",
    "disable_compile", "generation_kwargs",
)
#: `transformers`' defaults of keys we do not support: any other value is an
#: error (so is any value but None of a key that is in no list).
UNSUPPORTED_DEFAULTS = {
    "typical_p": 1.0, "repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0,
    "encoder_no_repeat_ngram_size": 0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0,
    "remove_invalid_values": False, "exponential_decay_length_penalty": None,
    "num_beam_groups": 1, "diversity_penalty": 0.0, "max_time": None, "stop_strings": None,
    "min_p": None, "top_h": None, "sequence_bias": None, "token_healing": False,
    "guidance_scale": None, "watermarking_config": None, "constraints": None,
    "force_words_ids": None, "forced_decoder_ids": None, "penalty_alpha": None,
    "dola_layers": None, "low_memory": False, "is_assistant": False,
    "num_assistant_tokens": 20, "num_assistant_tokens_schedule": "constant",
    "assistant_confidence_threshold": 0.4, "assistant_lookbehind": 10,
    "target_lookbehind": 10, "prompt_lookup_num_tokens": None,
    "max_matching_ngram_size": None, "assistant_early_exit": None,
}


def read_generation_config(path_or_dict):
    """The dict of a `generation_config.json`: from a folder holding one, the
    file itself, or a dict (returned as a copy)."""
    if isinstance(path_or_dict, dict):
        return dict(path_or_dict)
    if not isinstance(path_or_dict, (str, os.PathLike)):
        raise ValueError(
            "Argument `path_or_dict` must be a folder, a generation_config.json file or a "
            f"dict. Received: path_or_dict={path_or_dict!r}"
        )
    path = os.fspath(path_or_dict)
    if os.path.isdir(path):  # a plain file inside the checkpoint folder
        path = checkpoint_file(path, GENERATION_CONFIG_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"No generation_config.json at {path!r}. Received: path_or_dict={path_or_dict!r}"
        )
    with open(path, encoding="utf-8") as file:
        try:
            config = json.load(file)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path!r} is not valid JSON ({error}). "
                             f"Received: path_or_dict={path_or_dict!r}") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path!r} must hold a JSON object. "
                         f"Received: path_or_dict={path_or_dict!r}")
    return config


def generation_settings(path_or_dict, *, end_token_id=None, pad_token_id=None):
    """`generate` keyword arguments from a checkpoint's generation settings.

    Args:
        path_or_dict: a checkpoint folder, its `generation_config.json`, or
            the dict it holds.
        end_token_id, pad_token_id: optional ids of the model that will
            generate; the config's `eos_token_id` / `pad_token_id` must
            equal them.

    Returns:
        A dict with `max_length` and `sampler`, plus each of `min_length`,
        `no_repeat_ngram_size`, `forced_bos_token_id`, `forced_eos_token_id`,
        `bad_words_ids`, `suppress_token_ids`, `begin_suppress_token_ids`,
        `renormalize_logits` and `decoder_start_token_id` that is set.

    Raises:
        ValueError: naming the first key that is unsupported (with a value
            other than the default) or invalid.

    Example:

    >>> settings = generation_settings({"num_beams": 4, "max_length": 512,
    ...                                 "bad_words_ids": [[58100]], "eos_token_id": 0,
    ...                                 "decoder_start_token_id": 58100})
    >>> settings["max_length"], settings["decoder_start_token_id"]
    (511, 58100)
    >>> settings["sampler"].length_penalty_form, settings["bad_words_ids"]
    ('hf', [[58100]])
    """
    config = read_generation_config(path_or_dict)
    for key, value in config.items():
        if key in SUPPORTED or key in NO_EFFECT or value is None:
            continue
        if key not in UNSUPPORTED_DEFAULTS:
            raise ValueError(
                f"`{key}` in the generation config is not a setting we know, so it cannot be "
                f"applied (only None is accepted for unknown keys). Received: {key}={value!r}"
            )
        if value != UNSUPPORTED_DEFAULTS[key]:
            raise ValueError(
                f"`{key}` in the generation config is not supported by keras_attention's "
                f"generate (only its default {UNSUPPORTED_DEFAULTS[key]!r}). "
                f"Received: {key}={value!r}"
            )
    c = {key: config.get(key) if config.get(key) is not None else default
         for key, default in DEFAULTS.items()}

    end = _single_id("eos_token_id", c["eos_token_id"])
    if end_token_id is not None and end is not None and end != end_token_id:
        raise ValueError(
            f"`eos_token_id` in the generation config must be the model's end token id "
            f"{end_token_id}. Received: eos_token_id={c['eos_token_id']!r}"
        )
    pad = _single_id("pad_token_id", c["pad_token_id"])
    if pad_token_id is not None and pad is not None and pad != pad_token_id:
        raise ValueError(
            f"`pad_token_id` in the generation config must be the model's pad token id "
            f"{pad_token_id}. Received: pad_token_id={pad!r}"
        )

    if c["max_new_tokens"] is not None:
        max_length = _int("max_new_tokens", c["max_new_tokens"], 1)
    else:
        max_length = _int("max_length", c["max_length"], 2) - 1
    min_length = max(0, _int("min_length", c["min_length"], 0) - 1)
    if c["min_new_tokens"] is not None:
        min_length = max(min_length, _int("min_new_tokens", c["min_new_tokens"], 0))

    settings = {"max_length": max_length, "sampler": _sampler(c)}
    rules = GenerationRules(
        min_length=min_length,
        no_repeat_ngram_size=_int("no_repeat_ngram_size", c["no_repeat_ngram_size"], 0),
        forced_bos_token_id=c["forced_bos_token_id"],
        forced_eos_token_id=_single_id("forced_eos_token_id", c["forced_eos_token_id"]),
        bad_words_ids=c["bad_words_ids"],
        begin_suppress_token_ids=c["begin_suppress_tokens"],
        renormalize_logits=c["renormalize_logits"],
    )
    for key, value in rules.get_config().items():
        if value != GenerationRules().get_config()[key]:
            settings[key] = value
    suppressed = GenerationRules(suppress_token_ids=c["suppress_tokens"]).suppress_token_ids
    if suppressed:
        settings["suppress_token_ids"] = list(suppressed)
    start = c["decoder_start_token_id"]
    start = c["bos_token_id"] if start is None else start
    start = _single_id("decoder_start_token_id", start)
    if start is not None:
        settings["decoder_start_token_id"] = start
    return settings


def checkpoint_generation_config(decoding, *, eos_token_id, pad_token_id, bos_token_id=None):
    """The `generation_config.json` dict of a run's decoding settings: the
    inverse of `generation_settings`, so that `transformers`' `generate`
    with it gives the tokens `keras-attention generate` gives.

    Args:
        decoding: a run's `decoding` in the Hugging Face form
            (`GenerationConfig(length_penalty_form="hf").to_dict()`:
            `target_length`, `strategy`, `num_beams`, `length_penalty`,
            `early_stopping`, `suppress_token_ids` and the rules).
        eos_token_id, pad_token_id, bos_token_id: the model's ids (`bos`
            optional).

    Example:

    >>> config = checkpoint_generation_config(
    ...     {"target_length": 511, "strategy": "beam", "num_beams": 4, "length_penalty": 0.6,
    ...      "early_stopping": False, "suppress_token_ids": [58100],
    ...      "decoder_start_token_id": 58100}, eos_token_id=0, pad_token_id=58100)
    >>> config["max_length"], config["num_beams"], config["suppress_tokens"]
    (512, 4, [58100])
    >>> generation_settings(config)["max_length"]
    511
    """
    beam = decoding.get("strategy") == "beam"
    config = {"max_length": int(decoding["target_length"]) + 1,
              "num_beams": int(decoding.get("num_beams", 1)) if beam else 1,
              "do_sample": False, "eos_token_id": eos_token_id, "pad_token_id": pad_token_id}
    if bos_token_id is not None:
        config["bos_token_id"] = bos_token_id
    if beam:
        config["length_penalty"] = float(decoding.get("length_penalty", 1.0))
        config["early_stopping"] = bool(decoding.get("early_stopping", False))
    if decoding.get("suppress_token_ids"):
        config["suppress_tokens"] = [int(i) for i in decoding["suppress_token_ids"]]
    if decoding.get("min_length"):
        config["min_new_tokens"] = int(decoding["min_length"])
    if decoding.get("begin_suppress_token_ids"):
        config["begin_suppress_tokens"] = [int(i) for i in decoding["begin_suppress_token_ids"]]
    for key in ("no_repeat_ngram_size", "forced_bos_token_id", "forced_eos_token_id",
                "bad_words_ids", "renormalize_logits", "decoder_start_token_id"):
        if decoding.get(key) is not None:
            config[key] = decoding[key]
    return config


#: The settings of `config.json` and `generation_config.json` that hold one
#: token id, and those that hold a list of ids (`bad_words_ids`: a list of
#: lists).
TOKEN_ID_KEYS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id",
                 "forced_bos_token_id", "forced_eos_token_id")
TOKEN_ID_LIST_KEYS = ("suppress_tokens", "begin_suppress_tokens")


def renumber_token_ids(settings, new_id):
    """`settings` (a `config.json` or `generation_config.json` dict) with
    each token id `i` it holds replaced by `new_id[i]` (the tokens of a
    checkpoint renumbered: `bart.renumber_tokens`); a new dict.

    >>> renumber_token_ids({"eos_token_id": 3, "suppress_tokens": [0, 1], "num_beams": 4},
    ...                    {0: 1, 1: 3, 2: 0, 3: 2})
    {'eos_token_id': 2, 'suppress_tokens': [1, 3], 'num_beams': 4}
    """
    def renumber(value):
        if isinstance(value, list):
            return [renumber(item) for item in value]
        return new_id.get(value, value) if isinstance(value, int) else value

    keys = TOKEN_ID_KEYS + TOKEN_ID_LIST_KEYS + ("bad_words_ids",)
    return {key: renumber(value) if key in keys else value for key, value in settings.items()}


def _sampler(c):
    num_beams = _int("num_beams", c["num_beams"], 1)
    num_return_sequences = _int("num_return_sequences", c["num_return_sequences"], 1)
    if not isinstance(c["do_sample"], bool):
        raise ValueError(
            f"`do_sample` must be true or false. Received: do_sample={c['do_sample']!r}"
        )
    if c["do_sample"]:
        if num_beams > 1:
            raise ValueError(
                "Beam sampling (`do_sample` with `num_beams` > 1) is not supported. "
                f"Received: num_beams={num_beams}"
            )
        if num_return_sequences != 1:
            raise ValueError(
                "`num_return_sequences` > 1 needs beam search here. "
                f"Received: num_return_sequences={num_return_sequences}"
            )
        top_k, top_p, temperature = c["top_k"], c["top_p"], c["temperature"]
        if top_p != 1.0 and top_k != 0:
            raise ValueError(
                "`top_k` and `top_p` together are not supported (set top_k to 0 for top-p "
                f"sampling). Received: top_k={top_k!r}, top_p={top_p!r}"
            )
        if top_p != 1.0:
            return TopPSampler(p=top_p, temperature=temperature)
        if top_k != 0:
            return TopKSampler(k=top_k, temperature=temperature)
        return RandomSampler(temperature=temperature)
    if num_beams == 1:
        if num_return_sequences != 1:
            raise ValueError(
                "`num_return_sequences` > 1 needs `num_beams` >= it. "
                f"Received: num_return_sequences={num_return_sequences}"
            )
        return GreedySampler()
    length_penalty = c["length_penalty"]
    if not isinstance(length_penalty, numbers.Real) or not math.isfinite(length_penalty):
        raise ValueError(
            f"`length_penalty` must be a finite number. Received: length_penalty={length_penalty!r}"
        )
    return BeamSampler(num_beams=num_beams, length_penalty=float(length_penalty),
                       num_return_sequences=num_return_sequences, length_penalty_form="hf",
                       early_stopping=c["early_stopping"])


def _int(key, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(
            f"`{key}` in the generation config must be an integer >= {low}. "
            f"Received: {key}={value!r}"
        )
    return int(value)


def _single_id(key, value):
    """None, an id, or a list of one distinct id -> None or that id."""
    if isinstance(value, list):
        ids = sorted(set(value))
        if len(ids) != 1:
            raise ValueError(
                f"`{key}` in the generation config must be a single token id (our models have "
                f"one end token). Received: {key}={value!r}"
            )
        value = ids[0]
    if value is None:
        return None
    return _int(key, value, 0)
