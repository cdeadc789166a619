"""`GenerationConfig`: the one object of a run's generation settings, in both
beam-scoring forms: recorded from a recipe's settings or a checkpoint's
generation config, saved and read back as `config.json`'s `decoding`, the
CLI's overrides applied in one place, mapped to `generate` in one place,
bad values refused naming the field."""

import json

import pytest

from keras_attention.decoding.samplers import BeamSampler, GreedySampler, TopKSampler
from keras_attention.pretrained.generation_json import generation_settings
from keras_attention.runs import GenerationConfig

pytestmark = pytest.mark.backend_independent("settings and samplers are plain Python")

MARIAN = {"num_beams": 4, "max_length": 512, "bad_words_ids": [[58100]], "eos_token_id": 0,
          "decoder_start_token_id": 58100, "pad_token_id": 58100, "length_penalty": 0.6,
          "early_stopping": True, "no_repeat_ngram_size": 3, "min_length": 4,
          "suppress_tokens": [5, 6], "forced_eos_token_id": 0}


def test_every_checkpoint_setting_is_recorded_and_mapped_back():
    settings = generation_settings(MARIAN)
    config = GenerationConfig.from_generate_kwargs(settings, 512)
    decoding = config.to_dict()
    json.dumps(decoding)  # JSON-able
    assert decoding == {
        "source_length": 512, "target_length": 511, "strategy": "beam", "num_beams": 4,
        "length_penalty": 0.6, "length_penalty_form": "hf", "early_stopping": True,
        "min_length": 3,
        "no_repeat_ngram_size": 3, "forced_eos_token_id": 0, "bad_words_ids": [[58100]],
        "suppress_token_ids": [5, 6], "decoder_start_token_id": 58100}
    assert GenerationConfig.from_dict(decoding) == config  # read back as saved: its form
    kwargs = config.generate_kwargs()
    assert kwargs.pop("sampler") == settings.pop("sampler")
    assert kwargs == settings  # the same `generate` call as load_pretrained's


def test_a_recipe_run_maps_to_gnmt_beams():
    config = GenerationConfig(source_length=16, target_length=8, strategy="beam", num_beams=3,
                              length_penalty=0.6, coverage_penalty=0.2,
                              suppress_token_ids=[0, 1])
    assert config.to_dict() == {
        "source_length": 16, "target_length": 8, "strategy": "beam", "num_beams": 3,
        "length_penalty": 0.6, "length_penalty_form": "gnmt", "coverage_penalty": 0.2,
        "suppress_token_ids": [0, 1]}
    kwargs = config.generate_kwargs()
    assert kwargs["sampler"] == BeamSampler(num_beams=3, length_penalty=0.6,
                                            coverage_penalty=0.2)
    assert kwargs["max_length"] == 8 and kwargs["suppress_token_ids"] == [0, 1]
    assert set(kwargs) == {"sampler", "max_length", "suppress_token_ids"}


def test_a_folder_saved_before_a_key_existed_gets_its_default():
    config = GenerationConfig.from_dict({"source_length": 10, "target_length": 10,
                                         "strategy": "beam", "num_beams": 2})
    assert (config.length_penalty, config.coverage_penalty, config.suppress_token_ids) == (
        0.0, 0.0, ())
    assert GenerationConfig.from_dict({"source_length": 4, "target_length": 4},
                                      "hf").length_penalty == 1.0  # transformers' default


def test_a_decoding_records_its_form_and_an_unrecorded_one_takes_the_kinds():
    """A translation run scores its beams the `hf` way and says so in its
    `decoding`; a folder saved before the key existed gets the form given
    (its model kind's), and a recorded form wins over it."""
    hf = GenerationConfig(source_length=8, target_length=8, strategy="beam", num_beams=2,
                          length_penalty=0.6, length_penalty_form="hf")
    decoding = hf.to_dict()
    assert decoding["length_penalty_form"] == "hf"
    assert GenerationConfig.from_dict(decoding, "gnmt") == hf
    unrecorded = {key: value for key, value in decoding.items()
                  if key not in ("length_penalty_form", "early_stopping")}
    assert GenerationConfig.from_dict(unrecorded, "gnmt").length_penalty_form == "gnmt"
    sampler = GenerationConfig.from_dict(decoding).generate_kwargs()["sampler"]
    assert (sampler.length_penalty_form, sampler.length_penalty) == ("hf", 0.6)
    with pytest.raises(ValueError, match=r"unknown keys \['coverage_penalty'\]"):
        GenerationConfig.from_dict(dict(decoding, coverage_penalty=0.2))


@pytest.mark.parametrize("form", ["gnmt", "hf"])
def test_overrides(form):
    beam = GenerationConfig(source_length=8, target_length=8, strategy="beam", num_beams=5,
                            length_penalty_form=form)
    assert beam.with_search(strategy="greedy").generate_kwargs()["sampler"] == GreedySampler()
    assert beam.with_search("greedy").num_beams == 1
    assert beam.with_search(num_beams=2).generate_kwargs()["sampler"].num_beams == 2
    assert beam.with_search() == beam
    greedy = GenerationConfig(source_length=8, target_length=8, length_penalty_form=form)
    assert greedy.with_search().generate_kwargs()["sampler"] == GreedySampler()
    sampler = greedy.with_search(strategy="beam").generate_kwargs()["sampler"]
    assert isinstance(sampler, BeamSampler) and sampler.num_beams == 4
    assert sampler.length_penalty_form == form
    assert greedy.with_search(num_beams=3).strategy == "beam"  # beams alone mean beam search
    with pytest.raises(ValueError, match=r"`strategy`.*Received: strategy='top_k'"):
        greedy.with_search(strategy="top_k")
    with pytest.raises(ValueError, match=r"`num_beams`.*Received: num_beams=0"):
        greedy.with_search(num_beams=0)


@pytest.mark.parametrize("decoding, message", [
    ({"source_length": 8, "target_length": 8, "coverage_penalty": 0.2},
     r"unknown keys \['coverage_penalty'\]"),
    ({"source_length": 8, "target_length": 0}, r"Received: target_length=0"),
    ({"source_length": 8}, r"must set `target_length`"),
    ({"source_length": 8, "target_length": 8, "strategy": "top_k"},
     r"Received: strategy='top_k'"),
    ({"source_length": 8, "target_length": 8, "length_penalty": "1"},
     r"Received: length_penalty='1'"),
    ({"source_length": 8, "target_length": 8, "early_stopping": "yes"},
     r"Received: early_stopping='yes'"),
    ({"source_length": 8, "target_length": 8, "suppress_token_ids": [1, -2]},
     r"Received: suppress_token_ids=\[1, -2\]"),
    ([("source_length", 8)], r"`decoding` must be a dict"),
])
def test_bad_settings_are_named(decoding, message):
    with pytest.raises(ValueError, match=message):
        GenerationConfig.from_dict(decoding, "hf")


def test_bad_fields_are_named_at_construction():
    with pytest.raises(ValueError, match=r"Received: num_beams=True"):
        GenerationConfig(source_length=8, target_length=8, num_beams=True)
    with pytest.raises(ValueError, match=r"Received: coverage_penalty=-1"):
        GenerationConfig(source_length=8, target_length=8, coverage_penalty=-1)
    with pytest.raises(ValueError, match=r"Received: length_penalty_form='marian'"):
        GenerationConfig(source_length=8, target_length=8, length_penalty_form="marian")


def test_a_sampling_checkpoint_is_refused():
    settings = {"max_length": 8, "sampler": TopKSampler(k=5)}
    with pytest.raises(ValueError, match="do_sample"):
        GenerationConfig.from_generate_kwargs(settings, 64)
    settings = {"max_length": 8, "sampler": BeamSampler(num_beams=4, num_return_sequences=2,
                                                        length_penalty_form="hf")}
    with pytest.raises(ValueError, match="Received: num_return_sequences=2"):
        GenerationConfig.from_generate_kwargs(settings, 64)
