"""`PointerGenerator`: a copy-or-generate output head with coverage."""

import math

import keras
import numpy as np
from keras import ops

from keras_attention import masks
from keras_attention.layers import attention_core
from keras_attention.layers.cache_contract import (
    check_memory_cache_dict,
    check_new_positions,
)
from keras_attention.layers.quantization import QuantizableSublayers
from keras_attention.validation import (
    check_bool,
    check_call_bool,
    check_last_dim_known,
    check_non_negative_float,
    check_positive_int,
    check_rank,
    check_same_sizes,
    concrete_values,
)

_STATES_LAYOUT = "(batch, target_len, state_dim)"
_MEMORY_LAYOUT = "(batch, source_len, memory_dim)"
_NEG_INF = float("-inf")
_SOURCE_KEYS = ("memory", "projected_memory", "token_ids", "memory_mask")
_COMPUTE_CACHE_CALL = "compute_cache(memory, source_token_ids, memory_mask)"


def _check_shapes(states_shape, memory_shape, ids_shape):
    """Ranks, known feature sizes, equal batch and source sizes."""
    check_rank("decoder_states", states_shape, 3, _STATES_LAYOUT)
    check_rank("memory", memory_shape, 3, _MEMORY_LAYOUT)
    check_rank(
        "source_token_ids", ids_shape, 2, "(batch, source_len)"
    )
    check_last_dim_known("decoder_states", states_shape)
    check_last_dim_known("memory", memory_shape)
    check_same_sizes(
        "`decoder_states`, `memory` and `source_token_ids` must have the "
        "same batch size",
        (
            ("decoder_states.shape[0]", states_shape[0]),
            ("memory.shape[0]", memory_shape[0]),
            ("source_token_ids.shape[0]", ids_shape[0]),
        ),
    )
    check_same_sizes(
        "`source_token_ids` must have one id per `memory` position "
        "(source_len)",
        (
            ("memory.shape[1]", memory_shape[1]),
            ("source_token_ids.shape[1]", ids_shape[1]),
        ),
    )


@keras.saving.register_keras_serializable(package="keras_attention")
class PointerGenerator(QuantizableSublayers, keras.layers.Layer):
    """Pointer-generator output head with coverage (See et al., 2017).

    Put on top of any decoder: given the decoder states `s_t`, the encoder
    outputs `h_i` (the memory) and the source token ids, it returns, for each
    target step, a distribution over the (fixed) vocabulary that mixes
    generating a word and copying a source token. For every step `t`
    (coverage `c_0 = 0`):

    ```
    e_ti   = v . tanh(W_h h_i + W_s s_t + w_c c_ti + b)   (Bahdanau + coverage)
    a_t    = masked softmax_i(e_ti)        (float32, exact 0 on masked i)
    c_t+1  = c_t + a_t                     (c_t = sum_{t' < t} a_t', exclusive)
    h*_t   = sum_i a_ti h_i                (the context)
    P_voc  = softmax(V' (V [s_t ; h*_t] + b) + b')       (two linear layers)
    p_gen  = sigmoid(w_h* . h*_t + w_s . s_t + b_ptr)
    P(w)   = p_gen P_voc(w) + (1 - p_gen) sum_{i : source_i = w} a_ti
    covloss_t = sum_i min(a_ti, c_ti)      (the coverage loss, eq. 12)
    ```

    With `use_coverage=False` the coverage term `w_c c_ti` is dropped (and
    no coverage loss is added). The layer returns `log P(w)`, computed in
    log space (`log p_gen = log_sigmoid(.)`, `log_softmax`, a stable
    log-sum-exp of the two branches) in float32, so it is finite for every
    word and safe to feed to a negative log-likelihood:
    `-take_along_axis(log_probs, targets)`.

    Deviation from the paper: See et al. also feed the decoder input `x_t`
    to the switch (`+ w_x . x_t`); this layer only sees the decoder states,
    so `p_gen` depends on `s_t` and `h*_t` only (a decoder whose state
    depends on `x_t`, as any RNN's does, still informs the switch).

    Masking: source positions masked by `memory_mask` (or the Keras mask of
    `memory`) get attention exactly 0, so they add nothing to the copy
    distribution, the coverage or the coverage loss, and NaN stored there
    cannot reach the outputs. A target step masked by `decoder_states_mask`
    (or the Keras mask of `decoder_states`) gets all-zero attention, adds
    nothing to the coverage and is left out of the coverage-loss mean.
    Whenever a step has no source position to copy from (a masked step, a
    fully masked or empty source) the copy mass goes to the vocabulary:
    `p_gen` is 1 there, so `exp(log_probs)` always sums to 1. The output
    keeps the mask of `decoder_states`.

    The coverage loss `coverage_loss_weight * mean_t covloss_t` (the mean
    over the batch and the unmasked target steps) is added with `add_loss`
    on every `call` when `use_coverage=True` and the weight is > 0; `fit`
    adds it to the compiled loss.

    `call` loops over the target axis, since `a_t` depends on the coverage
    of the earlier steps (a Python loop for a static `T`, an
    `ops.while_loop` for a dynamic one). Generation uses the contract of
    every cached layer (docs/concepts/caches.md): `compute_cache(memory,
    source_token_ids, memory_mask)` once, `init_cache(batch, max_length,
    memory_cache)` (the coverage `c_0 = 0`), then `call_cached(inputs,
    coverage, index, memory_cache=...)` -> `(log_probs, coverage,
    attention)` per step.

    Shapes: `decoder_states` `(B, T, D)`, `memory` `(B, S, Dm)`,
    `source_token_ids` `(B, S)` integer ids in `[0, vocabulary_size)` ->
    `log_probs` `(B, T, V)` float32 (whatever the dtype policy);
    with `return_attention_scores=True` also the attention `(B, T, S)` and
    `p_gen` `(B, T)` (float32). Source ids must be an integer tensor (float
    ids are cast to the compute dtype by Keras, which rounds large ids under
    mixed precision). Ids outside `[0, vocabulary_size)` at unmasked
    positions raise a `ValueError` when their values are known (eager
    calls); masked positions may hold any id. Memory grows as
    `B * S * units` per step plus the `(B, T, V)` output.

    Args:
        vocabulary_size: positive int `V`, the size of the output
            vocabulary (source tokens are copied into it by id).
        units: positive int, the size of the attention's hidden layer and
            of the hidden layer `V` of the vocabulary distribution.
        use_coverage: bool (default True), the coverage mechanism.
        coverage_loss_weight: float >= 0 (default 1.0), the weight `lambda`
            of the coverage loss; 0 adds no loss.
        **kwargs: `keras.layers.Layer` arguments.

    The vocabulary distribution's `V` and `V'` are Keras `Dense` sublayers
    (`hidden_dense`, `vocabulary_dense`: the `(units, V)` matrix is the
    layer's largest), so `quantize` and `enable_lora` reach them; the
    attention's and the switch's weights stay float32 variables. Files saved
    when `V` and `V'` were own variables still load.

    Call arguments:
        decoder_states: `(B, T, D)`, the decoder's outputs `s_t`.
        memory: `(B, S, Dm)`, the encoder outputs `h_i`.
        source_token_ids: `(B, S)` integer, the vocabulary id of each source
            token (out-of-vocabulary source words need an extended
            vocabulary: make `V` large enough to hold their ids).
        decoder_states_mask: optional boolean `(B, T)`, True on real target
            steps (filled from the Keras mask of `decoder_states`).
        memory_mask: optional boolean `(B, S)`, True on real source tokens
            (filled from the Keras mask of `memory`).
        return_attention_scores: bool; if True returns
            `(log_probs, attention, p_gen)`.
        training: bool (unused: the layer has no dropout).

    Example:

    >>> import numpy as np
    >>> from keras_attention.layers import PointerGenerator
    >>> head = PointerGenerator(vocabulary_size=12, units=8)
    >>> decoder_states = np.random.rand(2, 3, 6).astype("float32")  # (B, T, D)
    >>> memory = np.random.rand(2, 5, 4).astype("float32")          # (B, S, Dm)
    >>> source_ids = np.array([[3, 7, 7, 1, 0], [2, 5, 9, 0, 0]])   # (B, S)
    >>> log_probs, attention, p_gen = head(
    ...     decoder_states, memory, source_ids,
    ...     memory_mask=source_ids > 0, return_attention_scores=True)
    >>> tuple(log_probs.shape), tuple(attention.shape), tuple(p_gen.shape)
    ((2, 3, 12), (2, 3, 5), (2, 3))
    >>> np.allclose(np.exp(log_probs).sum(-1), 1.0, atol=1e-5)
    True
    >>> float(np.asarray(attention)[1, :, 3:].max())   # masked: exactly 0
    0.0
    >>> memory_cache = head.compute_cache(memory, source_ids,   # once
    ...                                   memory_mask=source_ids > 0)
    >>> coverage = head.init_cache(2, 3, memory_cache)         # zeros (B, S)
    >>> log_probs_0, coverage, attention_0 = head.call_cached(  # one step
    ...     decoder_states[:, :1], coverage, 0, memory_cache=memory_cache)
    >>> np.allclose(log_probs_0, np.asarray(log_probs)[:, :1], atol=1e-5)
    True

    References:
        See, Liu, Manning, "Get To The Point: Summarization with
        Pointer-Generator Networks", ACL 2017.
    """

    def __init__(
        self,
        vocabulary_size,
        units,
        use_coverage=True,
        coverage_loss_weight=1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int(
            "vocabulary_size", vocabulary_size
        )
        self.units = check_positive_int("units", units)
        self.use_coverage = check_bool("use_coverage", use_coverage)
        self.coverage_loss_weight = check_non_negative_float(
            "coverage_loss_weight", coverage_loss_weight
        )
        self.supports_masking = True

    # ----------------------------------------------------------------- build
    def build(
        self, decoder_states_shape, memory_shape, source_token_ids_shape=None
    ):
        if source_token_ids_shape is None:
            source_token_ids_shape = tuple(memory_shape[:2])
        _check_shapes(decoder_states_shape, memory_shape, source_token_ids_shape)
        state_dim, memory_dim = decoder_states_shape[-1], memory_shape[-1]
        units, vocab = self.units, self.vocabulary_size

        def weight(name, shape, initializer="glorot_uniform"):
            return self.add_weight(name=name, shape=shape, initializer=initializer)

        # Attention: v . tanh(W_h h_i + W_s s_t + w_c c_ti + b).
        self.memory_kernel = weight("memory_kernel", (memory_dim, units))  # W_h
        self.state_kernel = weight("state_kernel", (state_dim, units))  # W_s
        if self.use_coverage:
            self.coverage_kernel = weight(  # w_c
                "coverage_kernel", (units,), "random_normal"
            )
        self.attention_bias = weight("attention_bias", (units,), "zeros")  # b
        self.score_vector = self.add_weight(  # v
            name="score_vector",
            shape=(units,),
            initializer=keras.initializers.RandomUniform(
                -1.0 / math.sqrt(units), 1.0 / math.sqrt(units)
            ),
        )
        # Vocabulary distribution: V' (V [s_t ; h*_t] + b) + b'.
        self.hidden_dense = self._vocabulary_projection(
            "hidden", units, (None, state_dim + memory_dim)
        )
        self.vocabulary_dense = self._vocabulary_projection(
            "vocabulary", vocab, (None, units)
        )
        # Switch: sigmoid(w_h* . h*_t + w_s . s_t + b_ptr).
        self.pointer_context_kernel = weight(
            "pointer_context_kernel", (memory_dim, 1)
        )
        self.pointer_state_kernel = weight("pointer_state_kernel", (state_dim, 1))
        self.pointer_bias = weight("pointer_bias", (), "zeros")
        self.built = True

    def _vocabulary_projection(self, name, units, input_shape):
        """A Keras `Dense` of the vocabulary distribution (`V` or `V'`)."""
        projection = keras.layers.Dense(
            units, kernel_initializer="glorot_uniform", dtype=self.dtype_policy, name=name
        )
        projection.build(input_shape)
        return projection

    # `V`, `b`, `V'`, `b'` of the vocabulary distribution (sublayer variables).
    hidden_kernel = property(lambda self: self.hidden_dense.kernel)
    hidden_bias = property(lambda self: self.hidden_dense.bias)
    output_kernel = property(lambda self: self.vocabulary_dense.kernel)
    output_bias = property(lambda self: self.vocabulary_dense.bias)

    def _legacy_projections(self):
        return [self.hidden_dense, self.vocabulary_dense]

    def _legacy_variables(self):
        # The order of the own variables before `V` and `V'` were sublayers.
        attention = [self.memory_kernel, self.state_kernel]
        if self.use_coverage:
            attention.append(self.coverage_kernel)
        return attention + [
            self.attention_bias,
            self.score_vector,
            self.hidden_kernel,
            self.hidden_bias,
            self.output_kernel,
            self.output_bias,
            self.pointer_context_kernel,
            self.pointer_state_kernel,
            self.pointer_bias,
        ]

    # -------------------------------------------------------------- helpers
    def _check_token_ids(self, source_token_ids, memory_mask):
        """Integer ids in `[0, V)` at unmasked positions, when known."""
        ids = source_token_ids
        dtype = keras.backend.standardize_dtype(ids.dtype)
        if "int" not in dtype and "float" not in dtype:
            raise ValueError(
                "`source_token_ids` must be an integer tensor. "
                f"Received: source_token_ids with dtype {dtype}"
            )
        values = concrete_values(ids)
        if values is None or values.size == 0:
            return
        used = np.ones(values.shape, bool)
        if memory_mask is not None:
            mask_values = concrete_values(memory_mask)
            if mask_values is not None:
                used = np.broadcast_to(mask_values.astype(bool), values.shape)
        values = values[used]
        if values.size == 0:
            return
        if "float" in dtype and not np.all(np.floor(values) == values):
            raise ValueError(
                "`source_token_ids` must hold integer token ids. Received: "
                f"source_token_ids with non-integer values, e.g. "
                f"{values[np.floor(values) != values][0].item()!r}"
            )
        low, high = values.min().item(), values.max().item()
        if low < 0 or high >= self.vocabulary_size:
            raise ValueError(
                "`source_token_ids` must hold ids in [0, vocabulary_size="
                f"{self.vocabulary_size}) at every unmasked source position. "
                f"Received: source_token_ids with min={low!r}, max={high!r}"
            )

    def _prepare_source(self, memory, source_token_ids, memory_mask):
        """What every step reuses: the zeroed memory, `W_h h_i + b`, the
        ids (0 on masked positions) and the `(B, S)` key mask."""
        memory = ops.convert_to_tensor(memory)
        source_token_ids = ops.convert_to_tensor(source_token_ids)
        self._check_token_ids(source_token_ids, memory_mask)
        memory = ops.cast(memory, self.compute_dtype)
        ids = ops.cast(source_token_ids, "int32")
        key_mask = None
        if memory_mask is not None:
            key_mask = masks.merge_masks(memory_mask)  # boolean (B, S)
            memory = attention_core.zero_unused_positions(memory, key_mask)
            ids = ops.where(key_mask, ids, ops.zeros_like(ids))
        projected = ops.cast(
            ops.matmul(memory, ops.cast(self.memory_kernel, memory.dtype)),
            "float32",
        ) + ops.cast(self.attention_bias, "float32")  # (B, S, U)
        return memory, projected, ids, key_mask

    def _copy_distribution(self, attention, ids):
        """`sum_{i: ids_i = w} a_ti`: scatter-add `(B, T, S)` onto `(B, T, V)`."""
        shape = ops.shape(attention)
        rows = shape[0] * shape[1]
        source_length = shape[2]
        ids = ops.reshape(
            ops.repeat(ids[:, None, :], shape[1], axis=1), (rows, source_length)
        )
        row_ids = ops.repeat(
            ops.arange(rows, dtype="int32")[:, None], source_length, axis=1
        )
        indices = ops.reshape(ops.stack([row_ids, ids], axis=-1), (-1, 2))
        copy = ops.scatter(
            indices, ops.reshape(attention, (-1,)), (rows, self.vocabulary_size)
        )
        return ops.reshape(copy, (shape[0], shape[1], self.vocabulary_size))

    def _project_states(self, states):
        """`W_s s_t` for every step at once: `(B, T, D)` -> `(B, T, units)`."""
        return ops.matmul(states, ops.cast(self.state_kernel, states.dtype))

    def _attend(self, projected_state, source, coverage, step_mask=None):
        """One step of the coverage attention, the only sequential part.

        `e_ti = v . tanh(W_h h_i + b + w_c c_ti + W_s s_t)` over the
        `(B, units)` `projected_state`; returns `attention (B, S)`,
        `covloss (B,)` and the new coverage `(B, S)`, float32.
        """
        memory, projected_memory, _, key_mask = source
        mask = masks.padding_mask(
            None if step_mask is None else step_mask[:, None],
            key_mask,
            query_length=1,
            key_length=ops.shape(memory)[1],
        )  # (B, 1, S) or None
        keys = projected_memory
        if self.use_coverage:
            keys = keys + coverage[:, :, None] * ops.cast(
                self.coverage_kernel, "float32"
            )
        logits = attention_core.additive_logits(
            projected_state[:, None, :], keys, self.score_vector
        )  # (B, 1, S)
        attention = attention_core.masked_softmax(logits, mask)[:, 0]
        covloss = ops.sum(ops.minimum(attention, coverage), axis=-1)
        return attention, covloss, coverage + attention

    def _mix(self, states, attention, source):
        """Generate-or-copy for every step at once.

        `states (B, T, D)` (zero on masked steps) and `attention (B, T, S)`
        -> `log_probs (B, T, V)` and `p_gen (B, T)`, float32.
        """
        memory, _, ids, _ = source
        context = attention_core.weighted_sum(attention, memory)  # (B, T, Dm)
        # P_vocab, in log space.
        features = ops.concatenate([states, ops.cast(context, states.dtype)], -1)
        vocab_logits = self.vocabulary_dense(self.hidden_dense(features))
        log_vocab = ops.log_softmax(ops.cast(vocab_logits, "float32"), axis=-1)

        # The switch; with nothing to copy from, everything is generated.
        switch = ops.cast(
            ops.matmul(context, ops.cast(self.pointer_context_kernel, context.dtype))
            + ops.matmul(states, ops.cast(self.pointer_state_kernel, states.dtype)),
            "float32",
        )[..., 0] + ops.cast(self.pointer_bias, "float32")  # (B, T)
        has_source = ops.greater(ops.sum(attention, axis=-1), 0.5)
        p_gen = ops.where(has_source, ops.sigmoid(switch), 1.0)
        log_p_gen = ops.where(has_source, ops.log_sigmoid(switch), 0.0)
        log_p_copy = ops.where(has_source, ops.log_sigmoid(-switch), _NEG_INF)

        # P(w) = p_gen P_vocab(w) + (1 - p_gen) copy(w), as a log-sum-exp.
        copy = self._copy_distribution(attention, ids)  # (B, T, V)
        present = ops.greater(copy, 0.0)
        log_copy = ops.where(
            present, ops.log(ops.where(present, copy, 1.0)), _NEG_INF
        )
        generate = log_p_gen[..., None] + log_vocab  # finite
        point = log_p_copy[..., None] + log_copy  # -inf where nothing to copy
        top = ops.stop_gradient(ops.maximum(generate, point))
        log_probs = top + ops.log(ops.exp(generate - top) + ops.exp(point - top))
        return log_probs, p_gen

    def _positions_step(self, states, coverage, source):
        """The generation steps of `t` new positions on prepared source data:
        `states (B, t, D)` -> `(log_probs (B, t, V), new_coverage (B, S),
        attention (B, t, S))`, float32."""
        states = ops.cast(states, self.compute_dtype)
        projected_states = self._project_states(states)  # (B, t, U)
        coverage = ops.cast(coverage, "float32")
        attentions = []
        for t in range(states.shape[1]):
            attention_t, _, coverage = self._attend(
                projected_states[:, t], source, coverage
            )
            attentions.append(attention_t)
        attention = ops.stack(attentions, axis=1)
        log_probs, _ = self._mix(states, attention, source)
        return log_probs, coverage, attention

    # ----------------------------------------------------------------- cache
    def compute_cache(self, memory, source_token_ids, memory_mask=None):
        """The memory cache: what every generation step reuses, computed
        once per source.

        Args:
            memory: `(B, S, Dm)`.
            source_token_ids: `(B, S)` integer ids.
            memory_mask: optional boolean `(B, S)`, True on real tokens.

        Returns:
            A dict of tensors, all with batch first (so a beam search can
            tile it): the zeroed `memory` `(B, S, Dm)`, its projection
            `W_h h_i + b` `(B, S, units)` (float32), the `token_ids` `(B, S)`
            (0 on masked positions) and the boolean `memory_mask` `(B, S)`.
        """
        memory = ops.convert_to_tensor(memory)
        if memory_mask is None:
            memory_mask = ops.ones(ops.shape(memory)[:2], "bool")
        memory, projected, ids, key_mask = self._prepare_source(
            memory, source_token_ids, memory_mask
        )
        return {
            "memory": memory,
            "projected_memory": projected,
            "token_ids": ids,
            "memory_mask": key_mask,
        }

    def init_cache(self, batch_size, max_length, memory_cache):
        """The step cache: the coverage `c_0 = 0`, float32 `(B, S)`.

        Args:
            batch_size: int `B`.
            max_length: int, the number of target positions (the coverage
                has a fixed size: accepted for the contract, not used).
            memory_cache: from `compute_cache`, which gives `S`.
        """
        del max_length
        self._check_memory_cache(memory_cache)
        ids = memory_cache["token_ids"]
        if isinstance(batch_size, int):
            check_same_sizes(
                "`batch_size` must be the batch size of `memory_cache`",
                (("batch_size", batch_size), ("memory_cache batch", ids.shape[0])),
            )
        return ops.zeros((batch_size, ops.shape(ids)[1]), "float32")

    @staticmethod
    def _check_memory_cache(memory_cache):
        check_memory_cache_dict(memory_cache, _SOURCE_KEYS, _COMPUTE_CACHE_CALL)

    def call_cached(
        self,
        inputs,
        cache,
        cache_update_index=None,
        *,
        memory_cache,
        training=False,
    ):
        """`t` new target positions; returns `(log_probs, cache,
        attention)`, the order of every cached layer.

        Args:
            inputs: `(B, t, D)`, the decoder states `s_t` of the new
                positions (`t` static).
            cache: the coverage `(B, S)`, from `init_cache` or the previous
                step.
            cache_update_index: the position of the first new token
                (accepted for the contract; the coverage has no positions).
            memory_cache: from `compute_cache`.
            training: bool (unused: the layer has no dropout).

        Returns:
            `log_probs (B, t, V)`, the new coverage `(B, S)` (the old one
            plus the attention of the `t` positions) and the attention
            `(B, t, S)`, float32.
        """
        training = check_call_bool("training", training, allow_none=True)
        del cache_update_index, training
        self._check_memory_cache(memory_cache)
        inputs = check_new_positions(inputs, _STATES_LAYOUT)
        cache = ops.convert_to_tensor(cache)
        self._check_coverage(cache, memory_cache["token_ids"].shape, "cache")
        source = tuple(memory_cache[key] for key in _SOURCE_KEYS)
        return self._positions_step(inputs, cache, source)

    @staticmethod
    def _check_coverage(coverage, ids_shape, name):
        check_rank(name, coverage.shape, 2, "(batch, source_len)")
        for axis in (0, 1):
            check_same_sizes(
                f"`{name}` must have the shape (batch, source_len) of "
                "`source_token_ids`",
                (
                    (f"{name}.shape[{axis}]", coverage.shape[axis]),
                    (f"source_token_ids.shape[{axis}]", ids_shape[axis]),
                ),
            )

    # ------------------------------------------------------------------ call
    def call(
        self,
        decoder_states,
        memory,
        source_token_ids,
        *,
        decoder_states_mask=None,
        memory_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        return_attention_scores = check_call_bool("return_attention_scores",
                                                  return_attention_scores)
        training = check_call_bool("training", training, allow_none=True)
        decoder_states = ops.convert_to_tensor(decoder_states)
        memory = ops.convert_to_tensor(memory)
        source_token_ids = ops.convert_to_tensor(source_token_ids)
        _check_shapes(decoder_states.shape, memory.shape, source_token_ids.shape)
        source = self._prepare_source(memory, source_token_ids, memory_mask)
        state_mask = None
        if decoder_states_mask is not None:
            state_mask = masks.merge_masks(decoder_states_mask)  # (B, T)
        decoder_states = ops.cast(decoder_states, self.compute_dtype)
        log_probs, attention, p_gen, covloss = self._decode(
            decoder_states, source, state_mask
        )
        if self.use_coverage and self.coverage_loss_weight > 0:
            self.add_loss(
                self.coverage_loss_weight * self._mean(covloss, state_mask)
            )
        if return_attention_scores:
            return log_probs, attention, p_gen
        return log_probs

    def compute_output_shape(
        self, decoder_states_shape, memory_shape, source_token_ids_shape=None
    ):
        """`(B, T, V)`: the log-probabilities of every target step."""
        if source_token_ids_shape is None:
            source_token_ids_shape = tuple(memory_shape[:2])
        _check_shapes(decoder_states_shape, memory_shape, source_token_ids_shape)
        return tuple(decoder_states_shape[:2]) + (self.vocabulary_size,)

    def compute_output_spec(
        self,
        decoder_states,
        memory,
        source_token_ids=None,
        *,
        return_attention_scores=False,
        **kwargs,
    ):
        # Not traced: `call` adds the coverage loss. Every output is float32,
        # whatever the dtype policy.
        ids_shape = None if source_token_ids is None else source_token_ids.shape
        shape = self.compute_output_shape(decoder_states.shape, memory.shape, ids_shape)
        log_probs = keras.KerasTensor(shape, dtype="float32")
        if not check_call_bool("return_attention_scores", return_attention_scores):
            return log_probs
        steps = tuple(decoder_states.shape[:2])
        attention = keras.KerasTensor(steps + (memory.shape[1],), dtype="float32")
        return log_probs, attention, keras.KerasTensor(steps, dtype="float32")

    @staticmethod
    def _mean(covloss, state_mask):
        """Mean of `(B, T)` over the batch and the unmasked steps."""
        if state_mask is None:
            weights = ops.ones_like(covloss)
        else:
            weights = ops.cast(state_mask, "float32")
        total = ops.sum(covloss * weights)
        return total / ops.maximum(ops.sum(weights), 1.0)

    def _initial_coverage(self, source):
        memory = source[0]
        shape = ops.shape(memory)
        return ops.zeros((shape[0], shape[1]), "float32")

    def _decode(self, decoder_states, source, state_mask):
        """All target steps: a loop over the coverage attention only, then
        the generate-or-copy mixture for every step at once.

        Returns `log_probs (B, T, V)`, `attention (B, T, S)`, `p_gen (B, T)`
        and `covloss (B, T)`. A static `T` is unrolled (see
        `AttentionRNNDecoder._decode`: a symbolic loop with an unknown batch
        size cannot be differentiated under XLA); a dynamic `T` uses
        `ops.while_loop`.
        """
        if state_mask is not None:
            decoder_states = attention_core.zero_unused_positions(
                decoder_states, state_mask
            )
        projected_states = self._project_states(decoder_states)  # (B, T, U)
        length = decoder_states.shape[1]
        if not isinstance(length, int) or length == 0:  # None, or JAX's symbolic dim
            attention, covloss = self._attend_in_loop(
                projected_states, source, state_mask
            )
        else:
            coverage = self._initial_coverage(source)
            steps = []
            for t in range(length):
                step_mask = None if state_mask is None else state_mask[:, t]
                attention_t, covloss_t, coverage = self._attend(
                    projected_states[:, t], source, coverage, step_mask
                )
                steps.append((attention_t, covloss_t))
            attention, covloss = (ops.stack(parts, axis=1) for parts in zip(*steps))
        log_probs, p_gen = self._mix(decoder_states, attention, source)
        return log_probs, attention, p_gen, covloss

    def _attend_in_loop(self, projected_states, source, state_mask):
        """The attention steps of `_decode` in an `ops.while_loop`, written
        into `(T, B, S)` and `(T, B)` buffers."""
        batch_size = ops.shape(projected_states)[0]
        length = ops.shape(projected_states)[1]
        source_length = ops.shape(source[0])[1]
        buffers = (
            ops.zeros((length, batch_size, source_length), "float32"),
            ops.zeros((length, batch_size), "float32"),
        )

        def body(t, coverage, buffers):
            step_mask = None
            if state_mask is not None:
                step_mask = ops.take(state_mask, t, axis=1)
            attention, covloss, coverage = self._attend(
                ops.take(projected_states, t, axis=1), source, coverage, step_mask
            )
            row = ops.reshape(t, (1, 1))
            buffers = tuple(
                ops.scatter_update(buffer, row, value[None])
                for buffer, value in zip(buffers, (attention, covloss))
            )
            return t + 1, coverage, buffers

        _, _, (attention, covloss) = ops.while_loop(
            lambda t, *_: t < length,
            body,
            (
                ops.convert_to_tensor(0, "int32"),
                self._initial_coverage(source),
                buffers,
            ),
            maximum_iterations=length,
        )
        return ops.transpose(attention, (1, 0, 2)), ops.transpose(covloss, (1, 0))

    def compute_mask(self, decoder_states, previous_mask=None):
        # One output row per target step: it keeps the mask of the states.
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "units": self.units,
                "use_coverage": self.use_coverage,
                "coverage_loss_weight": self.coverage_loss_weight,
            }
        )
        return config
