"""`TextGenerator`: the model kind that decodes, a `Seq2SeqModel` with its
tokenizers and `GenerationConfig` (recipe runs and converted Hugging Face
checkpoints alike); and the refusal of a line longer than it accepts
(`SourceTooLongError`).

A line goes tokenizer -> ids (`encode`, the tokenizer contract's
`encode_lines`) -> `Seq2SeqModel.generate` with the one `GenerationConfig`
(`generate_ids`) -> strings (`detokenize`). A line of more tokens than the
model accepts (`source_limit`) is refused before any search unless the
caller asks for it to be cut (`truncate=True`, `--truncate`): a line is
never cut without a word.
"""

from keras_attention.data.subwords import as_tokenizer
from keras_attention.runs import registry
from keras_attention.runs.generation import GenerationConfig
from keras_attention.runs.text_to_text import TextToText, check_bool, checked_texts
from keras_attention.tokenizer import encode_lines


class TextGenerator(TextToText):
    """A `Seq2SeqModel` with its tokenizers and generation settings.

    Read from a run folder (`runs.open_run(run_dir)`), from a Hugging Face
    checkpoint folder (`runs.open_checkpoint(folder)`), or made in Python
    from the parts:

    Args:
        model: the `Seq2SeqModel`.
        source_tokenizer: the tokenizer of the input lines: a
            `keras_attention.tokenizer.Tokenizer` (a checkpoint's, a
            `data.SentencePieceModel`) or a keras-hub
            `SentencePieceTokenizer`, read as its `data.SentencePieceModel`
            (`data.as_tokenizer`).
        target_tokenizer: the tokenizer of the outputs, as `source_tokenizer`;
            default: the source one (a shared vocabulary).
        generation: a `GenerationConfig`, or a run folder's `decoding` dict.
        recipe: the recipe whose scores `evaluate` gives (`"translation"`:
            BLEU and chrF, the default; `"summarization"`: ROUGE;
            `"question_answering"`: exact match and F1).
        source_format: how one input line is made (`runs.format_source`).
        config: dict, the recipe's settings.
        jit_compile: bool, whether the search is compiled (XLA on
            TensorFlow, `jax.jit` on JAX; `Seq2SeqModel.generate`'s
            argument); also an attribute that may be changed. Off, TensorFlow
            runs the search as a graph without XLA, which starts sooner: what
            `keras-attention generate` does for a single line.

    Raises:
        ValueError: naming the argument, for a recipe the kind does not
            serve or a missing `generation`.

    Example:

    >>> from keras_attention import data, models
    >>> from keras_attention.runs import GenerationConfig, TextGenerator
    >>> pairs = data.make_date_pairs(100)
    >>> tokenizer = data.train_tokenizer([s for p in pairs for s in p], 60)
    >>> model = models.transformer_seq2seq(
    ...     tokenizer.vocabulary_size(), num_layers=1, hidden_dim=8, num_heads=2,
    ...     intermediate_dim=8, max_length=16, **data.special_token_ids(tokenizer))
    >>> translator = TextGenerator(model, tokenizer,
    ...                            generation=GenerationConfig(source_length=8, target_length=4))
    >>> len(translator.generate(["a b", "c"]))
    2
    """

    name = "seq2seq"
    marker = None
    description = "a Seq2SeqModel (it decodes)"
    recipes = ("translation", "summarization", "question_answering")
    decodes = True
    exports = True

    def __init__(self, model, source_tokenizer, target_tokenizer=None, generation=None, *,
                 recipe=None, source_format="text", config=None, jit_compile=True):
        super().__init__(model, source_tokenizer, recipe=recipe, source_format=source_format,
                         config=config, jit_compile=jit_compile)
        if isinstance(generation, dict):
            generation = GenerationConfig.from_dict(generation)
        if not isinstance(generation, GenerationConfig):
            raise ValueError(f"Argument `generation` must be a `GenerationConfig` (or a run's "
                             f"`decoding` dict) for {self.description}. "
                             f"Received: generation={generation!r}")
        shared = target_tokenizer is None or target_tokenizer is source_tokenizer
        self.source_tokenizer = as_tokenizer(source_tokenizer)
        self.target_tokenizer = (self.source_tokenizer if shared
                                 else as_tokenizer(target_tokenizer))
        self.generation = generation

    @classmethod
    def matches(cls, model):
        from keras_attention.models import Seq2SeqModel

        return isinstance(model, Seq2SeqModel)

    @classmethod
    def from_run_parts(cls, model, source_tokenizer, target_tokenizer, generation, *, recipe,
                       source_format, config, metadata):
        return cls(model, source_tokenizer, target_tokenizer, generation, recipe=recipe,
                   source_format=source_format, config=config)

    def vocabulary_sizes(self):
        return [("source", self.source_tokenizer.vocabulary_size(),
                 self.model.source_vocabulary_size, "source vocabulary"),
                ("target", self.target_tokenizer.vocabulary_size(),
                 self.model.target_vocabulary_size, "target vocabulary")]

    @property
    def source_limit(self):
        """The most tokens one input line may have: `generation.source_length`."""
        return self.generation.source_length

    def search_settings(self, strategy=None, num_beams=None):
        """`generation` with the caller's search (`GenerationConfig.with_search`)."""
        return self.generation.with_search(strategy, num_beams)

    def answer(self, texts, generation, *, verbose=0, truncate=False):
        generated = self.search(texts, generation.strategy, generation.num_beams,
                                truncate=truncate, verbose=verbose)
        return self.detokenize(generated)

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
            ValueError: naming `texts` or `truncate`.
        """
        texts = checked_texts(texts)
        if not texts:
            raise ValueError("Argument `texts` must hold at least one line. Received: texts=[]")
        check_bool("truncate", truncate)
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
            ValueError: naming `strategy` or `num_beams`.
        """
        generation = self.search_settings(strategy, num_beams)
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
        self.search_settings(strategy, num_beams)  # checked before encoding
        return self.generate_ids(self.encode(texts, truncate), strategy, num_beams,
                                 batch_size=batch_size, verbose=verbose, **generate_options)

    def detokenize(self, token_ids):
        """Output strings of generated ids `(N, L)`: `target_tokenizer.detokenize`."""
        return self.target_tokenizer.detokenize(token_ids)


## A line longer than the model accepts


class SourceTooLongError(ValueError):
    """An input line has more tokens than the model accepts.

    A `ValueError` (`keras-attention generate` reports it as one line); its
    message names the line, its length and the limit, and says how to ask
    for truncation.

    Attributes:
        index: int, the 0-based position of the first line that is too
            long, in the list of lines given.
        length: int, its number of tokens.
        limit: int, the most tokens the model accepts (the run's
            `GenerationConfig.source_length`).
    """

    def __init__(self, index, length, limit):
        self.index, self.length, self.limit = int(index), int(length), int(limit)
        super().__init__(
            f"Argument `texts` holds a line longer than this model accepts: line "
            f"{self.index + 1} has {self.length} tokens, more than the run's source length of "
            f"{self.limit}. Shorten it, or ask for truncation (`truncate=True`; `--truncate` on "
            f"the command line) to cut it to {self.limit} tokens. "
            f"Received: texts[{self.index}] of {self.length} tokens")

    def __reduce__(self):  # pickled with its attributes (its message is made from them)
        return type(self), (self.index, self.length, self.limit)


def check_source_length(token_ids, limit, pad_token_id):
    """`token_ids` with at most `limit` columns, or a refusal of the first row
    longer than that.

    A row is too long when it holds an id other than `pad_token_id` at a
    position `limit` or beyond; a row of exactly `limit` tokens fits.

    Args:
        token_ids: int NumPy array `(N, S)`, rows padded at the end with
            `pad_token_id` (as a model kind's encode hook pads them, uncut).
        limit: positive int, the most tokens a row may have.
        pad_token_id: int.

    Returns:
        `token_ids[:, :limit]` (`(N, min(S, limit))`): the ids themselves
        where `S <= limit`.

    Raises:
        SourceTooLongError: naming the first row that is too long, its
            length and `limit`.
    """
    import numpy as np

    beyond = token_ids[:, limit:] != pad_token_id  # (N, S - limit)
    too_long = np.flatnonzero(beyond.any(axis=-1))
    if too_long.size:
        index = int(too_long[0])
        length = int(np.flatnonzero(token_ids[index] != pad_token_id)[-1]) + 1
        raise SourceTooLongError(index, length, limit)
    return token_ids[:, :limit]


registry.register_model_kind(TextGenerator)

__all__ = ["SourceTooLongError", "TextGenerator", "check_source_length"]
