"""Run folders: what a recipe saves, and the one reader of them (`open_run`).

A run folder holds:

- `model.keras`: the trained Keras model;
- `source.spm`, `target.spm`: the SentencePiece tokenizers (the same model
  twice when source and target share a vocabulary);
- `config.json`: everything a reader needs (see `save_run`);
- (a converted checkpoint, `keras-attention convert`: its tokenizer files in
  `tokenizer/` instead of the `.spm` files, and `converted_from` in `config.json`;
  see `keras_attention.runs.convert`);
- `.keras_attention_run`: the marker that makes the folder recognisable as a
  run folder, so that a later run may replace it (and nothing else).

Writing a run never loses work: `check_output_dir` refuses, before any
training, a folder that holds anything but a run (and `.` or a parent of the
working directory, always); `save_run` writes a new sibling folder and moves
it into place only once it is complete, so the previous run stays intact
until then; and when saving a trained run fails (a full disk, another run
that appeared meanwhile), `save_run_or_rescue` keeps it in a new
`OUTPUT.rescue-<time>` folder beside the destination and says where.
`open_run` loads a folder, checks its parts against each other (the model's
kind against the recipe, the tokenizers against the model's vocabulary) and
gives the folder's model kind: a `TextToText` (a model, its tokenizers and
settings, with `generate(texts)` and `evaluate(pairs)`) of one subclass per
kind: `TextGenerator` (a `Seq2SeqModel` and its one `GenerationConfig`;
recipe runs and converted checkpoints), `AnswerClassifier`,
`SentenceSelector`. The CLI (`keras-attention generate|evaluate|serve`) and
`keras_attention.export` read runs only through it; the recipes evaluate
through the model kind of their trained parts. Folders saved before the
marker and the self-describing `config.json` existed still load.

The package has one module per job: `layout` (file names, `RunFolderError`),
`folders` (output folders, writing, rescue), `reader` (`open_run`,
`config.json` read and checked, `is_run_folder`), `legacy` (older folders),
`source_formats`, `generation` (`GenerationConfig`), `text_to_text` (the
`TextToText` base class), one module per model kind (`text_generator`,
with `SourceTooLongError`; `answer_classifier`; `sentence_selector`),
`registry` (recipes and model kinds), `convert` (a Hugging Face checkpoint
into a run folder) and `evaluation` (each recipe's file format). Recipes and
model kinds are looked up in `registry`, which holds them as objects.
"""

from keras_attention.runs.answer_classifier import AnswerClassifier
from keras_attention.runs.convert import convert_checkpoint, open_checkpoint
from keras_attention.runs.folders import (
    RunNotSavedError,
    check_output_dir,
    rescue_dir_for,
    save_run,
    save_run_or_rescue,
)
from keras_attention.runs.generation import GenerationConfig
from keras_attention.runs.layout import (
    FORMAT_VERSION,
    MARKER,
    MODEL_FILE,
    RECIPE_DECODING_KEYS,
    RUN_CONFIG_FILE,
    RUN_FILES,
    TOKENIZER_FILES,
    TOKENIZER_FOLDER,
    RunFolderError,
)
from keras_attention.runs.reader import is_run_folder, load_run, open_run, read_metadata
from keras_attention.runs.sentence_selector import SentenceSelector
from keras_attention.runs.source_formats import (
    SOURCE_FIELDS,
    check_source_format,
    format_source,
)
from keras_attention.runs.text_generator import SourceTooLongError, TextGenerator
from keras_attention.runs.text_to_text import TextToText

__all__ = [
    "RUN_CONFIG_FILE",
    "RECIPE_DECODING_KEYS",
    "FORMAT_VERSION",
    "GenerationConfig",
    "MARKER",
    "MODEL_FILE",
    "RUN_FILES",
    "SOURCE_FIELDS",
    "TOKENIZER_FILES",
    "TOKENIZER_FOLDER",
    "TextToText",
    "TextGenerator",
    "AnswerClassifier",
    "SentenceSelector",
    "RunFolderError",
    "RunNotSavedError",
    "SourceTooLongError",
    "check_output_dir",
    "check_source_format",
    "convert_checkpoint",
    "format_source",
    "is_run_folder",
    "load_run",
    "open_checkpoint",
    "open_run",
    "read_metadata",
    "rescue_dir_for",
    "save_run",
    "save_run_or_rescue",
]
