"""`TextToText`: the base class of the model kinds; text in, text out.

A model kind is one subclass, which owns how a line is answered (encode ->
run the model -> decode): `TextGenerator` (a `Seq2SeqModel` that decodes;
recipe runs and converted checkpoints), `AnswerClassifier` (a memory network
that picks an answer class) and `SentenceSelector` (an extractive summarizer
that picks a sentence). What every kind shares is here: the recipe a kind
serves and scores by (`evaluate`, `score`), the checks of `generate`'s
arguments, and what `keras_attention.runs.reader.open_run` needs to make a
kind from a run folder's parts (`matches`, `from_run_parts`,
`vocabulary_sizes`). The kinds are looked up in
`keras_attention.runs.registry`, which holds the classes themselves.
"""

import os

from keras_attention.runs import registry


class TextToText:
    """A model with its tokenizers and settings: a list of lines in, one
    output string per line out. The base class of the model kinds; make one
    of those (`runs.TextGenerator`, `runs.AnswerClassifier`,
    `runs.SentenceSelector`), or read one from a run folder
    (`runs.open_run`) or a Hugging Face checkpoint folder
    (`runs.open_checkpoint`).

    Class attributes (what the kind is, for the registry and messages):
        name: str, the kind's registered name.
        marker: str or None, the `config.json` key a run of this kind sets
            (`answer_classes`, `selection`); `None` for the default kind.
        description: str, what the model is ("a Seq2SeqModel (it decodes)").
        recipes: the recipes whose runs may hold this kind; the first is
            the default `recipe`.
        decodes: bool, whether the kind searches sequences (`strategy`,
            `num_beams` and `generation` mean something).
        exports: bool, whether `keras-attention export` can serve it.

    Attributes:
        model, source_tokenizer, target_tokenizer (the source one for a kind
            that does not decode), recipe, source_format, config,
            jit_compile: as the subclass's arguments.
        generation: the `GenerationConfig` of a kind that decodes, else `None`.
        run_dir, metadata: the run folder and its whole `config.json` (a
            dict) for a kind read by `open_run`; `None` otherwise.
        kind: the class itself (`run.kind.name`, `run.kind.decodes`).
    """

    name = None
    marker = None
    description = ""
    recipes = ()
    decodes = False
    exports = False

    def __init__(self, model, source_tokenizer, *, recipe=None, source_format="text",
                 config=None, jit_compile=True):
        if type(self) is TextToText:
            raise TypeError("`TextToText` is the base class of the model kinds: make a "
                            "`TextGenerator`, `AnswerClassifier` or `SentenceSelector`.")
        if not isinstance(jit_compile, bool):
            raise ValueError(f"Argument `jit_compile` must be a bool. "
                             f"Received: jit_compile={jit_compile!r}")
        if recipe is None:
            recipe = self.recipes[0]
        if recipe not in self.recipes:
            raise ValueError(f"Argument `recipe` must be one this model kind serves "
                             f"({', '.join(self.recipes)}). Received: recipe={recipe!r}")
        self.model = model
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = source_tokenizer
        self.generation = None
        self.recipe = recipe
        self.source_format = source_format
        self.config = dict(config or {})
        self.jit_compile = jit_compile
        self.run_dir = None
        self.metadata = None

    @property
    def kind(self):
        """The model kind: this object's class."""
        return type(self)

    ## What `open_run` asks of a kind

    @classmethod
    def matches(cls, model):
        """Whether a loaded `model.keras` is of this kind (checked before any work)."""
        raise NotImplementedError

    @classmethod
    def from_run_parts(cls, model, source_tokenizer, target_tokenizer, generation, *, recipe,
                       source_format, config, metadata):
        """The kind made from a run folder's parts (`open_run`; a recipe's
        trained parts before they are saved): `metadata` is the folder's
        `config.json` (a dict), which holds a kind's own settings under its
        `marker`."""
        raise NotImplementedError

    def vocabulary_sizes(self):
        """The sizes of the folder that must agree: a list of `(side,
        tokenizer size, model size, what)`, `side` the `config.json`
        `tokenizers` entry (`"source"`, `"target"`) the size comes from, or
        `None` for `config.json` itself; `model size` `None` where the model
        does not say."""
        raise NotImplementedError

    ## Answers

    def generate(self, texts, strategy=None, num_beams=None, verbose=0, *, truncate=False):
        """Outputs (translations, summaries or answers) for a list of input lines.

        Each line is made as `source_format` says (for question answering,
        e.g. `"context | question"`). An empty list gives `[]` without
        calling the model.

        Args:
            texts: list of str.
            strategy: `"greedy"` or `"beam"`; default: the run's. A kind
                that does not decode takes `None` or `"greedy"` only: its
                answer is the best class, there is no sequence to search.
            num_beams: positive int; default: the run's (1 only for a kind
                that does not decode).
            verbose: Keras' progress bar (0: none).
            truncate: bool; for a kind that decodes, `True` cuts a line
                longer than its source length to it instead of refusing it
                (`SourceTooLongError`). A kind that does not decode reads its
                lines its own way, whatever `truncate` says.

        Returns:
            A list of `len(texts)` strings.

        Raises:
            SourceTooLongError: (a `ValueError`) naming the first line
                longer than the source length, without `truncate`.
            ValueError: naming `texts`, `strategy`, `num_beams` or
                `truncate`, before any work.
        """
        texts = checked_texts(texts)
        check_bool("truncate", truncate)
        generation = self.search_settings(strategy, num_beams)
        if not texts:
            return []
        return self.answer(texts, generation, verbose=verbose, truncate=truncate)

    def search_settings(self, strategy=None, num_beams=None):
        """The `GenerationConfig` of a search with these overrides, for a
        kind that decodes; for one that does not, `None`, or a refusal of
        any search but the one step it takes."""
        if strategy not in (None, "greedy") or not (num_beams is None or num_beams == 1):
            name, value = ("strategy", strategy) if strategy not in (None, "greedy") else (
                "num_beams", num_beams)
            raise ValueError(
                f"Argument `{name}` must be left unset for this run: its model is "
                f"{self.description}, which picks its answer in one step and has no "
                f"sequence to search. Received: {name}={value!r}")
        return None

    def answer(self, texts, generation, *, verbose=0, truncate=False):
        """One output string per line of `texts` (a non-empty list of str,
        checked), with `generation` (`search_settings`'s result)."""
        raise NotImplementedError

    ## Scores

    def evaluation_examples(self, path, max_examples=None):
        """`(sources, references)` from a file in the recipe's format.

        Translation: a TSV file of `source<TAB>target` (references: strings);
        summarization: JSONL of document/summaries (references: lists);
        question answering: SQuAD-style JSON/JSONL, each source made from
        `context` and `question` by `source_format` (references: lists).

        Raises:
            ValueError: from the loaders, naming the file and line.
        """
        from keras_attention.validation import check_positive_int

        limit = check_positive_int("max_examples", max_examples, allow_none=True)
        return registry.recipe(self.recipe).examples(path, limit, self)

    def evaluate(self, data, max_examples=None, strategy=None, num_beams=None, verbose=0):
        """The recipe's scores of the outputs against references.

        Sources longer than the source length are cut to it, as in training
        (`generate(..., truncate=True)`), never refused.

        Args:
            data: a list of `(source, reference)` pairs (a reference is a
                string, or a list of strings where several are right), or
                the path of a file in the recipe's format
                (`evaluation_examples`).
            max_examples: positive int, the first examples only; `None`: all.
            strategy, num_beams: as `generate`.

        Returns:
            A dict: `bleu` and `chrf` (translation), ROUGE's (summarization)
            or `exact_match` and `f1` (question answering), and `examples`.

        Raises:
            ValueError: naming `data`, `strategy` or `num_beams`, before any
                work.
        """
        from keras_attention.metrics import check_metric_names
        from keras_attention.validation import check_positive_int

        check_metric_names(registry.recipe(self.recipe).metrics)
        self.search_settings(strategy, num_beams)
        if isinstance(data, (str, os.PathLike)):
            sources, references = self.evaluation_examples(data, max_examples)
        else:
            limit = check_positive_int("max_examples", max_examples, allow_none=True)
            sources, references = _pairs(data, limit)
        hypotheses = self.generate(sources, strategy, num_beams, verbose=verbose, truncate=True)
        scores = self.score(hypotheses, references)
        scores["examples"] = len(sources)
        return scores

    def score(self, hypotheses, references):
        """The scores of outputs against references, by the metrics the
        recipe registers (`registry.Recipe.metrics`: BLEU and chrF,
        ROUGE's, or exact match and F1), through `metrics.scores`: the one
        scoring path of `evaluate`, the recipes' evaluations and
        `metrics.GenerationMetricsCallback`.

        Args:
            hypotheses: list of `N` strings.
            references: list of `N` strings, or of `N` lists of strings.

        Returns:
            dict, each metric's score (0-100).
        """
        from keras_attention.metrics import scores

        return scores(registry.recipe(self.recipe).metrics, hypotheses, references)


## Helpers of the kinds


def checked_texts(texts):
    """`texts` as a list, or a refusal of anything but a list of str."""
    texts = list(texts)
    if not all(isinstance(text, str) for text in texts):
        raise ValueError(f"Argument `texts` must be a list of str. Received: texts={texts!r}")
    return texts


def check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"Argument `{name}` must be a bool. Received: {name}={value!r}")


def input_names(model):
    """The names of a functional model's inputs (an empty set for a
    subclassed model, which has no symbolic inputs)."""
    try:
        return {tensor.name.split(":")[0] for tensor in model.inputs}
    except (AttributeError, TypeError, ValueError):
        return set()


def embedding_vocabulary(model):
    """The vocabulary size of a functional model's first token embedding (the
    `vocab_size` or `input_dim` of its layers' configs), or `None`."""
    for layer in model.layers:
        config = layer.get_config()
        for key in ("vocab_size", "vocabulary_size", "input_dim"):
            if isinstance(config.get(key), int):
                return config[key]
    return None


def _pairs(data, limit):
    """`(sources, references)` of `(source, reference)` pairs."""
    pairs = list(data)[:limit]
    for pair in pairs:
        ok = (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], str)
              and (isinstance(pair[1], str) or (isinstance(pair[1], (list, tuple)) and pair[1]
                                                and all(isinstance(r, str) for r in pair[1]))))
        if not ok:
            raise ValueError(
                "Argument `data` must be a file name or a list of (source, reference) pairs "
                f"of strings (a reference may be a list of strings). Received: a pair {pair!r}")
    if not pairs:
        raise ValueError("Argument `data` must hold at least one (source, reference) pair. "
                         "Received: data=[]")
    return [source for source, _ in pairs], [reference for _, reference in pairs]


__all__ = ["TextToText"]
