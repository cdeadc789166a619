"""`BahdanauAttention`: additive attention `v . tanh(W q + U k)`."""

import math

import keras
from keras import ops

from keras_attention.layers import attention_core
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.initializer_copies import clone_initializer
from keras_attention.layers.quantization import (
    QuantizableSublayers,
    dense_projection,
)
from keras_attention.validation import check_bool, check_positive_int


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauAttention(QuantizableSublayers, BaseAttention):
    """Additive attention of Bahdanau et al. (2015), with its projections.

    For a query (decoder state) `s` and keys (annotations) `h_s`:

    ```
    e_ts  = v . tanh(W s_t + U h_s)            W: (Dq, units), U: (Dk, units)
    a_ts  = softmax_s(e_ts)   (float32, exact 0 on masked keys)
    c_t   = sum_s a_ts v_s     (the context; values default to the keys)
    ```

    With `normalize=True` the score vector is weight-normalised and a bias
    is added, as in TensorFlow Addons' `BahdanauAttention(normalize=True)`
    (Salimans & Kingma, 2016):

    ```
    e_ts  = (g v / ||v||) . tanh(W s_t + U h_s + b)
    ```

    `keras.layers.AdditiveAttention` computes `sum(scale * tanh(q + k))`
    with no `W` and no `U`; this layer owns both projections, as in the
    paper.

    Shapes: `query` `(B, T, Dq)`, `value` `(B, S, Dv)`, `key` `(B, S, Dk)`
    (defaults to `value`); any `Dq`, `Dk`. Output `(B, T, Dv)`, weights
    `(B, T, S)` (float32). Memory grows as `B * T * S * units`.

    Args:
        units: positive int, the size of the hidden layer of the score.
        normalize: bool, weight-normalise `v` and add a bias `b`.
        dropout: float in [0, 1), dropout on the attention weights.
        kernel_initializer: initializer of `W`, `U` and `v` (a copy each).
        seed: optional int seed for dropout.
        query_block_size, implementation: see `BaseAttention`
            (`implementation="fused"` is refused: no fused kernel computes
            these scores).
        **kwargs: `keras.layers.Layer` arguments.

    `W` and `U` are bias-free Keras `Dense` sublayers (`query_dense`,
    `key_dense`): `quantize` and `enable_lora` reach them
    (`QuantizableSublayers`); `v` (and `g`, `b`) stay float32 variables.
    Files saved when `W` and `U` were own variables still load.

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import BahdanauAttention
    >>> layer = BahdanauAttention(units=16)
    >>> decoder_states = np.random.rand(2, 3, 8).astype("float32")
    >>> annotations = np.random.rand(2, 5, 6).astype("float32")
    >>> context, weights = layer(decoder_states, annotations,
    ...                          return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 6), (2, 3, 5))

    References:
        Bahdanau, Cho, Bengio, "Neural Machine Translation by Jointly
        Learning to Align and Translate", ICLR 2015.
    """

    _fused_capable = False  # additive / Luong scores: no fused kernel

    def __init__(
        self,
        units,
        normalize=False,
        dropout=0.0,
        kernel_initializer="glorot_uniform",
        seed=None,
        **kwargs,
    ):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        self.units = check_positive_int("units", units)
        self.normalize = check_bool("normalize", normalize)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build_attention(self, query_shape, value_shape, key_shape):
        policy = self.dtype_policy
        self.query_dense = dense_projection(  # W
            self.units, query_shape, "query",
            clone_initializer(self.kernel_initializer), policy,
        )
        self.key_dense = dense_projection(  # U
            self.units, key_shape, "key",
            clone_initializer(self.kernel_initializer), policy,
        )
        self.score_vector = self.add_weight(
            name="score_vector",
            shape=(self.units,),
            initializer=clone_initializer(self.kernel_initializer),
        )
        if self.normalize:
            self.score_gain = self.add_weight(
                name="score_gain",
                shape=(),
                initializer=keras.initializers.Constant(
                    math.sqrt(1.0 / self.units)
                ),
            )
            self.score_bias = self.add_weight(
                name="score_bias", shape=(self.units,), initializer="zeros"
            )

    def _legacy_projections(self):
        # Before they were sublayers, W and U were the first own variables.
        return [self.query_dense, self.key_dense]

    query_kernel = property(lambda self: self.query_dense.kernel)
    key_kernel = property(lambda self: self.key_dense.kernel)

    def project_query(self, query):
        """`W q` (plus `b` when normalized): `(B, T, Dq) -> (B, T, units)`."""
        projected = self.query_dense(query)
        if self.normalize:
            projected = projected + self.score_bias
        return projected

    def project_key(self, key):
        """`U k`: `(B, S, Dk) -> (B, S, units)`; computable once per source."""
        return self.key_dense(key)

    def _score_vector(self):
        if not self.normalize:
            return self.score_vector
        v = ops.cast(self.score_vector, "float32")
        return ops.cast(self.score_gain, "float32") * v / ops.sqrt(
            ops.sum(ops.square(v))
        )

    def _compute_logits(self, query, key):
        return attention_core.additive_logits(
            self.project_query(query), self.project_key(key), self._score_vector()
        )

    def _compute_output(self, weights, value):
        return attention_core.weighted_sum(weights, value)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "normalize": self.normalize,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
