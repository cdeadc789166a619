"""The `"converted"` model kind: a run folder holding a converted Hugging Face
checkpoint (`keras-attention convert`, `keras_attention.runs.convert`).

Its `config.json` sets `converted_from` (`{"family": ..., "checkpoint": ...}`,
the kind's marker), names `tokenizer` for both tokenizers (the checkpoint's
files, copied unchanged) and holds the checkpoint's generation settings in
`decoding`: a `GenerationConfig` of the Hugging Face form
(`GenerationConfig.from_generate_kwargs`; the keys `CHECKPOINT_DECODING_KEYS`). These
are the kind's hooks (`keras_attention.runs.registry` holds them).
"""

from keras_attention.runs.generation import dict_keys

#: The keys of a converted run's `decoding` (`GenerationConfig.to_dict` of
#: the `"hf"` form).
CHECKPOINT_DECODING_KEYS = dict_keys("hf")


## The model kind's hooks


def load_tokenizers(run):
    """`(tokenizer, tokenizer)`: the checkpoint's tokenizer (one object for
    both sides; Marian's target side is `tokenize_targets`) from the
    folder's `tokenizer/`.

    Raises:
        RunFolderError: naming the file that is missing or does not load.
    """
    import os

    from keras_attention.pretrained import families

    family = run.metadata["converted_from"].get("family")
    folder = run.path(run.metadata["tokenizers"]["source"], folder=True)
    try:
        tokenizer_class = families.with_tokenizer(family).tokenizer
    except ValueError:
        names = ", ".join(map(repr, families.names_with_tokenizers()))
        raise run.folder_error(os.path.join(run.run_dir, "config.json"),
                               f"naming converted_from.family={family!r}, not one of "
                               f"{names}") from None
    try:
        files = tokenizer_class.files_in(folder)
    except (OSError, ValueError):  # no complete layout: the run folder error names a file
        files = tokenizer_class.LAYOUTS[0]
    for name in files:
        run.path(os.path.join(run.metadata["tokenizers"]["source"], name))
    try:
        tokenizer = families.load_checkpoint_tokenizer(folder, family)
    except Exception as error:  # sentencepiece, JSON or keras-hub errors of a bad file
        message = str(error).strip().splitlines()[-1:] or [type(error).__name__]
        raise run.folder_error(folder, f"not a {family} tokenizer's files, corrupt or from "
                                       f"another family ({message[0][:200]})") from None
    return tokenizer, tokenizer


def vocabularies(run):
    """The tokenizer's size against the model's vocabularies: smaller is
    allowed (T5 pads its embedding to 32128 rows for 32100 ids), larger not."""
    name = run.metadata["tokenizers"]["source"]
    size = run.source_tokenizer.vocabulary_size()
    return [(name, size, run.model.source_vocabulary_size, "source vocabulary", True),
            (name, size, run.model.target_vocabulary_size, "target vocabulary", True)]


__all__ = ["CHECKPOINT_DECODING_KEYS", "load_tokenizers", "vocabularies"]
