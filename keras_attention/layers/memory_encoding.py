"""`MemoryEncoding`: sentences as memory vectors, as in End-To-End Memory Networks."""

import keras
from keras import ops

from keras_attention.layers.output_specs import traced_output_spec
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.layers.sentence_encoding import SentenceEncoding
from keras_attention.validation import (
    check_bool,
    check_call_bool,
    check_positive_int,
    check_rate,
)


@keras.saving.register_keras_serializable(package="keras_attention")
class MemoryEncoding(QuantizableSublayers, SentenceEncoding):
    """Embeds each sentence as one memory vector (Sukhbaatar et al. 2015).

    For the word ids `x_i1 .. x_iJ` of sentence `i` (`J` its own length):

    ```
    m_i = sum_j l_j * E[x_ij] + T(r_i)                        (B, M, dim)
    l_kj = (1 - j/J) - (k/dim) (1 - 2 j/J)    position encoding (PE), k = 1..dim
    r_i  = number of real sentences after sentence i           recency, 0 = last
    ```

    `T` is the learned temporal encoding (TE) `(max_memories, dim)`, indexed
    by recency: stories are given in reading order, padded at the end, and
    the last real sentence gets `T(0)`, as in the paper's reversed memory
    order. With `temporal_noise=p`, training pushes every recency back by the
    number of empty memories the paper's random noise (RN) would insert
    after the sentence (one with probability `p` per slot); the empty slots
    themselves are not added. Recencies beyond `max_memories - 1` share the
    last row of `T`.

    `E` and `T` are Keras `Embedding` sublayers (`word_embedding`,
    `temporal_embedding`; their tables also `embeddings` and
    `temporal_embeddings`), so `model.quantize("int8" | "int4")` quantizes
    them; files saved when they were the layer's own weights still load.

    The same layer embeds a question: a rank-2 input `(B, J)` gives `(B,
    dim)` without temporal encoding, so the paper's tying `B = A^1` is one
    layer called twice.

    Masks: the output's Keras mask is `(B, M)`, True for sentences with at
    least one non-pad token; pad tokens add nothing (the weighted sum and
    the masks are those of `SentenceEncoding`, the base it shares with
    `models.FactEncoding`).

    Args:
        vocab_size: positive int.
        dim: positive int, the memory size.
        max_memories: positive int, rows of the temporal encoding.
        position_encoding: bool, weight words by `l_j` (True) or plain
            bag of words (False).
        temporal_encoding: bool.
        temporal_noise: float in [0, 1), the RN probability (training only).
        pad_token_id: int, the padding id.
        embeddings_initializer: of `E` and `T` (paper: normal, std 0.1).
        seed: optional int for the noise.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        token_ids: int tensor, `(B, M, J)` sentences or `(B, J)` one sentence.
        training: bool, enables the temporal noise.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_attention.layers import MemoryEncoding
    >>> encode = MemoryEncoding(vocab_size=20, dim=8, max_memories=10)
    >>> story = np.array([[[4, 5, 6], [7, 8, 0], [0, 0, 0]]])   # 2 sentences
    >>> memories = encode(story)
    >>> mask = keras.ops.convert_to_numpy(memories._keras_mask)
    >>> tuple(memories.shape), mask.tolist()
    ((1, 3, 8), [[True, True, False]])
    >>> tuple(encode(np.array([[9, 4, 0]])).shape)              # a question
    (1, 8)

    References:
        Sukhbaatar, Szlam, Weston, Fergus, "End-To-End Memory Networks",
        NIPS 2015, section 4.1.
    """

    def __init__(
        self,
        vocab_size,
        dim,
        max_memories=50,
        position_encoding=True,
        temporal_encoding=True,
        temporal_noise=0.0,
        pad_token_id=0,
        embeddings_initializer=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(vocab_size, dim, pad_token_id=pad_token_id, **kwargs)
        self.max_memories = check_positive_int("max_memories", max_memories)
        self.position_encoding = check_bool("position_encoding", position_encoding)
        self.temporal_encoding = check_bool("temporal_encoding", temporal_encoding)
        self.temporal_noise = check_rate("temporal_noise", temporal_noise)
        if self.temporal_noise and not self.temporal_encoding:
            raise ValueError(
                "Argument `temporal_noise` needs `temporal_encoding=True`. "
                f"Received: temporal_noise={temporal_noise}, temporal_encoding=False"
            )
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer or keras.initializers.RandomNormal(stddev=0.1, seed=seed)
        )
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed) if self.temporal_noise else None
        self.word_embedding = self._table(vocab_size, "word_embedding")
        self.temporal_embedding = (
            self._table(max_memories, "temporal_embedding") if temporal_encoding else None
        )

    def _table(self, rows, name):
        """A Keras `Embedding` `(rows, dim)` (so `quantize` reaches it)."""
        return keras.layers.Embedding(
            rows, self.dim, embeddings_initializer=self.embeddings_initializer,
            dtype=self.dtype_policy, name=name,
        )

    @property
    def embeddings(self):
        """The word table `(vocab_size, dim)` (int8 once quantized)."""
        return self.word_embedding.embeddings

    @property
    def temporal_embeddings(self):
        """The temporal table `(max_memories, dim)`, or None."""
        return None if self.temporal_embedding is None else self.temporal_embedding.embeddings

    def _legacy_projections(self):
        # Files saved before the tables were sublayers hold them as the
        # layer's own variables, in this order.
        return [t for t in (self.word_embedding, self.temporal_embedding) if t is not None]

    def build(self, token_ids_shape):
        self.check_token_ids_shape(token_ids_shape)
        for table in self._legacy_projections():
            table.build((None,))
        self.built = True

    def call(self, token_ids, training=None):
        training = check_call_bool("training", training, allow_none=True)
        token_ids, word_mask = self.ids_and_word_mask(token_ids)
        sentences = self.sum_words(
            self.word_embedding(token_ids), word_mask, self._word_weights(word_mask)
        )
        if len(token_ids.shape) == 2 or not self.temporal_encoding:
            return sentences
        memory_mask = ops.any(word_mask, axis=-1)
        recency = self._recency(memory_mask, training)
        temporal = self.temporal_embedding(recency)
        return sentences + temporal * ops.cast(memory_mask[..., None], self.compute_dtype)

    def compute_output_shape(self, token_ids_shape):
        return tuple(token_ids_shape[:-1]) + (self.dim,)

    def compute_output_spec(self, token_ids, **kwargs):
        return traced_output_spec(self, token_ids, **kwargs)

    def _word_weights(self, word_mask):
        """`l_kj` for each word `(..., J, dim)` (`sum_words` drops the
        padding), or None for a plain bag of words."""
        if not self.position_encoding:
            return None
        mask = ops.cast(word_mask, "float32")[..., None]  # (..., J, 1)
        length = ops.maximum(ops.sum(mask, axis=-2, keepdims=True), 1.0)  # J of each sentence
        j = ops.cumsum(mask, axis=-2)  # 1-based word index (padding after the words)
        k = ops.arange(1, self.dim + 1, dtype="float32") / self.dim
        return (1.0 - j / length) - k * (1.0 - 2.0 * j / length)

    def _recency(self, memory_mask, training):
        """0 for the last real sentence, 1 for the one before, ... `(B, M)`."""
        real = ops.cast(memory_mask, "int32")
        after = ops.flip(ops.cumsum(ops.flip(real, axis=-1), axis=-1), axis=-1) - real
        if training and self.temporal_noise:
            inserted = keras.random.uniform(ops.shape(real), seed=self.seed_generator)
            inserted = ops.cast(inserted < self.temporal_noise, "int32") * real
            after = after + ops.flip(ops.cumsum(ops.flip(inserted, axis=-1), axis=-1), axis=-1)
        return ops.minimum(after, self.max_memories - 1)

    def get_config(self):
        config = super().get_config()
        config.update({
            "max_memories": self.max_memories,
            "position_encoding": self.position_encoding,
            "temporal_encoding": self.temporal_encoding,
            "temporal_noise": self.temporal_noise,
            "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
            "seed": self.seed,
        })
        return config

