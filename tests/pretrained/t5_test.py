"""T5 checkpoints (v1.0: ReLU, tied and scaled output; v1.1 / flan: gated
GELU, untied lm_head) and mT5 checkpoints (v1.1's layout) converted from
tiny random `transformers` models, heads of `d_kv` whose inner size
`num_heads * d_kv` is `d_model` or not: encoder outputs and logits within
1e-4 with padding, greedy and beam tokens equal to `transformers`' `generate`.

The tests that only read a seed-0 model share it (`converted`, made once
in this module); the others make their own checkpoint."""

import keras
import numpy as np
import pytest

from keras_attention import decoding
from keras_attention.pretrained import load_pretrained
from keras_attention.pretrained.t5 import t5_options
from tests.pretrained import hf_checkpoints, quantization_checks

CONFIGURATIONS = {
    "t5_v1_0": {},
    "t5_v1_1": dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False),
    "t5_gated_silu_tied_3_decoder_layers": dict(feed_forward_proj="gated-silu",
                                                num_decoder_layers=3),
    "mt5": dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False),
    # `d_kv * num_heads != d_model` (16): heads wider than d_model allows
    # (t5-3b: 32 x 128 on 1024), narrower (flan-t5-small, mt5-small: 6 x 64 on
    # 512), heads that do not divide d_model. (Chosen so that transformers'
    # greedy and beam tokens of seed 1 are not one id repeated in every row.)
    "t5_wide_heads_3_2_layers": dict(num_heads=3, d_kv=8, num_layers=3, num_decoder_layers=2),
    "t5_v1_1_narrow_heads_3_2_layers": dict(
        feed_forward_proj="gated-gelu", tie_word_embeddings=False, num_heads=3, d_kv=4,
        num_layers=3, num_decoder_layers=2),
    "mt5_5_heads_of_4": dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                             num_heads=5, d_kv=4),
}
#: The family of a configuration other than T5's.
FAMILY = {"mt5": "mt5", "mt5_5_heads_of_4": "mt5"}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """`name -> (torch model, our model, info)` of the T5 checkpoint of
    `CONFIGURATIONS[name]`, made once in this module
    (`hf_checkpoints.converted_on_first_use`)."""
    return hf_checkpoints.converted_on_first_use(
        tmp_path_factory, {name: (FAMILY.get(name, "t5"), options)
                           for name, options in CONFIGURATIONS.items()})


@pytest.mark.slow_on("jax", reason=hf_checkpoints.LOGITS_ON_TENSORFLOW)
@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_outputs_match_transformers_with_padding(converted, name):
    reference, model, info = converted(name)
    source = hf_checkpoints.source_ids("t5")
    target = np.array([[3, 4, 5, 6, 7], [8, 9, 10, 0, 0]], "int32")
    memory, logits = hf_checkpoints.reference_outputs(reference, source, target, 0)

    ours_memory, _ = model.encode(source)
    ours_logits = model({"encoder_token_ids": source, "decoder_token_ids": target})
    source_valid, target_valid = source != 0, target != 0
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours_memory)[source_valid],
                               memory[source_valid], atol=1e-4)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours_logits)[target_valid],
                               logits[target_valid], atol=1e-4)
    assert info["family"] == FAMILY.get(name, "t5")


@pytest.mark.slow_on("jax", reason=hf_checkpoints.LOGITS_ON_TENSORFLOW)
@pytest.mark.parametrize("name", ["t5_v1_0", "t5_v1_1"])
def test_teacher_forced_logits_match_transformers_labels(converted, name):
    """Training logits on `[start] + target[:-1]` equal `transformers`'
    `model(..., labels=...)`: T5 starts the decoder with its pad id 0, which
    must not be masked as a key."""
    reference, model, _ = converted(name)
    source, labels = hf_checkpoints.source_ids("t5"), hf_checkpoints.labels("t5")
    logits, _ = hf_checkpoints.reference_training_outputs(reference, source, labels, 0)
    decoder, _ = hf_checkpoints.teacher_forcing_inputs(labels, 0, 0)
    ours = model({"encoder_token_ids": source, "decoder_token_ids": decoder})
    valid = labels != -100
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours)[valid], logits[valid],
                               atol=1e-4)


def test_own_lm_head_is_converted(tmp_path):
    """A v1.1 / flan file saves `lm_head.weight` apart from the table
    (transformers 5 ties them on loading, so this checkpoint is made by
    hand: twice the table gives twice the logits)."""
    from safetensors.numpy import load_file, save_file

    reference = hf_checkpoints.save_checkpoint(tmp_path, "t5", **CONFIGURATIONS["t5_v1_1"])
    weights = load_file(str(tmp_path / "model.safetensors"))
    weights["lm_head.weight"] = 2 * weights["shared.weight"]
    save_file(weights, str(tmp_path / "model.safetensors"))
    model, _ = load_pretrained(tmp_path)
    source = hf_checkpoints.source_ids("t5")
    target = np.array([[3, 4, 5], [8, 9, 10]], "int32")
    _, logits = hf_checkpoints.reference_outputs(reference, source, target, 0)
    ours = model({"encoder_token_ids": source, "decoder_token_ids": target})
    assert model.lm_head is not None
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), 2 * logits, atol=2e-4)


def _assert_same_tokens(ours, theirs, pad):
    np.testing.assert_array_equal(ours[:, : theirs.shape[1]], theirs)
    assert (ours[:, theirs.shape[1]:] == pad).all()


@pytest.mark.parametrize("name, generation", [
    ("t5_v1_0", {}),
    ("t5_v1_1", {"num_beams": 4, "length_penalty": 0.6, "early_stopping": True}),
    ("mt5", {}),
    ("mt5", {"num_beams": 3, "length_penalty": 1.2, "early_stopping": True}),
    ("t5_wide_heads_3_2_layers", {}),
    ("t5_wide_heads_3_2_layers", {"num_beams": 3, "length_penalty": 1.0, "early_stopping": True}),
    ("t5_v1_1_narrow_heads_3_2_layers", {}),
    ("t5_v1_1_narrow_heads_3_2_layers",
     {"num_beams": 4, "length_penalty": 0.6, "early_stopping": True}),
    ("mt5_5_heads_of_4", {}),
    ("mt5_5_heads_of_4", {"num_beams": 3, "length_penalty": 1.2, "early_stopping": True}),
])
def test_generated_tokens_match_transformers(tmp_path, name, generation):
    reference = hf_checkpoints.save_checkpoint(tmp_path, FAMILY.get(name, "t5"), generation,
                                               seed=1, **CONFIGURATIONS[name])
    model, info = load_pretrained(tmp_path)
    source = hf_checkpoints.source_ids("t5")
    theirs = hf_checkpoints.reference_generate(reference, source, 0)
    ours = np.asarray(model.generate(source, **info["generation"]))
    _assert_same_tokens(ours, theirs, 0)
    assert info["generation"]["decoder_start_token_id"] == 0


@pytest.mark.parametrize("name, heads", [
    ("t5_wide_heads_3_2_layers", (3, 8)),
    ("t5_v1_1_narrow_heads_3_2_layers", (3, 4)),
    ("mt5_5_heads_of_4", (5, 4)),
])
def test_heads_apart_from_d_model_convert_with_their_own_size(converted, name, heads):
    """`d_kv * num_heads != d_model` converts (it was refused): q, k, v
    kernels `(d_model, heads, d_kv)` from `(heads * d_kv, d_model)`, o
    `(heads, d_kv, d_model)`, caches of `d_kv`-wide heads."""
    reference, model, _ = converted(name)
    num_heads, key_dim = heads
    config = reference.config
    assert (config.num_heads, config.d_kv) == heads and num_heads * key_dim != config.d_model
    for block in model.encoder_blocks + model.decoder_blocks:
        attentions = [block.self_attention] + (
            [block.cross_attention] if block in model.decoder_blocks else [])
        for attention in attentions:
            assert attention.key_dim == key_dim and attention.num_heads == num_heads
            assert tuple(attention.query_dense.kernel.shape) == (16, num_heads, key_dim)
            assert tuple(attention.output_dense.kernel.shape) == (num_heads, key_dim, 16)
    torch_q = reference.decoder.block[0].layer[1].EncDecAttention.q.weight.detach().numpy()
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model.decoder_blocks[0].cross_attention.query_dense.kernel),
        torch_q.T.reshape(16, num_heads, key_dim))
    assert model.decoder_cache_bytes_per_position() == (
        2 * config.num_decoder_layers * num_heads * key_dim * 4)  # keys, values in float32


def test_heads_apart_from_d_model_save_and_reload_as_keras(converted, tmp_path):
    """The converted model saves as `.keras` and reloads with identical
    logits and tokens (greedy and beam)."""
    _, model, info = converted("t5_v1_1_narrow_heads_3_2_layers")
    source = hf_checkpoints.source_ids("t5")
    inputs = {"encoder_token_ids": source,
              "decoder_token_ids": np.array([[0, 4, 5, 6], [0, 9, 10, 0]], "int32")}
    model.save(tmp_path / "t5.keras")
    loaded = keras.saving.load_model(tmp_path / "t5.keras")
    assert loaded.get_config() == model.get_config()
    assert loaded.decoder_blocks[0].self_attention.key_dim == 4
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded(inputs)),
                                  keras.ops.convert_to_numpy(model(inputs)))
    for sampler in ("greedy", decoding.BeamSampler(num_beams=3)):
        settings = {**info["generation"], "sampler": sampler}
        np.testing.assert_array_equal(np.asarray(loaded.generate(source, **settings)),
                                      np.asarray(model.generate(source, **settings)))


def test_unsupported_feed_forward_is_an_error_naming_it():
    with pytest.raises(ValueError, match="Received: feed_forward_proj='gated-tanh'"):
        t5_options({"model_type": "t5", "feed_forward_proj": "gated-tanh"})


@pytest.mark.large
@pytest.mark.slow_on("jax", reason=quantization_checks.SLOW_ON_JAX)
def test_int8_quantized_close_to_float_and_round_trips(tmp_path):
    """T5 v1.1: the gated feed-forward, the untied output table and the
    relative position biases (int8 `Embedding`s). A tied table quantizes in
    tests/models/transformer_seq2seq_test.py::test_shared_tied_model_quantizes_to_int8
    and tests/models/seq2seq_model_test.py's int8 round trip."""
    hf_checkpoints.save_checkpoint(tmp_path / "checkpoint", "t5", **CONFIGURATIONS["t5_v1_1"])
    model, info = load_pretrained(tmp_path / "checkpoint")
    assert model.encoder_bias.weights
    quantization_checks.assert_int8_close_to_float_and_round_trips(
        model, info["generation"]["decoder_start_token_id"], tmp_path)
    assert "encoder_position_bias/relative_attention_bias" in model.get_config()[
        "quantized_sublayers"]
