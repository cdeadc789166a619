"""keras-hub's own layer tests, run against `keras_attention.compat.keras_hub`.

The test methods below are keras-hub's, rewritten with only the class import
switched to ours: their inputs, arguments and assertions, on keras-hub's own
harness (`keras_hub.src.tests.test_case.TestCase`, installed with keras-hub).
Source: keras-team/keras-hub (v0.32 line), Apache-2.0, files
keras_hub/src/layers/modeling/{transformer_encoder,transformer_decoder,
token_and_position_embedding,cached_multi_head_attention}_test.py. The tests
that read keras-hub's private sublayers (`_self_attention_layer_norm`,
`_value_dense`, `_combine_equation`, ...) read the compat layers' aliases of
those names, and are followed by the same check on our public sublayers.

After them: with weights copied from keras-hub's layers, the compat layers'
outputs equal keras-hub's (every call form), and `.keras` files round-trip.
"""

import importlib.util
import sys
import types

import keras
import numpy as np
import pytest

keras_hub = pytest.importorskip("keras_hub")
if importlib.util.find_spec("grain") is None:
    # keras-hub's harness imports `grain` for its preprocessing-layer tests
    # only, none of which run here.
    sys.modules["grain"] = types.ModuleType("grain")

from absl.testing import parameterized  # noqa: E402 (after the skip)
from keras import ops, random  # noqa: E402
from keras_hub.src.tests.test_case import TestCase  # noqa: E402

from keras_attention.compat import keras_hub as compat_hub  # noqa: E402
from keras_attention.compat.keras_hub import (  # noqa: E402
    CachedMultiHeadAttention,
    TokenAndPositionEmbedding,
    TransformerDecoder,
    TransformerEncoder,
)
from tests.layers.keras_hub_compat_test import copy_keras_hub_weights  # noqa: E402
from tests.test_case import to_numpy  # noqa: E402

BLOCK_KWARGS = {
    "intermediate_dim": 4,
    "num_heads": 2,
    "activation": "relu",
    "layer_norm_epsilon": 1e-05,
    "kernel_initializer": "HeNormal",
    "bias_initializer": "Zeros",
    "dropout": 0.1,
}


class TransformerEncoderTest(TestCase):
    @parameterized.named_parameters(("without_norm_first", False), ("with_norm_first", True))
    def test_layer_behaviors(self, normalize_first):
        self.run_layer_test(
            cls=TransformerEncoder,
            init_kwargs={**BLOCK_KWARGS, "normalize_first": normalize_first},
            input_data=random.uniform(shape=(2, 4, 6)),
            expected_output_shape=(2, 4, 6),
            expected_num_trainable_weights=16,
            expected_num_non_trainable_variables=3,  # dropout rng seeds
        )

    @parameterized.named_parameters(("without_norm_first", False), ("with_norm_first", True))
    def test_valid_call(self, normalize_first):
        encoder = TransformerEncoder(intermediate_dim=4, num_heads=2,
                                     normalize_first=normalize_first)
        model = keras.Sequential([keras.Input(shape=(4, 6)), encoder])
        model(random.uniform(shape=[2, 4, 6]))

    def test_valid_call_with_mask(self):
        encoder = TransformerEncoder(intermediate_dim=4, num_heads=2)
        encoder.build([2, 4, 6])
        inputs = random.uniform(shape=[2, 4, 6])
        encoder(inputs, inputs[:, :, 0] < 0.5)

    def test_value_error_when_invalid_kernel_inititalizer(self):
        with self.assertRaises(ValueError):
            TransformerEncoder(intermediate_dim=4, num_heads=2, dropout=0.5,
                               kernel_initializer="Invalid")

    def test_training_propagation(self):
        encoder = TransformerEncoder(intermediate_dim=4, num_heads=2, dropout=0.99999)
        inputs = random.uniform(shape=[1, 4, 6])
        outputs = encoder(inputs, training=True)
        # Custom computation with dropout rates set to about 1.0
        x = inputs
        x = encoder._self_attention_layer_norm(x)
        x = encoder._feedforward_layer_norm(x)
        self.assertAllClose(outputs, x, atol=1e-5)

    def test_training_propagation_on_public_sublayers(self):
        encoder = TransformerEncoder(intermediate_dim=4, num_heads=2, dropout=0.99999)
        inputs = random.uniform(shape=[1, 4, 6])
        outputs = encoder(inputs, training=True)
        x = encoder.feed_forward_norm(encoder.self_attention_norm(inputs))
        self.assertAllClose(outputs, x, atol=1e-5)

    def test_mask_propagation(self):
        encoder = TransformerEncoder(intermediate_dim=4, num_heads=2)
        inputs = random.uniform(shape=[1, 4, 6])
        mask = ops.array([[True, True, False, False]])
        inputs._keras_mask = mask
        outputs = encoder(inputs)
        self.assertAllEqual(outputs._keras_mask, mask)

    def test_attention_scores(self):
        encoder = TransformerEncoder(intermediate_dim=4, num_heads=2)
        inputs = random.uniform(shape=[1, 4, 6])
        outputs, attention_scores = encoder(inputs, return_attention_scores=True)
        self.assertAllEqual(outputs.shape, inputs.shape)
        self.assertAllEqual(attention_scores.shape, [1, 2, 4, 4])


class TransformerDecoderTest(TestCase):
    @parameterized.named_parameters(("without_norm_first", False), ("with_norm_first", True))
    def test_layer_behaviors(self, normalize_first):
        self.run_layer_test(
            cls=TransformerDecoder,
            init_kwargs={**BLOCK_KWARGS, "normalize_first": normalize_first},
            input_data=random.uniform(shape=(2, 4, 6)),
            expected_output_shape=(2, 4, 6),
            expected_num_trainable_weights=16,
            expected_num_non_trainable_variables=3,  # dropout rng seeds
        )

    @parameterized.named_parameters(("without_norm_first", False), ("with_norm_first", True))
    def test_layer_behaviors_with_cross_attention(self, normalize_first):
        self.run_layer_test(
            cls=TransformerDecoder,
            init_kwargs={**BLOCK_KWARGS, "normalize_first": normalize_first},
            input_data={
                "decoder_sequence": random.uniform(shape=(2, 4, 6)),
                "encoder_sequence": random.uniform(shape=(2, 4, 6)),
            },
            expected_output_shape=(2, 4, 6),
            expected_num_trainable_weights=26,
            # A difference kept: 4 dropout RNG states (one per attention,
            # one for the residual branches, one for the feed-forward
            # hidden layer) where keras-hub's has 5 (its three residual
            # dropouts each own one); the weights are the same.
            expected_num_non_trainable_variables=4,
        )

    def test_invalid_calls(self):
        encoder_input = ops.zeros((2, 4, 6))
        decoder_input = ops.zeros((2, 4, 6))
        decoder = TransformerDecoder(intermediate_dim=4, num_heads=2)
        decoder(decoder_input, encoder_input)
        with self.assertRaises(ValueError):
            decoder(decoder_input)
        decoder = TransformerDecoder(intermediate_dim=4, num_heads=2)
        decoder(decoder_input)
        with self.assertRaises(ValueError):
            decoder(decoder_input, encoder_input)

    def test_value_error_when_invalid_kernel_inititalizer(self):
        with self.assertRaises(ValueError):
            TransformerDecoder(intermediate_dim=4, num_heads=2, dropout=0.5,
                               kernel_initializer="Invalid")

    def test_training_propagation(self):
        decoder = TransformerDecoder(intermediate_dim=4, num_heads=2, dropout=0.99999)
        decoder_sequence = random.uniform(shape=[1, 4, 6])
        encoder_sequence = random.uniform(shape=[1, 4, 6])
        outputs = decoder(decoder_sequence, encoder_sequence, training=True)
        # Custom computation with dropout rates set to about 1.0
        x = decoder_sequence
        x = decoder._self_attention_layer_norm(x)
        x = decoder._feedforward_layer_norm(x)
        self.assertAllClose(outputs, x, atol=1e-5)

    def test_training_propagation_on_public_sublayers(self):
        decoder = TransformerDecoder(intermediate_dim=4, num_heads=2, dropout=0.99999)
        decoder_sequence = random.uniform(shape=[1, 4, 6])
        encoder_sequence = random.uniform(shape=[1, 4, 6])
        outputs = decoder(decoder_sequence, encoder_sequence, training=True)
        x = decoder.self_attention_norm(decoder_sequence)
        # keras-hub's expectation skips the cross-attention norm, which
        # holds there because its cross-attention output is zero and
        # LN(LN(x)) ~ LN(x); the same holds here.
        x = decoder.feed_forward_norm(x)
        self.assertAllClose(outputs, x, atol=1e-5)

    def test_mask_propagation(self):
        decoder = TransformerDecoder(intermediate_dim=4, num_heads=2)
        decoder_sequence = random.uniform(shape=[1, 4, 6])
        encoder_sequence = random.uniform(shape=[1, 4, 6])
        mask = ops.array([[True, True, False, False]])
        decoder_sequence._keras_mask = mask
        outputs = decoder(decoder_sequence, encoder_sequence)
        self.assertAllEqual(outputs._keras_mask, mask)

    def test_mask_propagation_without_cross_attention(self):
        decoder = TransformerDecoder(intermediate_dim=4, num_heads=2)
        decoder_sequence = random.uniform(shape=[1, 4, 6])
        mask = ops.array([[True, True, False, False]])
        decoder_sequence._keras_mask = mask
        outputs = decoder(decoder_sequence)
        self.assertAllEqual(outputs._keras_mask, mask)

    def test_cache_call_is_correct(self):
        batch_size, seq_len, num_heads, key_dim = 2, 5, 2, 4
        hidden_dim = num_heads * key_dim
        x = random.uniform(shape=(batch_size, seq_len, hidden_dim))
        input_cache = ops.zeros((batch_size, 2, seq_len, num_heads, key_dim))
        outputs = ops.zeros_like(x)
        layer = TransformerDecoder(intermediate_dim=4, num_heads=num_heads)
        no_loop_outputs, no_loop_cache = layer(
            x, self_attention_cache=input_cache, self_attention_cache_update_index=0
        )

        def loop_body(i, outputs, cache):
            next_input = ops.slice(x, (0, i, 0), (batch_size, 1, hidden_dim))
            next_output, cache = layer(
                decoder_sequence=next_input,
                self_attention_cache=cache,
                self_attention_cache_update_index=i,
            )
            outputs = ops.slice_update(outputs, [0, i, 0], next_output)
            return i + 1, outputs, cache

        _, output, output_cache = ops.while_loop(
            cond=lambda i, outputs, cache: i < seq_len,
            body=loop_body,
            loop_vars=[0, outputs, input_cache],
        )
        self.assertAllClose(output, no_loop_outputs)
        self.assertAllClose(output_cache, no_loop_cache)

    def test_cache_call_is_correct_with_cross_attention(self):
        batch_size, seq_len, num_heads, key_dim = 2, 5, 2, 4
        hidden_dim = num_heads * key_dim
        input_shape = (batch_size, seq_len, hidden_dim)
        cache_shape = (batch_size, 2, seq_len, num_heads, key_dim)
        decoder_sequence = random.uniform(shape=input_shape)
        encoder_sequence = random.uniform(shape=input_shape)
        empty_cache = ops.zeros(cache_shape)
        outputs = ops.zeros_like(decoder_sequence)
        layer = TransformerDecoder(intermediate_dim=4, num_heads=num_heads)
        no_loop_outputs, no_loop_self_cache, no_loop_cross_cache = layer(
            decoder_sequence,
            encoder_sequence,
            self_attention_cache=empty_cache,
            self_attention_cache_update_index=0,
            cross_attention_cache=empty_cache,
            cross_attention_cache_update_index=0,
        )

        def loop_body(i, outputs, self_cache, cross_cache):
            start, size = (0, i, 0), (batch_size, 1, hidden_dim)
            next_input = ops.slice(decoder_sequence, start, size)
            next_output, self_cache, cross_cache = layer(
                decoder_sequence=next_input,
                encoder_sequence=encoder_sequence,
                self_attention_cache=self_cache,
                self_attention_cache_update_index=i,
                cross_attention_cache=cross_cache,
            )
            outputs = ops.slice_update(outputs, start, next_output)
            return i + 1, outputs, self_cache, cross_cache

        _, output, self_cache, cross_cache = ops.while_loop(
            cond=lambda i, outputs, self_cache, cross_cache: i < seq_len,
            body=loop_body,
            loop_vars=[0, outputs, empty_cache, no_loop_cross_cache],
        )
        self.assertAllClose(output, no_loop_outputs)
        self.assertAllClose(self_cache, no_loop_self_cache)
        self.assertAllClose(cross_cache, no_loop_cross_cache)


class TokenAndPositionEmbeddingTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=TokenAndPositionEmbedding,
            init_kwargs={
                "vocabulary_size": 5,
                "sequence_length": 4,
                "embedding_dim": 3,
                "embeddings_initializer": "ones",
            },
            input_data=random.randint(minval=0, maxval=5, shape=(2, 4)),
            expected_output_shape=(2, 4, 3),
            expected_output_data=ops.ones((2, 4, 3)) * 2,
            expected_num_trainable_weights=2,
        )

    def test_mask_propagation(self):
        test_layer = TokenAndPositionEmbedding(
            vocabulary_size=5, sequence_length=4, embedding_dim=3, mask_zero=True
        )
        input_data = np.array([[1, 0], [1, 0]])
        outputs = test_layer(input_data)
        self.assertAllEqual(outputs._keras_mask, input_data != 0)


class CachedMultiHeadAttentionTest(TestCase):
    def setUp(self):
        super().setUp()
        self.batch_size = 2
        self.seq_len = 5
        self.num_heads = 2
        self.key_dim = 4
        self.hidden_dim = self.num_heads * self.key_dim

    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=CachedMultiHeadAttention,
            init_kwargs={"num_heads": 2, "key_dim": 4, "dropout": 0.1},
            input_data={
                "query": random.uniform(shape=(2, 4, 6)),
                "value": random.uniform(shape=(2, 4, 6)),
            },
            expected_output_shape=(2, 4, 6),
            expected_num_trainable_weights=8,
            expected_num_non_trainable_variables=1,
        )

    def test_cache_call_is_correct(self):
        x = random.uniform(shape=(self.batch_size, self.seq_len, self.hidden_dim))
        input_cache = ops.zeros(
            (self.batch_size, 2, self.seq_len, self.num_heads, self.key_dim)
        )
        mask = ops.tril(ops.ones((self.seq_len, self.seq_len)))
        outputs = ops.zeros_like(x)
        layer = CachedMultiHeadAttention(num_heads=self.num_heads, key_dim=self.key_dim)
        no_loop_outputs, no_loop_cache = layer(
            x, x, cache=input_cache, cache_update_index=0, attention_mask=mask
        )

        def loop_body(i, outputs, cache):
            next_input = ops.slice(x, (0, i, 0), (self.batch_size, 1, self.hidden_dim))
            next_mask = ops.slice(mask, (i, 0), (1, self.seq_len))
            next_output, cache = layer(
                query=next_input,
                value=next_input,
                cache=cache,
                cache_update_index=i,
                attention_mask=next_mask,
            )
            outputs = ops.slice_update(outputs, [0, i, 0], next_output)
            return i + 1, outputs, cache

        _, output, output_cache = ops.while_loop(
            cond=lambda i, outputs, cache: i < self.seq_len,
            body=loop_body,
            loop_vars=[0, outputs, input_cache],
        )
        self.assertAllClose(output, no_loop_outputs, atol=1e-5, rtol=1e-5)
        self.assertAllClose(output_cache, no_loop_cache, atol=1e-5, rtol=1e-5)

    def test_return_attention_scores(self):
        x = random.uniform(shape=(self.batch_size, self.seq_len, self.hidden_dim))
        layer = CachedMultiHeadAttention(num_heads=self.num_heads, key_dim=self.key_dim)
        output, attention_scores = layer(x, x, return_attention_scores=True)
        self.assertIsNotNone(attention_scores)
        self.assertAllEqual(output.shape, [self.batch_size, self.seq_len, self.hidden_dim])
        self.assertAllEqual(
            attention_scores.shape,
            [self.batch_size, self.num_heads, self.seq_len, self.seq_len],
        )
        score_sums = ops.sum(attention_scores, axis=-1)
        self.assertAllClose(score_sums, ops.ones_like(score_sums), atol=1e-5)

    def test_return_attention_scores_with_cache(self):
        x = random.uniform(shape=(self.batch_size, self.seq_len, self.hidden_dim))
        input_cache = ops.zeros(
            (self.batch_size, 2, self.seq_len, self.num_heads, self.key_dim)
        )
        mask = ops.tril(ops.ones((self.seq_len, self.seq_len)))
        layer = CachedMultiHeadAttention(num_heads=self.num_heads, key_dim=self.key_dim)
        output, attention_scores, output_cache = layer(
            x, x, cache=input_cache, cache_update_index=0, attention_mask=mask,
            return_attention_scores=True,
        )
        self.assertIsNotNone(attention_scores)
        self.assertAllEqual(output.shape, [self.batch_size, self.seq_len, self.hidden_dim])
        self.assertAllEqual(
            attention_scores.shape,
            [self.batch_size, self.num_heads, self.seq_len, self.seq_len],
        )
        self.assertAllEqual(output_cache.shape, input_cache.shape)

    def test_training_propagation(self):
        x = random.uniform(shape=(self.batch_size, self.seq_len, self.hidden_dim))
        layer = CachedMultiHeadAttention(num_heads=self.num_heads, key_dim=self.hidden_dim,
                                         dropout=0.99999)
        outputs = layer(x, x, training=True)
        # Custom computation with dropout rates set to about 1.0
        value = layer._value_dense(x)
        attention_scores = ops.zeros(
            (self.batch_size, self.num_heads, self.seq_len, self.seq_len))
        attention_output = ops.einsum(layer._combine_equation, attention_scores, value)
        attention_output = layer._output_dense(attention_output)
        self.assertAllClose(outputs, attention_output, atol=1e-5)

    def test_training_propagation_on_public_sublayers(self):
        x = random.uniform(shape=(self.batch_size, self.seq_len, self.hidden_dim))
        layer = CachedMultiHeadAttention(num_heads=self.num_heads, key_dim=self.key_dim,
                                         dropout=0.99999)
        outputs = layer(x, x, training=True)
        # Every weight dropped: zero contexts, so the output is the bias.
        value = layer.value_dense(x)
        expected = layer.output_dense(ops.zeros_like(value))
        self.assertAllClose(outputs, expected, atol=1e-5)


# ---------------------------------------------------------------------------
# Ours: with keras-hub's weights copied in, the compat layers compute
# keras-hub's outputs, in every call form.

ATOL = 1e-5


def padding(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def close(ours, theirs, where=None):
    ours, theirs = to_numpy(ours), to_numpy(theirs)
    if where is not None:
        ours, theirs = ours[where], theirs[where]
    np.testing.assert_allclose(ours, theirs, atol=ATOL)


def built_pair(name, *args, **kwargs):
    """keras-hub's layer `name` and ours, made with the same arguments."""
    theirs = getattr(keras_hub.layers, name)(*args, **kwargs)
    ours = getattr(compat_hub, name)(*args, **kwargs)
    return theirs, ours


def copy_block_weights(theirs, ours):
    """keras-hub's block weights into ours (sublayer by sublayer)."""
    copy_keras_hub_weights(theirs, ours)


@pytest.mark.parametrize("normalize_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder_computes_keras_hubs_outputs(normalize_first, rng):
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    mask = padding([6, 4], 6)
    theirs, ours = built_pair("TransformerEncoder", 32, 4, normalize_first=normalize_first)
    theirs(x), ours(inputs=x)
    copy_block_weights(theirs, ours)
    close(ours(inputs=x), theirs(inputs=x))
    close(ours(x, padding_mask=mask), theirs(x, padding_mask=mask), where=mask)
    close(ours(x, mask.astype("int32")), theirs(x, mask), where=mask)  # 0/1 masks too
    window = np.broadcast_to(np.tril(np.ones((6, 6), bool)), (2, 6, 6))
    y_ours, w_ours = ours(x, attention_mask=window, return_attention_scores=True)
    y_theirs, w_theirs = theirs(x, attention_mask=window, return_attention_scores=True)
    close(y_ours, y_theirs)
    close(w_ours, w_theirs)


@pytest.mark.parametrize("normalize_first", [False, True], ids=["post_norm", "pre_norm"])
def test_decoder_computes_keras_hubs_outputs_in_every_call_form(normalize_first, rng):
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    memory = rng.normal(size=(2, 7, 16)).astype("float32")
    x_mask, memory_mask = padding([5, 3], 5), padding([7, 2], 7)
    theirs, ours = built_pair("TransformerDecoder", 32, 4, normalize_first=normalize_first)
    theirs(x, memory), ours(decoder_sequence=x, encoder_sequence=memory)
    copy_block_weights(theirs, ours)
    close(ours(decoder_sequence=x, encoder_sequence=memory), theirs(x, memory))
    masks = {"decoder_padding_mask": x_mask, "encoder_padding_mask": memory_mask}
    close(ours(x, memory, **masks), theirs(x, memory, **masks), where=x_mask)
    close(ours(x, memory, use_causal_mask=False), theirs(x, memory, use_causal_mask=False))
    # keras-hub's cached call: the whole sequence at once, then step by step.
    self_cache = np.zeros((2, 2, 5, 4, 4), "float32")
    cross_cache = np.zeros((2, 2, 7, 4, 4), "float32")
    first = dict(self_attention_cache=self_cache, self_attention_cache_update_index=0,
                 cross_attention_cache=cross_cache, cross_attention_cache_update_index=0,
                 encoder_padding_mask=memory_mask)
    ours_out, theirs_out = ours(x, memory, **first), theirs(x, memory, **first)
    assert len(ours_out) == len(theirs_out) == 3
    for a, b in zip(ours_out, theirs_out):
        close(a, b)
    step_cross = to_numpy(theirs_out[2])
    caches = (self_cache, self_cache)
    for i in range(5):
        step = dict(self_attention_cache_update_index=i, cross_attention_cache=step_cross,
                    encoder_padding_mask=memory_mask)
        ours_step = ours(x[:, i:i + 1], memory, self_attention_cache=caches[0], **step)
        theirs_step = theirs(x[:, i:i + 1], memory, self_attention_cache=caches[1], **step)
        close(ours_step[0], theirs_step[0])
        close(ours_step[0], to_numpy(theirs_out[0])[:, i:i + 1])
        caches = (ours_step[1], theirs_step[1])
    close(caches[0], caches[1])


def test_decoder_only_cached_call_returns_keras_hubs_pair(rng):
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    theirs, ours = built_pair("TransformerDecoder", 16, 2)
    theirs(x), ours(x)
    copy_block_weights(theirs, ours)
    cache = np.zeros((2, 2, 4, 2, 4), "float32")
    kwargs = dict(self_attention_cache=cache, self_attention_cache_update_index=0)
    ours_out, theirs_out = ours(x, **kwargs), theirs(x, **kwargs)
    assert len(ours_out) == len(theirs_out) == 2
    for a, b in zip(ours_out, theirs_out):
        close(a, b)


def test_decoder_cached_call_refuses_what_it_does_not_compute(rng):
    x = rng.normal(size=(1, 2, 8)).astype("float32")
    decoder = TransformerDecoder(16, 2)
    cache = np.zeros((1, 2, 2, 2, 4), "float32")
    with pytest.raises(ValueError, match=r"Received: decoder_padding_mask=a mask"):
        decoder(x, self_attention_cache=cache, self_attention_cache_update_index=0,
                decoder_padding_mask=np.ones((1, 2), bool))
    with pytest.raises(ValueError, match=r"Received: self_attention_cache_update_index=0"):
        decoder(x, self_attention_cache_update_index=0)


def test_cached_attention_computes_keras_hubs_outputs_in_every_form(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    theirs, ours = built_pair("CachedMultiHeadAttention", num_heads=2, key_dim=4)
    theirs(x, x), ours(x, x)
    ours.set_weights(theirs.get_weights())
    causal = np.tril(np.ones((5, 5), "float32"))
    close(ours(x, x), theirs(x, x))
    for a, b in zip(ours(x, x, return_attention_scores=True),
                    theirs(x, x, return_attention_scores=True)):
        close(a, b)
    cache = np.zeros((2, 2, 5, 2, 4), "float32")
    for kwargs in (dict(cache=cache, cache_update_index=0, attention_mask=causal),
                   dict(cache=cache, cache_update_index=0, attention_mask=causal,
                        return_attention_scores=True)):
        ours_out, theirs_out = ours(x, x, **kwargs), theirs(x, x, **kwargs)
        assert len(ours_out) == len(theirs_out)
        for a, b in zip(ours_out, theirs_out):
            close(a, b)
    full = to_numpy(theirs(x, x, cache=cache, cache_update_index=0)[1])
    # A static cache (no index): the cached keys and values, not the inputs'.
    close(ours(x[:, :1], x[:, :1] * 0, cache=full)[0],
          theirs(x[:, :1], x[:, :1] * 0, cache=full)[0])


@pytest.mark.parametrize("mask_zero", [False, True])
def test_embeddings_compute_keras_hubs_outputs(mask_zero, rng):
    ids = np.array([[3, 1, 4, 0], [5, 9, 0, 0]])
    theirs, ours = built_pair("TokenAndPositionEmbedding", 10, 6, 8, mask_zero=mask_zero)
    theirs(ids), ours(ids)
    ours.set_weights(theirs.get_weights())
    close(ours(ids), theirs(ids))
    close(ours(ids[:, :2], start_index=2), theirs(ids[:, :2], start_index=2))
    if mask_zero:
        np.testing.assert_array_equal(to_numpy(ours(ids)._keras_mask), ids != 0)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    positions = np.array([[0, 1, 0, 1], [2, 3, 4, 5]])
    theirs, ours = built_pair("PositionEmbedding", 6)
    theirs(x), ours(x)
    ours.set_weights(theirs.get_weights())
    for kwargs in ({}, {"start_index": 2}, {"positions": positions}):
        close(ours(x, **kwargs), theirs(x, **kwargs))
    theirs, ours = built_pair("SinePositionEncoding", max_wavelength=100)
    for kwargs in ({}, {"start_index": 3}, {"positions": positions}):
        close(ours(x, **kwargs), theirs(x, **kwargs))


@pytest.mark.parametrize("name, args", [
    ("TransformerEncoder", (8, 2)), ("TransformerDecoder", (8, 2)),
])
def test_defaults_are_keras_hubs_and_ours_stay_ours(name, args):
    from keras_attention import layers

    theirs, ours = built_pair(name, *args)
    assert ours.normalize_first is theirs.normalize_first is False
    assert ours.dropout == theirs.dropout and ours.layer_norm_epsilon == 1e-05
    config = ours.get_config()
    assert config["normalize_first"] is False and "norm_first" not in config
    assert type(ours).from_config(config).get_config() == config
    ours_block = getattr(layers, name + "Block")(*args)
    assert ours_block.norm_first is True and ours_block.layer_norm_epsilon == 1e-5


def test_decoder_built_from_keras_hubs_saved_shapes():
    decoder = TransformerDecoder(8, 2, decoder_sequence_shape=(None, 4, 8),
                                 encoder_sequence_shape=(None, 6, 8))
    assert decoder.built and decoder.cross_attention is not None


def keras_hub_text_model(hub):
    """A keras-hub encoder-decoder, written once for either layer module."""
    source = keras.Input(shape=(6,), dtype="int32")
    target = keras.Input(shape=(5,), dtype="int32")
    x = hub.TokenAndPositionEmbedding(20, 6, 8, mask_zero=True)(source)
    x = hub.TransformerEncoder(16, 2, dropout=0.1)(inputs=x)
    y = hub.TokenAndPositionEmbedding(20, 5, 8)(target)
    y = hub.SinePositionEncoding()(y) + y
    y = hub.TransformerDecoder(16, 2)(decoder_sequence=y, encoder_sequence=x)
    return keras.Model([source, target], keras.layers.Dense(20)(y))


def test_keras_file_with_compat_layers_loads(rng, tmp_path):
    hub = compat_hub
    model = keras_hub_text_model(hub)
    source = rng.integers(1, 20, size=(2, 6)).astype("int32")
    target = rng.integers(1, 20, size=(2, 5)).astype("int32")
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert {type(layer) for layer in loaded.layers} >= {
        hub.TransformerEncoder, hub.TransformerDecoder, hub.TokenAndPositionEmbedding}
    close(loaded([source, target]), model([source, target]))
