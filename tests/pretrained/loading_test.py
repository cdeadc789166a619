"""`load_pretrained`'s refusals: another architecture, an unsupported
config value, a missing weight, a weight of another shape (nothing copied),
no weights, a folder that is not a checkpoint."""

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from keras_attention.pretrained import load_pretrained
from tests.pretrained import hf_checkpoints


@pytest.fixture(scope="module")
def bart_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bart")
    hf_checkpoints.save_checkpoint(folder, "bart")
    return folder


def _copy(folder, tmp_path, config=None, weights=None):
    """A copy of checkpoint `folder` with `config` values and weights
    changed (a weight set to None is removed)."""
    saved = json.loads((folder / "config.json").read_text())
    saved.update(config or {})
    (tmp_path / "config.json").write_text(json.dumps(saved))
    arrays = load_file(str(folder / "model.safetensors"))
    for name, value in (weights or {}).items():
        if value is None:
            del arrays[name]
        else:
            arrays[name] = value
    save_file(arrays, str(tmp_path / "model.safetensors"))
    return tmp_path


def test_converts_the_unchanged_copy(bart_folder, tmp_path):
    model, info = load_pretrained(_copy(bart_folder, tmp_path))
    assert info["family"] == "bart" and model.end_token_id == 2


def test_a_tied_table_saved_under_another_name(bart_folder, tmp_path):
    """Files keep one name of a tied table, which one depends on the
    writer: the decoder's name alone converts to the same model."""
    arrays = load_file(str(bart_folder / "model.safetensors"))
    table = arrays["model.shared.weight"]
    renamed = {"model.shared.weight": None, "model.decoder.embed_tokens.weight": table}
    renamed.update({name: None for name in ("model.encoder.embed_tokens.weight",
                                            "lm_head.weight") if name in arrays})
    model, _ = load_pretrained(_copy(bart_folder, tmp_path, weights=renamed))
    original, _ = load_pretrained(bart_folder)
    source = hf_checkpoints.source_ids("bart")
    target = np.array([[3, 4, 5]], "int32").repeat(2, axis=0)
    inputs = {"encoder_token_ids": source, "decoder_token_ids": target}
    assert model.output_projection.embedding is model.target_embedding
    np.testing.assert_allclose(np.asarray(model(inputs)), np.asarray(original(inputs)),
                               atol=1e-6)


@pytest.mark.parametrize("config, message", [
    ({"model_type": "gpt2"}, "Received: model_type='gpt2'"),
    ({"architectures": ["BartForSequenceClassification"]},
     "Received: architectures=['BartForSequenceClassification']"),
    ({"activation_function": "gelu_fast"}, "Received: activation_function='gelu_fast'"),
    ({"decoder_layers": 3}, "Received: decoder_layers=3"),
    ({"decoder_ffn_dim": 64}, "decoder_ffn_dim=64"),
])
def test_unsupported_config_is_an_error_naming_it(bart_folder, tmp_path, config, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_pretrained(_copy(bart_folder, tmp_path, config=config))


def test_missing_weight_is_an_error_naming_it(bart_folder, tmp_path):
    name = "model.decoder.layers.0.fc2.bias"
    with pytest.raises(ValueError, match=f"lacks the weight '{name}'"):
        load_pretrained(_copy(bart_folder, tmp_path, weights={name: None}))


def test_mismatched_weight_is_an_error_naming_it(bart_folder, tmp_path):
    name = "model.encoder.layers.0.fc2.weight"
    with pytest.raises(ValueError, match=rf"'{name}' has shape \(16, 16\)"):
        load_pretrained(_copy(bart_folder, tmp_path,
                              weights={name: np.zeros((16, 16), "float32")}))


@pytest.mark.parametrize("config, message", [
    # Sizes that would build a huge model are refused before anything is built.
    ({"encoder_layers": 10**9, "decoder_layers": 10**9},
     r"`encoder_layers` does not match its weights \(the weights' model\.encoder\.layers\.N "
     r"says 2\)\. Received: encoder_layers=1000000000"),
    ({"encoder_ffn_dim": 10**7, "decoder_ffn_dim": 10**7}, r"`encoder_ffn_dim` does not match"),
    ({"max_position_embeddings": 10**12}, r"`max_position_embeddings` does not match its "
                                          r"weights \(model\.encoder\.embed_positions"),
    ({"d_model": 10**6}, r"`d_model` does not match its weights \(model\.shared\.weight"),
    ({"vocab_size": 10**8}, r"`vocab_size` does not match"),
    ({"encoder_layers": 1, "decoder_layers": 1}, r"Received: encoder_layers=1"),
    ({"encoder_attention_heads": 3, "decoder_attention_heads": 3},
     r"`encoder_attention_heads` must divide d_model=16"),
    ({"d_model": "16"}, r"`d_model` must be an integer >= 1\. Received: d_model='16'"),
    ({"pad_token_id": 40}, r"`pad_token_id` must be a token id below its vocab_size=40"),
    ({"decoder_start_token_id": -1}, r"Received: decoder_start_token_id=-1"),
])
def test_config_values_are_checked_against_the_weights_first(bart_folder, tmp_path, config,
                                                              message):
    with pytest.raises(ValueError, match=message) as error:
        load_pretrained(_copy(bart_folder, tmp_path, config=config))
    assert "\n" not in str(error.value)


def test_a_weight_the_model_does_not_use_is_refused_naming_it(bart_folder, tmp_path):
    extra = {"model.encoder.layers.0.extra_proj.weight": np.ones((2, 2), "float32")}
    with pytest.raises(ValueError, match=r"'model\.encoder\.layers\.0\.extra_proj\.weight' "
                                         r"is not used by the model.*\(2, 2\)"):
        load_pretrained(_copy(bart_folder, tmp_path, weights=extra))


def test_t5_sizes_are_checked_against_the_weights_first(tmp_path):
    folder = tmp_path / "t5"
    hf_checkpoints.save_checkpoint(folder, "t5")
    for case, (config, message) in enumerate([
        ({"num_layers": 10**9}, r"`num_layers` does not match .* says 2\)"),
        ({"num_decoder_layers": 2}, r"`num_decoder_layers` does not match"),
        ({"d_ff": 10**7}, r"`d_ff` does not match"),
        ({"d_kv": 4}, r"`d_kv` \* `num_heads` do not match"),
        ({"relative_attention_num_buckets": 10**6}, r"relative_attention_num_buckets=1000000"),
        ({"eos_token_id": 400}, r"`eos_token_id` must be a token id below"),
    ]):
        copy = tmp_path / f"case{case}"
        copy.mkdir()
        with pytest.raises(ValueError, match=message):
            load_pretrained(_copy(folder, copy, config=config))


def test_not_a_checkpoint_folder(tmp_path):
    with pytest.raises(ValueError, match="Received: folder="):
        load_pretrained(tmp_path / "missing")
    with pytest.raises(ValueError, match="no `config.json`"):
        load_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bart"}))
    with pytest.raises(ValueError, match="has no weights"):
        load_pretrained(tmp_path)


def test_bfloat16_safetensors_are_read_exactly(bart_folder, tmp_path):
    """A checkpoint saved in bfloat16 (NumPy has no such type): each weight
    widened to float32 exactly, the model computing as transformers' model
    of those weights in float32; a bfloat16 file cut short is one line."""
    import torch
    import transformers

    reference = transformers.BartForConditionalGeneration.from_pretrained(str(bart_folder))
    reference.to(torch.bfloat16).save_pretrained(str(tmp_path / "bf16"))
    header = (tmp_path / "bf16" / "model.safetensors").read_bytes()[:2000]
    assert b'"BF16"' in header
    model, _ = load_pretrained(tmp_path / "bf16")
    widened = reference.float().eval()
    expected = widened.model.encoder.layers[0].fc1.weight.detach().numpy().T
    np.testing.assert_array_equal(
        np.asarray(model.encoder_blocks[0].feed_forward.hidden.kernel), expected)
    source = hf_checkpoints.source_ids("bart")
    target = np.array([[3, 4, 5, 6, 7], [8, 9, 10, 1, 1]], "int32")
    _, logits = hf_checkpoints.reference_outputs(widened, source, target, 1)
    ours = np.asarray(model({"encoder_token_ids": source, "decoder_token_ids": target}))
    np.testing.assert_allclose(ours[target != 1], logits[target != 1], atol=1e-4)
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "config.json").write_bytes((tmp_path / "bf16" / "config.json").read_bytes())
    data = (tmp_path / "bf16" / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[:len(data) - 100])
    with pytest.raises(ValueError, match=r"model.safetensors is not a readable safetensors "
                                         r"file .*wrong size.*Received: folder="):
        load_pretrained(cut)
