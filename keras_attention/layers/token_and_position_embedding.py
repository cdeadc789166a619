"""`TokenAndPositionEmbedding`: token embeddings plus a position encoding."""

import math

import keras
import keras_hub
from keras import ops

from keras_attention.validation import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
)

POSITIONS = ("sinusoidal", "learned", "none")


@keras.saving.register_keras_serializable(package="keras_attention")
class TokenAndPositionEmbedding(keras.layers.Layer):
    """Token embeddings scaled by `sqrt(dim)` plus a position encoding.

    ```
    x_t = sqrt(dim) * E[token_t] + P(start_index + t)     (B, T, dim)
    ```

    `P` is keras-hub's `SinePositionEncoding` (`"sinusoidal"`, Vaswani et
    al.), keras-hub's `PositionEmbedding` (`"learned"`, needs
    `max_length`), or nothing (`"none"`, for rotary attention, which encodes
    positions inside the attention layers). The Keras mask of the output is
    `token_ids != pad_token_id`; the embedding sublayer itself carries no
    mask, so no "will destroy the mask" warnings are raised.

    The token table is `layer.token_embedding.embeddings` `(vocab, dim)`;
    `x @ embeddings^T` gives tied output logits.

    Args:
        vocab_size: positive int.
        dim: positive int, the embedding size.
        position: `"sinusoidal"` (default), `"learned"` or `"none"`.
        max_length: positive int, the longest sequence (needed by
            `"learned"`).
        pad_token_id: int, the padding token (masked).
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        token_ids: integer tensor `(B, T)`.
        start_index: position of the first token (for cached decoding).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import TokenAndPositionEmbedding
    >>> embed = TokenAndPositionEmbedding(vocab_size=10, dim=4)
    >>> x = embed(np.array([[3, 4, 0]]))
    >>> tuple(x.shape), x._keras_mask.numpy().tolist()
    ((1, 3, 4), [[True, True, False]])
    """

    def __init__(
        self,
        vocab_size,
        dim,
        position="sinusoidal",
        max_length=None,
        pad_token_id=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.dim = check_positive_int("dim", dim)
        self.position = check_choice("position", position, POSITIONS)
        self.max_length = check_positive_int("max_length", max_length, allow_none=True)
        self.pad_token_id = check_non_negative_int("pad_token_id", pad_token_id)
        if self.position == "learned" and self.max_length is None:
            raise ValueError(
                "`position='learned'` needs `max_length`. "
                f"Received: max_length={max_length}"
            )
        self.supports_masking = True
        self.token_embedding = keras.layers.Embedding(
            vocab_size, dim, dtype=self.dtype_policy, name="token_embedding"
        )
        self.position_encoding = None
        if self.position == "sinusoidal":
            self.position_encoding = keras_hub.layers.SinePositionEncoding(
                dtype=self.dtype_policy, name="position_encoding"
            )
        elif self.position == "learned":
            self.position_encoding = keras_hub.layers.PositionEmbedding(
                self.max_length, dtype=self.dtype_policy, name="position_embedding"
            )

    def build(self, token_ids_shape):
        self.token_embedding.build(token_ids_shape)
        if self.position_encoding is not None:
            self.position_encoding.build(tuple(token_ids_shape) + (self.dim,))
        self.built = True

    def call(self, token_ids, start_index=0):
        token_ids = ops.convert_to_tensor(token_ids)
        if len(token_ids.shape) != 2:
            raise ValueError(
                "`token_ids` must have shape (batch, seq_len). "
                f"Received: token_ids.shape={tuple(token_ids.shape)}"
            )
        x = self.token_embedding(token_ids) * ops.cast(
            math.sqrt(self.dim), self.compute_dtype
        )
        if self.position == "learned":
            # Positions as indices, not keras-hub's slice: slicing to a
            # symbolic length fails under JAX's shape polymorphism.
            positions = start_index + ops.arange(ops.shape(x)[1], dtype="int32")
            x = x + self.position_encoding(x, positions=positions)
        elif self.position_encoding is not None:
            x = x + self.position_encoding(x, start_index=start_index)
        return x

    def compute_mask(self, token_ids, mask=None):
        return ops.not_equal(token_ids, self.pad_token_id)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "dim": self.dim,
                "position": self.position,
                "max_length": self.max_length,
                "pad_token_id": self.pad_token_id,
            }
        )
        return config
