"""Every weight of a layer starts from its own draw (initializer_copies).

A Keras 3 initializer keeps the seed it drew when it was made; shared
between weights it would start W_q, W_k and W_v equal, and weights of other
shapes from the same stream. Each layer below owns several weights; no two
of them may start equal or proportional (the same draw under another scale).
"""

import itertools

import keras
import numpy as np
import pytest

from keras_attention import layers
from keras_attention.layers.initializer_copies import clone_initializer

pytestmark = pytest.mark.keras_ops_only

QUERY = np.random.default_rng(0).normal(size=(1, 3, 8)).astype("float32")

LAYERS = {
    "multi_head_attention": (lambda: layers.MultiHeadAttention(2, 4), 2),
    "grouped_query": (lambda: layers.MultiHeadAttention(4, 4, num_key_value_heads=2), 2),
    "gated": (lambda: layers.MultiHeadAttention(2, 4, use_gate=True), 2),
    "self_attention_general": (lambda: layers.SelfAttention(2, score="general"), 1),
    "self_attention_additive": (lambda: layers.SelfAttention(2, score="additive"), 1),
    "bahdanau": (lambda: layers.BahdanauAttention(8), 2),
    "luong_concat": (lambda: layers.LuongAttention("concat", units=8), 2),
    "feed_forward": (lambda: layers.FeedForward(8), 1),
    "encoder_block": (lambda: layers.TransformerEncoderBlock(8, 2), 1),
    "decoder_block": (lambda: layers.TransformerDecoderBlock(8, 2), 2),
    "seeded_block": (
        lambda: layers.TransformerEncoderBlock(
            8, 2, kernel_initializer=keras.initializers.TruncatedNormal(0.02)
        ),
        1,
    ),
}


def _random_weights(layer):
    """`{path: flat values}` of the weights that are not constant (biases
    and norms start constant on purpose)."""
    values = {}
    for weight in layer.weights:
        flat = np.ravel(keras.ops.convert_to_numpy(weight))
        if flat.size > 1 and np.ptp(flat) > 0:
            values[weight.path] = flat
    return values


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_no_two_weights_start_from_the_same_draw(name):
    make, num_inputs = LAYERS[name]
    layer = make()
    layer(*([QUERY] * num_inputs))
    weights = _random_weights(layer)
    assert len(weights) >= 2, sorted(weights)
    for (path_a, a), (path_b, b) in itertools.combinations(weights.items(), 2):
        n = min(a.size, b.size)
        correlation = np.corrcoef(a[:n], b[:n])[0, 1]
        assert abs(correlation) < 0.9, (path_a, path_b, correlation)


def test_two_layers_made_after_one_seed_are_equal():
    def built():
        keras.utils.set_random_seed(3)
        layer = layers.TransformerEncoderBlock(8, 2)
        layer(QUERY)
        return [keras.ops.convert_to_numpy(w) for w in layer.weights]

    for a, b in zip(built(), built()):
        np.testing.assert_array_equal(a, b)


def test_a_clone_has_the_config_and_an_unseeded_one_draws_anew():
    original = keras.initializers.GlorotUniform()
    copy = clone_initializer(original)
    assert type(copy) is type(original)
    assert copy.get_config() == original.get_config()
    assert not np.array_equal(
        keras.ops.convert_to_numpy(original((4, 4))),
        keras.ops.convert_to_numpy(copy((4, 4))),
    )
    seeded = keras.initializers.TruncatedNormal(0.02, seed=5)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(seeded((4, 4))),
        keras.ops.convert_to_numpy(clone_initializer(seeded)((4, 4))),
    )
    assert isinstance(clone_initializer("zeros"), keras.initializers.Zeros)
