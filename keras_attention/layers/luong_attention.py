"""`LuongAttention`: the dot, general and concat scores of Luong et al. 2015."""

import keras
from keras import ops

from keras_attention.layers import attention_core
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.quantization import (
    QuantizableSublayers,
    dense_projection,
    refuse_quantization,
)
from keras_attention.validation import check_choice, check_positive_int

SCORES = ("dot", "general", "concat")


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongAttention(QuantizableSublayers, BaseAttention):
    """Global attention with the three scores of Luong et al. (2015).

    For a query (decoder state) `h_t` and keys (encoder states) `h_s`:

    ```
    dot:     e_ts = h_t . h_s
    general: e_ts = h_t . (W_a h_s)              W_a: (Dq, Dk)
    concat:  e_ts = v_a . tanh(W_a [h_t; h_s])   W_a: (Dq + Dk, units),
                                                 v_a: (units,)
    a_ts  = softmax_s(e_ts)   (float32, exact 0 on masked keys)
    c_t   = sum_s a_ts v_s     (the context vector; v_s = value, default h_s)
    ```

    These are the paper's equations (section 3.1), without bias terms and
    without a scale. `keras.layers.Attention` has no `general` score and its
    `concat` score is a scaled `sum(tanh(q + k))` with no `W_a` and `v_a`;
    this layer has both. `W_a` of `concat` is stored as one `(Dq + Dk,
    units)` kernel, exactly the paper's matrix applied to `[h_t; h_s]`.

    The layer returns the context vector `c_t`; the attentional hidden state
    `tanh(W_c [c_t; h_t])` of the paper belongs to the decoder.

    Shapes: `query` `(B, T, Dq)`, `value` `(B, S, Dv)`, `key` `(B, S, Dk)`
    (defaults to `value`); `dot` needs `Dq == Dk`. Output `(B, T, Dv)`,
    weights `(B, T, S)` (float32).

    Args:
        score: `"dot"`, `"general"` (default) or `"concat"`.
        units: size of the `concat` hidden layer; defaults to `Dq`. Only
            valid with `score="concat"`.
        dropout: float in [0, 1), dropout on the attention weights.
        kernel_initializer: initializer of `W_a` and `v_a` (a copy each).
        seed: optional int seed for dropout.
        query_block_size, implementation: see `BaseAttention`
            (`implementation="fused"` is refused: no fused kernel computes
            these scores).
        **kwargs: `keras.layers.Layer` arguments.

    With `score="general"`, `W_a` is a bias-free Keras `Dense` sublayer
    (`query_dense`, applied to the query): `quantize` and `enable_lora` reach
    it. `score="concat"` keeps raw weights (`quantize` raises), `"dot"` has
    none (`model.quantize` warns, as for any weightless layer).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import LuongAttention
    >>> layer = LuongAttention(score="concat", units=8)
    >>> decoder_states = np.random.rand(2, 3, 6).astype("float32")
    >>> encoder_states = np.random.rand(2, 5, 4).astype("float32")
    >>> context = layer(decoder_states, encoder_states)
    >>> tuple(context.shape)
    (2, 3, 4)

    References:
        Luong, Pham, Manning, "Effective Approaches to Attention-based Neural
        Machine Translation", EMNLP 2015.
    """

    _fused_capable = False  # additive / Luong scores: no fused kernel

    def __init__(
        self,
        score="general",
        units=None,
        dropout=0.0,
        kernel_initializer="glorot_uniform",
        seed=None,
        **kwargs,
    ):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        self.score = check_choice("score", score, SCORES)
        self.units = check_positive_int("units", units, allow_none=True)
        if self.units is not None and self.score != "concat":
            raise ValueError(
                "Argument `units` is only used by `score='concat'`. "
                f"Received: units={units}, score={score!r}"
            )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def check_feature_sizes(self, query_shape, value_shape, key_shape):
        if self.score == "dot" and (
            query_shape[-1] is not None
            and key_shape[-1] is not None
            and query_shape[-1] != key_shape[-1]
        ):
            raise ValueError(
                "`score='dot'` needs `query` and `key` to have the same last "
                "dimension; use `score='general'` to learn a projection. "
                f"Received: query.shape={tuple(query_shape)}, "
                f"key.shape={tuple(key_shape)}"
            )

    def build_attention(self, query_shape, value_shape, key_shape):
        query_dim, key_dim = query_shape[-1], key_shape[-1]
        if self.score == "general":
            self.query_dense = dense_projection(
                key_dim, query_shape, "query",
                clone_initializer(self.kernel_initializer), self.dtype_policy,
            )
        elif self.score == "concat":
            units = self.units or query_dim
            self._concat_kernel = self.add_weight(
                name="kernel",
                shape=(query_dim + key_dim, units),
                initializer=clone_initializer(self.kernel_initializer),
            )
            self.score_vector = self.add_weight(
                name="score_vector",
                shape=(units,),
                initializer=clone_initializer(self.kernel_initializer),
            )

    @property
    def kernel(self):
        """`W_a`: `(Dq, Dk)` ("general") or `(Dq + Dk, units)` ("concat")."""
        if self.score == "general":
            return self.query_dense.kernel
        return self._concat_kernel

    def _legacy_projections(self):
        # Before it was a sublayer, the "general" W_a was the own variable.
        return [self.query_dense] if self.score == "general" else []

    def quantize(self, mode=None, type_check=True, config=None):
        """Quantizes `W_a` (score "general"); "concat" raises, "dot" has no
        weights."""
        if self.score == "general":
            return super().quantize(mode, type_check=type_check, config=config)
        refuse_quantization(
            self, mode, "its concat score kernel is a raw variable (score='concat')"
        )

    def _compute_logits(self, query, key):
        if self.score == "dot":
            return attention_core.dot_product_logits(query, key)
        if self.score == "general":
            # q . (W_a k) == (q W_a) . k ; project the (usually shorter) query.
            return attention_core.dot_product_logits(self.query_dense(query), key)
        query_dim = query.shape[-1]
        projected_query = ops.matmul(query, self._concat_kernel[:query_dim])
        projected_key = ops.matmul(key, self._concat_kernel[query_dim:])
        return attention_core.additive_logits(
            projected_query, projected_key, self.score_vector
        )

    def _compute_output(self, weights, value):
        return attention_core.weighted_sum(weights, value)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "units": self.units,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
