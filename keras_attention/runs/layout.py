"""What a run folder holds: its file names, format version and read error."""

from keras_attention.runs.generation import dict_keys

FORMAT_VERSION = 1  # of config.json; 0 names a folder saved before format 1
MARKER = ".keras_attention_run"
MODEL_FILE = "model.keras"
RUN_CONFIG_FILE = "config.json"
TOKENIZER_FILES = {"source": "source.spm", "target": "target.spm"}
TOKENIZER_FOLDER = "tokenizer"  # a converted checkpoint's tokenizer files, unchanged
RUN_FILES = (MODEL_FILE, TOKENIZER_FILES["source"], TOKENIZER_FILES["target"], RUN_CONFIG_FILE)
RECIPE_DECODING_KEYS = dict_keys("gnmt")  # a recipe run's `decoding` (`GenerationConfig.to_dict`)
#: The keys of a converted checkpoint's `decoding` (`GenerationConfig.to_dict`
#: of the `"hf"` form).
CHECKPOINT_DECODING_KEYS = dict_keys("hf")
#: The recipes a converted checkpoint's run may name (`converted_from` set).
CONVERTED_RECIPES = ("translation", "summarization")


class RunFolderError(ValueError):
    """A run folder that cannot be read: a file missing, corrupt or truncated,
    or parts that do not belong together (a tokenizer or model of another run).

    The message names the file and the folder (`Received: run_dir=...`).
    """


__all__ = ["CHECKPOINT_DECODING_KEYS", "CONVERTED_RECIPES", "FORMAT_VERSION", "MARKER",
           "MODEL_FILE", "RECIPE_DECODING_KEYS", "RUN_CONFIG_FILE", "RUN_FILES", "RunFolderError",
           "TOKENIZER_FILES", "TOKENIZER_FOLDER"]
