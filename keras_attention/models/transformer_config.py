"""`TransformerConfig`: every setting of a `TransformerSeq2Seq`, checked once.

The model takes one `TransformerConfig` (`TransformerSeq2Seq(config)`); the
builder `transformer_seq2seq(...)` makes it from its keyword arguments, which
are documented there, and the model's `get_config()` is its `to_dict()` (the
flat form `.keras` files have always held). A setting is named in this
class, in the builder's signature and in the builder's `Args`, nowhere else.
"""

import dataclasses

from keras_attention.layers.transformer_block import check_scale
from keras_attention.validation import check_bool, check_choice, check_positive_int

POSITIONS = ("sinusoidal", "sinusoidal_halves", "sinusoidal_fairseq", "learned", "rotary")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """The settings of a `TransformerSeq2Seq`: see `transformer_seq2seq`'s
    `Args`, which document each field.

    Checked when made (a `ValueError` naming the field and saying
    `Received: ...`); `target_vocabulary_size=None` becomes
    `vocabulary_size`, `final_norm=None` becomes `norm_first`, and the
    decoder's sizes left `None` become the encoder's (`num_layers`,
    `num_heads`, `intermediate_dim`).

    Example:

    >>> config = TransformerConfig(100, num_layers=1, hidden_dim=16, num_heads=2)
    >>> config.target_vocabulary_size, config.final_norm
    (100, True)
    >>> TransformerConfig(**config.to_dict()) == config
    True
    """

    vocabulary_size: int
    target_vocabulary_size: object = None
    num_layers: int = 2
    hidden_dim: int = 256
    num_heads: int = 8
    intermediate_dim: int = 1024
    num_decoder_layers: object = None
    decoder_num_heads: object = None
    decoder_intermediate_dim: object = None
    dropout: float = 0.1
    max_length: int = 512
    position: str = "sinusoidal"
    norm_first: bool = True
    num_key_value_heads: object = None
    pointer_generator: bool = False
    coverage_loss_weight: float = 1.0
    pad_token_id: int = 0
    start_token_id: int = 1
    end_token_id: int = 2
    dtype: object = None
    packed: bool = False
    activation: object = "relu"
    gated_feed_forward: bool = False
    use_bias: bool = True
    normalization: str = "layer_norm"
    layer_norm_epsilon: object = None
    attention_scale: object = None
    final_norm: object = None
    embedding_norm: bool = False
    scale_embeddings: bool = True
    position_offset: int = 0
    share_embeddings: bool = False
    tie_embeddings: bool = False
    output_bias: bool = True
    output_scale: object = None

    def __post_init__(self):
        def resolve(name, value):
            object.__setattr__(self, name, value)

        resolve("vocabulary_size", check_positive_int("vocabulary_size", self.vocabulary_size))
        resolve("target_vocabulary_size", check_positive_int(
            "target_vocabulary_size", self.target_vocabulary_size or self.vocabulary_size))
        resolve("num_layers", check_positive_int("num_layers", self.num_layers))
        for name, encoder in (("num_decoder_layers", "num_layers"),
                              ("decoder_num_heads", "num_heads"),
                              ("decoder_intermediate_dim", "intermediate_dim")):
            value = getattr(self, name)
            resolve(name, getattr(self, encoder) if value is None
                    else check_positive_int(name, value))
        resolve("position", check_choice("position", self.position, POSITIONS))
        for name in ("packed", "pointer_generator", "share_embeddings", "tie_embeddings",
                     "output_bias", "embedding_norm"):
            resolve(name, check_bool(name, getattr(self, name)))
        resolve("output_scale", check_scale("output_scale", self.output_scale))
        resolve("final_norm", check_bool(
            "final_norm", self.norm_first if self.final_norm is None else self.final_norm))
        if self.layer_norm_epsilon is not None:
            resolve("layer_norm_epsilon",
                    check_scale("layer_norm_epsilon", self.layer_norm_epsilon))
        self._check_combinations()

    def _check_combinations(self):
        same_vocabulary = self.target_vocabulary_size == self.vocabulary_size
        sizes = (f"vocabulary_size={self.vocabulary_size}, "
                 f"target_vocabulary_size={self.target_vocabulary_size}")
        if self.pointer_generator and not same_vocabulary:
            raise ValueError(
                "`pointer_generator=True` copies source tokens by id, so the source and "
                f"target vocabularies must be the same. Received: {sizes}")
        if self.packed and self.pointer_generator:
            raise ValueError(
                "`packed=True` is not available with `pointer_generator=True`: the copy "
                "head's coverage adds up over a whole row, across examples. "
                f"Received: packed={self.packed}, pointer_generator={self.pointer_generator}")
        if self.share_embeddings and not same_vocabulary:
            raise ValueError(
                "`share_embeddings=True` uses one token table for the source and the "
                f"target, so the vocabularies must be the same. Received: {sizes}")
        if self.pointer_generator and (self.tie_embeddings or self.output_scale is not None):
            raise ValueError(
                "`tie_embeddings` and `output_scale` describe the output projection, which "
                f"`pointer_generator=True` replaces. Received: "
                f"pointer_generator={self.pointer_generator}, "
                f"tie_embeddings={self.tie_embeddings}, output_scale={self.output_scale}")

    @classmethod
    def field_names(cls):
        """The settings' names, in order."""
        return tuple(field.name for field in dataclasses.fields(cls))

    def to_dict(self):
        """Every setting, as the model's `get_config()` holds them."""
        return {name: getattr(self, name) for name in self.field_names()}


__all__ = ["POSITIONS", "TransformerConfig"]
