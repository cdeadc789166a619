import keras
import numpy as np
import pytest

from keras_attention.models import hop_attention, memory_network
from tests.stories import encoded_stories
from tests.test_case import LEARNS_ON_TENSORFLOW

pytestmark = pytest.mark.keras_ops_only


@pytest.fixture(scope="module")
def stories_and_tokenizer():
    # Whole batches of 32 (3008 = 94 x 32, 320 = 10 x 32): one compiled
    # training step and one compiled prediction, no second for a remainder.
    return encoded_stories(3008, 320, max_sentences=6, max_memories=10)


@pytest.mark.large
@pytest.mark.slow_on("jax", "torch", reason=LEARNS_ON_TENSORFLOW)
def test_learns_the_last_place_of_a_person_under_xla(stories_and_tokenizer):
    (x, y), (x_test, y_test), tokenizer, answers = stories_and_tokenizer
    model = memory_network(tokenizer.vocabulary_size(), len(answers), hidden_dim=20,
                           num_hops=2, max_memories=10, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    accuracy = (model.predict(x_test, verbose=0).argmax(-1) == y_test).mean()
    assert accuracy > 0.9, accuracy
    # The last hop reads the supporting sentence more than any other, most of the time.
    weights = hop_attention(model).predict(x_test, verbose=0)[:, -1]
    padding = ~x_test["story"].any(-1)
    assert np.all(weights[padding] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_shapes_saving_and_mixed_precision(tmp_path):
    story = np.array([[[4, 5, 6], [7, 8, 0], [0, 0, 0]], [[9, 3, 0], [0, 0, 0], [0, 0, 0]]])
    inputs = {"story": story, "question": np.array([[9, 4], [5, 0]])}
    model = memory_network(12, 5, hidden_dim=8, num_hops=2, seed=0)
    logits = model(inputs)
    assert tuple(logits.shape) == (2, 5)
    assert tuple(hop_attention(model)(inputs).shape) == (2, 2, 3)
    path = tmp_path / "memory.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(reloaded(inputs), logits)
    # Padding sentences change nothing.
    wider = {"story": np.concatenate([story, np.zeros((2, 2, 3), story.dtype)], 1),
             "question": inputs["question"]}
    np.testing.assert_allclose(model(wider), logits, atol=1e-6)
    for policy in ("mixed_float16", "mixed_bfloat16"):
        keras.config.set_dtype_policy(policy)
        try:
            mixed = memory_network(12, 5, hidden_dim=8, num_hops=2, seed=0)
        finally:
            keras.config.set_dtype_policy("float32")
        mixed.set_weights(model.get_weights())
        out = mixed(inputs)
        assert keras.backend.standardize_dtype(out.dtype) == "float32"
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, logits, atol=0.05)


def test_invalid_args():
    with pytest.raises(ValueError, match=r"num_hops.*Received: num_hops=0"):
        memory_network(10, 3, num_hops=0)
    with pytest.raises(ValueError, match=r"num_answers.*Received: num_answers=0"):
        memory_network(10, 0)
    with pytest.raises(ValueError, match=r"model.*Received: model with layers"):
        hop_attention(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]))
