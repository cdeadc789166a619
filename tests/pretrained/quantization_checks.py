"""The int8 check shared by the converted-checkpoint tests: a converted
model quantized with `model.quantize("int8")` stays close to its float
self, generates compiled as it does eagerly, and round-trips through
`.keras` with identical outputs."""

import keras
import numpy as np

# Keras' int8 `Dense`/`EinsumDense`/`Embedding` quantize each weight column
# to 1/127 of its largest value and each input row likewise, at every
# matrix product (a relative error of ~0.4% each): a few percent of the
# logits' spread after the 2 + 2 layers of these random models, whose
# weights (std 0.3-1, no training) make heavy-tailed activations. Measured
# (teacher-forced logits, 8 rows x 10 steps): mean error 1.8-2.2% of the
# logits' standard deviation for Marian and BART, 4% for T5 v1.0, 7% for
# T5 v1.1 (gated GELU, untied); top-1 tokens agree on 86-99% of positions.
MEAN_ERROR = 0.1  # of the float logits' standard deviation
TOP1_AGREEMENT = 0.8
GREEDY_AGREEMENT = 0.7
# Why the check skips on JAX (`slow_on`): there it took 2.5 minutes a case
# on 2 cores (eager quantizing and calls, a reload, three generations: 10
# minutes of the JAX run for 4 cases). JAX's int8 layers are checked by
# tests/layers/quantization_test.py, a tied model's int8 generation and
# reload by tests/models/transformer_seq2seq_test.py; the families' int8
# layers (relative position biases, gated feed-forwards) by these cases
# under TensorFlow.
SLOW_ON_JAX = "2.5 minutes a case; JAX's int8 layers are checked by faster tests"


def assert_int8_close_to_float_and_round_trips(model, decoder_start_token_id, tmp_path):
    rng = np.random.default_rng(0)
    vocabulary = model.target_vocabulary_size
    source = rng.integers(3, vocabulary - 2, (8, 12)).astype("int32")
    inputs = {"encoder_token_ids": source,
              "decoder_token_ids": rng.integers(3, vocabulary - 2, (8, 10)).astype("int32")}
    generate = dict(max_length=12, decoder_start_token_id=decoder_start_token_id)
    float_logits = keras.ops.convert_to_numpy(model(inputs))
    # The float and reloaded models generate eagerly: their compiled generation
    # is checked by the families' own tests, and on TensorFlow each XLA compile
    # of a converted model's generation takes 15-20 s on 2 cores.
    float_tokens = np.asarray(model.generate(source, **generate, jit_compile=False))

    model.quantize("int8")
    assert {v.dtype for v in model.weights if "embedding" in v.path} >= {"int8"}
    logits = keras.ops.convert_to_numpy(model(inputs))
    error = np.abs(logits - float_logits).mean() / float_logits.std()
    assert error < MEAN_ERROR, error
    assert (logits.argmax(-1) == float_logits.argmax(-1)).mean() >= TOP1_AGREEMENT
    compiled = model.generate(source, **generate, return_logits=True)
    assert (np.asarray(compiled.token_ids) == float_tokens).mean() >= GREEDY_AGREEMENT
    eager = model.generate(source, **generate, return_logits=True, jit_compile=False)
    np.testing.assert_array_equal(compiled.token_ids, eager.token_ids)
    # XLA and eager round an input row to int8 the same way but for values
    # on a rounding boundary (float sums in another order): one step of 1/127.
    np.testing.assert_allclose(compiled.logits, eager.logits, atol=0.1)

    model.save(tmp_path / "int8.keras")
    loaded = keras.saving.load_model(tmp_path / "int8.keras")
    assert loaded.get_config() == model.get_config()
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded(inputs)), logits)
    np.testing.assert_array_equal(loaded.generate(source, **generate, jit_compile=False),
                                  compiled.token_ids)
