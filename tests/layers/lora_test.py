"""`enable_lora` on the layers made of Keras projections: one training
step changes the LoRA weights only, and the adapted layer saves and loads."""

import keras
import numpy as np
import pytest

from keras_attention import layers
from tests.test_case import to_numpy

pytestmark = pytest.mark.keras_ops_only


def attention_model(attention):
    x = keras.Input((4, 8))
    return keras.Model(x, attention(x, x))


def block_model(block):
    x = keras.Input((4, 8))
    return keras.Model(x, block(x))


LAYERS = {
    "multi_head_attention": lambda: attention_model(
        layers.MultiHeadAttention(2, 4, num_key_value_heads=1, use_gate=True, name="layer")
    ),
    "encoder_block": lambda: block_model(layers.TransformerEncoderBlock(16, 2, name="layer")),
    "feed_forward": lambda: block_model(layers.FeedForward(16, name="layer")),
    "bahdanau": lambda: attention_model(layers.BahdanauAttention(6, name="layer")),
}


def train_one_step(model):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 4, 8)).astype("float32")
    y = rng.normal(size=(4, 4, 8)).astype("float32")
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)


@pytest.mark.parametrize("name", list(LAYERS))
def test_enable_lora_trains_only_the_lora_weights(name):
    keras.utils.set_random_seed(0)
    model = LAYERS[name]()
    layer = model.get_layer("layer")
    layer.enable_lora(2)
    trainable = {w.path for w in model.trainable_weights}
    assert trainable and all("lora_kernel" in path for path in trainable), trainable
    before = {w.path: to_numpy(w).copy() for w in model.weights}
    train_one_step(model)
    for w in model.weights:
        changed = not np.array_equal(to_numpy(w), before[w.path])
        # lora_kernel_b starts at zero and moves first; a moves once b != 0.
        if w.path.endswith("lora_kernel_b"):
            assert changed, w.path
        if "lora_kernel" not in w.path:
            assert not changed, w.path


def test_enable_lora_on_one_projection_keeps_the_rest_trainable():
    model = attention_model(layers.MultiHeadAttention(2, 4, name="layer"))
    layer = model.get_layer("layer")
    layer.query_dense.enable_lora(2)
    trainable = {w.path for w in model.trainable_weights}
    assert "layer/query/lora_kernel_a" in trainable
    assert "layer/query/kernel" not in trainable
    assert "layer/key/kernel" in trainable


def test_adapted_layer_saves_merged_and_loads(tmp_path):
    keras.utils.set_random_seed(0)
    model = LAYERS["multi_head_attention"]()
    model.get_layer("layer").enable_lora(2)
    train_one_step(model)
    x = np.random.default_rng(1).normal(size=(2, 4, 8)).astype("float32")
    expected = to_numpy(model(x))
    model.save(tmp_path / "lora.keras")
    loaded = keras.saving.load_model(tmp_path / "lora.keras")
    np.testing.assert_allclose(to_numpy(loaded(x)), expected, atol=1e-5)
