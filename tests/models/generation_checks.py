"""Checks shared by the tests of every `Seq2SeqModel` builder."""

import keras
import numpy as np

from keras_attention.decoding import BeamSampler, RandomSampler, TopKSampler

SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0]], "int32")


def teacher_forced_logits(model, source, tokens):
    """Logits of a full forward pass over `[start] + tokens[:-1]`: the model
    called eagerly, except on JAX, where `predict_on_batch` compiles the
    whole pass once (eager JAX compiles every op for every shape, most of a
    test's time)."""
    start = np.full((len(tokens), 1), model.start_token_id)
    decoder_in = np.concatenate([start, tokens[:, :-1]], 1).astype("int32")
    inputs = {"encoder_token_ids": source, "decoder_token_ids": decoder_in}
    if keras.backend.backend() == "jax":
        return np.asarray(model.predict_on_batch(inputs))
    return np.asarray(model(inputs))


def assert_cached_generation_equals_recomputation(model, jit_compile, max_length=6):
    """Cached, compiled generation == re-running the whole model (tokens and
    logits within 1e-5), up to each row's end token or first pad token (an
    untrained model may pick the pad token, which the full model masks)."""
    result = model.generate(SOURCE, max_length=max_length, return_logits=True,
                            jit_compile=jit_compile)
    tokens = result.token_ids
    full = teacher_forced_logits(model, SOURCE, tokens)
    for row in range(len(SOURCE)):
        ends = np.flatnonzero(
            (tokens[row] == model.end_token_id) | (tokens[row] == model.pad_token_id)
        )
        upto = ends[0] + 1 if len(ends) else tokens.shape[1]
        np.testing.assert_allclose(result.logits[row, :upto], full[row, :upto], atol=1e-5)
        np.testing.assert_array_equal(tokens[row, :upto], full[row, :upto].argmax(-1))


def assert_greedy_equivalences(model):
    greedy = model.generate(SOURCE, max_length=6)
    for sampler in (BeamSampler(num_beams=1), TopKSampler(k=1), RandomSampler(temperature=0.0)):
        np.testing.assert_array_equal(model.generate(SOURCE, 6, sampler), greedy)
