"""Reading run folders: `SavedRun`, the one reader, which checks the folder's
parts against each other before any work."""

import os
import zipfile

from keras_attention.runs import registry
from keras_attention.runs.layout import CONFIG_FILE, MODEL_FILE, RunFolderError
from keras_attention.runs.metadata import read_metadata


class SavedRun:
    """A saved run: its model, tokenizers and settings, ready to generate and evaluate.

    The one reader of run folders (the CLI and `keras_attention.export` use
    it). Folders saved before format 1 (no marker, `config.json` holding only
    `recipe`, `config` and `scores`) load too: their decoding settings and
    source format are read from the recipe's `config`.

    The parts are checked against each other when the folder is read, before
    any decoding: `model.keras` must be the model kind `config.json`
    describes for its recipe (`keras_attention.runs.registry`), and each
    tokenizer's vocabulary size the model's (a memory network's answer
    classes, its output size). A tokenizer or model copied from another run
    is one `RunFolderError` naming the file.

    Args:
        run_dir: str or path-like, a folder saved by `save_run`.

    Attributes:
        model: the Keras model.
        source_tokenizer, target_tokenizer: the tokenizers, as the model
            kind's `tokenizers` hook reads them: SentencePiece models for the
            recipes' runs, a `keras_attention.pretrained.tokenizers` object
            (the same one for both sides) for a converted checkpoint.
        recipe: the recipe that saved the run (`registry.recipe_names()`).
        kind: the run's `registry.ModelKind` (`kind.name`: `"seq2seq"`,
            `"answer_classifier"`, `"sentence_selector"` or `"converted"`).
        config: dict, the recipe's settings.
        decoding: dict, the generation settings (`source_length`,
            `target_length`, `strategy`, ..., `suppress_token_ids` where the
            recipe saved them: nothing is suppressed in older folders); `{}`
            for a model kind that does not decode.
        source_format: how one input line is made (see `format_source`).
        answer_classes: the answers a memory network picks from, or `None`.
        selection: an extractive summarizer's `{"max_length", "max_sentences"}`,
            or `None`.
        metadata: dict, the whole `config.json` (converted for older folders).

    Raises:
        RunFolderError: naming the file, for a missing folder or file, a
            `config.json` that is not valid JSON or lacks settings, an unknown
            recipe, a truncated or corrupt `model.keras` or `.spm` file, or
            parts that do not belong together.
    """

    def __init__(self, run_dir):
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        self.run_dir = os.fspath(run_dir)
        if os.path.isdir(self.run_dir):
            self.path(MODEL_FILE)  # the file that makes a run, named first
        self.metadata = read_metadata(self.run_dir)
        self.recipe = self.metadata["recipe"]
        self.kind = registry.kind_of_metadata(self.metadata)
        self.config = self.metadata["config"]
        self.decoding = dict(self.metadata["decoding"] or {})
        self.source_format = self.metadata["source_format"]
        self.answer_classes = self.metadata.get("answer_classes")
        self.selection = self.metadata.get("selection")
        self.path(MODEL_FILE)
        self.source_tokenizer, self.target_tokenizer = self.kind.tokenizers(self)
        self.model = self._model()
        self._check_parts()

    def path(self, name, folder=False):
        """The path of `name` in the run folder (a file; a folder with
        `folder=True`), or a `RunFolderError` naming it when it is missing."""
        path = os.path.join(self.run_dir, name)
        if not (os.path.isdir(path) if folder else os.path.isfile(path)):
            raise RunFolderError(
                f"Argument `run_dir` must be a run folder saved by a recipe: {path} is missing. "
                f"Received: run_dir={self.run_dir!r}"
            )
        return path

    def folder_error(self, path, what):
        """The `RunFolderError` of a part of the folder: `{path} is {what}`."""
        return RunFolderError(
            f"Argument `run_dir` must be a run folder saved by a recipe: {path} is {what}. "
            f"Received: run_dir={self.run_dir!r}"
        )

    def _model(self):
        import keras

        path = self.path(MODEL_FILE)
        if not zipfile.is_zipfile(path):
            raise self.folder_error(path, "not a .keras archive (truncated or corrupt)")
        try:
            return keras.saving.load_model(path)
        except Exception as error:  # a corrupt member, an unknown layer, ...
            message = str(error).strip().splitlines()[:1] or [type(error).__name__]
            raise self.folder_error(path, f"a .keras archive that does not load "
                                      f"({type(error).__name__}: {message[0][:200]})") from None

    def _check_parts(self):
        """The model is of the kind `config.json` describes, and the tokenizers'
        sizes are the model's (a part copied from another run is named)."""
        if not self.kind.matches(self.model):
            found = next((kind for kind in registry.model_kinds()
                          if kind.matches(self.model)), None)
            what = (found.description if found else
                    f"a {type(self.model).__name__} of no known kind")
            raise RunFolderError(
                f"Argument `run_dir` must hold the model its {CONFIG_FILE} describes: "
                f"{os.path.join(self.run_dir, MODEL_FILE)} holds {what} "
                f"({self.model.name!r}), but a {self.recipe} run of this folder's settings "
                f"needs {self.kind.description} (a model.keras of another run?). "
                f"Received: run_dir={self.run_dir!r}")
        for name, size, model_size, what, *smaller in self.kind.vocabularies(self):
            if model_size is None or size == model_size or (smaller and smaller[0]
                                                            and size < model_size):
                continue
            if smaller and smaller[0]:
                raise RunFolderError(
                    f"Argument `run_dir` must hold parts of one run: "
                    f"{os.path.join(self.run_dir, name)} gives a {what} of {size}, more than "
                    f"the {model_size} ids of {MODEL_FILE} (a smaller tokenizer is allowed, as "
                    f"T5's 32100 ids for 32128 embedding rows; a larger one would give ids the "
                    f"model lacks: a tokenizer of another checkpoint?). "
                    f"Received: run_dir={self.run_dir!r}")
            raise RunFolderError(
                f"Argument `run_dir` must hold parts of one run: "
                f"{os.path.join(self.run_dir, name)} gives a {what} of {size}, but "
                f"{MODEL_FILE} was trained with {model_size} (a file of another run?). "
                f"Received: run_dir={self.run_dir!r}")

    def generate(self, texts, strategy=None, num_beams=None, verbose=0):
        """Outputs (translations, summaries or answers) for a list of input lines.

        Each line is made as `source_format` says (for question answering,
        e.g. `"context | question"`) and decoded with the run's `decoding`
        settings (its `suppress_token_ids` are never generated); a memory
        network picks an answer class, an extractive summarizer a sentence.
        An empty list gives `[]` without calling the model.

        Args:
            texts: list of str.
            strategy: `"greedy"` or `"beam"` (or any strategy of
                `Seq2SeqModel.generate`); default: the run's. A model that
                does not decode (a memory network, an extractive summarizer)
                takes `None` or `"greedy"` only: there is no sequence to
                search, its answer is the best class.
            num_beams: positive int; default: the run's (1 only for a model
                that does not decode).
            verbose: Keras' progress bar (0: none).

        Returns:
            A list of `len(texts)` strings.

        Raises:
            ValueError: naming `texts`, `strategy` or `num_beams`, before
                any work.
        """
        from keras_attention.validation import check_positive_int

        texts = list(texts)
        if not all(isinstance(text, str) for text in texts):
            raise ValueError(f"Argument `texts` must be a list of str. Received: texts={texts!r}")
        num_beams = check_positive_int("num_beams", num_beams, allow_none=True)
        self._check_search(strategy, num_beams)
        if not texts:
            return []
        return self.kind.answer(self, texts, strategy, num_beams, verbose)

    def _check_search(self, strategy, num_beams):
        """Refuses a beam search of a model that does not decode."""
        if not self.kind.decodes and (strategy not in (None, "greedy") or (num_beams or 1) > 1):
            name, value = ("strategy", strategy) if strategy not in (None, "greedy") else (
                "num_beams", num_beams)
            raise ValueError(
                f"Argument `{name}` must be left unset for this run: its model is "
                f"{self.kind.description}, which picks its answer in one step and has no "
                f"sequence to search. Received: {name}={value!r}")

    def evaluation_examples(self, path, max_examples=None):
        """`(sources, references)` from a file in the recipe's format.

        Translation: a TSV file of `source<TAB>target` (references: strings);
        summarization: JSONL of document/summaries (references: lists);
        question answering: SQuAD-style JSON/JSONL, each source made from
        `context` and `question` by `source_format` (references: lists).

        Args:
            path: str or path-like.
            max_examples: positive int, the first examples only; `None`: all.

        Raises:
            ValueError: from the loaders, naming the file and line.
        """
        from keras_attention.validation import check_positive_int

        limit = check_positive_int("max_examples", max_examples, allow_none=True)
        return registry.recipe(self.recipe).examples(path, limit, self)

    def evaluate(self, path, max_examples=None, strategy=None, num_beams=None, verbose=0):
        """The recipe's scores on a file (see `evaluation_examples`).

        Returns:
            A dict: `bleu` and `chrf` (translation), ROUGE's (summarization)
            or `exact_match` and `f1` (question answering), and `examples`.
        """
        self._check_search(strategy, num_beams)
        sources, references = self.evaluation_examples(path, max_examples)
        hypotheses = self.generate(sources, strategy, num_beams, verbose=verbose)
        scores = registry.recipe(self.recipe).scores(hypotheses, references)
        scores["examples"] = len(sources)
        return scores


def load_run(run_dir):
    """Returns `(model, source_tokenizer, target_tokenizer, metadata)` of a run
    folder: `SavedRun`'s attributes, for callers that want the pieces.

    Raises:
        RunFolderError: as `SavedRun`.
    """
    run = SavedRun(run_dir)
    return run.model, run.source_tokenizer, run.target_tokenizer, run.metadata


__all__ = ["SavedRun", "load_run"]
