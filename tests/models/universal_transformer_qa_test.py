import keras
import numpy as np
import pytest

from keras_attention.models import FactEncoding, halting_steps, universal_transformer_qa
from keras_attention.models.universal_transformer_qa import most_recent_first
from tests.stories import STORY, encoded_stories
from tests.test_case import LEARNS_ON_TENSORFLOW, run_layer_test, to_numpy

pytestmark = pytest.mark.keras_ops_only

QUESTION = np.array([[9, 4], [5, 0]], "int32")


def test_fact_encoding_layer_behaviors(tmp_path):
    run_layer_test(
        FactEncoding,
        {"vocab_size": 12, "dim": 4, "max_words": 2},
        {"token_ids": STORY},
        expected_output_shape=(2, 3, 4),
        mask_inputs=False,
        tmp_dir=tmp_path,
    )


def test_fact_encoding_is_a_positionally_masked_sum_of_words():
    layer = FactEncoding(12, 4, max_words=2)
    layer.build(STORY.shape)
    rows = np.arange(8, dtype="float32").reshape(2, 4) / 10.0
    layer.position_mask.assign(rows)
    out = to_numpy(layer(STORY))
    table = to_numpy(layer.embeddings)
    for b, story in enumerate(STORY):
        for i, sentence in enumerate(story):
            words = [w for w in sentence if w]
            # Words beyond max_words share the last row of the mask.
            expected = sum(rows[min(j, 1)] * table[w] for j, w in enumerate(words)) * 2.0
            np.testing.assert_allclose(out[b, i], expected if words else 0.0, atol=1e-6)
    np.testing.assert_array_equal(to_numpy(layer.compute_mask(STORY)), STORY.any(-1))
    question = to_numpy(layer(QUESTION))
    np.testing.assert_allclose(question[1], 2.0 * rows[0] * table[5], atol=1e-6)
    assert layer.compute_mask(QUESTION) is None


def test_most_recent_first_reverses_the_real_facts_only():
    facts = np.arange(2 * 4, dtype="float32").reshape(2, 4, 1)
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0]], bool)
    out = to_numpy(most_recent_first(facts, mask))[..., 0]
    np.testing.assert_array_equal(out, [[2, 1, 0, 3], [4, 5, 6, 7]])


def test_shapes_halting_in_reading_order_saving_and_padding(tmp_path):
    model = universal_transformer_qa(12, 5, hidden_dim=8, num_heads=2, intermediate_dim=16,
                                     max_steps=3)
    inputs = {"story": STORY, "question": QUESTION}
    logits = to_numpy(model(inputs))
    assert logits.shape == (2, 5) and np.isfinite(logits).all()
    steps = to_numpy(halting_steps(model)(inputs))
    assert steps.shape == (2, 4)
    assert steps[0, 3] == 0 and (steps[:, :3] >= 1).all() and (steps <= 3).all()
    path = tmp_path / "ut.keras"
    model.save(path)
    keras.backend.clear_session()  # as in a new process: layer and op names start afresh
    reloaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(to_numpy(reloaded(inputs)), logits)
    np.testing.assert_array_equal(to_numpy(halting_steps(reloaded)(inputs)), steps)
    wider = {"story": np.concatenate([STORY, np.zeros((2, 2, 3), "int32")], 1),
             "question": QUESTION}
    np.testing.assert_allclose(to_numpy(model(wider)), logits, atol=1e-5)
    assert len(model.losses) == 1  # the ponder cost


def test_halting_steps_follow_the_facts_in_reading_order():
    model = universal_transformer_qa(12, 5, hidden_dim=8, num_heads=2, intermediate_dim=16,
                                     max_steps=4, dropout=0.0)
    encoder = model.get_layer("universal_transformer")
    # Halt at once where the fact's own embedding (feature 0) is large: word 7 only.
    embeddings = np.zeros((12, 8), "float32")
    embeddings[:, 0] = -50.0
    embeddings[7, 0] = 50.0
    model.get_layer("fact_encoding").embeddings.assign(embeddings)
    encoder.halting_unit.kernel.assign(np.eye(8, 1, dtype="float32"))
    encoder.halting_unit.bias.assign(np.zeros(1, "float32"))
    story = np.array([[[4, 0], [7, 0], [5, 0], [0, 0]]], "int32")
    steps = to_numpy(halting_steps(model)({"story": story, "question": np.array([[4, 0]])}))
    np.testing.assert_array_equal(steps, [[4, 4, 1, 4, 0]])


@pytest.mark.large
@pytest.mark.slow_on("jax", "torch", reason=LEARNS_ON_TENSORFLOW)
def test_learns_the_last_place_of_a_person():
    (x, y), (x_test, y_test), tokenizer, answers = encoded_stories(
        2016, 224, max_sentences=4, max_memories=4  # whole batches of 32: one compile each
    )
    model = universal_transformer_qa(tokenizer.vocabulary_size(), len(answers), hidden_dim=32,
                                     num_heads=2, intermediate_dim=64, max_steps=2,
                                     dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=32, epochs=6, verbose=0)
    accuracy = (model.predict(x_test, verbose=0).argmax(-1) == y_test).mean()
    assert accuracy > 0.8, accuracy


def test_invalid_args():
    with pytest.raises(ValueError, match=r"num_answers.*Received: num_answers=0"):
        universal_transformer_qa(10, 0)
    with pytest.raises(ValueError, match=r"max_words.*Received: max_words=0"):
        FactEncoding(10, 4, max_words=0)
    with pytest.raises(ValueError, match=r"pad_token_id.*Received: pad_token_id='0'"):
        FactEncoding(10, 4, pad_token_id="0")
    with pytest.raises(ValueError, match=r"token_ids.*Received: token_ids.shape=\(2,\)"):
        FactEncoding(10, 4)(np.array([1, 2]))
    with pytest.raises(ValueError, match=r"model.*Received: model with layers"):
        halting_steps(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]))
