"""Samplers: how `Seq2SeqModel.generate` picks tokens, as small objects.

A sampler holds its settings, checks them when it is made, serializes with
`get_config` / `from_config` (and inside a `.keras` file through
`keras.saving`), and runs a model-free search over a `step_fn` (see
`keras_attention.decoding.search`).

Each sampler splits its settings in two:

- `static_key()`: the settings that change the compiled program (`k`,
  `num_beams`, `num_return_sequences`); a model keeps one compiled function
  per key;
- `dynamic_values()`: the numbers passed into the program as scalar tensors
  (temperature, `p`, penalties, seed), so changing them does not retrace.

```python
import keras_attention.decoding as decoding

sampler = decoding.get_sampler("top_k")          # TopKSampler(k=50)
sampler = decoding.get_sampler({"class_name": "BeamSampler",
                                "config": {"num_beams": 4}})
model.generate(source, max_length=32, sampler=decoding.TopPSampler(p=0.8, seed=3))
```
"""

import math
import numbers

import keras
import numpy as np

from keras_attention.decoding.beam_search import beam_search
from keras_attention.decoding.hf_beam_search import hf_beam_search
from keras_attention.decoding.sampling import select_tokens
from keras_attention.decoding.search import sampling_search


def _check_number(name, value, *, low, high=math.inf, low_open=False):
    """Returns `value` as a float if it is a finite real in the range."""
    valid = isinstance(value, numbers.Real) and not isinstance(value, bool)
    valid = valid and math.isfinite(value) and value <= high
    valid = valid and (value > low if low_open else value >= low)
    if not valid:
        bracket = "(" if low_open else "["
        upper = "inf)" if high == math.inf else f"{high}]"
        raise ValueError(
            f"Argument `{name}` must be a finite number in {bracket}{low}, {upper}. "
            f"Received: {name}={value!r}"
        )
    return float(value)


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(
            f"Argument `{name}` must be an integer >= {low}. Received: {name}={value!r}"
        )
    return int(value)


def _check_seed(seed):
    """`None` (seed 0) or an int in [0, 2**31)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not (
        0 <= seed < 2**31
    ):
        raise ValueError(
            f"Argument `seed` must be None or an integer in [0, 2**31). Received: seed={seed!r}"
        )
    return int(seed)


class Sampler:
    """The base of every sampler.

    Subclasses set `name`, implement `get_config` and `search`, and may
    override `static_key`, `dynamic_values` and `check_vocabulary`.
    """

    name = None
    #: Rows of the decoder state per source row (beam search: `num_beams`).
    num_beams = 1
    #: Hypotheses returned per source row.
    num_return_sequences = 1
    #: Whether the search can return its step logits.
    returns_logits = True
    #: Whether the search can return its cross-attention.
    returns_attention = True
    #: Whether suppressed ids are banned on the log-probabilities (after the
    #: log-softmax, as `transformers` does) rather than on the logits.
    suppresses_log_probs = False

    def static_key(self):
        """A hashable description of what changes the compiled program."""
        return (type(self).__name__,)

    def dynamic_values(self):
        """Scalar arguments of the compiled program: `{name: np scalar}`."""
        return {}

    def check_vocabulary(self, vocabulary_size):
        """Raises a ValueError when a setting does not fit the vocabulary."""

    def search(self, step_fn, state, values, *, batch_size, max_length, start_id, end_id,
               pad_id, vocab_size, prompt=None, source_mask=None, source_length=None,
               collect_logits=False, collect_attention=False, process_scores=None):
        """Runs the search; returns a `SearchOutput` (see `decoding.search`).

        Args:
            step_fn: `step_fn(token_ids (N,), index, state) -> (logits (N, V),
                state, attention (N, S))`, with `N = batch_size * num_beams`.
            state: the initial decoder state with `N` rows.
            values: `dynamic_values()`, as they are or as scalar tensors.
            batch_size: `B`; max_length: `L`; vocab_size: `V`.
            start_id, end_id, pad_id: ints.
            prompt: optional int32 `(B, P)` forced prefix.
            source_mask: bool `(N, S)`, real source positions.
            source_length: `S`.
            collect_logits, collect_attention: fill those outputs.
            process_scores: optional `process(scores (N, V), index, tokens
                (N, L)) -> scores` (see `decoding.GenerationRules`): on the
                logits before a token is picked, or on the log-probabilities
                in beam search.
        """
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        arguments = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({arguments})"

    def __eq__(self, other):
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.get_config().items()))))


class _TokenSampler(Sampler):
    """A sampler that picks one token per row and step (`sampling_search`)."""

    strategy = None  # the `select_tokens` strategy

    def __init__(self, temperature=1.0, seed=None):
        self.temperature = _check_number("temperature", temperature, low=0.0)
        self.seed = _check_seed(seed)

    def static_key(self):
        return (type(self).__name__, self._static_k())

    def _static_k(self):
        return 0

    def dynamic_values(self):
        return {
            "temperature": np.float32(self.temperature),
            "p": np.float32(1.0),
            "seed": np.int32(self.seed or 0),
        }

    def search(self, step_fn, state, values, *, batch_size, max_length, start_id, end_id,
               pad_id, vocab_size, prompt=None, source_mask=None, source_length=None,
               collect_logits=False, collect_attention=False, process_scores=None):
        def select(logits, index):
            return select_tokens(
                logits, strategy=self.strategy, k=self._static_k(), p=values["p"],
                temperature=values["temperature"], seed=values["seed"], step=index,
            )

        return sampling_search(
            step_fn, state, batch_size=batch_size, max_length=max_length,
            start_id=start_id, end_id=end_id, pad_id=pad_id, select=select,
            prompt=prompt, vocab_size=vocab_size, source_length=source_length,
            collect_logits=collect_logits, collect_attention=collect_attention,
            process_scores=process_scores,
        )

    def get_config(self):
        return {"temperature": self.temperature, "seed": self.seed}


@keras.saving.register_keras_serializable(package="keras_attention")
class GreedySampler(_TokenSampler):
    """The most likely token at every step (argmax)."""

    name = "greedy"
    strategy = "greedy"

    def __init__(self):
        super().__init__()

    def dynamic_values(self):
        return {}

    def search(self, step_fn, state, values, **kwargs):
        return super().search(step_fn, state, {"p": 1.0, "temperature": 0.0, "seed": 0},
                              **kwargs)

    def get_config(self):
        return {}


@keras.saving.register_keras_serializable(package="keras_attention")
class RandomSampler(_TokenSampler):
    """A sample of `softmax(logits / temperature)` at every step.

    Args:
        temperature: float >= 0; 0 means greedy.
        seed: None (seed 0) or an int in [0, 2**31): the same seed gives the
            same tokens, on every backend, eager or compiled.
    """

    name = "random"
    strategy = "sample"


@keras.saving.register_keras_serializable(package="keras_attention")
class TopKSampler(_TokenSampler):
    """A sample among the `k` most likely tokens.

    Args:
        k: int in [1, vocabulary size] (checked when it meets a model).
        temperature: float >= 0; 0 means greedy.
        seed: None (seed 0) or an int in [0, 2**31).
    """

    name = "top_k"
    strategy = "top_k"

    def __init__(self, k=50, temperature=1.0, seed=None):
        super().__init__(temperature, seed)
        self.k = _check_int("k", k, 1)

    def _static_k(self):
        return self.k

    def check_vocabulary(self, vocabulary_size):
        if self.k > vocabulary_size:
            raise ValueError(
                f"Argument `k` must be an integer in [1, vocab_size={vocabulary_size}]. "
                f"Received: k={self.k}"
            )

    def get_config(self):
        return {"k": self.k, **super().get_config()}


@keras.saving.register_keras_serializable(package="keras_attention")
class TopPSampler(_TokenSampler):
    """A sample from the nucleus: the fewest most likely tokens whose
    probability reaches `p` (the best token is always kept).

    Args:
        p: float in (0, 1].
        temperature: float >= 0; 0 means greedy.
        seed: None (seed 0) or an int in [0, 2**31).
    """

    name = "top_p"
    strategy = "top_p"

    def __init__(self, p=0.9, temperature=1.0, seed=None):
        super().__init__(temperature, seed)
        self.p = _check_number("p", p, low=0.0, high=1.0, low_open=True)

    def dynamic_values(self):
        return {**super().dynamic_values(), "p": np.float32(self.p)}

    def get_config(self):
        return {"p": self.p, **super().get_config()}


@keras.saving.register_keras_serializable(package="keras_attention")
class BeamSampler(Sampler):
    """Beam search, scored the GNMT way (our default) or the Hugging Face way.

    `length_penalty_form="gnmt"` (see `keras_attention.decoding.beam_search`):
    `log P / ((5 + |Y|) / 6) ** length_penalty + coverage`, live and finished
    hypotheses kept apart; what the recipes use.
    `length_penalty_form="hf"` (see `keras_attention.decoding.hf_beam_search`):
    `log P / |Y| ** length_penalty`, stopped as `early_stopping` says, step
    for step as `transformers`' `generate(num_beams=...)`, for pretrained
    checkpoints.

    Args:
        num_beams: int >= 1, the beam width `K` (1 equals greedy).
        length_penalty: a finite float: GNMT `alpha` >= 0 (default 0), or
            the Hugging Face exponent, any sign (`transformers`' default is
            1.0; pass it).
        coverage_penalty: GNMT `beta`, a finite float >= 0 (only with
            `length_penalty_form="gnmt"`).
        num_return_sequences: int in [1, num_beams]: the n best hypotheses;
            with n > 1 results have shape `(B, n, L)`.
        length_penalty_form: `"gnmt"` (default) or `"hf"`.
        early_stopping: `True`, `False` (default) or `"never"`, as in
            `transformers` (only with `length_penalty_form="hf"`).

    Example:

    >>> BeamSampler(num_beams=4, length_penalty=1.0, length_penalty_form="hf",
    ...             early_stopping=True)
    BeamSampler(num_beams=4, length_penalty=1.0, coverage_penalty=0.0, \
num_return_sequences=1, length_penalty_form='hf', early_stopping=True)
    """

    name = "beam"
    returns_logits = False
    FORMS = ("gnmt", "hf")

    def __init__(self, num_beams=4, length_penalty=0.0, coverage_penalty=0.0,
                 num_return_sequences=1, length_penalty_form="gnmt", early_stopping=False):
        if length_penalty_form not in self.FORMS:
            raise ValueError(
                f"Argument `length_penalty_form` must be one of {self.FORMS}. "
                f"Received: length_penalty_form={length_penalty_form!r}"
            )
        self.length_penalty_form = length_penalty_form
        hf = length_penalty_form == "hf"
        self.num_beams = _check_int("num_beams", num_beams, 1)
        self.length_penalty = _check_number(
            "length_penalty", length_penalty, low=-math.inf if hf else 0.0
        )
        self.coverage_penalty = _check_number("coverage_penalty", coverage_penalty, low=0.0)
        self.num_return_sequences = _check_int("num_return_sequences", num_return_sequences, 1)
        if self.num_return_sequences > self.num_beams:
            raise ValueError(
                "Argument `num_return_sequences` must be in [1, num_beams="
                f"{self.num_beams}]. Received: num_return_sequences={num_return_sequences!r}"
            )
        if not (early_stopping is True or early_stopping is False or early_stopping == "never"):
            raise ValueError(
                "Argument `early_stopping` must be True, False or 'never'. "
                f"Received: early_stopping={early_stopping!r}"
            )
        if hf and self.coverage_penalty != 0.0:
            raise ValueError(
                "Argument `coverage_penalty` is a GNMT setting: it must be 0 with "
                f"length_penalty_form='hf'. Received: coverage_penalty={coverage_penalty!r}"
            )
        if not hf and early_stopping is not False:
            raise ValueError(
                "Argument `early_stopping` is a Hugging Face setting: pass "
                "length_penalty_form='hf' with it (the GNMT search always stops when no "
                f"live hypothesis can win). Received: early_stopping={early_stopping!r}"
            )
        self.early_stopping = early_stopping
        self.suppresses_log_probs = hf
        self.returns_attention = not hf

    def static_key(self):
        return (type(self).__name__, self.num_beams, self.num_return_sequences,
                self.length_penalty_form, self.early_stopping)

    def dynamic_values(self):
        return {
            "length_penalty": np.float32(self.length_penalty),
            "coverage_penalty": np.float32(self.coverage_penalty),
        }

    def search(self, step_fn, state, values, *, batch_size, max_length, start_id, end_id,
               pad_id, vocab_size, prompt=None, source_mask=None, source_length=None,
               collect_logits=False, collect_attention=False, process_scores=None):
        if collect_logits:
            raise ValueError(
                "`return_logits` is not available with beam search. "
                "Received: return_logits=True, sampler=BeamSampler"
            )
        if self.length_penalty_form == "hf":
            if collect_attention:
                raise ValueError(
                    "`return_attention` is not available with length_penalty_form='hf'. "
                    "Received: return_attention=True"
                )
            return hf_beam_search(
                step_fn, state, batch_size=batch_size, num_beams=self.num_beams,
                max_length=max_length, start_id=start_id, end_id=end_id, pad_id=pad_id,
                vocab_size=vocab_size, length_penalty=values["length_penalty"],
                early_stopping=self.early_stopping,
                num_return_sequences=self.num_return_sequences, prompt=prompt,
                process_scores=process_scores,
            )
        return beam_search(
            step_fn, state, batch_size=batch_size, num_beams=self.num_beams,
            max_length=max_length, start_id=start_id, end_id=end_id, pad_id=pad_id,
            vocab_size=vocab_size, length_penalty=values["length_penalty"],
            coverage_penalty=values["coverage_penalty"], source_mask=source_mask,
            source_length=source_length, num_return_sequences=self.num_return_sequences,
            prompt=prompt, collect_attention=collect_attention, process_scores=process_scores,
        )

    def get_config(self):
        return {
            "num_beams": self.num_beams,
            "length_penalty": self.length_penalty,
            "coverage_penalty": self.coverage_penalty,
            "num_return_sequences": self.num_return_sequences,
            "length_penalty_form": self.length_penalty_form,
            "early_stopping": self.early_stopping,
        }


SAMPLERS = {
    cls.name: cls for cls in (GreedySampler, BeamSampler, TopKSampler, TopPSampler, RandomSampler)
}
#: The strategy names of `select_tokens` (`SAMPLING_STRATEGIES`), also taken
#: by `get_sampler`: `"sample"` is `RandomSampler`.
STRATEGY_SAMPLERS = {"greedy": "greedy", "beam": "beam", "top_k": "top_k", "top_p": "top_p",
                     "sample": "random"}


def get_sampler(identifier):
    """A sampler from a name, a config dict or a sampler (returned as is).

    Args:
        identifier: `"greedy"`, `"beam"`, `"top_k"`, `"top_p"`, `"random"`
            (or `"sample"`), with default settings; a dict
            `{"class_name": ..., "config": {...}}` as `serialize_sampler`
            writes; or a `Sampler`.

    Returns:
        A `Sampler`.
    """
    if isinstance(identifier, Sampler):
        return identifier
    if isinstance(identifier, str):
        name = STRATEGY_SAMPLERS.get(identifier, identifier)
        if name not in SAMPLERS:
            raise ValueError(
                f"Argument `sampler` must be one of {', '.join(map(repr, SAMPLERS))}, a "
                f"config dict or a Sampler. Received: sampler={identifier!r}"
            )
        return SAMPLERS[name]()
    if isinstance(identifier, dict):
        classes = {cls.__name__: cls for cls in SAMPLERS.values()}
        if identifier.get("class_name") not in classes:
            raise ValueError(
                f"Argument `sampler` must describe one of {', '.join(classes)}. "
                f"Received: sampler={identifier!r}"
            )
        return keras.saving.deserialize_keras_object(identifier, custom_objects=classes)
    raise ValueError(
        "Argument `sampler` must be a name, a config dict or a Sampler. "
        f"Received: sampler={identifier!r}"
    )


def serialize_sampler(sampler):
    """The config dict of a sampler (what `get_sampler` reads back)."""
    return keras.saving.serialize_keras_object(get_sampler(sampler))
