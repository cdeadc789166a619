"""Reading run folders: `SavedRun`, the one reader, which checks the folder's
parts against each other before any work."""

import os
import zipfile

from keras_attention import files
from keras_attention.runs import registry
from keras_attention.runs.generation import GenerationConfig
from keras_attention.runs.layout import MODEL_FILE, RUN_CONFIG_FILE, RunFolderError
from keras_attention.runs.metadata import read_metadata
from keras_attention.runs.text_to_text import TextToText


class SavedRun(TextToText):
    """A saved run: the `TextToText` of a run folder.

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
        model, source_tokenizer, target_tokenizer, kind, recipe, config,
            source_format, answer_classes, selection: as `TextToText`'s
            (the tokenizers as the model kind's `tokenizers` hook reads
            them: SentencePiece models for the recipes' runs, a
            `keras_attention.pretrained.tokenizers` object, the same one for
            both sides, for a converted checkpoint).
        generation: the `GenerationConfig` `config.json`'s `decoding` holds
            (`None` for a model kind that does not decode).
        metadata: dict, the whole `config.json` (converted for older folders).
        run_dir: str, the folder.

    Raises:
        RunFolderError: naming the file, for a missing folder or file, a
            `config.json` that is not valid JSON or lacks settings, an unknown
            recipe, a truncated or corrupt `model.keras` or `.spm` file, or
            parts that do not belong together.
    """

    def __init__(self, run_dir):
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        self.run_dir = os.fspath(run_dir)
        files.restore_set_aside(self.run_dir)  # the run an interrupted replacement set aside
        if os.path.isdir(self.run_dir):
            self.path(MODEL_FILE)  # the file that makes a run, named first
        self.metadata = read_metadata(self.run_dir)
        kind = registry.kind_of_metadata(self.metadata)
        decoding = self.metadata["decoding"]
        generation = (None if decoding is None else
                      GenerationConfig.from_dict(decoding, kind.length_penalty_form))
        # What the kind's `tokenizers` hook reads before the model is loaded.
        self.recipe, self.kind = self.metadata["recipe"], kind
        self.path(MODEL_FILE)
        source_tokenizer, target_tokenizer = kind.tokenizers(self)
        super().__init__(
            self._model(), source_tokenizer, target_tokenizer, generation, kind=kind,
            recipe=self.metadata["recipe"], source_format=self.metadata["source_format"],
            config=self.metadata["config"], answer_classes=self.metadata.get("answer_classes"),
            selection=self.metadata.get("selection"))
        self._check_parts()

    def path(self, name, folder=False):
        """The path of `name` in the run folder (a file; a folder with
        `folder=True`), or a `RunFolderError` naming it when it is missing or
        not inside the folder (an absolute name, `..`, a link out of it)."""
        path = os.path.join(self.run_dir, name)
        outside = files.outside_folder(self.run_dir, name)
        if outside is not None:
            raise self.folder_error(path, f"{outside}, named in {RUN_CONFIG_FILE} (only files "
                                          f"inside the run folder are read)")
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
                f"Argument `run_dir` must hold the model its {RUN_CONFIG_FILE} describes: "
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


def load_run(run_dir):
    """Returns `(model, source_tokenizer, target_tokenizer, metadata)` of a run
    folder: `SavedRun`'s attributes, for callers that want the pieces.

    Raises:
        RunFolderError: as `SavedRun`.
    """
    run = SavedRun(run_dir)
    return run.model, run.source_tokenizer, run.target_tokenizer, run.metadata


__all__ = ["SavedRun", "load_run"]
