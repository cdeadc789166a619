"""`BaseAttention`: the call convention and mask handling of every layer.

Subclasses only say how logits are scored and how context vectors become the
output; checking inputs, building the one `(B, T, S)` mask, zeroing unused
positions, the float32 masked softmax and dropout live here, once.
"""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers import attention_core
from keras_attention.validation import (
    check_non_negative_int,
    check_positive_int,
    check_rate,
)

# `query_block_size="auto"` blocks the queries when one (batch, head) score
# matrix would hold at least this many entries (e.g. T = S = 2048).
AUTO_BLOCK_MIN_SCORES = 2048 * 2048
AUTO_BLOCK_SIZE = 512


def check_query_block_size(value):
    """`"auto"`, None or a positive int."""
    if value is None or value == "auto":
        return value
    if isinstance(value, str):
        raise ValueError(
            "Argument `query_block_size` must be 'auto', None or a positive "
            f"int. Received: query_block_size={value!r}"
        )
    return check_positive_int("query_block_size", value)


def _rank_error(name, shape, layout):
    return ValueError(
        f"`{name}` must be a rank-3 tensor of shape {layout}. "
        f"Received: {name}.shape={tuple(shape)}"
    )


def check_rank3(name, shape, layout):
    """Raises a `ValueError` unless `shape` has rank 3."""
    if shape is None or len(shape) != 3:
        raise _rank_error(name, shape, layout)


def _static(dim):
    return dim if isinstance(dim, int) else None


class BaseAttention(keras.layers.Layer):
    """Base class of the attention layers of keras_attention.

    Every subclass is called as

    ```
    layer(query, value, key=None, *, attention_mask=None,
          use_causal_mask=False, return_attention_scores=False,
          training=None)
    ```

    with `query` `(B, T, Dq)`, `value` `(B, S, Dv)` and `key` `(B, S, Dk)`
    (defaults to `value`). Keras implicit masks on `query`, `value` and `key`
    are honoured and never removed from the inputs; the query mask is
    propagated to the output. The mask actually applied is the AND of the
    implicit masks, `attention_mask` (boolean or 0/1 integer, `(B, T, S)` or
    `(T, S)`, True = may attend) and, with `use_causal_mask=True`, a causal
    mask (which needs `T == S`; build an offset mask with
    `keras_attention.masks.causal_mask(T, S, offset=...)` for a decode step).

    A query row with no unmasked key gets all-zero weights and a zero context
    vector, on every path and under every dtype policy.

    Subclasses implement `_compute_logits(query, key)` returning float32
    logits `(B, T, S)` (or `(B, H, T, S)`) and `_compute_output(weights,
    value)`; they may override `build_attention(query_shape, value_shape,
    key_shape)` to create weights.

    Memory-efficient attention: with a query block size `b`, queries are
    processed `b` at a time and each block's scores are recomputed in the
    backward pass, so no `(B, H, T, S)` tensor is ever held: peak memory
    grows as `b * S` instead of `T * S`. Layers whose logits are dot
    products of prepared heads (`_flash_operands`; `MultiHeadAttention`)
    use `attention_core.flash_attention`, whose backward pass recomputes
    only the weights; the others wrap each block in `keras.remat`. The
    results equal the exact path (same float32 softmax, same masks, same
    fully-masked-row rule). Blocking needs a static query length and is
    skipped when the weights are returned or dropped out (training with
    `dropout > 0`).

    Args:
        dropout: float in [0, 1), dropout rate on the attention weights
            (training only).
        seed: optional int, the dropout seed.
        query_block_size: `"auto"` (default: blocks of 512 queries once a
            score matrix would reach 2048 x 2048 entries), None (never
            block) or a positive int (block whenever `T` exceeds it).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`,
            ...).
    """

    # Layout strings used in error messages.
    _query_layout = "(batch, target_len, query_dim)"
    _value_layout = "(batch, source_len, value_dim)"
    _key_layout = "(batch, source_len, key_dim)"

    def __init__(self, dropout=0.0, seed=None, query_block_size="auto", **kwargs):
        super().__init__(**kwargs)
        self.dropout = check_rate("dropout", dropout)
        self.seed = check_non_negative_int("seed", seed, allow_none=True)
        self.query_block_size = check_query_block_size(query_block_size)
        self.supports_masking = True
        self._seed_generator = (
            keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        )

    # ----------------------------------------------------------------- build
    def build(self, query_shape, value_shape, key_shape=None):
        check_rank3("query", query_shape, self._query_layout)
        check_rank3("value", value_shape, self._value_layout)
        if key_shape is None:
            key_shape = value_shape
        check_rank3("key", key_shape, self._key_layout)
        self._check_shapes(query_shape, value_shape, key_shape)
        self.build_attention(
            tuple(query_shape), tuple(value_shape), tuple(key_shape)
        )
        self.built = True

    def build_attention(self, query_shape, value_shape, key_shape):
        """Creates the layer's weights; the default creates none."""

    def _check_shapes(self, query_shape, value_shape, key_shape):
        """Checks the static shapes that every attention layer needs."""
        batch_sizes = {
            name: shape[0]
            for name, shape in (
                ("query", query_shape),
                ("value", value_shape),
                ("key", key_shape),
            )
            if shape[0] is not None
        }
        if len(set(batch_sizes.values())) > 1:
            received = ", ".join(
                f"{name}.shape[0]={size}" for name, size in batch_sizes.items()
            )
            raise ValueError(
                "`query`, `value` and `key` must have the same batch size. "
                f"Received: {received}"
            )
        if (
            key_shape[1] is not None
            and value_shape[1] is not None
            and key_shape[1] != value_shape[1]
        ):
            raise ValueError(
                "`key` and `value` must have the same length (source_len). "
                f"Received: key.shape={tuple(key_shape)}, "
                f"value.shape={tuple(value_shape)}"
            )
        self.check_feature_sizes(query_shape, value_shape, key_shape)

    def check_feature_sizes(self, query_shape, value_shape, key_shape):
        """Raises if the feature sizes do not fit; the default accepts all."""

    # ------------------------------------------------------------------ call
    def call(
        self,
        query,
        value,
        key=None,
        *,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        if key is None:
            key = value
        query, value, key = (self._as_float(x) for x in (query, value, key))
        for name, x, layout in (
            ("query", query, self._query_layout),
            ("value", value, self._value_layout),
            ("key", key, self._key_layout),
        ):
            check_rank3(name, x.shape, layout)
        self._check_shapes(query.shape, value.shape, key.shape)
        mask_parts = self._mask_parts(
            query,
            key,
            query_mask=query_mask,
            key_mask=masks.merge_masks(value_mask, key_mask),
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
        )
        block_size = self._block_size(
            query, key, return_attention_scores, training
        )
        if block_size is not None:
            return self._blocked_attention(
                query, value, key, mask_parts, block_size
            )
        mask = self._block_mask(mask_parts, 0, ops.shape(query)[1])
        if mask is not None:
            query = attention_core.zero_unused_positions(
                query, ops.any(mask, axis=2)
            )
            used_keys = ops.any(mask, axis=1)
            key = attention_core.zero_unused_positions(key, used_keys)
            value = attention_core.zero_unused_positions(value, used_keys)
        logits = self._compute_logits(query, key)
        weights = attention_core.masked_softmax(
            logits, self._broadcast_mask(mask, logits)
        )
        output = self._compute_output(
            self._drop(weights, training), value
        )
        if return_attention_scores:
            return output, self._public_scores(weights)
        return output

    def _as_float(self, x):
        """`x` as a tensor; integer or boolean inputs in the compute dtype.

        Keras autocasts only floating inputs; TensorFlow and JAX then promote
        an integer input in the first einsum, torch refuses to mix dtypes
        ("expected scalar type Int but found Float"), so cast here."""
        x = ops.convert_to_tensor(x)
        if not keras.backend.is_float_dtype(keras.backend.standardize_dtype(x.dtype)):
            x = ops.cast(x, self.compute_dtype)
        return x

    def _mask_parts(
        self,
        query,
        key,
        *,
        query_mask,
        key_mask,
        attention_mask,
        use_causal_mask,
    ):
        """What the `(B, T, S)` mask of a call is made of, checked once;
        `_block_mask` builds it for any range of queries."""
        batch_size = _static(query.shape[0])
        query_length, key_length = query.shape[1], key.shape[1]
        dynamic_query_length = ops.shape(query)[1]
        dynamic_key_length = ops.shape(key)[1]
        explicit = None
        if attention_mask is not None:
            explicit = masks.attention_mask(
                attention_mask,
                batch_size=batch_size,
                query_length=_static(query_length),
                key_length=_static(key_length),
            )
        causal = None
        if use_causal_mask:
            if (
                _static(query_length) is not None
                and _static(key_length) is not None
                and query_length != key_length
            ):
                raise ValueError(
                    "`use_causal_mask=True` needs target_len == source_len; "
                    "a causal mask between sequences of different lengths "
                    "(a decode step) needs an explicit offset. Build it with "
                    "`keras_attention.masks.causal_mask(target_len, "
                    "source_len, offset=...)` and pass it as "
                    "`attention_mask`. Received: query.shape="
                    f"{tuple(query.shape)}, key.shape={tuple(key.shape)}, "
                    "offset=None"
                )
        return {
            "query_mask": query_mask,
            "key_mask": key_mask,
            "explicit": explicit,
            "causal": bool(use_causal_mask),
            "key_length": dynamic_key_length,
        }

    @staticmethod
    def _block_mask(parts, start, size):
        """The boolean mask `(B, size, S)` of queries `start .. start+size-1`
        (all of them for `start=0, size=T`), or None: the AND of padding, the
        explicit mask and the causal mask at those positions."""
        query_mask, explicit = parts["query_mask"], parts["explicit"]
        if query_mask is not None:
            query_mask = query_mask[:, start : start + size]
        if explicit is not None:
            explicit = explicit[:, start : start + size]
        causal = None
        if parts["causal"]:
            causal = masks.causal_mask(size, parts["key_length"], offset=start)
        padding = masks.padding_mask(
            query_mask,
            parts["key_mask"],
            query_length=size,
            key_length=parts["key_length"],
        )
        return masks.merge_masks(padding, explicit, causal)

    # ------------------------------------------------------ blocked path
    def _block_size(self, query, key, return_attention_scores, training):
        """The query block size of this call, or None for the exact path."""
        if self.query_block_size is None or return_attention_scores:
            return None
        if training and self._seed_generator is not None:
            return None  # dropout masks cannot be replayed by remat
        query_length, key_length = query.shape[1], key.shape[1]
        if not isinstance(query_length, int):
            return None
        if self.query_block_size == "auto":
            if not isinstance(key_length, int):
                return None
            if query_length * key_length < AUTO_BLOCK_MIN_SCORES:
                return None
            block = AUTO_BLOCK_SIZE
        else:
            block = self.query_block_size
        return block if query_length > block else None

    def _blocked_attention(self, query, value, key, parts, block_size):
        """The output of `call`, `block_size` queries at a time."""
        length = query.shape[1]
        starts = list(range(0, length, block_size))
        sizes = [min(block_size, length - start) for start in starts]
        # Keys and values no query may use are zeroed, as on the exact path.
        # Block masks are rebuilt here and in `attend` rather than kept: all
        # of them together would be a full (B, T, S) tensor again.
        used_keys = None
        for start, size in zip(starts, sizes):
            block_mask = self._block_mask(parts, start, size)
            if block_mask is None:
                break
            block_used = ops.any(block_mask, axis=1)
            used_keys = (
                block_used
                if used_keys is None
                else ops.logical_or(used_keys, block_used)
            )
        if used_keys is not None:
            key = attention_core.zero_unused_positions(key, used_keys)
            value = attention_core.zero_unused_positions(value, used_keys)
        prepared_key = self._prepare_key(key)
        prepared_value = self._prepare_value(value)
        flash = self._flash_operands(prepared_key, prepared_value)

        def flash_attend(query_block, start, size, link=None):
            mask = self._block_mask(parts, start, size)
            if mask is not None:
                query_block = attention_core.zero_unused_positions(
                    query_block, ops.any(mask, axis=2)
                )
            # Under a causal mask, the keys after the block's last query
            # are masked for all of its rows: they are left out (half the
            # work of causal self-attention).
            key_end = None
            if parts["causal"] and isinstance(key.shape[1], int):
                key_end = min(start + size, key.shape[1])
            mask_fn = None
            if mask is not None:
                # (B, 1, 1, t, S): rebuilt in the backward pass.
                def mask_fn():
                    block_mask = self._block_mask(parts, start, size)
                    return block_mask[:, None, None, :, :key_end]

            operands = flash
            if key_end is not None and key_end < key.shape[1]:
                operands = [operand[:, :, :key_end] for operand in flash]
            return self._flash_context(
                attention_core.flash_attention(
                    self._flash_query(self._prepare_query(query_block, start)),
                    *operands,
                    mask_fn=mask_fn,
                    link=link,
                )
            )

        def attend(query_block, prepared_key, prepared_value, start, size):
            mask = self._block_mask(parts, start, size)
            if mask is not None:
                query_block = attention_core.zero_unused_positions(
                    query_block, ops.any(mask, axis=2)
                )
            logits = self._prepared_logits(
                self._prepare_query(query_block, start), prepared_key
            )
            weights = attention_core.masked_softmax(
                logits, self._broadcast_mask(mask, logits)
            )
            return self._prepared_context(weights, prepared_value)

        contexts = []
        for start, size in zip(starts, sizes):
            if flash is not None:
                block = lambda q, k, v, start=start, size=size: flash_attend(  # noqa: E731
                    q, start, size
                )
            else:
                block = keras.remat(
                    lambda q, k, v, start=start, size=size: attend(
                        q, k, v, start, size
                    )
                )
            query_block = query[:, start : start + size]
            if contexts:
                # A zero that depends on the previous block chains the blocks:
                # graph executors would otherwise run several blocks (and, in
                # the backward pass, their recomputations) at once, holding
                # several blocks' scores in memory.
                # (Finite by construction, even when the previous context
                # holds NaN or inf: those would otherwise leak across blocks.)
                previous = ops.sum(ops.cast(contexts[-1], "float32"))
                zero = ops.where(ops.isfinite(previous), 0.0 * previous, 0.0)
                if flash is not None:  # the core chains its own backward
                    contexts.append(flash_attend(query_block, start, size, zero))
                    continue
                query_block = query_block + ops.cast(zero, query_block.dtype)
            contexts.append(block(query_block, prepared_key, prepared_value))
        context = ops.concatenate(contexts, axis=self._context_query_axis)
        return self._finish_output(context)

    # Hooks of the blocked path; the defaults reuse `_compute_logits` and
    # `_compute_output` (correct for every layer, but projections inside
    # them are then repeated per block: override to compute them once).
    _context_query_axis = 1

    def _prepare_query(self, query, start):
        return query

    def _prepare_key(self, key):
        return key

    def _prepare_value(self, value):
        return value

    def _prepared_logits(self, prepared_query, prepared_key):
        return self._compute_logits(prepared_query, prepared_key)

    def _prepared_context(self, weights, prepared_value):
        return self._compute_output(weights, prepared_value)

    def _finish_output(self, context):
        return context

    # Hooks of the flash path (`attention_core.flash_attention`: no
    # recomputation of the output in the backward pass). A layer whose
    # logits are dot products of its prepared query and key returns them in
    # the core's layout; the default (None) keeps `keras.remat`.
    def _flash_operands(self, prepared_key, prepared_value):
        """`(key (B, K, S, d), value (B, K, S, dv))` or None."""
        return None

    def _flash_query(self, prepared_query):
        """Query heads `(B, K, G, t, d)` whose dot products with the keys of
        `_flash_operands` are the logits (the scale applied)."""
        raise NotImplementedError

    def _flash_context(self, output):
        """The core's output `(B, K, G, t, dv)` as `_prepared_context`
        returns it."""
        raise NotImplementedError

    def _broadcast_mask(self, mask, logits):
        """Adds axes to a `(B, T, S)` mask to match rank-4 logits."""
        if mask is None:
            return None
        while len(mask.shape) < len(logits.shape):
            mask = mask[:, None]
        return mask

    def _drop(self, weights, training):
        if self._seed_generator is None or not training:
            return weights
        return keras.random.dropout(
            weights, self.dropout, seed=self._seed_generator
        )

    def _public_scores(self, weights):
        """The weights as returned to the user; the default is unchanged."""
        return weights

    def _compute_logits(self, query, key):
        raise NotImplementedError

    def _compute_output(self, weights, value):
        raise NotImplementedError

    def compute_mask(self, query, previous_mask=None):
        # The output has one row per query: it keeps the query's mask.
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "dropout": self.dropout,
                "seed": self.seed,
                "query_block_size": self.query_block_size,
            }
        )
        return config
