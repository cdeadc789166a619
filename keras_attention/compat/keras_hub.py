"""keras-hub 0.32's modeling layers, with its signatures, on our layers.

Changing `keras_hub.layers` to `keras_attention.compat.keras_hub` in a model
keeps its constructor arguments (names, order, defaults: post-norm blocks),
call keywords, cached call forms and return values; with the weights copied
across, the outputs are keras-hub's. The computation is keras_attention's:
float32 softmax, the fully-masked-row rule (a padded query row attends to
nothing, where keras-hub's attends to every key), fused kernels and
`quantize` on every projection. keras-hub need not be installed.

Differences kept on purpose: padded query rows (above); the encoder and
decoder blocks also drop out their feed-forward hidden layer in training;
`TransformerDecoder`'s cached call takes `encoder_padding_mask` but not the
decoder or cross-attention masks (its self-attention is causal); the
private sublayer names (`_self_attention_layer`, ...) are ours
(`self_attention`, `self_attention_norm`, `feed_forward`, ...).
"""

import keras
from keras import ops

from keras_attention.compat.keras import MultiHeadAttention, as_boolean_mask
from keras_attention.layers.grouped_heads import heads_first
from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.token_and_position_embedding import (
    LearnedPositionEmbedding,
    SinusoidalPositionEncoding,
)
from keras_attention.layers.transformer_decoder_block import TransformerDecoderBlock
from keras_attention.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_attention.validation import check_positive_int

PACKAGE = "keras_attention.compat.keras_hub"

__all__ = [
    "CachedMultiHeadAttention",
    "PositionEmbedding",
    "SinePositionEncoding",
    "TokenAndPositionEmbedding",
    "TransformerDecoder",
    "TransformerEncoder",
]


def keras_hub_block_config(config):
    """Our block config with `norm_first` under keras-hub's name."""
    config = dict(config)
    config["normalize_first"] = config.pop("norm_first")
    return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransformerEncoder(TransformerEncoderBlock):
    """keras-hub's `TransformerEncoder`: post-norm by default.

    Shapes: `inputs` `(B, T, D)` -> `(B, T, D)`; scores `(B, H, T, T)`.

    Args: keras-hub's, in its order: `intermediate_dim, num_heads,
        dropout=0, activation="relu", layer_norm_epsilon=1e-05,
        kernel_initializer="glorot_uniform", bias_initializer="zeros",
        normalize_first=False`; then `TransformerEncoderBlock` keywords
        (`num_key_value_heads`, `rotary`, `implementation`).

    Call arguments: `inputs, padding_mask=None, attention_mask=None,
        training=None, return_attention_scores=False` (masks boolean or
        0/1, True = real token / may attend; a Keras mask on `inputs` is
        used when `padding_mask` is None).

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras_hub import TransformerEncoder
    >>> encoder = TransformerEncoder(intermediate_dim=16, num_heads=2)
    >>> y = encoder(inputs=np.ones((2, 5, 8), "float32"))
    >>> tuple(y.shape), encoder.normalize_first
    ((2, 5, 8), False)
    """

    call_aliases = {}

    # keras-hub's names of the norms, read by code written for keras-hub's block.
    _self_attention_layer_norm = property(lambda self: self.self_attention_norm)
    _feedforward_layer_norm = property(lambda self: self.feed_forward_norm)

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0,
        activation="relu",
        layer_norm_epsilon=1e-05,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=False,
        **kwargs,
    ):
        super().__init__(
            intermediate_dim=intermediate_dim,
            num_heads=num_heads,
            dropout=dropout,
            activation=activation,
            layer_norm_epsilon=layer_norm_epsilon,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            norm_first=normalize_first,
            **kwargs,
        )

    @property
    def normalize_first(self):
        return self.norm_first

    def build(self, inputs_shape):
        super().build(inputs_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        mask=None,
    ):
        return super().call(
            inputs,
            mask=as_boolean_mask(mask, "mask"),
            x_mask=as_boolean_mask(padding_mask, "padding_mask"),
            attention_mask=as_boolean_mask(attention_mask),
            return_attention_scores=return_attention_scores,
            training=training,
        )

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)

    def get_config(self):
        return keras_hub_block_config(super().get_config())


def split_cache(cache):
    """keras-hub's `(B, 2, L, H, D)` cache as our heads-first `(keys,
    values)` pair, `(B, H, L, D)` each."""
    return heads_first(cache[:, 0, ...]), heads_first(cache[:, 1, ...])


def stack_cache(keys, values):
    """Our heads-first `(keys, values)` pair as keras-hub's `(B, 2, L, H, D)`
    cache."""
    return ops.stack((heads_first(keys), heads_first(values)), axis=1)


@keras.saving.register_keras_serializable(package=PACKAGE)
class TransformerDecoder(TransformerDecoderBlock):
    """keras-hub's `TransformerDecoder`: post-norm by default, with its
    cached call.

    Shapes: `decoder_sequence` `(B, T, D)`, `encoder_sequence` `(B, S, De)`
    -> `(B, T, D)`. Caches (keras-hub's layout): `(B, 2, L, H, D / H)` keys
    and values, self-attention over `L` cached positions, cross-attention
    over the `S` encoder positions.

    Args: keras-hub's, in its order (as `TransformerEncoder`); keras-hub's
        saved `decoder_sequence_shape` / `encoder_sequence_shape` build the
        layer at construction, as there.

    Call arguments: keras-hub's: `decoder_sequence, encoder_sequence=None,
        decoder_padding_mask=None, decoder_attention_mask=None,
        encoder_padding_mask=None, encoder_attention_mask=None,
        self_attention_cache=None, self_attention_cache_update_index=None,
        cross_attention_cache=None, cross_attention_cache_update_index=None,
        use_causal_mask=True, training=None`.

    Returns: `outputs`; with `self_attention_cache`, `(outputs,
        self_attention_cache)`, or `(outputs, self_attention_cache,
        cross_attention_cache)` when the layer has cross-attention.
        `cross_attention_cache_update_index=0` computes the cross-attention
        cache from `encoder_sequence`; None reuses the given one.

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras_hub import TransformerDecoder
    >>> decoder = TransformerDecoder(intermediate_dim=16, num_heads=2)
    >>> x, memory = np.ones((2, 4, 8), "float32"), np.ones((2, 6, 8), "float32")
    >>> cache = np.zeros((2, 2, 4, 2, 4), "float32")
    >>> y, self_cache, cross_cache = decoder(
    ...     x, memory, self_attention_cache=cache,
    ...     self_attention_cache_update_index=0,
    ...     cross_attention_cache=np.zeros((2, 2, 6, 2, 4), "float32"),
    ...     cross_attention_cache_update_index=0)
    >>> tuple(y.shape), tuple(self_cache.shape), tuple(cross_cache.shape)
    ((2, 4, 8), (2, 2, 4, 2, 4), (2, 2, 6, 2, 4))
    """

    call_aliases = {}
    unsupported_call_arguments = ()

    # keras-hub's names of the norms, read by code written for keras-hub's block.
    _self_attention_layer_norm = property(lambda self: self.self_attention_norm)
    _feedforward_layer_norm = property(lambda self: self.feed_forward_norm)
    _cross_attention_layer_norm = property(
        lambda self: getattr(self, "cross_attention_norm", None))

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0,
        activation="relu",
        layer_norm_epsilon=1e-05,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=False,
        **kwargs,
    ):
        decoder_sequence_shape = kwargs.pop("decoder_sequence_shape", None)
        encoder_sequence_shape = kwargs.pop("encoder_sequence_shape", None)
        super().__init__(
            intermediate_dim=intermediate_dim,
            num_heads=num_heads,
            dropout=dropout,
            activation=activation,
            layer_norm_epsilon=layer_norm_epsilon,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            norm_first=normalize_first,
            **kwargs,
        )
        if decoder_sequence_shape:
            self.build(decoder_sequence_shape, encoder_sequence_shape)

    @property
    def normalize_first(self):
        return self.norm_first

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        super().build(decoder_sequence_shape, encoder_sequence_shape or None)

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        decoder_attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        self_attention_cache=None,
        self_attention_cache_update_index=None,
        cross_attention_cache=None,
        cross_attention_cache_update_index=None,
        use_causal_mask=True,
        training=None,
        mask=None,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
    ):
        # Keras fills `mask` (one tensor argument) or `<argument>_mask`
        # (several) from the inputs' Keras masks; explicit masks win.
        if decoder_padding_mask is None:
            decoder_padding_mask = (
                decoder_sequence_mask if decoder_sequence_mask is not None else mask
            )
        if encoder_padding_mask is None:
            encoder_padding_mask = encoder_sequence_mask
        padding = as_boolean_mask(decoder_padding_mask, "decoder_padding_mask")
        memory_padding = as_boolean_mask(encoder_padding_mask, "encoder_padding_mask")
        if self_attention_cache is None and cross_attention_cache is None:
            for name, value in (
                ("self_attention_cache_update_index", self_attention_cache_update_index),
                ("cross_attention_cache_update_index", cross_attention_cache_update_index),
            ):
                if value is not None:
                    raise ValueError(
                        f"`{name}` needs its cache. Received: {name}={value!r} "
                        "without a cache"
                    )
            return super().call(
                decoder_sequence,
                encoder_sequence,
                x_mask=padding,
                memory_mask=memory_padding,
                attention_mask=as_boolean_mask(
                    decoder_attention_mask, "decoder_attention_mask"
                ),
                memory_attention_mask=as_boolean_mask(
                    encoder_attention_mask, "encoder_attention_mask"
                ),
                use_causal_mask=use_causal_mask,
                training=training,
            )
        return self._call_keras_hub_cached(
            decoder_sequence, encoder_sequence, memory_padding,
            self_attention_cache, self_attention_cache_update_index,
            cross_attention_cache, cross_attention_cache_update_index,
            use_causal_mask=use_causal_mask,
            decoder_masks=(decoder_padding_mask, decoder_attention_mask),
            encoder_attention_mask=encoder_attention_mask,
            training=training,
        )

    def _call_keras_hub_cached(
        self, x, memory, memory_padding, self_cache, self_index, cross_cache,
        cross_index, *, use_causal_mask, decoder_masks, encoder_attention_mask,
        training,
    ):
        """keras-hub's cached call on `call_cached`."""
        has_cross = self.cross_attention is not None
        self._check_memory(memory)
        refused = {
            "self_attention_cache": None if self_cache is not None else "None",
            "self_attention_cache_update_index": (
                "None" if self_cache is not None and self_index is None else None
            ),
            "cross_attention_cache": (
                "None" if has_cross and cross_cache is None
                else "a tensor without cross-attention"
                if not has_cross and cross_cache is not None else None
            ),
            "use_causal_mask": None if use_causal_mask else "False",
            "decoder_padding_mask": None if decoder_masks[0] is None else "a mask",
            "decoder_attention_mask": None if decoder_masks[1] is None else "a mask",
            "encoder_attention_mask": (
                None if encoder_attention_mask is None else "a mask"
            ),
        }
        refused = {name: value for name, value in refused.items() if value is not None}
        if refused:
            raise ValueError(
                "The cached call of `TransformerDecoder` takes a "
                "`self_attention_cache` with its update index, a "
                "`cross_attention_cache` exactly when the layer has "
                "cross-attention, a causal self-attention and no decoder or "
                "cross-attention masks (only `encoder_padding_mask`). Received: "
                + ", ".join(f"{name}={value}" for name, value in refused.items())
            )
        memory_cache = None
        if has_cross:
            if cross_index is None:
                cross_pair = split_cache(cross_cache)
            else:
                # keras-hub writes the whole encoder projection at the index.
                keys, values = split_cache(cross_cache)
                new_keys, new_values = self.cross_attention.compute_cache(memory)
                zero = ops.zeros((), "int32")
                start = (zero, zero, ops.cast(cross_index, "int32"), zero)
                cross_pair = (
                    ops.slice_update(keys, start, ops.cast(new_keys, keys.dtype)),
                    ops.slice_update(values, start, ops.cast(new_values, values.dtype)),
                )
            memory_cache = self.compute_cache(memory, memory_padding)
            memory_cache["cross_attention"] = cross_pair
            if memory_padding is None:
                keys_shape = ops.shape(cross_pair[0])  # (B, H, S, D)
                memory_cache["memory_mask"] = ops.ones((keys_shape[0], keys_shape[2]), "bool")
        y, (keys, values), _ = self.call_cached(
            x, split_cache(self_cache), self_index, memory_cache=memory_cache,
            training=training,
        )
        outputs = (y, stack_cache(keys, values))
        if has_cross:
            outputs += (stack_cache(*memory_cache["cross_attention"]),)
        return outputs

    def compute_output_shape(self, decoder_sequence_shape, encoder_sequence_shape=None):
        return tuple(decoder_sequence_shape)

    def get_config(self):
        return keras_hub_block_config(super().get_config())


@keras.saving.register_keras_serializable(package=PACKAGE)
class CachedMultiHeadAttention(MultiHeadAttention):
    """keras-hub's `CachedMultiHeadAttention`: Keras' `MultiHeadAttention`
    (here `keras_attention.compat.keras.MultiHeadAttention`) with a cache.

    Cache `(B, 2, S, H, key_dim)`: keys then values. With
    `cache_update_index=None` the cached keys and values are used as they
    are (the inputs' are not computed); with an index, the projections of
    `key` / `value` are written into the cache there first. The attention
    mask is the only mask (pass a causal one for self-attention).

    Call arguments: `query (B, T, Dq), value (B, S*, Dv), key=None,
        attention_mask=None (B, T, S), cache=None, cache_update_index=None,
        return_attention_scores=False, training=None`.

    Returns: `output`, `(output, scores)`, `(output, cache)` or `(output,
        scores, cache)`, as keras-hub's.

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras_hub import CachedMultiHeadAttention
    >>> layer = CachedMultiHeadAttention(num_heads=2, key_dim=4)
    >>> x = np.ones((2, 1, 8), "float32")
    >>> cache = np.zeros((2, 2, 5, 2, 4), "float32")
    >>> out, cache = layer(x, x, cache=cache, cache_update_index=0,
    ...                    attention_mask=np.array([[1, 0, 0, 0, 0]]))
    >>> tuple(out.shape), tuple(cache.shape)
    ((2, 1, 8), (2, 2, 5, 2, 4))
    """

    def call(
        self,
        query,
        value,
        key=None,
        attention_mask=None,
        cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
    ):
        if cache is None:
            if cache_update_index is not None:
                raise ValueError(
                    "`cache_update_index` should not be set if `cache` is "
                    f"`None`. Received: cache=None, "
                    f"cache_update_index={cache_update_index!r}"
                )
            return super().call(
                query, value, key, attention_mask=attention_mask,
                return_attention_scores=return_attention_scores, training=training,
            )
        keys, values = split_cache(cache)
        if cache_update_index is not None:
            new_keys, new_values = self.compute_cache(value, key)
            zero = ops.zeros((), "int32")
            start = (zero, zero, ops.cast(cache_update_index, "int32"), zero)
            keys = ops.slice_update(keys, start, ops.cast(new_keys, keys.dtype))
            values = ops.slice_update(values, start, ops.cast(new_values, values.dtype))
            cache = stack_cache(keys, values)
        output, _, scores = self.call_cached(
            query, memory_cache=(keys, values),
            attention_mask=as_boolean_mask(attention_mask), training=training,
        )
        if return_attention_scores:
            return output, scores, cache
        return output, cache


@keras.saving.register_keras_serializable(package=PACKAGE)
class SinePositionEncoding(SinusoidalPositionEncoding):
    """keras-hub's `SinePositionEncoding(max_wavelength=10000)`.

    Call arguments: `inputs (B, T, D)` (its shape only), `start_index=0`,
    `positions=None` (`(T,)` or `(B, T)`). Returns `(B, T, D)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras_hub import SinePositionEncoding
    >>> tuple(SinePositionEncoding()(np.zeros((2, 3, 4), "float32")).shape)
    (2, 3, 4)
    """


@keras.saving.register_keras_serializable(package=PACKAGE)
class PositionEmbedding(LearnedPositionEmbedding):
    """keras-hub's `PositionEmbedding(sequence_length,
    initializer="glorot_uniform")`: a trained `(sequence_length, D)` table.

    Call arguments: `inputs (B, T, D)` (its shape only), `start_index=0`,
    `positions=None` (`(T,)` or `(B, T)`). Returns `(B, T, D)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras_hub import PositionEmbedding
    >>> layer = PositionEmbedding(sequence_length=6)
    >>> tuple(layer(np.zeros((2, 3, 4), "float32"), start_index=2).shape)
    (2, 3, 4)
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(sequence_length, initializer=initializer, **kwargs)
        self.supports_masking = True  # a masked input keeps its mask

    def call(self, inputs, start_index=0, positions=None):
        if positions is None:
            positions = ops.arange(ops.shape(inputs)[-2], dtype="int32") + start_index
        return super().call(inputs, ops.cast(positions, "int32"))


@keras.saving.register_keras_serializable(package=PACKAGE)
class TokenAndPositionEmbedding(keras.layers.Layer):
    """keras-hub's `TokenAndPositionEmbedding`: `E[token] + P[position]`,
    unscaled (our `keras_attention.layers.TokenAndPositionEmbedding` scales
    by `sqrt(dim)`).

    Shapes: `inputs` `(B, T)` integer ids -> `(B, T, embedding_dim)`.

    Args: `vocabulary_size, sequence_length, embedding_dim,
        tie_weights=True, embeddings_initializer="uniform",
        mask_zero=False`, as keras-hub's (`tie_weights` is kept in the
        config; the token table is `token_embedding.embeddings`, for tied
        output logits `x @ embeddings^T`).

    Call arguments: `inputs`, `start_index=0`, `positions=None`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras_hub import TokenAndPositionEmbedding
    >>> layer = TokenAndPositionEmbedding(10, 4, 3, mask_zero=True)
    >>> y = layer(np.array([[1, 2, 0]]))
    >>> tuple(y.shape), np.asarray(y._keras_mask).tolist()
    ((1, 3, 3), [[True, True, False]])
    """

    def __init__(
        self,
        vocabulary_size,
        sequence_length,
        embedding_dim,
        tie_weights=True,
        embeddings_initializer="uniform",
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        self.sequence_length = check_positive_int("sequence_length", sequence_length)
        self.embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        self.tie_weights = bool(tie_weights)
        self.mask_zero = bool(mask_zero)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size,
            embedding_dim,
            embeddings_initializer=clone_initializer(self.embeddings_initializer),
            mask_zero=mask_zero,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.position_embedding = PositionEmbedding(
            sequence_length,
            initializer=clone_initializer(self.embeddings_initializer),
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.supports_masking = self.mask_zero

    def build(self, inputs_shape):
        inputs_shape = tuple(inputs_shape)
        self.token_embedding.build(inputs_shape)
        self.position_embedding.build(inputs_shape + (self.embedding_dim,))
        self.built = True

    def call(self, inputs, start_index=0, positions=None):
        tokens = self.token_embedding(inputs)
        return tokens + self.position_embedding(
            tokens, start_index=start_index, positions=positions
        )

    def compute_mask(self, inputs, mask=None):
        return self.token_embedding.compute_mask(inputs, mask)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape) + (self.embedding_dim,)

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "sequence_length": self.sequence_length,
            "embedding_dim": self.embedding_dim,
            "tie_weights": self.tie_weights,
            "embeddings_initializer": keras.initializers.serialize(
                self.embeddings_initializer
            ),
            "mask_zero": self.mask_zero,
        }
