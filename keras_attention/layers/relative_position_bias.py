"""`RelativePositionBias`: T5's learned, bucketed relative position bias."""

import math

import keras
import numpy as np
from keras import ops

from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import check_bool, check_positive_int


def relative_position_buckets(num_buckets, max_distance, bidirectional):
    """The bucket of every distance `|j - i|` from 0 to `max_distance`, as
    T5 computes it (`T5Attention._relative_position_bucket`, without the
    direction offset): NumPy int32 `(max_distance + 1,)`.

    Distances below `max_exact = n // 2` (`n` = `num_buckets`, halved when
    `bidirectional`) get a bucket each; longer ones share logarithmically
    wider buckets up to `max_distance`, beyond which every distance is in
    bucket `n - 1`. Computed in float32 in T5's order of operations, so
    the boundaries are T5's.
    """
    buckets = num_buckets // 2 if bidirectional else num_buckets
    max_exact = buckets // 2
    distance = np.arange(max_distance + 1, dtype=np.int64)
    with np.errstate(divide="ignore"):
        ratio = distance.astype(np.float32) / np.float32(max_exact)
        large = np.log(ratio) / np.float32(math.log(max_distance / max_exact))
    large = large * np.float32(buckets - max_exact)
    large = max_exact + np.where(distance < max_exact, 0, large).astype(np.int64)
    large = np.minimum(large, buckets - 1)
    return np.where(distance < max_exact, distance, large).astype("int32")


def _is_sequence(length):
    """Whether a length argument is a sequence tensor `(B, L, ...)`."""
    return len(getattr(length, "shape", ())) >= 2


def _length(length):
    """An int, a scalar tensor, or the length (axis 1) of a sequence."""
    return ops.shape(length)[1] if _is_sequence(length) else length


def _static_length(length):
    """The static value of a length argument, or None."""
    if _is_sequence(length):
        return length.shape[1]
    if isinstance(length, int) and not isinstance(length, bool):
        return length
    return None


@keras.saving.register_keras_serializable(package="keras_attention")
class RelativePositionBias(QuantizableSublayers, keras.layers.Layer):
    """A learned bias per head and bucketed query-key distance (T5).

    For query position `i` (`query_offset + i`) and key position `j`, the
    relative position `r = j - (query_offset + i)` falls in a bucket `b(r)`
    and the bias of head `h` is `table[b(r), h]`:

    ```
    bidirectional:  b(r) = (n/2 if r > 0 else 0) + bucket(|r|, n/2)
    causal:         b(r) = bucket(max(-r, 0), n)   (keys after i: bucket 0)
    bucket(d, m) = d                         if d < m/2
                   m/2 + floor(log(d / (m/2)) / log(max_distance / (m/2))
                               * (m - m/2)), at most m - 1, otherwise
    ```

    exactly Hugging Face's `T5Attention._relative_position_bucket` and
    `compute_bias` (`n` = `num_buckets`). T5 computes it once per forward
    pass (in its first layer) and adds it to the logits of every
    self-attention layer: call this layer once and pass its output as the
    `attention_bias` of each `MultiHeadAttention` (or the
    `self_attention_bias` of each Transformer block). Attention with T5's
    bias is usually unscaled: `MultiHeadAttention(..., scale=1.0)`.

    The table is an `Embedding` sublayer named `"relative_attention_bias"`
    (`(num_buckets, num_heads)`, T5's layout, so a checkpoint's weight copies
    as is; `quantize("int8")`, on the layer or the model, reaches it, and a
    quantized layer round-trips through `.keras`).

    Shapes: call(query_length=T, key_length=S, query_offset=0) -> `(1, H,
    T, S)` in the compute dtype; a decode step over a cache passes
    `query_offset=cache_update_index` and `key_length` the cache length.

    Args:
        num_heads: positive int `H`.
        num_buckets: positive int (default 32), T5's
            `relative_attention_num_buckets`; at least 2 (4 with
            `bidirectional=True`: half of them per direction).
        max_distance: positive int (default 128), T5's
            `relative_attention_max_distance`: distances from it on share the
            last bucket; greater than the exact buckets (`num_buckets / 2`,
            `num_buckets / 4` bidirectional).
        bidirectional: bool (default True): encoder self-attention; False
            for causal decoder self-attention (keys after the query all
            share bucket 0).
        embeddings_initializer: initializer of the table.
        quantized_sublayers: written by `get_config`; leave it None.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments (keywords):
        query_length: `T`: an int, a scalar int tensor, or a sequence
            tensor `(B, T, ...)` whose length it is (in a functional model,
            where lengths are known only when it runs, pass the sequence).
        key_length: `S`, in the same forms.
        query_offset: int or scalar int tensor (default 0): the position of
            the first query (`cache_update_index` in a decode step).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import MultiHeadAttention, RelativePositionBias
    >>> bias_layer = RelativePositionBias(num_heads=2, num_buckets=8,
    ...                                   max_distance=16)
    >>> bias = bias_layer(query_length=5, key_length=5)
    >>> tuple(bias.shape)
    (1, 2, 5, 5)
    >>> attention = MultiHeadAttention(num_heads=2, key_dim=4, scale=1.0)
    >>> x = np.ones((3, 5, 8), "float32")
    >>> tuple(attention(x, x, attention_bias=bias).shape)
    (3, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        num_buckets=32,
        max_distance=128,
        bidirectional=True,
        embeddings_initializer="uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.num_buckets = check_positive_int("num_buckets", num_buckets)
        self.max_distance = check_positive_int("max_distance", max_distance)
        self.bidirectional = check_bool("bidirectional", bidirectional)
        buckets = self.num_buckets // 2 if self.bidirectional else self.num_buckets
        if buckets < 2:
            raise ValueError(
                "Argument `num_buckets` must be at least 2 (causal) or 4 "
                "(bidirectional: half the buckets per direction). Received: "
                f"num_buckets={num_buckets}, bidirectional={bidirectional}"
            )
        if self.max_distance <= buckets // 2:
            raise ValueError(
                "Argument `max_distance` must exceed the exact buckets "
                f"({buckets // 2} = num_buckets // {4 if self.bidirectional else 2}). "
                f"Received: max_distance={max_distance}, num_buckets={num_buckets}"
            )
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self._buckets = relative_position_buckets(
            self.num_buckets, self.max_distance, self.bidirectional
        )
        self.relative_attention_bias = keras.layers.Embedding(
            self.num_buckets,
            self.num_heads,
            embeddings_initializer=self.embeddings_initializer,
            dtype=self.dtype_policy,
            name="relative_attention_bias",
        )

    def build(self, input_shape=None):
        self.relative_attention_bias.build((None,))
        self.built = True

    @property
    def embeddings(self):
        """The table `(num_buckets, num_heads)`."""
        return self.relative_attention_bias.embeddings

    def relative_buckets(self, query_length, key_length, query_offset=0):
        """The bucket of every (query, key) pair: int32 `(T, S)` (arguments
        as in `call`)."""
        query_length, key_length = _length(query_length), _length(key_length)
        query_positions = ops.arange(query_length, dtype="int32")[:, None]
        query_positions = query_positions + ops.cast(query_offset, "int32")
        key_positions = ops.arange(key_length, dtype="int32")[None, :]
        relative = key_positions - query_positions
        if self.bidirectional:
            direction = ops.where(relative > 0, self.num_buckets // 2, 0)
            distance = ops.abs(relative)
        else:
            direction = ops.zeros_like(relative)
            distance = ops.maximum(-relative, 0)
        distance = ops.minimum(distance, self.max_distance)
        table = ops.convert_to_tensor(self._buckets, "int32")
        return ops.cast(direction, "int32") + ops.take(table, distance)

    def call(self, query_length, key_length, query_offset=0):
        buckets = self.relative_buckets(query_length, key_length, query_offset)
        values = self.relative_attention_bias(buckets)  # (T, S, H)
        return ops.transpose(values, (2, 0, 1))[None]

    def compute_output_shape(self, query_length, key_length, query_offset=0):
        """`(1, H, T, S)`; a length is an int or the shape of a sequence
        `(B, L, ...)`."""

        def static(length):
            if isinstance(length, (tuple, list)):
                return length[1]
            return _static_length(length)

        return (1, self.num_heads, static(query_length), static(key_length))

    def compute_output_spec(self, query_length, key_length, query_offset=0):
        return keras.KerasTensor(
            (1, self.num_heads, _static_length(query_length),
             _static_length(key_length)),
            dtype=self.compute_dtype,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "num_buckets": self.num_buckets,
                "max_distance": self.max_distance,
                "bidirectional": self.bidirectional,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
            }
        )
        return config
