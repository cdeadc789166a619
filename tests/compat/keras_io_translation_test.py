"""keras.io's "English-to-Spanish translation with KerasHub", on the compat layers.

`build_transformer` is the example's model, written once for a layer module
(`keras_hub.layers` or `keras_attention.compat.keras_hub`): the example with
only its import changed. The corpus is a small synthetic one (no
downloads): each "Spanish" sentence is its "English" sentence reversed, in
other token ids. keras-hub itself is needed only for the equality test.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.compat import keras_hub as compat_hub
from tests.test_case import LEARNS_ON_TENSORFLOW, to_numpy

# The example's hyperparameters, shrunk.
ENG_VOCAB_SIZE = SPA_VOCAB_SIZE = 24
MAX_SEQUENCE_LENGTH = 8
EMBED_DIM, INTERMEDIATE_DIM, NUM_HEADS = 16, 32, 2
PAD, START, END = 0, 1, 2


def build_transformer(hub):
    """The example's encoder, decoder and transformer models."""
    # Encoder
    encoder_inputs = keras.Input(shape=(None,), name="encoder_inputs")
    x = hub.TokenAndPositionEmbedding(
        vocabulary_size=ENG_VOCAB_SIZE,
        sequence_length=MAX_SEQUENCE_LENGTH,
        embedding_dim=EMBED_DIM,
    )(encoder_inputs)
    encoder_outputs = hub.TransformerEncoder(
        intermediate_dim=INTERMEDIATE_DIM, num_heads=NUM_HEADS
    )(inputs=x)
    # Decoder
    decoder_inputs = keras.Input(shape=(None,), name="decoder_inputs")
    encoded_seq_inputs = keras.Input(shape=(None, EMBED_DIM), name="decoder_state_inputs")
    x = hub.TokenAndPositionEmbedding(
        vocabulary_size=SPA_VOCAB_SIZE,
        sequence_length=MAX_SEQUENCE_LENGTH,
        embedding_dim=EMBED_DIM,
    )(decoder_inputs)
    x = hub.TransformerDecoder(
        intermediate_dim=INTERMEDIATE_DIM, num_heads=NUM_HEADS
    )(decoder_sequence=x, encoder_sequence=encoded_seq_inputs)
    x = keras.layers.Dropout(0.5)(x)
    decoder_outputs = keras.layers.Dense(SPA_VOCAB_SIZE, activation="softmax")(x)
    decoder = keras.Model([decoder_inputs, encoded_seq_inputs], decoder_outputs)
    decoder_outputs = decoder([decoder_inputs, encoder_outputs])
    transformer = keras.Model(
        [encoder_inputs, decoder_inputs], decoder_outputs, name="transformer"
    )
    transformer.compile(
        "rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    return transformer


def synthetic_pairs(count, seed=0):
    """`({"encoder_inputs", "decoder_inputs"}, targets)`: English ids in
    [3, 24), Spanish = the sentence reversed, id + 1 (wrapping), framed by
    START / END and padded to MAX_SEQUENCE_LENGTH."""
    rng = np.random.default_rng(seed)
    eng = np.zeros((count, MAX_SEQUENCE_LENGTH), "int32")
    spa = np.zeros((count, MAX_SEQUENCE_LENGTH + 1), "int32")
    for i in range(count):
        n = rng.integers(2, MAX_SEQUENCE_LENGTH - 1)
        words = rng.integers(3, ENG_VOCAB_SIZE, size=n)
        eng[i, :n] = words
        spa[i, : n + 2] = [START, *((words[::-1] - 2) % (SPA_VOCAB_SIZE - 3) + 3), END]
    inputs = {"encoder_inputs": eng, "decoder_inputs": spa[:, :-1]}
    return inputs, spa[:, 1:]


@pytest.mark.large
@pytest.mark.slow_on("jax", "torch", reason=LEARNS_ON_TENSORFLOW)
def test_the_example_trains_with_only_the_import_changed():
    keras.utils.set_random_seed(0)
    transformer = build_transformer(compat_hub)
    inputs, targets = synthetic_pairs(128)
    history = transformer.fit(inputs, targets, batch_size=32, epochs=4, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.8 * losses[0], losses


def copy_weights(theirs, ours):
    """keras-hub's model weights into ours, layer by layer."""
    from tests.layers.keras_hub_compat_test import copy_keras_hub_weights

    for source, target in zip(theirs.layers, ours.layers, strict=True):
        if isinstance(source, keras.Model):
            copy_weights(source, target)
        elif isinstance(target, (compat_hub.TransformerEncoder,
                                 compat_hub.TransformerDecoder)):
            copy_keras_hub_weights(source, target)
        else:
            target.set_weights(source.get_weights())


@pytest.mark.large
def test_the_example_computes_keras_hubs_outputs_with_copied_weights():
    keras_hub = pytest.importorskip("keras_hub")
    keras.utils.set_random_seed(1)
    theirs = build_transformer(keras_hub.layers)
    ours = build_transformer(compat_hub)
    inputs, targets = synthetic_pairs(16, seed=1)
    theirs.fit(inputs, targets, batch_size=8, epochs=1, verbose=0)  # not the init
    copy_weights(theirs, ours)
    np.testing.assert_allclose(
        to_numpy(ours.predict(inputs, verbose=0)),
        to_numpy(theirs.predict(inputs, verbose=0)),
        atol=1e-5,
    )
    assert np.isclose(ours.evaluate(inputs, targets, verbose=0)[0],
                      theirs.evaluate(inputs, targets, verbose=0)[0], atol=1e-5)

    # The example's decoding: keras-hub's greedy sampler over `next`.
    encoder_tokens = ops.convert_to_tensor(inputs["encoder_inputs"][:2])

    def decode(transformer):
        def next(prompt, cache, index):
            logits = transformer([encoder_tokens, prompt])[:, index - 1, :]
            return logits, None, cache

        start = ops.full((2, 1), START)
        pad = ops.full((2, MAX_SEQUENCE_LENGTH - 1), PAD)
        prompt = ops.concatenate((start, pad), axis=-1)
        return keras_hub.samplers.GreedySampler()(
            next, prompt, stop_token_ids=[END], index=1
        )

    np.testing.assert_array_equal(to_numpy(decode(ours)), to_numpy(decode(theirs)))
