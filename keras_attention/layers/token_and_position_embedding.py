"""`TokenAndPositionEmbedding`: token embeddings plus a position encoding."""

import math

import keras
import numpy as np
from keras import ops

from keras_attention import masks
from keras_attention.layers.output_specs import traced_output_spec
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import (
    check_bool,
    check_choice,
    check_length_limit,
    check_non_negative_int,
    check_positive_int,
)

POSITIONS = ("sinusoidal", "sinusoidal_halves", "sinusoidal_fairseq", "learned", "none")
SINUSOIDAL_LAYOUTS = ("interleaved", "halves", "fairseq")
#: `TokenAndPositionEmbedding`'s sinusoidal `position`s -> their layout.
_SINUSOIDAL_POSITIONS = {"sinusoidal": "interleaved", "sinusoidal_halves": "halves",
                         "sinusoidal_fairseq": "fairseq"}


def rotary_position_encoding(x, start_index=0, max_wavelength=10000):
    """Rotary position encoding (RoPE, Su et al. 2021) of `x` at positions
    `start_index + t`; the same numbers as keras-hub's `RotaryEmbedding`
    with its defaults (rotate-half layout), written with `keras.ops` so that
    the core needs no keras-hub.

    Args:
        x: `(B, T, ..., D)` with an even feature size `D` (heads in any
            layout between the sequence and feature axes).
        start_index: int or int scalar tensor, the position of `x[:, 0]`.
        max_wavelength: the base of the frequencies.

    Returns:
        `x` rotated, of its shape and dtype.
    """
    x = ops.convert_to_tensor(x)
    length, dim = ops.shape(x)[1], x.shape[-1]
    positions = ops.arange(length, dtype="float32") + ops.cast(start_index, "float32")
    exponents = ops.arange(0, dim, 2, dtype="float32") / float(dim)
    inverse_frequencies = ops.power(float(max_wavelength), -exponents)  # (D / 2,)
    angles = ops.einsum("t,j->tj", positions, inverse_frequencies)
    angles = ops.concatenate([angles, angles], axis=-1)  # (T, D)
    angles = ops.reshape(angles, (1, length) + (1,) * (len(x.shape) - 3) + (dim,))
    cos, sin = ops.cast(ops.cos(angles), x.dtype), ops.cast(ops.sin(angles), x.dtype)
    first, second = ops.split(x, 2, axis=-1)
    # (-second, first) stacked then flattened, as keras-hub does (an XLA-safe
    # concatenation).
    rotated_half = ops.reshape(ops.stack((-second, first), axis=-2), ops.shape(x))
    return x * cos + rotated_half * sin


class SinusoidalPositionEncoding(keras.layers.Layer):
    """Fixed sine/cosine position encodings (Vaswani et al. 2017); no weights.

    ```
    layout="interleaved" (default):
        P[t, 2i]   = sin(t / max_wavelength^(2i / dim))
        P[t, 2i+1] = cos(t / max_wavelength^(2i / dim))
    layout="halves" (i < ceil(dim / 2), j < floor(dim / 2)):
        P[t, i]                 = sin(t / max_wavelength^(2i / dim))
        P[t, ceil(dim / 2) + j] = cos(t / max_wavelength^(2j / dim))
    layout="fairseq" (h = floor(dim / 2), i < h; dim >= 4):
        P[t, i]     = sin(t / max_wavelength^(i / (h - 1)))
        P[t, h + i] = cos(t / max_wavelength^(i / (h - 1)))
        P[t, dim - 1] = 0 for an odd dim
    ```

    `"interleaved"` gives the numbers of keras-hub's `SinePositionEncoding`
    (computed in the layer's compute dtype); `"halves"` those of
    `transformers`' `MarianSinusoidalPositionalEmbedding` (Marian / OPUS-MT:
    the same frequencies, sines in the first half of the features, cosines
    in the second; computed in float32, then cast); `"fairseq"` those of
    fairseq's `SinusoidalPositionalEmbedding` and `transformers`'
    `M2M100SinusoidalPositionalEmbedding` (M2M100, NLLB: halves too, but the
    frequencies of `h - 1` steps; float32, then cast). Written with
    `keras.ops` so that the core needs no keras-hub (which imports
    TensorFlow when it is installed).

    Args:
        max_wavelength: positive int (default 10000).
        layout: `"interleaved"` (default), `"halves"` or `"fairseq"` (for
            inputs of 4 features or more).

    Call arguments:
        inputs: `(B, T, dim)`, only its shape is used.
        start_index: int or scalar tensor, the position of the first row.
        positions: optional int tensor `(B, T)`, each token's own position
            (packed rows: `masks.segment_positions`); replaces
            `start_index + t`.

    Returns:
        `(B, T, dim)`, the encodings of positions `start_index + t` (or of
        `positions`).
    """

    def __init__(self, max_wavelength=10000, layout="interleaved", **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = check_positive_int("max_wavelength", max_wavelength)
        self.layout = check_choice("layout", layout, SINUSOIDAL_LAYOUTS)
        self.built = True

    def call(self, inputs, start_index=0, positions=None):
        shape = ops.shape(inputs)
        seq_length, hidden_size = shape[-2], shape[-1]
        if positions is None:
            positions = ops.arange(seq_length) + start_index  # (T,)
        if self.layout == "halves":
            return ops.broadcast_to(self._halves(positions, inputs.shape[-1]), shape)
        if self.layout == "fairseq":
            return ops.broadcast_to(self._fairseq(positions, inputs.shape[-1]), shape)
        dtype = self.compute_dtype
        positions = ops.cast(positions, dtype)
        min_freq = ops.cast(1 / self.max_wavelength, dtype)
        timescales = ops.power(
            min_freq,
            ops.cast(2 * (ops.arange(hidden_size) // 2), dtype) / ops.cast(hidden_size, dtype),
        )
        angles = positions[..., None] * timescales  # (T, dim) or (B, T, dim)
        cos_mask = ops.cast(ops.arange(hidden_size) % 2, dtype)
        sin_mask = 1 - cos_mask
        encodings = ops.sin(angles) * sin_mask + ops.cos(angles) * cos_mask
        return ops.broadcast_to(encodings, shape)

    def _halves(self, positions, dim):
        """The `"halves"` layout of `positions` `(T,)` or `(B, T)`, computed in
        float32: `(..., dim)` in the compute dtype."""
        sines = (dim + 1) // 2
        exponents = ops.arange(sines, dtype="float32") * (2.0 / dim)
        frequencies = ops.power(float(self.max_wavelength), -exponents)
        angles = ops.cast(positions, "float32")[..., None] * frequencies
        encodings = ops.concatenate(
            [ops.sin(angles), ops.cos(angles[..., : dim // 2])], axis=-1
        )
        return ops.cast(encodings, self.compute_dtype)

    def _fairseq(self, positions, dim):
        """The `"fairseq"` layout of `positions` `(T,)` or `(B, T)`, computed
        in float32: `(..., dim)` in the compute dtype."""
        check_fairseq_dim("inputs.shape[-1]", dim)
        half = dim // 2
        steps = ops.arange(half, dtype="float32") / float(half - 1)
        frequencies = ops.power(float(self.max_wavelength), -steps)
        angles = ops.cast(positions, "float32")[..., None] * frequencies
        parts = [ops.sin(angles), ops.cos(angles)]
        if dim % 2:
            parts.append(ops.zeros_like(angles[..., :1]))
        return ops.cast(ops.concatenate(parts, axis=-1), self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "max_wavelength": self.max_wavelength,
                "layout": self.layout}


def check_fairseq_dim(name, dim):
    """fairseq's frequencies divide by `dim // 2 - 1`: 4 features or more
    (fewer would divide by zero)."""
    if dim is not None and dim < 4:
        raise ValueError(f"`{name}` must be 4 or more for fairseq's sinusoidal "
                         f"positions (their frequencies divide by dim // 2 - 1). "
                         f"Received: {name}={dim}")


class LearnedPositionEmbedding(QuantizableSublayers, keras.layers.Layer):
    """A trained `(sequence_length, dim)` table of position embeddings.

    The table is a Keras `Embedding` sublayer, `embedding` (its weight
    `embedding.embeddings`, also `position_embeddings`), initialized like
    keras-hub's `PositionEmbedding` (Glorot uniform); so
    `model.quantize("int8" | "int4")` quantizes it as Keras quantizes an
    `Embedding`. Files saved when the table was the layer's own weight (by
    keras_attention 0.2.0 and earlier, or keras-hub's layer) still load.

    Call arguments:
        inputs: `(B, T, dim)`, only its shape is used.
        positions: int tensor `(T,)` (the same for every example) or
            `(B, T)` (each token's own, as in packed rows), the rows to read.

    Returns:
        `(B, T, dim)`, `embeddings[positions]` (broadcast over the batch).
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = check_positive_int("sequence_length", sequence_length)
        self.initializer = keras.initializers.get(initializer)
        self.embedding = None

    def build(self, inputs_shape):
        self.embedding = keras.layers.Embedding(
            self.sequence_length,
            inputs_shape[-1],
            embeddings_initializer=self.initializer,
            dtype=self.dtype_policy,
            name="table",
        )
        self.embedding.build((None,))
        self.built = True

    @property
    def position_embeddings(self):
        """The table `(sequence_length, dim)` (int8 once quantized)."""
        return self.embedding.embeddings

    def _legacy_projections(self):
        return [self.embedding]  # the table was the layer's own `embeddings`

    def call(self, inputs, positions):
        # (T, dim) or (B, T, dim)
        embeddings = self.embedding(positions)
        return ops.broadcast_to(embeddings, ops.shape(inputs))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {
            **super().get_config(),
            "sequence_length": self.sequence_length,
            "initializer": keras.initializers.serialize(self.initializer),
        }


@keras.saving.register_keras_serializable(package="keras_attention")
class TokenAndPositionEmbedding(QuantizableSublayers, keras.layers.Layer):
    """Token embeddings scaled by `sqrt(dim)` plus a position encoding.

    ```
    x_t = sqrt(dim) * E[token_t] + P(start_index + t + position_offset)   (B, T, dim)
    ```

    (`scale_embeddings=False` drops the `sqrt(dim)`, as BART without
    `scale_embedding` and T5; `position_offset=2` reads BART's learned
    table, whose first two rows are never used for a position.)

    Packed rows (several examples per row) pass `positions`, each token's
    position within its own example (`masks.segment_positions`), in place of
    `start_index + t`, so that every example is encoded as if it were alone.

    `P` is a `SinusoidalPositionEncoding` (`"sinusoidal"`, Vaswani et
    al.; the numbers of keras-hub's `SinePositionEncoding`;
    `"sinusoidal_halves"`: sines in the first half of the features, cosines
    in the second, the numbers of Marian / OPUS-MT; `"sinusoidal_fairseq"`:
    fairseq's, M2M100's and NLLB's, with `position_offset=pad_token_id + 1`), a
    `LearnedPositionEmbedding` (`"learned"`, needs `max_length`; keras-hub's
    `PositionEmbedding`), or nothing (`"none"`, for rotary attention, which encodes
    positions inside the attention layers). The Keras mask of the output is
    `token_ids != pad_token_id` (the first position always True with
    `mask_start=False`); the embedding sublayer itself carries no
    mask, so no "will destroy the mask" warnings are raised.

    The token table is `layer.token_embedding.embeddings` `(vocab, dim)`,
    a Keras `ReversibleEmbedding` (tied weights): `layer.logits(h)` gives
    the tied output logits `h @ embeddings^T` `(B, T, vocab)`, quantized
    with the table by `quantize("int8")`.

    Args:
        vocab_size: positive int.
        dim: positive int, the embedding size.
        position: `"sinusoidal"` (default), `"sinusoidal_halves"`,
            `"sinusoidal_fairseq"` (`dim` of 4 or more), `"learned"` or
            `"none"`.
        max_length: positive int, the longest sequence (needed by
            `"learned"`, whose table has `max_length + position_offset`
            rows).
        pad_token_id: int, the padding token (masked).
        scale_embeddings: bool (default True), multiply the token embeddings
            by `sqrt(dim)`.
        position_offset: int >= 0 (default 0), added to every position
            before it is encoded (BART's learned positions: 2).
        token_embedding: optional Keras `ReversibleEmbedding` `(vocab_size,
            dim)`, the token table of another `TokenAndPositionEmbedding`
            to share (the source and target of `transformer_seq2seq(...,
            share_embeddings=True)`); None (default) makes a new one. A
            layer object, so not in the config: the model that shares a
            table makes the sharing again when it is rebuilt.
        mask_start: bool (default True), the first position is masked
            when it holds `pad_token_id`, as any other. False for a decoder
            input, whose first token is the start token even where its id is
            the pad id (Marian, T5): the mask is then
            `masks.decoder_token_mask(token_ids, pad_token_id)`.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        token_ids: integer tensor `(B, T)`.
        start_index: position of the first token (for cached decoding).
        positions: optional int tensor `(B, T)`, every token's position
            (packed rows); replaces `start_index + t`.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_attention.layers import TokenAndPositionEmbedding
    >>> embed = TokenAndPositionEmbedding(vocab_size=10, dim=4)
    >>> x = embed(np.array([[3, 4, 0]]))
    >>> tuple(x.shape), keras.ops.convert_to_numpy(x._keras_mask).tolist()
    ((1, 3, 4), [[True, True, False]])
    """

    def __init__(
        self,
        vocab_size,
        dim,
        position="sinusoidal",
        max_length=None,
        pad_token_id=0,
        scale_embeddings=True,
        position_offset=0,
        token_embedding=None,
        mask_start=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.dim = check_positive_int("dim", dim)
        self.position = check_choice("position", position, POSITIONS)
        self.max_length = check_positive_int("max_length", max_length, allow_none=True)
        self.pad_token_id = check_non_negative_int("pad_token_id", pad_token_id)
        self.scale_embeddings = check_bool("scale_embeddings", scale_embeddings)
        self.position_offset = check_non_negative_int("position_offset", position_offset)
        self.mask_start = check_bool("mask_start", mask_start)
        if self.position == "sinusoidal_fairseq":
            check_fairseq_dim("dim", self.dim)
        if self.position == "learned" and self.max_length is None:
            raise ValueError(
                "`position='learned'` needs `max_length`. "
                f"Received: max_length={max_length}"
            )
        self.supports_masking = True
        if token_embedding is None:
            token_embedding = keras.layers.ReversibleEmbedding(
                vocab_size, dim, dtype=self.dtype_policy, name="token_embedding"
            )
        elif not isinstance(token_embedding, keras.layers.ReversibleEmbedding) or (
            (token_embedding.input_dim, token_embedding.output_dim) != (vocab_size, dim)
        ):
            raise ValueError(
                "Argument `token_embedding` must be a Keras `ReversibleEmbedding` "
                f"of `(vocab_size, dim)` = {(vocab_size, dim)}. "
                f"Received: token_embedding={token_embedding!r}"
            )
        self.token_embedding = token_embedding
        # `logits(h)` runs it on masked states: the mask passes through.
        self.token_embedding.supports_masking = True
        self.position_encoding = None
        if self.position in _SINUSOIDAL_POSITIONS:
            self.position_encoding = SinusoidalPositionEncoding(
                layout=_SINUSOIDAL_POSITIONS[self.position], dtype=self.dtype_policy,
                name="position_encoding"
            )
        elif self.position == "learned":
            self.position_encoding = LearnedPositionEmbedding(
                self.max_length + self.position_offset, dtype=self.dtype_policy,
                name="position_embedding",
            )

    def build(self, token_ids_shape):
        if not self.token_embedding.built:  # a shared table may be built
            self.token_embedding.build(token_ids_shape)
        if self.position_encoding is not None:
            self.position_encoding.build(tuple(token_ids_shape) + (self.dim,))
        self.built = True

    def call(self, token_ids, start_index=0, positions=None):
        token_ids = ops.convert_to_tensor(token_ids)
        if len(token_ids.shape) != 2:
            raise ValueError(
                "`token_ids` must have shape (batch, seq_len). "
                f"Received: token_ids.shape={tuple(token_ids.shape)}"
            )
        x = self.token_embedding(token_ids)
        if self.scale_embeddings:
            x = x * ops.cast(math.sqrt(self.dim), self.compute_dtype)
        offset = self.position_offset
        if self.position == "learned":
            given = positions is not None
            if positions is None:
                # Positions as indices, not a slice: slicing to a symbolic
                # length fails under JAX's shape polymorphism.
                positions = start_index + ops.arange(ops.shape(x)[1], dtype="int32")
            positions = ops.cast(positions, "int32") + offset
            positions = self._checked_positions(token_ids, start_index, given, positions)
            x = x + self.position_encoding(x, positions=positions)
        elif self.position_encoding is not None:
            if offset and positions is not None:
                positions = positions + offset
            x = x + self.position_encoding(
                x, start_index=start_index + offset, positions=positions
            )
        return x

    def _checked_positions(self, token_ids, start_index, given, positions):
        """`positions` (the rows to read), after refusing rows past the
        learned table (a gather there would be clamped or zero, silently):
        `start_index + T <= max_length` (`T <= max_length` for `given`
        positions, each below `T`), at trace time where `T` is static (and
        `start_index` a Python int), by a run-time assertion in a TensorFlow
        graph where `T` is not. A tensor `start_index` with a static `T` (a
        cached decode step) is left to the caller (`Seq2SeqModel.generate`
        checks `max_length`)."""
        length = token_ids.shape[1]
        start = 0 if given else start_index
        if isinstance(start, (int, np.integer)):
            last = (length if isinstance(length, int) else ops.shape(token_ids)[1]) + start
        elif isinstance(length, int):
            return positions
        else:
            last = ops.shape(token_ids)[1] + ops.cast(start, "int32")
        what = f"the learned position table's max_length={self.max_length}"
        if isinstance(start, (int, np.integer)) and start:
            what += f", from start_index={start}"
        return check_length_limit("token_ids", last, self.max_length, what, positions)

    def logits(self, hidden):
        """The tied output logits `hidden @ embeddings^T`: `(B, T, dim) ->
        (B, T, vocab_size)`, in the compute dtype."""
        return self.token_embedding(hidden, reverse=True)

    def compute_output_shape(self, token_ids_shape):
        return tuple(token_ids_shape) + (self.dim,)

    def compute_output_spec(self, token_ids, **kwargs):
        return traced_output_spec(self, token_ids, **kwargs)

    def compute_mask(self, token_ids, mask=None):
        if not self.mask_start:
            return masks.decoder_token_mask(token_ids, self.pad_token_id)
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
                "scale_embeddings": self.scale_embeddings,
                "position_offset": self.position_offset,
                "mask_start": self.mask_start,
            }
        )
        return config
