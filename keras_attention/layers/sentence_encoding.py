"""`SentenceEncoding`: what the layers that embed a sentence as one vector share."""

import keras
from keras import ops

from keras_attention.validation import check_positive_int


def sentence_mask(token_ids, pad_token_id):
    """`(B, M, J)` word ids -> `(B, M)` bool, True for the sentences with
    at least one non-pad token."""
    return ops.any(ops.not_equal(token_ids, pad_token_id), axis=-1)


class SentenceEncoding(keras.layers.Layer):
    """Base of `MemoryEncoding` and `models.FactEncoding`: each sentence of
    word ids is one vector, the weighted sum of its word embeddings.

    ```
    s_i = sum_j w_ij * E[x_ij]      (B, M, J) -> (B, M, dim);  (B, J) -> (B, dim)
    ```

    Subclasses own the table `E` and the weights `w` (position weights of
    the memory network, a learned positional mask of the Universal
    Transformer) and add them up with `sum_words`; pad tokens add nothing.

    Masks: for `(B, M, J)` sentences, the output's Keras mask is `(B, M)`,
    True for sentences with at least one non-pad token; a rank-2 input
    (one sentence, e.g. a question) gives no mask.

    Args:
        vocab_size: positive int.
        dim: positive int, the size of a sentence vector.
        pad_token_id: int, the padding id.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, vocab_size, dim, pad_token_id=0, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.dim = check_positive_int("dim", dim)
        if not isinstance(pad_token_id, int) or isinstance(pad_token_id, bool):
            raise ValueError(
                f"Argument `pad_token_id` must be an int. Received: pad_token_id={pad_token_id!r}"
            )
        self.pad_token_id = pad_token_id
        self.supports_masking = True

    @staticmethod
    def check_token_ids_shape(token_ids_shape):
        """A ValueError unless `token_ids` is `(B, M, J)` or `(B, J)`."""
        if len(token_ids_shape) not in (2, 3):
            raise ValueError(
                "`token_ids` must be (batch, sentences, words) or (batch, words). "
                f"Received: token_ids.shape={tuple(token_ids_shape)}"
            )

    def ids_and_word_mask(self, token_ids):
        """`token_ids` checked and cast to int32, and their word mask
        `(..., J)` (True on non-pad tokens)."""
        self.check_token_ids_shape(token_ids.shape)
        token_ids = ops.cast(token_ids, "int32")
        return token_ids, ops.not_equal(token_ids, self.pad_token_id)

    def sum_words(self, words, word_mask, weights=None):
        """`sum_j w_j * words_j` over the real words: `words (..., J, dim)`,
        `word_mask (..., J)`, `weights` broadcastable to `words` (None: 1)
        -> `(..., dim)` in the compute dtype."""
        words = ops.cast(words, self.compute_dtype)
        if weights is not None:
            words = words * ops.cast(weights, self.compute_dtype)
        real = ops.cast(word_mask, self.compute_dtype)[..., None]
        return ops.sum(words * real, axis=-2)

    def compute_mask(self, token_ids, mask=None):
        if len(token_ids.shape) == 2:
            return None
        return sentence_mask(token_ids, self.pad_token_id)

    def compute_output_shape(self, token_ids_shape):
        return tuple(token_ids_shape[:-1]) + (self.dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"vocab_size": self.vocab_size, "dim": self.dim, "pad_token_id": self.pad_token_id}
        )
        return config
