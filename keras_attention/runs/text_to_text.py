"""`TextToText`: a model, its tokenizers and its generation settings; text in,
text out.

The one path from input lines to output lines: `keras-attention generate`
and `evaluate` (through `SavedRun`, a `TextToText` read from a run folder),
every recipe's evaluation, fine-tuned checkpoints and `keras_attention.export`
(which compiles the same settings into a graph) go through it. How a line
is answered is the model kind's (`keras_attention.runs.registry.ModelKind`);
a decoding kind's lines are encoded and its outputs detokenized by its
tokenizers, all of one contract (`keras_attention.tokenizer.Tokenizer`:
`encode_lines`, `Tokenizer.detokenize`), and searched with the one
`GenerationConfig`. A line of more tokens than the model accepts
(`source_limit`) is refused (`SourceTooLongError`, before any search) unless
the caller asks for it to be cut (`truncate=True`).
"""

import os

from keras_attention.data.tokenizers import as_tokenizer
from keras_attention.runs import registry
from keras_attention.runs.generation import GenerationConfig
from keras_attention.runs.source_length import check_source_length
from keras_attention.tokenizer import encode_lines


class TextToText:
    """A model with its tokenizers and generation settings.

    Made from a run folder (`runs.SavedRun(run_dir)`, a `TextToText`), from
    a Hugging Face checkpoint folder (`runs.open_checkpoint(folder)`), or in
    Python from the parts:

    Args:
        model: the Keras model (a `Seq2SeqModel` for the decoding kinds).
        source_tokenizer: the tokenizer of the input lines: for a kind
            that decodes, a `keras_attention.tokenizer.Tokenizer` (a
            checkpoint's, a `data.SentencePieceModel`) or a keras-hub
            `SentencePieceTokenizer`, read as its `data.SentencePieceModel`
            (`data.as_tokenizer`).
        target_tokenizer: the tokenizer of the outputs, as `source_tokenizer`;
            default: the source one (a shared vocabulary).
        generation: a `GenerationConfig`, or a run folder's `decoding` dict;
            required for the kinds that decode.
        kind: the `registry.ModelKind` (or its name): `"seq2seq"` (a
            recipe's `Seq2SeqModel` with SentencePiece tokenizers, the
            default), `"converted"` (a converted checkpoint and its
            tokenizer), `"answer_classifier"` or `"sentence_selector"`.
        recipe: the recipe whose scores `evaluate` gives (`"translation"`:
            BLEU and chrF; `"summarization"`: ROUGE; `"question_answering"`:
            exact match and F1); default: the kind's first recipe.
        source_format: how one input line is made (`runs.format_source`).
        config: dict, the recipe's settings (a memory network reads
            `max_memories` there).
        answer_classes: the answers an answer classifier picks from.
        selection: an extractive summarizer's `{"max_length", "max_sentences"}`.
        jit_compile: bool, whether the search is compiled (XLA on
            TensorFlow, `jax.jit` on JAX; `Seq2SeqModel.generate`'s
            argument); also an attribute that may be changed. Off, TensorFlow
            runs the search as a graph without XLA, which starts sooner: what
            `keras-attention generate` does for a single line.

    Raises:
        ValueError: naming the argument, for an unknown kind or recipe, a
            recipe the kind does not serve, or a decoding kind without
            `generation`.

    Example:

    >>> from keras_attention import data, models
    >>> from keras_attention.runs import GenerationConfig, TextToText
    >>> pairs = data.make_date_pairs(100)
    >>> tokenizer = data.train_tokenizer([s for p in pairs for s in p], 60)
    >>> model = models.transformer_seq2seq(
    ...     tokenizer.vocabulary_size(), num_layers=1, hidden_dim=8, num_heads=2,
    ...     intermediate_dim=8, max_length=16, **data.special_token_ids(tokenizer))
    >>> translator = TextToText(model, tokenizer,
    ...                         generation=GenerationConfig(source_length=8, target_length=4))
    >>> len(translator.generate(["a b", "c"]))
    2
    """

    def __init__(self, model, source_tokenizer, target_tokenizer=None, generation=None, *,
                 kind="seq2seq", recipe=None, source_format="text", config=None,
                 answer_classes=None, selection=None, jit_compile=True):
        if not isinstance(jit_compile, bool):
            raise ValueError(f"Argument `jit_compile` must be a bool. "
                             f"Received: jit_compile={jit_compile!r}")
        self.kind = kind if isinstance(kind, registry.ModelKind) else registry.model_kind(kind)
        if recipe is None:
            recipe = self.kind.recipes[0]
        if recipe not in self.kind.recipes:
            raise ValueError(f"Argument `recipe` must be one this model kind serves "
                             f"({', '.join(self.kind.recipes)}). Received: recipe={recipe!r}")
        self.recipe = registry.recipe(recipe).name
        if isinstance(generation, dict):
            generation = GenerationConfig.from_dict(generation, self.kind.length_penalty_form)
        if self.kind.decodes and not isinstance(generation, GenerationConfig):
            raise ValueError(f"Argument `generation` must be a `GenerationConfig` (or a run's "
                             f"`decoding` dict) for {self.kind.description}. "
                             f"Received: generation={generation!r}")
        if target_tokenizer is None:
            target_tokenizer = source_tokenizer
        if self.kind.decodes:
            shared = target_tokenizer is source_tokenizer
            source_tokenizer = as_tokenizer(source_tokenizer)
            target_tokenizer = source_tokenizer if shared else as_tokenizer(target_tokenizer)
        self.model = model
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.generation = generation
        self.source_format = source_format
        self.config = dict(config or {})
        self.answer_classes = answer_classes
        self.selection = selection
        self.jit_compile = jit_compile

    @property
    def source_limit(self):
        """The most tokens one input line may have: the `source_length` of
        `generation` for a kind that decodes; `None` for one that does not
        (an answer classifier, a sentence selector), which reads its lines
        its own way."""
        return self.generation.source_length if self.kind.decodes else None

    def encode(self, texts, truncate=False):
        """Token ids of input lines: `encode_lines(source_tokenizer, texts)`.

        Args:
            texts: a non-empty list of str.
            truncate: bool. `False` (the default): a line longer than
                `source_limit` tokens is refused (a line of exactly
                `source_limit` tokens is not); `True`: it is cut to
                `source_limit` tokens, as the tokenizer cuts a line
                (`Tokenizer.truncate`: a checkpoint's keeps its end token).

        Returns:
            int32 NumPy array `(N, S)` with `S <= source_limit`, each row
            padded at the end with the model's pad id.

        Raises:
            SourceTooLongError: (a `ValueError`) naming the first line that
                is too long, its number of tokens and `source_limit`
                (its `index`, `length` and `limit`).
            ValueError: naming `texts` or `truncate`, or for a kind that
                does not decode (it does not encode its lines to ids).
        """
        self._check_decodes("encode")
        texts = _checked_texts(texts)
        if not texts:
            raise ValueError("Argument `texts` must hold at least one line. Received: texts=[]")
        _check_bool("truncate", truncate)
        if truncate:
            return encode_lines(self.source_tokenizer, texts, self.source_limit)
        token_ids = encode_lines(self.source_tokenizer, texts)
        return check_source_length(token_ids, self.source_limit, self.model.pad_token_id)

    def generate_ids(self, token_ids, strategy=None, num_beams=None, *, batch_size=64,
                     verbose=0, **generate_options):
        """What `Seq2SeqModel.generate` returns for encoded lines, searched
        with `generation` (`strategy` and `num_beams` override it:
        `GenerationConfig.with_search`): what `search` does after `encode`.

        Args:
            token_ids: int array `(N, S)`, as `encode` gives them.
            **generate_options: more keyword arguments of `generate`
                (`return_scores=True`, `return_attention=True`,
                `jit_compile`; default: the attribute `jit_compile`).

        Returns:
            Token ids `(N, L)`, or `generate`'s result object with
            `return_scores` and the like.

        Raises:
            ValueError: naming `strategy` or `num_beams`, or for a kind
                that does not decode.
        """
        generation = self._search_generation(strategy, num_beams, "generate_ids")
        generate_options.setdefault("jit_compile", self.jit_compile)
        return self.model.generate(token_ids, batch_size=batch_size, verbose=verbose,
                                   **generation.generate_kwargs(), **generate_options)

    def search(self, texts, strategy=None, num_beams=None, *, truncate=False, batch_size=64,
               verbose=0, **generate_options):
        """What `Seq2SeqModel.generate` returns for `texts`:
        `generate_ids(encode(texts, truncate), ...)`.

        Args:
            texts: a non-empty list of str.
            truncate: bool, as `encode`'s: by default a line longer than
                `source_limit` tokens is refused, before any search.
            **generate_options: more keyword arguments of `generate`
                (`return_scores=True`, `return_attention=True`, ...).

        Returns:
            Token ids `(N, L)`, or `generate`'s result object with
            `return_scores` and the like.

        Raises:
            SourceTooLongError: as `encode`.
            ValueError: naming the argument, before any search.
        """
        self._search_generation(strategy, num_beams, "search")  # checked before encoding
        return self.generate_ids(self.encode(texts, truncate), strategy, num_beams,
                                 batch_size=batch_size, verbose=verbose, **generate_options)

    def _check_decodes(self, method):
        if not self.kind.decodes:
            raise ValueError(f"This model is {self.kind.description}, which neither encodes "
                             f"its lines to ids nor decodes: `{method}` is for a model that "
                             f"decodes; use `generate`. Received: kind={self.kind.name!r}")

    def _search_generation(self, strategy, num_beams, method):
        """`generation` with the overrides, for a kind that decodes."""
        self._check_decodes(method)
        return self.generation.with_search(strategy, num_beams)

    def detokenize(self, token_ids):
        """Output strings of generated ids `(N, L)`: `target_tokenizer.detokenize`."""
        return self.target_tokenizer.detokenize(token_ids)

    def generate(self, texts, strategy=None, num_beams=None, verbose=0, *, truncate=False):
        """Outputs (translations, summaries or answers) for a list of input lines.

        Each line is made as `source_format` says (for question answering,
        e.g. `"context | question"`) and decoded with `generation` (its
        `suppress_token_ids` are never generated); a memory network picks an
        answer class, an extractive summarizer a sentence. An empty list
        gives `[]` without calling the model. A line longer than
        `source_limit` tokens is refused (`SourceTooLongError`) before any
        model call, unless `truncate=True`.

        Args:
            texts: list of str.
            strategy: `"greedy"` or `"beam"`; default: the run's. A model
                that does not decode (a memory network, an extractive
                summarizer) takes `None` or `"greedy"` only: there is no
                sequence to search, its answer is the best class.
            num_beams: positive int; default: the run's (1 only for a model
                that does not decode).
            verbose: Keras' progress bar (0: none).
            truncate: bool; `True`: a line longer than `source_limit` is cut
                to it (as training and `evaluate` cut theirs). A model that
                does not decode reads its lines its own way, whatever
                `truncate` says.

        Returns:
            A list of `len(texts)` strings.

        Raises:
            SourceTooLongError: (a `ValueError`) naming the first line
                longer than `source_limit` tokens, without `truncate`.
            ValueError: naming `texts`, `strategy`, `num_beams` or
                `truncate`, before any work.
        """
        texts = _checked_texts(texts)
        _check_bool("truncate", truncate)
        generation = self._generation(strategy, num_beams)
        if not texts:
            return []
        if self.kind.decodes:
            return self.kind.answer(self, texts, generation, verbose, truncate=truncate)
        return self.kind.answer(self, texts, generation, verbose)

    def _generation(self, strategy, num_beams):
        """`generation` with the overrides, or a refusal of a beam search
        of a model that does not decode (`None` for such a model)."""
        if self.kind.decodes:
            return self.generation.with_search(strategy, num_beams)
        if strategy not in (None, "greedy") or not (num_beams is None or num_beams == 1):
            name, value = ("strategy", strategy) if strategy not in (None, "greedy") else (
                "num_beams", num_beams)
            raise ValueError(
                f"Argument `{name}` must be left unset for this run: its model is "
                f"{self.kind.description}, which picks its answer in one step and has no "
                f"sequence to search. Received: {name}={value!r}")
        return None

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

        Sources longer than `source_limit` tokens are cut to it, as in
        training (`generate(..., truncate=True)`), never refused.

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
        self._generation(strategy, num_beams)
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


def _checked_texts(texts):
    """`texts` as a list, or a refusal of anything but a list of str."""
    texts = list(texts)
    if not all(isinstance(text, str) for text in texts):
        raise ValueError(f"Argument `texts` must be a list of str. Received: texts={texts!r}")
    return texts


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"Argument `{name}` must be a bool. Received: {name}={value!r}")


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
