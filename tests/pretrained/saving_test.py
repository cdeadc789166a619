"""`save_pretrained`: a tiny random checkpoint of every family we convert,
converted by `load_pretrained` and saved back, is the same checkpoint
(every tensor under its own name, equal), which `transformers` loads with
no missing, unexpected or mismatched weight and whose logits are the
original's; T5s whose `d_kv * num_heads` is not `d_model` included. A
folder that may not be written, or a model the family cannot express, is
refused before anything is written."""

import json

import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file

from keras_attention.pretrained import load_pretrained
from keras_attention.pretrained.generation_json import (
    checkpoint_generation_config,
    generation_settings,
)
from keras_attention.pretrained.saving import save_pretrained
from tests.pretrained import hf_checkpoints

pytestmark = pytest.mark.same_path_on(
    "jax", reason="the weights are copied as NumPy arrays; the converted models' tokens on "
                  "JAX are bart_test's and t5_test's")

#: name -> (family, `save_checkpoint` options).
CHECKPOINTS = {
    "marian": ("marian", {}),
    "marian_own_target_table": ("marian", {"share_encoder_decoder_embeddings": False,
                                           "decoder_vocab_size": hf_checkpoints.VOCAB}),
    "bart": ("bart", {}),
    "mbart": ("mbart", {}),
    "pegasus": ("pegasus", {}),
    "m2m_100": ("m2m_100", {}),
    "t5": ("t5", {}),
    # flan-T5 / T5 v1.1: gated GELU; 3 heads of 8 on d_model 16 (flan-t5-small's shape).
    "flan_t5": ("t5", {"feed_forward_proj": "gated-gelu", "num_heads": 3}),
    # t5-3b's shape: heads * d_kv above d_model.
    "t5_wide_heads": ("t5", {"num_heads": 4, "d_kv": 8}),
    "mt5": ("mt5", {"feed_forward_proj": "gated-gelu", "num_heads": 3, "d_kv": 4}),
}


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_a_converted_checkpoint_saves_back_as_itself(name, tmp_path):
    family, options = CHECKPOINTS[name]
    reference = hf_checkpoints.save_checkpoint(tmp_path / "original", family, **options)
    model, info = load_pretrained(tmp_path / "original")
    save_pretrained(model, tmp_path / "saved", family=family, config=info["config"])
    original = load_file(tmp_path / "original" / "model.safetensors")
    saved = load_file(tmp_path / "saved" / "model.safetensors")
    assert sorted(saved) == sorted(original)
    for key in original:
        assert saved[key].dtype == np.float32 and np.array_equal(saved[key], original[key]), key
    loaded, loading = transformers.AutoModelForSeq2SeqLM.from_pretrained(
        str(tmp_path / "saved"), output_loading_info=True)
    assert {key: set(value) for key, value in loading.items() if key != "error_msgs"} == {
        "missing_keys": set(), "unexpected_keys": set(), "mismatched_keys": set()}
    assert type(loaded) is type(reference)
    pad, _, start = hf_checkpoints.ids(family)
    source = hf_checkpoints.source_ids(family)
    target = np.array([[start, 5, 6, 7], [start, 8, 9, pad]], "int64")
    expected = hf_checkpoints.reference_outputs(reference, source, target, pad)
    got = hf_checkpoints.reference_outputs(loaded.eval(), source, target, pad)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert config["architectures"] == [hf_checkpoints.FAMILIES[family][1].__name__]
    assert config["dtype"] == "float32"


def test_a_trained_model_saves_its_new_weights(tmp_path):
    hf_checkpoints.save_checkpoint(tmp_path / "original", "bart")
    model, info = load_pretrained(tmp_path / "original")
    table = model.source_embedding.token_embedding.embeddings
    table.assign(table.numpy() + 1.0)
    save_pretrained(model, tmp_path / "saved", family="bart", config=info["config"])
    saved = load_file(tmp_path / "saved" / "model.safetensors")
    assert np.array_equal(saved["model.shared.weight"], table.numpy())
    loaded = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(tmp_path / "saved"))
    with torch.no_grad():
        assert np.array_equal(loaded.model.shared.weight.numpy(), table.numpy())


def test_a_checkpoint_with_its_tokens_renumbered_computes_the_same_function(tmp_path):
    """`renumber_tokens` moves the token tables' rows with the ids, and
    `check_converts_back(..., new_id=)` accepts exactly that: the rebuilt
    model's logits for the renumbered tokens are ours, their columns
    renumbered. Moving an M2M100's pad id moves its positions, which the
    check names; tables renumbered under the ids unrenumbered are refused
    naming the weight."""
    from keras_attention.pretrained.bart import renumber_tokens
    from keras_attention.pretrained.families import FAMILIES
    from keras_attention.pretrained.saving import check_converts_back

    hf_checkpoints.save_checkpoint(tmp_path / "original", "m2m_100")
    model, info = load_pretrained(tmp_path / "original")
    row = FAMILIES["m2m_100"]
    pad, end, start = hf_checkpoints.ids("m2m_100")
    rest = [i for i in range(hf_checkpoints.VOCAB) if i != pad]
    order = list(np.random.default_rng(0).permutation(rest))
    order.insert(pad, pad)  # the pad id stays: M2M100 counts positions from it
    new_id = {old: new for new, old in enumerate(order)}
    config, tensors = renumber_tokens(*row.checkpoint(model, info["config"]), order)
    rebuilt = check_converts_back(model, row, config, tensors, new_id=new_id)
    assert (rebuilt.start_token_id, rebuilt.end_token_id, rebuilt.pad_token_id) == (
        new_id[model.start_token_id], new_id[model.end_token_id], pad)
    source = np.array([[5, 6, 7, end], [8, 9, end, pad]], "int32")
    target = np.array([[start, 5, 6, 7], [start, 8, 9, pad]], "int32")
    renumber = np.vectorize(new_id.get)
    ours = model({"encoder_token_ids": source, "decoder_token_ids": target})
    theirs = rebuilt({"encoder_token_ids": renumber(source).astype("int32"),
                      "decoder_token_ids": renumber(target).astype("int32")})
    np.testing.assert_allclose(np.asarray(theirs), np.asarray(ours)[..., order], atol=1e-5)

    moved = [1, 0] + list(range(2, hf_checkpoints.VOCAB))
    with pytest.raises(ValueError, match="setting `position_offset`"):
        check_converts_back(model, row, *renumber_tokens(*row.checkpoint(
            model, info["config"]), moved), new_id={0: 1, 1: 0})
    with pytest.raises(ValueError, match="its weight .* would not load back unchanged"):
        check_converts_back(model, row, row.checkpoint(model, info["config"])[0], tensors)


@pytest.fixture(scope="module")
def bart(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bart")
    hf_checkpoints.save_checkpoint(folder, "bart")
    return load_pretrained(folder)


def test_folders_that_may_not_be_written_are_refused(bart, tmp_path):
    model, info = bart
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="holds files but no checkpoint.*Received: folder="):
        save_pretrained(model, tmp_path / "notes", family="bart", config=info["config"],
                        overwrite=True)
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="must be a folder.*(a file)"):
        save_pretrained(model, tmp_path / "file", family="bart", config=info["config"])
    save_pretrained(model, tmp_path / "saved", family="bart", config=info["config"])
    with pytest.raises(ValueError, match="already holds a checkpoint; pass overwrite=True"):
        save_pretrained(model, tmp_path / "saved", family="bart", config=info["config"])
    before = (tmp_path / "saved" / "model.safetensors").stat().st_mtime_ns
    save_pretrained(model, tmp_path / "saved", family="bart", config=info["config"],
                    generation={"max_length": 9}, overwrite=True)
    assert (tmp_path / "saved" / "model.safetensors").stat().st_mtime_ns != before
    assert json.loads((tmp_path / "saved" / "generation_config.json").read_text()) == {
        "max_length": 9}
    with pytest.raises(ValueError, match="Received: family='gpt2'"):
        save_pretrained(model, tmp_path / "other", family="gpt2", config=info["config"])
    with pytest.raises(ValueError, match="Received: overwrite='yes'"):
        save_pretrained(model, tmp_path / "other", family="bart", config=info["config"],
                        overwrite="yes")


def test_a_model_the_family_cannot_express_writes_nothing(bart, tmp_path):
    """A config that does not describe the model (another depth) fails the
    check that the tensors convert back, in one line, before any file."""
    model, info = bart
    config = dict(info["config"], decoder_layers=info["config"]["decoder_layers"] + 1)
    with pytest.raises(ValueError, match="cannot be written as a bart checkpoint") as error:
        save_pretrained(model, tmp_path / "saved", family="bart", config=config)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "saved").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no partial folder either


@pytest.mark.parametrize("decoding", [
    {"target_length": 11, "strategy": "greedy", "num_beams": 1, "length_penalty": 1.0,
     "decoder_start_token_id": 1},
    {"target_length": 511, "strategy": "beam", "num_beams": 4, "length_penalty": 0.6,
     "early_stopping": True, "suppress_token_ids": [5, 7], "min_length": 3,
     "no_repeat_ngram_size": 2, "forced_bos_token_id": 9, "forced_eos_token_id": 2,
     "bad_words_ids": [[4]], "begin_suppress_token_ids": [6], "renormalize_logits": True,
     "decoder_start_token_id": 2},
])
def test_the_generation_config_reads_back_as_the_run_s_settings(decoding):
    config = checkpoint_generation_config(decoding, eos_token_id=2, pad_token_id=1,
                                          bos_token_id=0)
    settings = generation_settings(config, end_token_id=2, pad_token_id=1)
    assert settings.pop("max_length") == decoding["target_length"]
    sampler = settings.pop("sampler")
    assert getattr(sampler, "num_beams", 1) == decoding["num_beams"]
    if decoding["strategy"] == "beam":
        assert sampler.length_penalty == decoding["length_penalty"]
        assert sampler.early_stopping == decoding["early_stopping"]
    expected = {key: value for key, value in decoding.items() if key not in (
        "target_length", "strategy", "num_beams", "length_penalty", "early_stopping")}
    assert {key: (list(value) if isinstance(value, tuple) else value)
            for key, value in settings.items()} == expected
