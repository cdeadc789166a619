"""`BaseAttention`: the call convention and mask handling of every layer.

Subclasses only say how logits are scored and how context vectors become the
output; checking inputs, describing the call's masks, dropout and the choice
of implementation live here, once. The exact, query-blocked and fused
implementations themselves (masks built, unused positions zeroed, float32
softmax) are in `attention_implementations`.
"""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers import attention_implementations as implementations
from keras_attention.layers.output_specs import traced_output_spec
from keras_attention.validation import (
    check_call_bool,
    check_choice,
    check_non_negative_int,
    check_query_block_size,
    check_rank3,
    check_rate,
    check_same_length,
)

__all__ = ["BaseAttention"]


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
    Layers with heads of dot-product logits (`MultiHeadAttention`,
    `SelfAttention`) also take `attention_bias`, a float tensor broadcastable
    to `(B, H, T, S)` added to the logits before the softmax (a relative
    position bias); it is not a mask: masked keys still get exactly 0.

    A query row with no unmasked key gets all-zero weights and a zero context
    vector, on every path and under every dtype policy.

    Subclasses implement `_compute_logits(query, key)` returning float32
    logits `(B, T, S)` (or `(B, H, T, S)`) and `_compute_output(weights,
    value)`; they may override `build_attention(query_shape, value_shape,
    key_shape)` to create weights.

    Implementations (`implementation`; all compute the same function, side
    by side in `attention_implementations`, picked per call by
    `attention_implementations.choose_implementation`):

    - `"exact"`: the `(B, H, T, S)` weights are materialised.
    - `"blocked"`: queries are processed `b = query_block_size` at a time
      (512 unless `query_block_size` is an int) and each block's scores are
      recomputed in the backward pass, so peak memory grows as `b * S`
      instead of `T * S`. Layers whose logits are dot products of prepared
      heads (`MultiHeadAttention`) use `attention_core.flash_attention`,
      whose backward pass recomputes only the weights; the others wrap each
      block in `keras.remat`. Needs a static query length (else exact).
    - `"fused"`: `keras.ops.dot_product_attention` (cuDNN flash attention
      on JAX, SDPA on torch, Splash on TPU), for scaled dot-product scores
      only (`MultiHeadAttention`, `ScaledDotProductAttention`,
      `SelfAttention(score="scaled_dot")`; other layers refuse it at
      construction). Masks are passed explicitly as a boolean `(B, 1, T,
      S)` mask (decode steps stay bottom-right), a fully masked row gets
      exactly 0 and finite gradients, unused positions are zeroed first.
    - `"auto"` (default): fused on a GPU or TPU under JAX or torch, and
      for scaled dot-product scores on torch's CPU; else (CPU under
      TensorFlow or JAX, TensorFlow anywhere: its `dot_product_attention`
      is no fused kernel) blocked once a score matrix reaches 2048 x 2048
      entries (as `query_block_size` says), exact below (for scaled dot
      products with FlashAttention's gradient from the kept weights):
      measured fastest for a training step on CPU
      (docs/concepts/performance.md).

    A call that returns the weights (`return_attention_scores=True`) or
    drops them out (training with `dropout > 0`) needs them materialised:
    it runs the exact path whatever `implementation` says (a documented
    fall-back, not an error, so that the same layer serves training with
    dropout and inference). Outputs agree across implementations within
    float32 rounding (1e-5).

    Args:
        dropout: float in [0, 1), dropout rate on the attention weights
            (training only).
        seed: optional int, the dropout seed.
        query_block_size: `"auto"` (default: blocks of 512 queries once a
            score matrix would reach 2048 x 2048 entries), None (never
            block) or a positive int (block whenever `T` exceeds it); under
            `implementation="blocked"`, the block size (512 unless an int).
        implementation: `"auto"` (default), `"exact"`, `"blocked"` or
            `"fused"`; see above.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`,
            ...).
    """

    # Layout strings used in error messages.
    _query_layout = "(batch, target_len, query_dim)"
    _value_layout = "(batch, source_len, value_dim)"
    _key_layout = "(batch, source_len, key_dim)"

    # Whether the layer's scores can be scaled dot products at all (False:
    # `implementation="fused"` is refused at construction).
    _fused_capable = True

    def __init__(
        self,
        dropout=0.0,
        seed=None,
        query_block_size="auto",
        implementation="auto",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.implementation = check_choice(
            "implementation", implementation, implementations.IMPLEMENTATIONS
        )
        if self.implementation == "fused" and not self._fused_capable:
            raise ValueError(
                f"`{type(self).__name__}` has no scaled dot-product scores, so "
                "no fused kernel: use implementation='auto', 'exact' or "
                "'blocked'. Received: implementation='fused'"
            )
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
        attention_bias=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        use_causal_mask = check_call_bool("use_causal_mask", use_causal_mask)
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        training = check_call_bool("training", training, allow_none=True)
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
        # Masks of lengths known only at run time (a TensorFlow graph) wait
        # for an assertion naming them, before a broadcast fails.
        query_mask, value_mask, key_mask = (
            check_same_length(name, mask, name[: -len("_mask")], x)
            if hasattr(mask, "shape") else mask
            for name, mask, x in (("query_mask", query_mask, query),
                                  ("value_mask", value_mask, value), ("key_mask", key_mask, key))
        )
        mask_parts = self._mask_parts(
            query,
            key,
            query_mask=query_mask,
            key_mask=masks.merge_masks(value_mask, key_mask),
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
        )
        bias = self._check_attention_bias(attention_bias, query, key)
        steps = self._steps(training, query)
        implementation = self._implementation_of_call(
            query, key, return_attention_scores, training, biased=bias is not None
        )
        if implementation == "blocked":
            return implementations.blocked_attention(
                query,
                value,
                key,
                mask_parts,
                steps,
                implementations.block_length(self.query_block_size),
                bias=bias,
            )
        if implementation == "fused":
            return implementations.fused_attention(
                query, value, key, mask_parts, steps, bias=bias
            )
        return implementations.exact_attention(
            query, value, key, mask_parts, steps, return_attention_scores, bias=bias,
            flash_gradient=(
                training is True  # a training call: inference keeps plain ops
                and self._scores_are_scaled_dot_products()
                and not self._dropout_active(training)
            ),
        )

    # The number of heads `H` of the logits, for layers that take a float
    # `attention_bias` (`MultiHeadAttention`); None: the layer takes none.
    _attention_bias_heads = None

    def _check_attention_bias(self, attention_bias, query, key):
        """The call's `attention_bias` as float32 `(B or 1, H or 1, T or 1,
        S or 1)`, or None; refused by layers that take none."""
        if attention_bias is None:
            return None
        if self._attention_bias_heads is None:
            raise ValueError(
                f"`{type(self).__name__}` takes no `attention_bias` (a float "
                "bias added to the logits: `MultiHeadAttention` and "
                "`SelfAttention` take one). Received: attention_bias=<tensor of "
                f"shape {tuple(getattr(attention_bias, 'shape', ()))}>"
            )
        # The batch size is left to broadcasting: torch traces a functional
        # model with a made-up batch size where the input's is None.
        return implementations.check_attention_bias(
            attention_bias,
            batch_size=None,
            num_heads=self._attention_bias_heads,
            query_length=_static(query.shape[1]),
            key_length=_static(key.shape[1]),
        )

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        """`(B, T, Dv)`: one row per query, of the values' size (a layer with
        an output projection overrides it)."""
        key_shape = value_shape if key_shape is None else key_shape
        self._check_shapes(query_shape, value_shape, key_shape)
        return tuple(query_shape[:-1]) + (value_shape[-1],)

    def compute_output_spec(self, query, value, key=None, **kwargs):
        # Traced: the scores' shape and dtype depend on the call's arguments.
        return traced_output_spec(self, query, value, key, **kwargs)

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
        `attention_implementations.block_mask` builds it for any range
        of queries."""
        batch_size = _static(query.shape[0])
        query_length, key_length = query.shape[1], key.shape[1]
        dynamic_key_length = ops.shape(key)[1]
        explicit = None
        if attention_mask is not None:
            explicit = masks.attention_mask(
                attention_mask,
                batch_size=batch_size,
                query_length=_static(query_length),
                key_length=_static(key_length),
            )
            # Static lengths were checked above; these check unknown ones
            # (a TensorFlow graph) when the graph runs.
            explicit = check_same_length("attention_mask", explicit, "query", query, axis=-2)
            explicit = check_same_length("attention_mask", explicit, "key", key, axis=-1)
        if (
            use_causal_mask
            and _static(query_length) is not None
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
            "window": self._band_width(),
            "key_length": dynamic_key_length,
        }

    def _band_width(self):
        """The largest query-key distance a query may attend across (a
        banded mask, built per block), or None (the default: no band)."""
        return None

    # -------------------------------------------------- implementations
    def _dropout_active(self, training):
        return bool(training) and self._seed_generator is not None

    def _scores_are_scaled_dot_products(self):
        """Whether the logits are `(q * scale) . k` (the fused kernels'
        score); the default is False."""
        return False

    def _implementation_of_call(self, query, key, scores_requested, training,
                                biased=False):
        """"exact", "blocked" or "fused" for this call
        (`attention_implementations.choose_implementation`)."""
        backend = keras.backend.backend()
        return implementations.choose_implementation(
            self.implementation,
            backend=backend,
            device=implementations.default_device(backend),
            dtype=self.compute_dtype,
            query_length=_static(query.shape[1]),
            key_length=_static(key.shape[1]),
            scores_requested=bool(scores_requested),
            dropout_active=self._dropout_active(training),
            score_is_scaled_dot=self._scores_are_scaled_dot_products(),
            query_block_size=self.query_block_size,
            biased=biased,
        )

    def _steps(self, training, query=None):
        """This layer's hooks, as the implementations take them (`query`:
        the call's query, for hooks that depend on it)."""
        return implementations.AttentionSteps(
            compute_logits=self._compute_logits,
            compute_output=self._compute_output,
            drop=lambda weights: self._drop(weights, training),
            public_scores=self._public_scores,
            prepare_query=self._prepare_query,
            prepare_key=self._prepare_key,
            prepare_value=self._prepare_value,
            prepared_logits=self._prepared_logits,
            prepared_context=self._prepared_context,
            finish_output=self._finish_output,
            flash_operands=self._flash_operands,
            flash_query=self._flash_query,
            flash_context=self._flash_context,
            context_query_axis=self._context_query_axis,
            remat_safe=(
                keras.backend.backend() != "torch"
                or self.compute_dtype == self.variable_dtype
            ),
            fused_heads=self._fused_heads,
            fused_output=self._fused_output,
            logits_bias=self._logits_bias,
        )

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

    # Hooks of the fused path (`keras.ops.dot_product_attention`), for
    # layers whose `_scores_are_scaled_dot_products()` is True.
    def _fused_heads(self, query, value, key):
        """`(query (B, T, H, d) scaled, key (B, S, K, d), value (B, S, K,
        dv))` in the compute dtype, the logits being `query . key`."""
        raise NotImplementedError

    def _fused_output(self, context):
        """The output from the kernel's contexts `(B, T, H, dv)`."""
        raise NotImplementedError

    def _logits_bias(self, bias):
        """A checked bias `(B or 1, H or 1, T or 1, S or 1)` in the layout
        of this layer's logits (layers with `_attention_bias_heads`)."""
        raise NotImplementedError

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
                "implementation": self.implementation,
            }
        )
        return config
