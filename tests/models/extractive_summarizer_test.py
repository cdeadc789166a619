import keras
import numpy as np
import pytest

from keras_attention.models import chosen_sentences, extractive_summarizer
from tests.test_case import FIT_JIT_COMPILE, LEARNS_ON_TENSORFLOW, to_numpy

pytestmark = pytest.mark.keras_ops_only

INPUTS = {
    "token_ids": np.array([[5, 6, 7, 8, 9, 0], [4, 4, 0, 0, 0, 0]], "int32"),
    "sentence_ids": np.array([[1, 1, 2, 3, 3, 0], [1, 1, 0, 0, 0, 0]], "int32"),
}


def small_model(**kwargs):
    return extractive_summarizer(20, **{"max_sentences": 4, "hidden_dim": 8, "num_heads": 2,
                                        "intermediate_dim": 16, "num_layers": 1, **kwargs})


def test_one_logit_per_sentence_and_padding_sentences_never_win():
    model = small_model()
    logits = to_numpy(model(INPUTS))
    assert logits.shape == (2, 4) and logits.dtype == np.float32
    assert np.isfinite(logits).all()
    np.testing.assert_array_equal(logits[0, 3:] < -1e8, True)  # sentence 4 does not exist
    np.testing.assert_array_equal(logits[1, 1:] < -1e8, True)
    assert (logits[0, :3] > -1e8).all() and logits[1, 0] > -1e8
    # Tokens of padding (id 0, sentence 0) change nothing.
    longer = {name: np.pad(x, ((0, 0), (0, 3))) for name, x in INPUTS.items()}
    np.testing.assert_allclose(to_numpy(model(longer)), logits, atol=1e-5)
    assert chosen_sentences(logits, [["a", "b", "c"], ["d"]])[1] == "d"


def test_saved_model_gives_identical_logits(tmp_path):
    model = small_model(num_sentence_layers=2)
    path = tmp_path / "extractive.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)  # no custom_objects
    np.testing.assert_array_equal(to_numpy(reloaded(INPUTS)), to_numpy(model(INPUTS)))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_is_finite(policy):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        logits = to_numpy(small_model()(INPUTS))
    finally:
        keras.config.set_dtype_policy(previous)
    assert logits.dtype == np.float32 and np.isfinite(logits).all()
    assert (logits[1, 1:] < -1e8).all()


@pytest.mark.large
@pytest.mark.slow_on("jax", "torch", reason=LEARNS_ON_TENSORFLOW)
def test_learns_which_sentence_holds_a_marker_under_xla():
    """The label is the sentence holding token 7, wherever it stands.

    Compiled on TensorFlow (XLA) and JAX; eagerly on torch, where
    `jit_compile=True` is `torch.compile`, whose C++ kernels took 11 minutes
    of CI to build (tests/test_case.FIT_JIT_COMPILE)."""
    rng = np.random.default_rng(0)
    count, sentences, words = 256, 4, 3
    token_ids = rng.integers(8, 20, size=(count, sentences * words)).astype("int32")
    labels = rng.integers(0, sentences, size=count).astype("int32")
    token_ids[np.arange(count), labels * words + rng.integers(0, words, size=count)] = 7
    sentence_ids = np.repeat(np.arange(1, sentences + 1), words)[None].repeat(count, 0)
    inputs = {"token_ids": token_ids, "sentence_ids": sentence_ids.astype("int32")}
    keras.utils.set_random_seed(0)
    model = small_model(hidden_dim=16, intermediate_dim=32, dropout=0.0)
    model.compile(keras.optimizers.Adam(3e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=FIT_JIT_COMPILE)
    _, accuracy_before = model.evaluate(inputs, labels, batch_size=64, verbose=0)
    history = model.fit(inputs, labels, batch_size=32, epochs=15, verbose=0)
    assert accuracy_before < 0.5  # chance is 0.25: what it knows, it learned
    assert history.history["accuracy"][-1] > 0.9


def test_invalid_args():
    with pytest.raises(ValueError, match=r"`num_heads` must divide `hidden_dim`.*Received"):
        extractive_summarizer(20, hidden_dim=10, num_heads=4)
    with pytest.raises(ValueError, match=r"`max_sentences`.*Received"):
        extractive_summarizer(20, max_sentences=0)
    with pytest.raises(ValueError, match=r"`num_sentence_layers`.*Received"):
        extractive_summarizer(20, num_sentence_layers=0)
