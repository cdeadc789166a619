"""Marian, BART, mBART, Pegasus and M2M100 (NLLB) checkpoints converted from tiny random
`transformers` models: encoder outputs and logits within 1e-4 with padding,
greedy and beam tokens equal to `transformers`' `generate`.

The tests that only read a seed-0 model share it (`converted`, made once
in this module); the others make their own checkpoint."""

import keras
import numpy as np
import pytest

from keras_attention.pretrained import load_pretrained
from keras_attention.pretrained.marian import marian_options
from keras_attention.pretrained.mbart import mbart_options
from tests.pretrained import hf_checkpoints, quantization_checks

CONFIGURATIONS = {
    "marian": ("marian", {}),
    "marian_unshared_untied": ("marian", dict(share_encoder_decoder_embeddings=False,
                                              decoder_vocab_size=44,
                                              tie_word_embeddings=False)),
    "bart": ("bart", {}),
    "bart_scaled_relu_untied": ("bart", dict(scale_embedding=True, activation_function="relu",
                                             tie_word_embeddings=False)),
    "mbart": ("mbart", {}),
    "pegasus": ("pegasus", dict(scale_embedding=True, activation_function="relu")),
    "m2m100": ("m2m_100", dict(scale_embedding=True, activation_function="relu")),
}
# A deeper encoder than decoder, other heads (key sizes 8 and 4) and widths per side.
DEEP_ENCODER = dict(encoder_layers=3, decoder_layers=1, encoder_attention_heads=2,
                    decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=24)
CONFIGURATIONS.update(marian_deep_encoder=("marian", DEEP_ENCODER),
                      bart_deep_encoder=("bart", DEEP_ENCODER))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """`name -> (torch model, our model, info)` of `CONFIGURATIONS[name]`,
    made once in this module (`hf_checkpoints.converted_on_first_use`)."""
    return hf_checkpoints.converted_on_first_use(tmp_path_factory, CONFIGURATIONS)


@pytest.mark.slow_on("jax", reason=hf_checkpoints.LOGITS_ON_TENSORFLOW)
@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_outputs_match_transformers_with_padding(converted, name):
    family, _ = CONFIGURATIONS[name]
    reference, model, info = converted(name)
    pad, _, _ = hf_checkpoints.ids(family)
    source = hf_checkpoints.source_ids(family)
    target = np.array([[3, 4, 5, 6, 7], [8, 9, 10, pad, pad]], "int32")
    memory, logits = hf_checkpoints.reference_outputs(reference, source, target, pad)

    ours_memory, _ = model.encode(source)
    ours_logits = model({"encoder_token_ids": source, "decoder_token_ids": target})
    source_valid, target_valid = source != pad, target != pad
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours_memory)[source_valid],
                               memory[source_valid], atol=1e-4)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours_logits)[target_valid],
                               logits[target_valid], atol=1e-4)
    assert info["family"] == family


@pytest.mark.slow_on("jax", reason=hf_checkpoints.LOGITS_ON_TENSORFLOW)
@pytest.mark.parametrize("name", ["marian", "bart", "mbart", "pegasus", "m2m100"])
def test_teacher_forced_logits_match_transformers_labels(converted, name):
    """Training logits on `[start] + target[:-1]` equal `transformers`'
    `model(..., labels=...)`: Marian starts with its pad id, which must not
    be masked as a key (it was: every row attended to nothing at first)."""
    family, _ = CONFIGURATIONS[name]
    reference, model, _ = converted(name)
    pad, _, start = hf_checkpoints.ids(family)
    source, labels = hf_checkpoints.source_ids(family), hf_checkpoints.labels(family)
    logits, _ = hf_checkpoints.reference_training_outputs(reference, source, labels, pad)
    decoder, _ = hf_checkpoints.teacher_forcing_inputs(labels, start, pad)
    ours = model({"encoder_token_ids": source, "decoder_token_ids": decoder})
    valid = labels != -100
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours)[valid], logits[valid],
                               atol=1e-4)


def _assert_same_tokens(ours, theirs, pad):
    """`transformers` stops when every row has ended; ours runs to
    `max_length` with pad after the end."""
    np.testing.assert_array_equal(ours[:, : theirs.shape[1]], theirs)
    assert (ours[:, theirs.shape[1]:] == pad).all()


@pytest.mark.large
@pytest.mark.parametrize("name", ["marian", "marian_deep_encoder", "bart", "mbart", "pegasus",
                                  "m2m100"])
def test_greedy_tokens_match_transformers(tmp_path, name):
    family, options = CONFIGURATIONS[name]
    generation = {"forced_eos_token_id": hf_checkpoints.ids(family)[1]}
    reference = hf_checkpoints.save_checkpoint(tmp_path, family, generation, seed=1, **options)
    model, info = load_pretrained(tmp_path)
    pad = model.pad_token_id
    source = hf_checkpoints.source_ids(family)
    theirs = hf_checkpoints.reference_generate(reference, source, pad)
    ours = np.asarray(model.generate(source, **info["generation"]))
    _assert_same_tokens(ours, theirs, pad)
    assert info["generation"]["decoder_start_token_id"] == hf_checkpoints.ids(family)[2]


@pytest.mark.large
@pytest.mark.parametrize("name", ["marian", "bart_deep_encoder", "mbart", "pegasus", "m2m100"])
def test_beam_tokens_match_transformers(tmp_path, name):
    family, options = CONFIGURATIONS[name]
    generation = {"num_beams": 4, "length_penalty": 0.6, "early_stopping": True,
                  "max_length": 10, "min_length": 3, "no_repeat_ngram_size": 3}
    reference = hf_checkpoints.save_checkpoint(tmp_path, family, generation, seed=2, **options)
    model, info = load_pretrained(tmp_path)
    source = hf_checkpoints.source_ids(family)
    theirs = hf_checkpoints.reference_generate(reference, source, model.pad_token_id)
    ours = np.asarray(model.generate(source, **info["generation"]))
    _assert_same_tokens(ours, theirs, model.pad_token_id)


def test_options_follow_the_family():
    marian = marian_options(dict(
        model_type="marian", encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
        decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
        activation_function="swish", vocab_size=58101, d_model=512,
        max_position_embeddings=512, scale_embedding=True, pad_token_id=58100,
        eos_token_id=0, decoder_start_token_id=58100))
    assert marian["position"] == "sinusoidal_halves" and not marian["norm_first"]
    assert marian["scale_embeddings"] and marian["start_token_id"] not in (0, 58100)
    mbart = mbart_options(dict(
        model_type="mbart", encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=8, decoder_ffn_dim=8,
        activation_function="gelu", vocab_size=10, d_model=4, max_position_embeddings=8,
        pad_token_id=1, eos_token_id=2, decoder_start_token_id=2, bos_token_id=0))
    assert mbart["norm_first"] and mbart["final_norm"] and mbart["position_offset"] == 2
    assert mbart["start_token_id"] == 0


def test_each_side_keeps_its_depth_heads_and_width(converted):
    _, model, _ = converted("bart_deep_encoder")
    assert (len(model.encoder_blocks), len(model.decoder_blocks)) == (3, 1)
    encoder, decoder = model.encoder_blocks[0], model.decoder_blocks[0]
    assert (encoder.num_heads, decoder.num_heads) == (2, 4)
    assert (encoder.intermediate_dim, decoder.intermediate_dim) == (48, 24)
    assert decoder.cross_attention.num_heads == 4


@pytest.mark.large
@pytest.mark.slow_on("jax", reason=quantization_checks.SLOW_ON_JAX)
def test_int8_quantized_close_to_float_and_round_trips(tmp_path):
    """BART with scaled embeddings, ReLU and an untied output table. Marian's
    shared, tied table quantizes in tests/models/transformer_seq2seq_test.py::
    test_shared_tied_model_quantizes_to_int8 (the same blocks)."""
    family, options = CONFIGURATIONS["bart_scaled_relu_untied"]
    hf_checkpoints.save_checkpoint(tmp_path / "checkpoint", family, **options)
    model, info = load_pretrained(tmp_path / "checkpoint")
    quantization_checks.assert_int8_close_to_float_and_round_trips(
        model, info["generation"]["decoder_start_token_id"], tmp_path)
