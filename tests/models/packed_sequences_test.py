"""Packed rows give every example what it gets alone: per-example losses,
gradients, the loss of `fit`, for the layers, the blocks and the model."""

import keras
import numpy as np
import pytest

from keras_attention import masks
from keras_attention.data import pack_examples
from keras_attention.layers import TransformerDecoderBlock, TransformerEncoderBlock
from keras_attention.models import transformer_seq2seq
from tests.data.packing_test import example

pytestmark = pytest.mark.keras_ops_only

SMALL = dict(num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
             max_length=16)
# Five examples of varied lengths; rows of 8 source and 9 target tokens hold them in 3 rows.
EXAMPLES = [
    example([5, 6, 7], [8, 9]),
    example([10, 11], [12, 13, 14, 15]),
    example([16, 17, 18, 4], [19]),
    example([3], [5, 6, 7]),
    example([9, 8, 7, 6, 5], [4, 3]),
]
ATOL = 1e-5  # float32: the packed and the unpacked calls sum in other orders


def packed_batch():
    inputs, labels = pack_examples(EXAMPLES, max_source_length=8, max_target_length=9)
    # Several examples per row, or the test shows nothing.
    assert len(labels) == 3 and inputs["decoder_segment_ids"].max() == 2
    return inputs, labels


def unpacked_batch():
    """The five examples as one padded batch `(5, S)` / `(5, T)`."""
    source = np.zeros((5, 8), "int32")
    target = np.zeros((5, 9), "int32")
    labels = np.zeros((5, 9), "int32")
    for i, (inputs, label) in enumerate(EXAMPLES):
        source[i, : len(inputs["encoder_token_ids"])] = inputs["encoder_token_ids"]
        target[i, : len(label)] = inputs["decoder_token_ids"]
        labels[i, : len(label)] = label
    return {"encoder_token_ids": source, "decoder_token_ids": target}, labels


def token_losses(logits, labels):
    """Cross-entropy of every token `(B, T)`, 0 on label 0."""
    losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return np.asarray(losses) * (labels != 0)


def per_example_losses(logits, labels, segment_ids=None):
    """The sum of token losses of each example, in row-then-segment order."""
    losses = token_losses(logits, labels)
    if segment_ids is None:
        return losses.sum(axis=1)
    return np.array([losses[row][segment_ids[row] == k].sum()
                     for row in range(len(labels))
                     for k in range(1, segment_ids[row].max() + 1)])


def example_order(inputs):
    """Index in EXAMPLES of each packed example, in row-then-segment order."""
    order = []
    for row, segments in zip(inputs["encoder_token_ids"], inputs["encoder_segment_ids"]):
        for k in range(1, segments.max() + 1):
            source = row[segments == k].tolist()
            order.append(next(i for i, (e, _) in enumerate(EXAMPLES)
                              if e["encoder_token_ids"].tolist() == source))
    return order


def models(**kwargs):
    keras.utils.set_random_seed(0)
    packed = transformer_seq2seq(30, packed=True, **{**SMALL, **kwargs})
    unpacked = transformer_seq2seq(30, **{**SMALL, **kwargs})
    unpacked.set_weights(packed.get_weights())
    return packed, unpacked


POSITIONS = [{"position": "sinusoidal"}, {"position": "learned", "norm_first": False},
             {"position": "rotary", "num_key_value_heads": 1}]
POSITION_IDS = ["sinusoidal", "learned_post_norm", "rotary_mqa"]


@pytest.mark.large
@pytest.mark.slow_on("jax", reason="the same keras.ops loss arithmetic as on TensorFlow, with a "
                                   "compile per example length on JAX; there "
                                   "test_blocks_keep_packed_examples_apart checks the packed "
                                   "outputs and a packed model generates in "
                                   "test_packed_model_saves_generates_and_refuses_pointer_"
                                   "generator")
@pytest.mark.parametrize("kwargs", POSITIONS, ids=POSITION_IDS)
def test_packed_batch_gives_the_per_example_losses_of_unpacked_batches(kwargs):
    packed_model, unpacked_model = models(**kwargs)
    inputs, labels = packed_batch()
    packed = per_example_losses(np.asarray(packed_model(inputs)), labels,
                                inputs["decoder_segment_ids"])
    order = example_order(inputs)
    # One padded batch of all five, and each example alone (no padding at all).
    x, y = unpacked_batch()
    together = per_example_losses(np.asarray(unpacked_model(x)), y)
    np.testing.assert_allclose(packed, together[order], atol=ATOL, rtol=1e-5)
    for i, loss in zip(order, packed):
        alone, label = EXAMPLES[i]
        logits = unpacked_model({k: v[None] for k, v in alone.items()})
        np.testing.assert_allclose(loss, per_example_losses(np.asarray(logits), label[None])[0],
                                   atol=ATOL, rtol=1e-5)


@pytest.mark.tf_only("gradients through tf.GradientTape")
@pytest.mark.parametrize("kwargs", POSITIONS[:2], ids=POSITION_IDS[:2])
def test_packed_batch_gives_the_gradients_of_unpacked_batches(kwargs):
    import tensorflow as tf

    packed_model, unpacked_model = models(**kwargs)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0,
                                                         reduction="sum")

    def gradients(model, x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        return loss, [np.asarray(tf.convert_to_tensor(g)) for g in grads]  # dense embeddings

    packed_loss, packed_grads = gradients(packed_model, *packed_batch())
    # The sum over the batch: examples in two unpacked batches, gradients added.
    x, y = unpacked_batch()
    first = gradients(unpacked_model, {k: v[:3] for k, v in x.items()}, y[:3])
    second = gradients(unpacked_model, {k: v[3:] for k, v in x.items()}, y[3:])
    np.testing.assert_allclose(packed_loss, first[0] + second[0], rtol=1e-5)
    for variable, p, a, b in zip(packed_model.trainable_variables, packed_grads, first[1],
                                 second[1]):
        np.testing.assert_allclose(p, a + b, atol=ATOL, rtol=1e-4, err_msg=variable.path)
    assert sum(float(np.abs(g).sum()) for g in packed_grads) > 0


@pytest.mark.tf_only("gradients through tf.GradientTape")
def test_a_fully_padded_row_changes_nothing_and_stays_finite():
    """A row of padding only (segment id 0 everywhere, as in the filled last
    batch under XLA) is fully masked in every attention: finite logits, and
    the loss and gradients of the other rows unchanged."""
    import tensorflow as tf

    packed_model, _ = models()
    inputs, labels = packed_batch()
    padded = {k: np.concatenate([v, np.zeros_like(v[:1])]) for k, v in inputs.items()}
    padded_labels = np.concatenate([labels, np.zeros_like(labels[:1])])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)

    def loss_and_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = packed_model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, packed_model.trainable_variables)
        return logits, loss, [np.asarray(tf.convert_to_tensor(g)) for g in grads]

    logits, loss, grads = loss_and_gradients(padded, padded_labels)
    _, expected_loss, expected_grads = loss_and_gradients(inputs, labels)
    assert np.isfinite(np.asarray(logits)).all()
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-6)
    for g, expected in zip(grads, expected_grads):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, expected, atol=1e-6, rtol=1e-5)


@pytest.mark.large
@pytest.mark.slow_on("jax", reason=(
    "Keras' loss with ignore_class and its accuracy over the same tokens, the keras.ops "
    "arithmetic of TensorFlow's run; on JAX test_blocks_keep_packed_examples_apart checks "
    "the packed model's outputs and test_packed_model_saves_generates_and_refuses_pointer_"
    "generator generates with it"))
def test_loss_of_fit_is_the_mean_over_the_same_tokens():
    """The recipe's loss (ignore_class=0, the mean over the batch's tokens)
    of a packed batch equals that of an unpacked batch of the same tokens;
    so does the masked accuracy."""
    packed_model, unpacked_model = models()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    inputs, labels = packed_batch()
    x, y = unpacked_batch()
    packed_logits, unpacked_logits = packed_model(inputs), unpacked_model(x)
    packed_loss = float(loss_fn(labels, packed_logits))
    np.testing.assert_allclose(packed_loss, float(loss_fn(y, unpacked_logits)), rtol=1e-5)
    tokens = int((y != 0).sum())
    np.testing.assert_allclose(packed_loss, token_losses(unpacked_logits, y).sum() / tokens,
                               rtol=1e-5)
    for model in (packed_model, unpacked_model):
        model.compile(loss=loss_fn, metrics=["accuracy"])
    packed_eval = packed_model.evaluate(inputs, labels, batch_size=8, verbose=0,
                                        return_dict=True)
    unpacked_eval = unpacked_model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    for key in ("loss", "accuracy"):
        np.testing.assert_allclose(packed_eval[key], unpacked_eval[key], rtol=1e-5)


@pytest.mark.large
def test_packed_model_saves_generates_and_refuses_pointer_generator(tmp_path):
    packed_model, unpacked_model = models()
    assert packed_model.get_config()["packed"] is True
    assert unpacked_model.get_config()["packed"] is False
    assert sorted(packed_model.input) == ["decoder_segment_ids", "decoder_token_ids",
                                          "encoder_segment_ids", "encoder_token_ids"]
    packed_model.save(tmp_path / "packed.keras")
    revived = keras.saving.load_model(tmp_path / "packed.keras")
    inputs, _ = packed_batch()
    np.testing.assert_array_equal(revived(inputs), packed_model(inputs))
    # Generation is one example per row: the same for both models.
    source = np.array([[5, 6, 7, 0], [10, 11, 0, 0]])
    np.testing.assert_array_equal(packed_model.generate(source, max_length=5),
                                  unpacked_model.generate(source, max_length=5))
    with pytest.raises(ValueError, match="packed=True.*pointer_generator=True"):
        transformer_seq2seq(30, packed=True, pointer_generator=True, **SMALL)
    with pytest.raises(TypeError, match="packed"):
        transformer_seq2seq(30, packed="yes", **SMALL)


def test_blocks_keep_packed_examples_apart():
    """Encoder and decoder blocks given the segment masks: two examples in
    one row give the outputs of two rows; a fully padded row stays finite."""
    keras.utils.set_random_seed(1)
    encoder = TransformerEncoderBlock(num_heads=2, intermediate_dim=16)
    decoder = TransformerDecoderBlock(num_heads=2, intermediate_dim=16)
    rng = np.random.default_rng(0)
    source = rng.normal(size=(2, 5, 8)).astype("float32")
    target = rng.normal(size=(2, 4, 8)).astype("float32")
    # Row 0 packs (source 0:2, target 0:3) and (source 2:5, target 3:4); row 1 is padding.
    source_ids = np.array([[1, 1, 2, 2, 2], [0, 0, 0, 0, 0]])
    target_ids = np.array([[1, 1, 1, 2], [0, 0, 0, 0]])
    memory = encoder(source, attention_mask=masks.segment_mask(source_ids))
    out = decoder(target, memory, attention_mask=masks.segment_mask(target_ids),
                  memory_attention_mask=masks.segment_mask(target_ids, source_ids))
    for source_part, target_part in ((slice(0, 2), slice(0, 3)), (slice(2, 5), slice(3, 4))):
        alone_memory = encoder(source[:1, source_part])
        np.testing.assert_allclose(memory[:1, source_part], alone_memory, atol=ATOL)
        alone = decoder(target[:1, target_part], alone_memory)
        np.testing.assert_allclose(out[:1, target_part], alone, atol=ATOL)
    assert np.isfinite(np.asarray(out)).all() and np.isfinite(np.asarray(memory)).all()
