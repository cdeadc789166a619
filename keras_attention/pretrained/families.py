"""The checkpoint families we convert: one table, one row per family.

A `Family` says what a Hugging Face checkpoint of that family is
(`config.json`'s `model_type` and `architectures`), which function of its
module builds our model from its config and weights, which tokenizer reads
its tokenizer files, and which recipe a run folder converted from it gets.
Everything that depends on the family (`load_pretrained`,
`keras-attention convert`, a converted run's tokenizer) reads it here.

Adding a family touches its module (the model mapping, e.g. `marian.py`),
one row of `FAMILIES`, and its tests.

>>> FAMILIES["marian"].architecture, FAMILIES["t5"].tokenizer_layouts
('MarianMTModel', (('spiece.model',), ('tokenizer.json',)))
>>> family_of({"model_type": "gpt2"})
Traceback (most recent call last):
...
ValueError: The checkpoint's `model_type` is not one we convert (supported: 'marian', \
'bart', 'mbart', 't5', 'mt5', 'pegasus', 'm2m_100'). Received: model_type='gpt2'
"""

import dataclasses
from collections.abc import Callable

from keras_attention.pretrained import bart, m2m_100, marian, mbart, mt5, pegasus, t5, tokenizers
from keras_attention.pretrained.checkpoint import checkpoint_file


@dataclasses.dataclass(frozen=True)
class Family:
    """One family of checkpoints.

    Attributes:
        model_type: `config.json`'s `model_type`.
        architecture: the `architectures` entry of its checkpoints.
        build_model: `(config, weights) -> Seq2SeqModel`, `config` the
            `config.json` dict and `weights` the arrays by name; checks every
            value and shape before copying any weight.
        checkpoint: `(model, config) -> (config, tensors)`, the inverse:
            the `config.json` dict and the tensors by name of a checkpoint
            of the family holding a model `build_model` made (`config`: the
            one it was made from), as `transformers` 5 saves them.
        tokenizer: the class (with `LAYOUTS`, `files_in` and `from_folder`)
            of its tokenizer, a `tokenizers.OneOf` of classes where its
            folders come in layouts read by different classes, or None where
            none is read (no run folders then).
        recipe: the recipe of a run folder converted from it
            (`"translation"` or `"summarization"`), None with no tokenizer.
        config_of_model: `(model) -> config dict` for the family whose
            architecture computes the models our recipes train (M2M100:
            pre-norm); None for the others.
        zero_start_row: the family's decoder starts from a zero vector,
            which `transformers` stores as the start token's row (Marian);
            fine-tuning keeps a zero row zero (CTranslate2 assumes it).
    """

    model_type: str
    architecture: str
    build_model: Callable
    checkpoint: Callable
    tokenizer: object = None
    recipe: str | None = None
    zero_start_row: bool = False
    config_of_model: Callable | None = None

    @property
    def tokenizer_layouts(self):
        """The sets of tokenizer files its checkpoints ship, each enough
        (the older files, then transformers 5's `tokenizer.json`; empty
        without a tokenizer)."""
        return self.tokenizer.LAYOUTS if self.tokenizer is not None else ()


FAMILIES = {family.model_type: family for family in (
    Family("marian", "MarianMTModel", marian.marian_model, marian.marian_checkpoint,
           tokenizers.MarianTokenizer, "translation", zero_start_row=True),
    Family("bart", "BartForConditionalGeneration", bart.bart_model, bart.bart_checkpoint,
           tokenizers.BartTokenizer, "summarization"),
    Family("mbart", "MBartForConditionalGeneration", mbart.mbart_model, mbart.mbart_checkpoint,
           tokenizers.OneOf(tokenizers.FastTokenizer, tokenizers.MBartSentencePieceFolder),
           "translation"),
    Family("t5", "T5ForConditionalGeneration", t5.t5_model, t5.t5_checkpoint,
           tokenizers.T5Tokenizer, "summarization"),
    Family("mt5", "MT5ForConditionalGeneration", mt5.mt5_model, mt5.mt5_checkpoint,
           tokenizers.T5Tokenizer, "summarization"),
    Family("pegasus", "PegasusForConditionalGeneration", pegasus.pegasus_model,
           pegasus.pegasus_checkpoint,
           tokenizers.OneOf(tokenizers.FastTokenizer, tokenizers.PegasusSentencePieceFolder),
           "summarization"),
    Family("m2m_100", "M2M100ForConditionalGeneration", m2m_100.m2m100_model,
           m2m_100.m2m100_checkpoint,
           tokenizers.OneOf(tokenizers.FastTokenizer, tokenizers.M2M100Tokenizer,
                            tokenizers.NllbSentencePieceFolder), "translation",
           config_of_model=m2m_100.m2m100_config),
)}


def recipe_model_family():
    """The `Family` whose architecture computes the models our recipes train
    (the row with `config_of_model`)."""
    return next(row for row in FAMILIES.values() if row.config_of_model is not None)


def family_of(config):
    """The `Family` of a checkpoint's `config.json` dict.

    Raises:
        ValueError: naming `model_type` or `architectures` when the
            checkpoint is not of a family we convert.
    """
    model_type = config.get("model_type")
    if model_type not in FAMILIES:
        raise ValueError(
            "The checkpoint's `model_type` is not one we convert (supported: "
            f"{', '.join(map(repr, FAMILIES))}). Received: model_type={model_type!r}"
        )
    family = FAMILIES[model_type]
    for architecture in config.get("architectures") or [family.architecture]:
        if architecture != family.architecture:
            raise ValueError(
                f"The checkpoint's architecture is not one we convert (for "
                f"`model_type={model_type!r}`: {family.architecture!r}). "
                f"Received: architectures={config.get('architectures')!r}"
            )
    return family


def names_with_tokenizers():
    """The `model_type`s whose tokenizer is read here (the families
    `keras-attention convert` makes run folders of)."""
    return [name for name, row in FAMILIES.items() if row.tokenizer is not None]


def with_tokenizer(family):
    """The `Family` named `family` (a `model_type`), which must have a tokenizer.

    Raises:
        ValueError: naming `family`, for an unknown family or one whose
            tokenizer is not read here.
    """
    if family not in FAMILIES or FAMILIES[family].tokenizer is None:
        names = ", ".join(map(repr, names_with_tokenizers()))
        raise ValueError(f"Argument `family` must be one of {names} "
                         f"(the families whose tokenizer we read). Received: family={family!r}")
    return FAMILIES[family]


def tokenizer_files(folder, family):
    """The paths of the tokenizer files of `family` that its tokenizer
    reads in `folder` (the first complete layout of `tokenizer_layouts`).

    Raises:
        ValueError: naming `family`, for a family without a tokenizer here;
            naming a file that is not a plain file inside `folder`.
        FileNotFoundError: naming the first missing file.
    """
    names = with_tokenizer(family).tokenizer.files_in(folder)
    return [checkpoint_file(folder, name) for name in names]


def load_checkpoint_tokenizer(folder, family):
    """The tokenizer of a `family` checkpoint from a folder of its tokenizer
    files (the row's `tokenizer`: `tokenizers.MarianTokenizer`, ...).

    Args:
        folder: a checkpoint folder, or a run folder's `tokenizer/`.
        family: a `model_type` of `FAMILIES` with a tokenizer.

    Raises:
        ValueError: naming `family`, for another family.
        FileNotFoundError: naming a missing file.

    Example:

    >>> load_checkpoint_tokenizer("no-such-folder", "gpt2")
    Traceback (most recent call last):
    ...
    ValueError: Argument `family` must be one of 'marian', 'bart', 'mbart', 't5', 'mt5', \
'pegasus', 'm2m_100' (the families whose tokenizer we read). Received: family='gpt2'
    """
    tokenizer_files(folder, family)
    return FAMILIES[family].tokenizer.from_folder(folder)


__all__ = ["FAMILIES", "Family", "family_of", "load_checkpoint_tokenizer", "recipe_model_family",
           "names_with_tokenizers", "tokenizer_files", "with_tokenizer"]
