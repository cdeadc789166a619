"""Corpus-level text metrics on detokenized strings, and a Keras callback.

The scores wrap the reference implementations so that they are comparable
with published numbers:

- `bleu` and `chrf`: sacrebleu's corpus BLEU (default `13a` tokenization) and
  chrF, on detokenized text.
- `rouge`: Google's `rouge-score` F1 of ROUGE-1, ROUGE-2 and ROUGE-L, with
  the Porter stemmer.
- `exact_match` and `f1_score`: the official SQuAD v1.1 answer scores.

Every score is on a 0-100 scale. `references` (or `answers`) hold one entry
per hypothesis: either a string, or a list of strings when an example has
several references (the lists may differ in length). This is *not*
sacrebleu's layout of reference streams; the transposition is done here.
"""

import collections
import re
import string
import sys

import keras
import numpy as np
import sacrebleu
from rouge_score import rouge_scorer

from keras_attention.decoding.token_suppression import check_suppress_token_ids
from keras_attention.validation import (
    check_callable,
    check_choice,
    check_positive_int,
    check_str,
    check_string_list,
)

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
METRICS = ("bleu", "chrf") + ROUGE_TYPES + ("exact_match", "f1")


# Argument checks ---------------------------------------------------------
def _reference_lists(name, references):
    """`references` as a list of non-empty lists of strings.

    Each item is a string (one reference) or a list/tuple of strings.
    """
    if isinstance(references, (str, bytes)) or not hasattr(references, "__iter__"):
        raise TypeError(
            f"Argument `{name}` must be a list of strings or a list of lists "
            f"of strings. Received: {name}={references!r}"
        )
    result = []
    for i, item in enumerate(references):
        if isinstance(item, str):
            result.append([item])
            continue
        if isinstance(item, (bytes, dict)) or not hasattr(item, "__iter__"):
            raise TypeError(
                f"Every item of `{name}` must be a string or a list of "
                f"strings. Received: {name}[{i}]={item!r}"
            )
        item = check_string_list(f"{name}[{i}]", item)
        if not item:
            raise ValueError(
                f"Every example needs at least one reference. "
                f"Received: {name}[{i}]=[]"
            )
        result.append(item)
    return result


def _check_pair(hypotheses, references, names=("hypotheses", "references")):
    """Validated `(hypotheses, reference_lists)` of equal, non-zero length."""
    hypotheses = check_string_list(names[0], hypotheses)
    references = _reference_lists(names[1], references)
    if not hypotheses or not references:
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must not be empty. Received: "
            f"len({names[0]})={len(hypotheses)}, len({names[1]})={len(references)}"
        )
    if len(hypotheses) != len(references):
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must have the same length. "
            f"Received: len({names[0]})={len(hypotheses)}, "
            f"len({names[1]})={len(references)}"
        )
    return hypotheses, references


def _reference_streams(references):
    """Per-example reference lists -> sacrebleu's reference streams.

    sacrebleu wants `streams[j][i]`, the j-th reference of example i; an
    example with fewer references is padded with `None`, which sacrebleu
    skips.
    """
    width = max(len(refs) for refs in references)
    return [
        [refs[j] if j < len(refs) else None for refs in references]
        for j in range(width)
    ]


# sacrebleu -----------------------------------------------------------------
def bleu(hypotheses, references):
    """Corpus BLEU of sacrebleu (`13a` tokenization), on a 0-100 scale.

    Args:
        hypotheses: list of `N` detokenized strings.
        references: list of `N` reference strings, or of `N` lists of
            reference strings (multi-reference; the lists may differ in
            length).

    Returns:
        float, the same number as `sacrebleu.corpus_bleu` (and the
        `sacrebleu` command line with default options).

    Example:

    >>> from keras_attention.metrics import bleu
    >>> round(bleu(["the cat sat on the mat"], ["the cat sat on the mat"]), 2)
    100.0
    >>> round(bleu(["the cat is on the mat"],
    ...            [["there is a cat on the mat", "the cat is on the mat"]]), 2)
    100.0
    """
    hypotheses, references = _check_pair(hypotheses, references)
    metric = sacrebleu.metrics.BLEU()
    return float(metric.corpus_score(hypotheses, _reference_streams(references)).score)


def chrf(hypotheses, references):
    """Corpus chrF of sacrebleu (character 6-grams, beta 2), 0-100.

    Args:
        hypotheses: list of `N` detokenized strings.
        references: list of `N` reference strings, or of `N` lists of
            reference strings (multi-reference).

    Returns:
        float, the same number as `sacrebleu.corpus_chrf`.

    Example:

    >>> from keras_attention.metrics import chrf
    >>> chrf(["the cat sat on the mat"], ["the cat sat on the mat"])
    100.0
    """
    hypotheses, references = _check_pair(hypotheses, references)
    metric = sacrebleu.metrics.CHRF()
    return float(metric.corpus_score(hypotheses, _reference_streams(references)).score)


# rouge-score ---------------------------------------------------------------
def rouge(hypotheses, references):
    """Mean ROUGE-1, ROUGE-2 and ROUGE-L F1 of `rouge-score`, 0-100.

    Uses `RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)`.
    With several references, each example takes, for each ROUGE type
    separately, the best F1 over its references (as SciTLDR and
    `RougeScorer.score_multi` do); the scores are then averaged over
    examples.

    Args:
        hypotheses: list of `N` strings.
        references: list of `N` reference strings, or of `N` lists of
            reference strings.

    Returns:
        dict `{"rouge1": float, "rouge2": float, "rougeL": float}`.

    Example:

    >>> from keras_attention.metrics import rouge
    >>> scores = rouge(["the cat sat"], ["the cat sat on the mat"])
    >>> {k: round(v, 2) for k, v in scores.items()}
    {'rouge1': 66.67, 'rouge2': 57.14, 'rougeL': 66.67}
    """
    hypotheses, references = _check_pair(hypotheses, references)
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    for hypothesis, refs in zip(hypotheses, references):
        scores = [scorer.score(ref, hypothesis) for ref in refs]
        for key in ROUGE_TYPES:
            totals[key] += max(s[key].fmeasure for s in scores)
    return {key: 100.0 * total / len(hypotheses) for key, total in totals.items()}


# SQuAD v1.1 ------------------------------------------------------------------
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """SQuAD v1.1 answer normalisation.

    Lowercases, removes punctuation, removes the articles a/an/the and
    collapses whitespace, in the order of the official evaluation script.

    Args:
        text: a string.

    Returns:
        the normalised string.

    Example:

    >>> from keras_attention.metrics import normalize_answer
    >>> normalize_answer("The  Denver Broncos!")
    'denver broncos'
    """
    text = check_str("text", text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _token_f1(prediction, gold):
    """SQuAD v1.1 token F1 of one prediction against one gold answer."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(gold).split()
    common = collections.Counter(predicted) & collections.Counter(expected)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def exact_match(predictions, answers):
    """SQuAD v1.1 exact match, 0-100.

    A prediction scores 1 when its normalised text (`normalize_answer`)
    equals that of any of its gold answers.

    Args:
        predictions: list of `N` predicted answer strings.
        answers: list of `N` gold answer strings, or of `N` lists of gold
            answers.

    Returns:
        float, the percentage of exact matches.

    Example:

    >>> from keras_attention.metrics import exact_match
    >>> exact_match(["the Denver Broncos", "Denver"],
    ...             [["Denver Broncos", "Broncos"], "Denver Broncos"])
    50.0
    """
    predictions, answers = _check_pair(predictions, answers, ("predictions", "answers"))
    hits = sum(
        max(float(normalize_answer(p) == normalize_answer(g)) for g in golds)
        for p, golds in zip(predictions, answers)
    )
    return 100.0 * hits / len(predictions)


def f1_score(predictions, answers):
    """SQuAD v1.1 token F1, 0-100.

    Bag-of-tokens F1 of the normalised texts, the best over each example's
    gold answers, averaged over examples.

    Args:
        predictions: list of `N` predicted answer strings.
        answers: list of `N` gold answer strings, or of `N` lists of gold
            answers.

    Returns:
        float.

    Example:

    >>> from keras_attention.metrics import f1_score
    >>> round(f1_score(["Denver"], [["Denver Broncos"]]), 2)
    66.67
    """
    predictions, answers = _check_pair(predictions, answers, ("predictions", "answers"))
    total = sum(
        max(_token_f1(p, g) for g in golds) for p, golds in zip(predictions, answers)
    )
    return 100.0 * total / len(predictions)


def check_metric_names(names):
    """`names` as a list, or a `ValueError` naming `names` unless it is a
    non-empty list or tuple of names of `METRICS` (before any work)."""
    if not isinstance(names, (list, tuple)) or not names or any(
            name not in METRICS for name in names):
        raise ValueError(f"Argument `names` must be a non-empty list of names of "
                         f"{', '.join(METRICS)}. Received: names={names!r}")
    return list(names)


def scores(names, hypotheses, references):
    """`{name: score}` for each metric of `names`: the one scoring path of
    the recipes' evaluations, `keras-attention evaluate` and
    `TextToText.evaluate` (`runs.TextToText.score`, with the metrics the
    recipe registers) and `GenerationMetricsCallback`. ROUGE is computed
    once for all its types.

    Args:
        names: list of names of `METRICS`.
        hypotheses: list of `N` strings.
        references: list of `N` reference strings, or of `N` lists of
            reference strings.

    Returns:
        dict, each name's score (a float, 0-100).

    Raises:
        ValueError: naming `names`, for a name not in `METRICS`.

    Example:

    >>> from keras_attention.metrics import scores
    >>> {name: round(value, 2)
    ...  for name, value in scores(["exact_match", "f1"], ["Denver"],
    ...                            [["Denver Broncos"]]).items()}
    {'exact_match': 0.0, 'f1': 66.67}
    """
    names = check_metric_names(names)
    rouges = rouge(hypotheses, references) if set(names) & set(ROUGE_TYPES) else {}
    one = {"bleu": bleu, "chrf": chrf, "exact_match": exact_match, "f1": f1_score}
    return {name: rouges[name] if name in rouges else one[name](hypotheses, references)
            for name in names}


# Keras callback ------------------------------------------------------------
class GenerationMetricsCallback(keras.callbacks.Callback):
    """Scores generations on a fixed sample at the end of epochs.

    At the end of every `every`-th epoch, runs
    `model.generate(encoder_token_ids, max_length, sampler="greedy",
    batch_size=batch_size)` (or with a run's `generation` settings), turns
    the token ids into strings with `detokenize`, scores them against
    `references` (`scores`, as the recipes and `keras-attention evaluate`
    do) and writes the score to `logs[f"val_{metric}"]`. It then shows in the progress bar and in
    `History`, and can be monitored by `EarlyStopping` or `ModelCheckpoint`
    (`mode="max"`) placed *after* this callback in the `callbacks` list.
    Nothing else is printed. On the other epochs the key is absent, as
    `val_*` metrics are with `fit(validation_freq=...)`.

    Args:
        encoder_token_ids: int array `(N, S)` of source tokens.
        references: list of `N` reference strings, or of `N` lists of
            reference strings.
        detokenize: callable taking the generated ids, an int NumPy array
            `(N, L)` that still holds end and padding tokens (see
            `keras_attention.data.strip_special`), and returning `N`
            strings.
        max_length: positive int, the number of tokens to generate
            (greedily); `None` with `generation`.
        metric: one of `"bleu"`, `"chrf"`, `"rouge1"`, `"rouge2"`,
            `"rougeL"`, `"exact_match"`, `"f1"`.
        every: positive int, score every `every` epochs (epochs `every`,
            `2 * every`, ...).
        batch_size: positive int (or None for one batch), the generation
            batch size.
        suppress_token_ids: optional list of target ids never generated
            (`Seq2SeqModel.generate`'s argument, e.g.
            `data.never_generated_ids(target_tokenizer)`, as the recipes
            decode); checked against the model's vocabulary when training
            begins, before the first epoch.
        generation: optional, how to decode: an object with
            `generate_kwargs()`, such as the `runs.GenerationConfig` a recipe
            records in its run folder (its search, `target_length` and
            suppressed ids), so that the score is the one `keras-attention
            evaluate` gives the saved run; `max_length` and
            `suppress_token_ids` are then left unset.

    Example:

    >>> import numpy as np
    >>> from keras_attention.metrics import GenerationMetricsCallback
    >>> class Echo:  # any model with `generate`, e.g. a `Seq2SeqModel`
    ...     def generate(self, encoder_token_ids, max_length, **kwargs):
    ...         return np.asarray(encoder_token_ids)[:, :max_length]
    >>> callback = GenerationMetricsCallback(
    ...     np.array([[3, 4, 5, 6]]), ["3 4 5 6"],
    ...     lambda ids: [" ".join(map(str, row)) for row in ids],
    ...     max_length=4)
    >>> callback.set_model(Echo())
    >>> logs = {"loss": 0.5}
    >>> callback.on_epoch_end(0, logs)
    >>> round(logs["val_bleu"], 2)
    100.0
    """

    def __init__(
        self,
        encoder_token_ids,
        references,
        detokenize,
        max_length=None,
        metric="bleu",
        every=1,
        batch_size=64,
        suppress_token_ids=None,
        generation=None,
    ):
        super().__init__()
        self.generate_kwargs = _generate_kwargs(generation, max_length, suppress_token_ids)
        # The form here; the ids against the model's vocabulary in on_train_begin.
        self.suppress_token_ids = check_suppress_token_ids(
            self.generate_kwargs.pop("suppress_token_ids", None), sys.maxsize)
        source = np.asarray(encoder_token_ids)
        if source.ndim != 2 or not np.issubdtype(source.dtype, np.integer) or not len(source):
            raise ValueError(
                "`encoder_token_ids` must be a non-empty integer array of shape "
                f"(num_examples, source_len). Received: shape {source.shape}, "
                f"dtype {source.dtype}"
            )
        references = _reference_lists("references", references)
        if len(references) != len(source):
            raise ValueError(
                "`references` must have one entry per row of "
                f"`encoder_token_ids`. Received: len(references)={len(references)}, "
                f"encoder_token_ids.shape={source.shape}"
            )
        check_callable("detokenize", detokenize)
        self.encoder_token_ids = source
        self.references = references
        self.detokenize = detokenize
        self.max_length = check_positive_int("max_length",
                                             self.generate_kwargs.pop("max_length"))
        self.metric = check_choice("metric", metric, METRICS)
        self.every = check_positive_int("every", every)
        self.batch_size = check_positive_int("batch_size", batch_size, allow_none=True)
        self.log_name = f"val_{metric}"

    def compute(self):
        """Generates, detokenizes and returns the score (a float)."""
        suppression = {"suppress_token_ids": self.suppress_token_ids} if self.suppress_token_ids \
            else {}
        output = self.model.generate(
            self.encoder_token_ids,
            self.max_length,
            batch_size=self.batch_size,
            **self.generate_kwargs,
            **suppression,
        )
        token_ids = np.asarray(getattr(output, "token_ids", output))
        texts = self.detokenize(token_ids)
        texts = check_string_list("detokenize(token_ids)", texts)
        if len(texts) != len(self.references):
            raise ValueError(
                "`detokenize` must return one string per row. Received: "
                f"{len(texts)} strings for {len(self.references)} rows"
            )
        return scores([self.metric], texts, self.references)[self.metric]

    def on_train_begin(self, logs=None):
        vocabulary_size = getattr(self.model, "target_vocabulary_size", None)
        if self.suppress_token_ids and vocabulary_size is not None:
            check_suppress_token_ids(self.suppress_token_ids, vocabulary_size,
                                     end_id=getattr(self.model, "end_token_id", None))

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every != 0:
            return
        score = self.compute()
        if logs is not None:
            logs[self.log_name] = score


def _generate_kwargs(generation, max_length, suppress_token_ids):
    """`generate`'s keyword arguments of the callback: greedy with
    `max_length` and `suppress_token_ids`, or `generation.generate_kwargs()`."""
    if generation is None:
        if max_length is None:
            raise ValueError("Argument `max_length` must be given without `generation`. "
                             "Received: max_length=None")
        return {"sampler": "greedy", "max_length": max_length,
                "suppress_token_ids": suppress_token_ids}
    if not callable(getattr(generation, "generate_kwargs", None)):
        raise ValueError("Argument `generation` must have `generate_kwargs()` (a "
                         f"`runs.GenerationConfig`). Received: generation={generation!r}")
    for name, value in (("max_length", max_length), ("suppress_token_ids", suppress_token_ids)):
        if value is not None:
            raise ValueError(f"Argument `{name}` must be None with `generation` (which sets "
                             f"it). Received: {name}={value!r}")
    return dict(generation.generate_kwargs())


__all__ = [
    "METRICS",
    "ROUGE_TYPES",
    "GenerationMetricsCallback",
    "bleu",
    "check_metric_names",
    "chrf",
    "exact_match",
    "f1_score",
    "normalize_answer",
    "rouge",
    "scores",
]
