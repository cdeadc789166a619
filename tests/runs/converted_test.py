"""The `"converted"` model kind's decoding settings: recorded from a
checkpoint's generation settings, mapped to `generate` in one place, and
refused naming the key when a `config.json` holds a bad one. (Converting
and decoding real checkpoints: tests/runs/convert_test.py.)"""

import json

import numpy as np
import pytest

from keras_attention import runs
from keras_attention.decoding.samplers import BeamSampler, GreedySampler, TopKSampler
from keras_attention.pretrained.generation_config import generation_settings
from keras_attention.runs import converted

MARIAN = {"num_beams": 4, "max_length": 512, "bad_words_ids": [[58100]], "eos_token_id": 0,
          "decoder_start_token_id": 58100, "pad_token_id": 58100, "length_penalty": 0.6,
          "early_stopping": True, "no_repeat_ngram_size": 3, "min_length": 4,
          "suppress_tokens": [5, 6], "forced_eos_token_id": 0}


def test_every_generation_setting_is_recorded_and_mapped_back():
    settings = generation_settings(MARIAN)
    decoding = converted.decoding_from_generation(settings, 512)
    json.dumps(decoding)  # JSON-able
    assert decoding == {
        "source_length": 512, "target_length": 511, "strategy": "beam", "num_beams": 4,
        "length_penalty": 0.6, "early_stopping": True, "min_length": 3,
        "no_repeat_ngram_size": 3, "forced_eos_token_id": 0, "bad_words_ids": [[58100]],
        "suppress_token_ids": [5, 6], "decoder_start_token_id": 58100}
    kwargs = converted.generate_kwargs(decoding)
    assert kwargs.pop("sampler") == settings.pop("sampler")
    assert kwargs == settings  # the same `generate` call as load_pretrained's


def test_overrides():
    decoding = converted.decoding_from_generation(generation_settings(MARIAN), 512)
    assert converted.generate_kwargs(decoding, strategy="greedy")["sampler"] == GreedySampler()
    assert converted.generate_kwargs(decoding, num_beams=2)["sampler"].num_beams == 2
    greedy = converted.decoding_from_generation(generation_settings({"max_length": 8}), 64)
    assert greedy["strategy"] == "greedy"
    assert converted.generate_kwargs(greedy)["sampler"] == GreedySampler()
    beam = converted.generate_kwargs(greedy, strategy="beam")["sampler"]
    assert isinstance(beam, BeamSampler) and beam.num_beams == 4
    assert beam.length_penalty_form == "hf" and beam.length_penalty == 1.0
    assert converted.generate_kwargs(greedy, num_beams=3)["sampler"].num_beams == 3


@pytest.mark.parametrize("decoding, message", [
    ({"source_length": 8, "target_length": 8, "coverage_penalty": 0.2},
     r"unknown keys \['coverage_penalty'\]"),
    ({"source_length": 8, "target_length": 0}, r"Received: target_length=0"),
    ({"source_length": 8, "target_length": 8, "strategy": "top_k"},
     r"Received: strategy='top_k'"),
    ({"source_length": 8, "target_length": 8, "length_penalty": "1"},
     r"Received: length_penalty='1'"),
])
def test_bad_settings_are_named(decoding, message):
    with pytest.raises(ValueError, match=message):
        converted.generate_kwargs(decoding)


def test_a_sampling_checkpoint_is_refused():
    settings = {"max_length": 8, "sampler": TopKSampler(k=5)}
    with pytest.raises(ValueError, match="do_sample"):
        converted.decoding_from_generation(settings, 64)
    settings = {"max_length": 8, "sampler": BeamSampler(num_beams=4, num_return_sequences=2,
                                                        length_penalty_form="hf")}
    with pytest.raises(ValueError, match="Received: num_return_sequences=2"):
        converted.decoding_from_generation(settings, 64)


class _Tokenizer:
    pad_token_id = 9

    def encode(self, texts):
        return [[1] * len(text) + [0] for text in texts]


def test_sources_are_padded_and_cut_keeping_the_end_token():
    ids = converted.encode_sources(["ab", "", "abcdefgh"], _Tokenizer(), 5)
    np.testing.assert_array_equal(ids, [[1, 1, 0, 9, 9], [0, 9, 9, 9, 9], [1, 1, 1, 1, 0]])


def test_a_bad_decoding_in_config_json_is_one_run_folder_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "format_version": 1, "recipe": "translation", "config": {}, "scores": {},
        "tokenizers": {"source": "tokenizer", "target": "tokenizer"},
        "decoding": {"source_length": 8, "target_length": 8, "strategy": "sample"},
        "source_format": "text", "converted_from": {"family": "marian"}}))
    with pytest.raises(runs.RunFolderError, match=r"config.json has bad settings .*"
                                                  r"Received: strategy='sample'"):
        runs.read_metadata(str(tmp_path))
