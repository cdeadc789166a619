"""Checks of a recipe's configuration against the data at hand, before training.

The settings themselves are checked by `keras_attention.settings`; what only
the data can tell (a split that came out empty, a vocabulary the tokenizer
cannot build from these texts) is checked here, before the first epoch.
Each refusal is a `ValueError` naming the setting to change.
"""

import re

from keras_attention import data, runs
from keras_attention.recipes import backup


def check_split(split_name, examples, setting, value):
    """Returns `examples` if the split holds at least one example.

    Args:
        split_name: str, e.g. `"test"`, for the message.
        examples: the split's examples (any sized collection).
        setting: str, the setting that sized the split, e.g. `"test_fraction"`.
        value: that setting's value.

    Raises:
        ValueError: naming `setting`, when the split is empty.
    """
    if not len(examples):
        raise ValueError(
            f"The {split_name} split holds no examples for this data; change `{setting}`. "
            f"Received: {setting}={value!r}")
    return examples


# SentencePiece's trainer: "Vocabulary size is smaller than required_chars. 4 vs 49."
_REQUIRED_CHARS = re.compile(r"smaller than required_chars\. (\d+) vs (\d+)")
# Its four meta pieces (pad, unk, start, end) take ids 0-3.
SPECIAL_TOKENS = 4


def train_tokenizer(texts, vocabulary_size, **kwargs):
    """`keras_attention.data.train_tokenizer`, with SentencePiece's refusals
    of the size as a `ValueError` naming `vocabulary_size`.

    Args:
        texts: list of str, the training split.
        vocabulary_size: int, the recipe's `vocabulary_size` setting.
        **kwargs: passed on (`lowercase`, `model_type`).
    """
    if vocabulary_size <= SPECIAL_TOKENS:
        raise ValueError(
            f"Setting `vocabulary_size` must be more than the {SPECIAL_TOKENS} special tokens. "
            f"Received: vocabulary_size={vocabulary_size!r}")
    try:
        return data.train_tokenizer(texts, vocabulary_size, **kwargs)
    except RuntimeError as error:
        match = _REQUIRED_CHARS.search(str(error))
        needed = (f"at least {int(match.group(2))} for this data (its characters and the "
                  f"{SPECIAL_TOKENS} special tokens)") if match else \
            f"one SentencePiece can train on this data ({error})"
        raise ValueError(f"Setting `vocabulary_size` must be {needed}. "
                         f"Received: vocabulary_size={vocabulary_size!r}") from None


def check_folders(config, backup_may_differ):
    """Refuses, before any work, an output folder a run may not replace
    (`runs.check_output_dir`) and a backup folder that is not ours or holds
    another configuration's backup (`backup.check_backup_dir`); returns this
    configuration's backup record."""
    runs.check_output_dir(config["output_dir"], overwrite=config["overwrite"])
    record = backup.backup_record(config, backup_may_differ)
    backup.check_backup_dir(config["backup_dir"], record, output_dir=config["output_dir"])
    return record
