"""Run folders: what a recipe saves, and the one reader of them (`SavedRun`).

A run folder holds:

- `model.keras`: the trained Keras model;
- `source.spm`, `target.spm`: the SentencePiece tokenizers (the same model
  twice when source and target share a vocabulary);
- `config.json`: everything a reader needs (see `save_run`);
- (a converted checkpoint, `keras-attention convert`: its tokenizer files in
  `tokenizer/` instead of the `.spm` files; see `keras_attention.runs.converted`);
- `.keras_attention_run`: the marker that makes the folder recognisable as a
  run folder, so that a later run may replace it (and nothing else).

Writing a run never loses work: `check_output_dir` refuses, before any
training, a folder that holds anything but a run (and `.` or a parent of the
working directory, always); `save_run` writes a new sibling folder and moves
it into place only once it is complete, so the previous run stays intact
until then; and when saving a trained run fails (a full disk, another run
that appeared meanwhile), `save_run_or_rescue` keeps it in a new
`OUTPUT.rescue-<time>` folder beside the destination and says where.
`SavedRun` loads a folder, checks its parts against each other (the model's
kind against the recipe, the tokenizers against the model's vocabulary) and
is the folder's `TextToText`: a model, its tokenizers and its one
`GenerationConfig`, with `generate(texts)` and `evaluate(pairs)`. The CLI
(`keras-attention generate|evaluate`) and `keras_attention.export` read runs
only through it; the recipes evaluate through a `TextToText` of their
trained parts. Folders saved before the marker and the self-describing
`config.json` existed still load.

The package has one module per job: `layout` (file names, `RunFolderError`),
`folders` (output folders, writing, rescue), `metadata` (`config.json`),
`legacy` (older folders), `source_formats`, `generation`
(`GenerationConfig`), `text_to_text` (`TextToText`), `source_length` (the
most tokens a model accepts in a line, `SourceTooLongError`), `inference`
(how each model kind answers), `registry` (recipes and model kinds),
`convert` (a Hugging Face checkpoint into a run folder), `evaluation` (each
recipe's file format and scores) and `saved_run` (`SavedRun`). Recipes and
model kinds are looked up in `registry`, which holds them as objects.
"""

from keras_attention.runs.convert import convert_checkpoint, open_checkpoint
from keras_attention.runs.folders import (
    RunNotSavedError,
    check_output_dir,
    is_run_folder,
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
from keras_attention.runs.metadata import read_metadata
from keras_attention.runs.saved_run import SavedRun, load_run
from keras_attention.runs.source_formats import (
    SOURCE_FIELDS,
    check_source_format,
    format_source,
)
from keras_attention.runs.source_length import SourceTooLongError
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
    "RunFolderError",
    "RunNotSavedError",
    "SavedRun",
    "SourceTooLongError",
    "check_output_dir",
    "check_source_format",
    "convert_checkpoint",
    "format_source",
    "is_run_folder",
    "load_run",
    "open_checkpoint",
    "read_metadata",
    "rescue_dir_for",
    "save_run",
    "save_run_or_rescue",
]
