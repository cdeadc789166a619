"""`GenerationConfig`: how a run turns a line into an output, in one object.

A run folder's `config.json` holds it once, as its `decoding` dict
(`to_dict`); `runs.open_run` reads it once (`from_dict`); a recipe makes it from
its settings (each recipe's `decoding_settings`), a converted checkpoint
from its `generation_config.json` (`from_generate_kwargs`); the CLI's
`--strategy` and `--num_beams` and `export_run`'s arguments map onto it in
one place (`with_search`); and `generate_kwargs` is the one mapping to
`Seq2SeqModel.generate` (`TextGenerator`, the recipes' evaluation and
`keras_attention.export` use it, and nothing else builds a sampler for a
run).

Two forms of beam scoring exist: the GNMT way (`length_penalty_form="gnmt"`,
with `coverage_penalty`), which the summarization recipe and translation runs
saved by earlier versions use, and the way `transformers` does (`"hf"`, with
`early_stopping`), which converted Hugging Face checkpoints and the
translation recipe use, and which an exported run's `generate` computes. A
run folder records its form (`to_dict`); a folder saved before it did gets
the form it was scored with: GNMT's for a recipe's run, Hugging Face's for a
converted checkpoint (`runs.open_run`).
"""

import dataclasses
import numbers

#: The generation rules `Seq2SeqModel.generate` applies at each step (see
#: `keras_attention.decoding.GenerationRules`), and `decoder_start_token_id`.
RULE_KEYS = ("min_length", "no_repeat_ngram_size", "forced_bos_token_id",
             "forced_eos_token_id", "bad_words_ids", "begin_suppress_token_ids",
             "renormalize_logits", "decoder_start_token_id")
SEARCH_STRATEGIES = ("greedy", "beam")
LENGTH_PENALTY_FORMS = ("gnmt", "hf")
#: The beams of `with_search(strategy="beam")` on a run that decodes greedily.
DEFAULT_NUM_BEAMS = 4


@dataclasses.dataclass(frozen=True)
class GenerationConfig:
    """How a run generates: lengths, search and rules.

    Args:
        source_length: positive int, the source ids kept of a line (a
            longer line keeps its first `source_length - 1` and its end).
        target_length: positive int, `generate`'s `max_length`.
        strategy: `"greedy"` or `"beam"`.
        num_beams: positive int, the beams of `"beam"` (1 for greedy).
        length_penalty: float, the beam search's length penalty (in
            `length_penalty_form`).
        length_penalty_form: `"gnmt"` or `"hf"` (`transformers`' form).
        coverage_penalty: float >= 0, GNMT's coverage penalty (`"gnmt"` only).
        early_stopping: bool, Hugging Face's beam stopping rule (`"hf"` only).
        suppress_token_ids: ids never generated (the recipes never generate
            pad, `<unk>` and start).
        min_length, no_repeat_ngram_size, forced_bos_token_id,
        forced_eos_token_id, bad_words_ids, begin_suppress_token_ids,
        renormalize_logits, decoder_start_token_id: the checkpoint's
            generation rules, as `Seq2SeqModel.generate` takes them; `None`:
            not set.

    Raises:
        ValueError: naming the field, for a value of another type or range.

    Example:

    >>> config = GenerationConfig(source_length=32, target_length=16, strategy="beam",
    ...                           num_beams=4, length_penalty=0.6)
    >>> config.with_search(num_beams=2).generate_kwargs()["sampler"].num_beams
    2
    >>> GenerationConfig.from_dict(config.to_dict()) == config
    True
    """

    source_length: int
    target_length: int
    strategy: str = "greedy"
    num_beams: int = 1
    length_penalty: float = 0.0
    length_penalty_form: str = "gnmt"
    coverage_penalty: float = 0.0
    early_stopping: bool = False
    suppress_token_ids: tuple = ()
    min_length: object = None
    no_repeat_ngram_size: object = None
    forced_bos_token_id: object = None
    forced_eos_token_id: object = None
    bad_words_ids: object = None
    begin_suppress_token_ids: object = None
    renormalize_logits: object = None
    decoder_start_token_id: object = None

    def __post_init__(self):
        for name in ("source_length", "target_length", "num_beams"):
            _check_int(name, getattr(self, name), low=1)
        if self.strategy not in SEARCH_STRATEGIES:
            raise _error("strategy", self.strategy,
                         f"one of {', '.join(map(repr, SEARCH_STRATEGIES))}")
        if self.length_penalty_form not in LENGTH_PENALTY_FORMS:
            raise _error("length_penalty_form", self.length_penalty_form,
                         f"one of {', '.join(map(repr, LENGTH_PENALTY_FORMS))}")
        for name in ("length_penalty", "coverage_penalty"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise _error(name, value, "a number")
        if self.coverage_penalty < 0:
            raise _error("coverage_penalty", self.coverage_penalty, "a number >= 0")
        if not isinstance(self.early_stopping, bool):
            raise _error("early_stopping", self.early_stopping, "a bool")
        ids = self.suppress_token_ids
        if not isinstance(ids, (list, tuple)) or any(
                isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in ids):
            raise _error("suppress_token_ids", ids, "a list of token ids (ints >= 0)")
        object.__setattr__(self, "suppress_token_ids", tuple(ids))
        object.__setattr__(self, "length_penalty", float(self.length_penalty))
        object.__setattr__(self, "coverage_penalty", float(self.coverage_penalty))
        if self.bad_words_ids is not None:
            object.__setattr__(self, "bad_words_ids",
                               tuple(tuple(words) for words in self.bad_words_ids))
        if self.begin_suppress_token_ids is not None:
            object.__setattr__(self, "begin_suppress_token_ids",
                               tuple(self.begin_suppress_token_ids))

    @classmethod
    def from_dict(cls, decoding, length_penalty_form="gnmt"):
        """The configuration of a run folder's `decoding` dict (`to_dict`'s
        form; a folder saved before a key existed gets its default).

        Args:
            decoding: dict, `to_dict`'s form.
            length_penalty_form: the form of a `decoding` that does not
                record its own (saved before it did): the model kind's.

        Raises:
            ValueError: naming `decoding`, for a key its form does not take.
        """
        if not isinstance(decoding, dict):
            raise ValueError(f"Argument `decoding` must be a dict. Received: decoding={decoding!r}")
        decoding = dict(decoding)
        length_penalty_form = decoding.pop("length_penalty_form", length_penalty_form)
        if length_penalty_form not in LENGTH_PENALTY_FORMS:
            raise _error("length_penalty_form", length_penalty_form,
                         f"one of {', '.join(map(repr, LENGTH_PENALTY_FORMS))}")
        keys = dict_keys(length_penalty_form)
        unknown = sorted(set(decoding) - set(keys))
        if unknown:
            raise ValueError(f"Argument `decoding` has unknown keys {unknown} (known: "
                             f"{', '.join(keys)}). Received: decoding={decoding!r}")
        for key in ("source_length", "target_length"):
            if key not in decoding:
                raise ValueError(f"Argument `decoding` must set `{key}`. "
                                 f"Received: decoding={decoding!r}")
        defaults = {"length_penalty": 1.0} if length_penalty_form == "hf" else {}
        return cls(**{**defaults, **decoding}, length_penalty_form=length_penalty_form)

    @classmethod
    def from_generate_kwargs(cls, generation, source_length):
        """The configuration of a converted checkpoint: `load_pretrained`'s
        `info["generation"]` (`generate` keyword arguments with a sampler).

        Raises:
            ValueError: naming the setting, for a sampling checkpoint
                (`do_sample`) or one returning several sequences: a run
                answers one line with one line.
        """
        from keras_attention.decoding.samplers import BeamSampler, GreedySampler

        sampler = generation["sampler"]
        search = {}
        if isinstance(sampler, BeamSampler):
            if sampler.num_return_sequences != 1:
                raise ValueError(
                    "A converted run answers each line with one line: the checkpoint's "
                    "`num_return_sequences` must be 1. "
                    f"Received: num_return_sequences={sampler.num_return_sequences}")
            search = dict(strategy="beam", num_beams=sampler.num_beams,
                          length_penalty=sampler.length_penalty,
                          early_stopping=bool(sampler.early_stopping))
        elif not isinstance(sampler, GreedySampler):
            raise ValueError(
                "A converted run decodes with greedy or beam search: the checkpoint's "
                "generation config samples (`do_sample`), which is not supported. "
                f"Received: sampler={sampler!r}")
        rules = {key: generation[key] for key in ("suppress_token_ids",) + RULE_KEYS
                 if generation.get(key) is not None}
        return cls(source_length=source_length, target_length=generation["max_length"],
                   length_penalty_form="hf", **{"length_penalty": 1.0, **search, **rules})

    def to_dict(self):
        """The JSON form a run folder's `config.json` holds in `decoding`: the
        fields of this form (`length_penalty_form` included), the rules only
        where set."""
        decoding = {"source_length": self.source_length, "target_length": self.target_length,
                    "strategy": self.strategy, "num_beams": self.num_beams,
                    "length_penalty": self.length_penalty,
                    "length_penalty_form": self.length_penalty_form}
        if self.length_penalty_form == "gnmt":
            decoding["coverage_penalty"] = self.coverage_penalty
            decoding["suppress_token_ids"] = list(self.suppress_token_ids)
        else:
            decoding["early_stopping"] = self.early_stopping
            if self.suppress_token_ids:
                decoding["suppress_token_ids"] = list(self.suppress_token_ids)
        for key in RULE_KEYS:
            value = getattr(self, key)
            if value is not None:
                decoding[key] = ([list(words) for words in value] if key == "bad_words_ids"
                                 else list(value) if isinstance(value, tuple) else value)
        return decoding

    def with_search(self, strategy=None, num_beams=None):
        """This configuration with another search: the CLI's `--strategy` and
        `--num_beams` (and the same arguments of `TextToText.generate` and
        `export_run`). `None` keeps the run's.

        `num_beams` > 1 alone means beam search; `strategy="beam"` alone
        keeps the run's beams, or takes `DEFAULT_NUM_BEAMS` when the run
        decodes greedily; `strategy="greedy"` is one beam.

        Raises:
            ValueError: naming `strategy` or `num_beams`.
        """
        if strategy is not None and strategy not in SEARCH_STRATEGIES:
            raise ValueError(f"Argument `strategy` must be one of "
                             f"{', '.join(map(repr, SEARCH_STRATEGIES))} or None (the run's). "
                             f"Received: strategy={strategy!r}")
        if num_beams is not None:
            _check_int("num_beams", num_beams, low=1)
        if strategy is None:
            strategy = "beam" if (num_beams or 1) > 1 else self.strategy
        if strategy == "greedy":
            num_beams = 1
        elif num_beams is None:
            num_beams = self.num_beams if self.num_beams > 1 else DEFAULT_NUM_BEAMS
        return dataclasses.replace(self, strategy=strategy, num_beams=num_beams)

    def replace(self, **changes):
        """A copy with `changes` (checked as the constructor checks them)."""
        return dataclasses.replace(self, **changes)

    def sampler(self):
        """The `GreedySampler` or `BeamSampler` of this search."""
        from keras_attention.decoding.samplers import BeamSampler, GreedySampler

        if self.strategy == "greedy":
            return GreedySampler()
        if self.length_penalty_form == "hf":
            return BeamSampler(num_beams=self.num_beams, length_penalty=self.length_penalty,
                               length_penalty_form="hf", early_stopping=self.early_stopping)
        return BeamSampler(num_beams=self.num_beams, length_penalty=self.length_penalty,
                           coverage_penalty=self.coverage_penalty)

    def generate_kwargs(self):
        """The keyword arguments of `Seq2SeqModel.generate`: `max_length`,
        `sampler`, `suppress_token_ids` and the rules that are set."""
        kwargs = {"max_length": self.target_length, "sampler": self.sampler(),
                  "suppress_token_ids": list(self.suppress_token_ids)}
        for key in RULE_KEYS:
            value = getattr(self, key)
            if value is not None:
                kwargs[key] = ([list(words) for words in value] if key == "bad_words_ids"
                               else list(value) if isinstance(value, tuple) else value)
        return kwargs


def dict_keys(length_penalty_form="gnmt"):
    """The keys a run folder's `decoding` may hold in this form."""
    base = ("source_length", "target_length", "strategy", "num_beams", "length_penalty",
            "length_penalty_form")
    if length_penalty_form == "gnmt":
        return base + ("coverage_penalty", "suppress_token_ids")
    return base + ("early_stopping", "suppress_token_ids") + RULE_KEYS


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _error(name, value, f"an int >= {low}")


def _error(name, value, what):
    return ValueError(f"Argument `{name}` must be {what}. Received: {name}={value!r}")


__all__ = ["DEFAULT_NUM_BEAMS", "GenerationConfig", "RULE_KEYS", "SEARCH_STRATEGIES", "dict_keys"]
