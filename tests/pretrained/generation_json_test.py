"""`generation_settings`: checkpoints' generation configs as our `generate`
arguments, giving `transformers`' tokens, and every unsupported setting
refused by name."""

import json

import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.pretrained import generation_json as module
from keras_attention.pretrained import generation_settings

# Reading the configs is plain Python: those tests run under TensorFlow only.
CONFIG_ONLY = pytest.mark.backend_independent("reads generation configs, plain Python")

# The generation_config.json of three public checkpoints (ids as shipped).
MARIAN = {"bad_words_ids": [[58100]], "bos_token_id": 0, "decoder_start_token_id": 58100,
          "eos_token_id": 0, "forced_eos_token_id": 0, "max_length": 512, "num_beams": 4,
          "pad_token_id": 58100, "renormalize_logits": True, "transformers_version": "4.27.0"}
BART_CNN = {"_from_model_config": True, "bos_token_id": 0, "decoder_start_token_id": 2,
            "early_stopping": True, "eos_token_id": 2, "forced_bos_token_id": 0,
            "forced_eos_token_id": 2, "length_penalty": 2.0, "max_length": 142,
            "min_length": 56, "no_repeat_ngram_size": 3, "num_beams": 4, "pad_token_id": 1,
            "transformers_version": "4.27.0.dev0"}
T5 = {"decoder_start_token_id": 0, "eos_token_id": 1, "pad_token_id": 0,
      "transformers_version": "4.27.0.dev0"}


@CONFIG_ONLY
def test_marian():
    settings = generation_settings(MARIAN, end_token_id=0, pad_token_id=58100)
    assert settings == {
        "max_length": 511,
        "sampler": decoding.BeamSampler(num_beams=4, length_penalty=1.0,
                                        length_penalty_form="hf", early_stopping=False),
        "bad_words_ids": [[58100]], "forced_eos_token_id": 0, "renormalize_logits": True,
        "decoder_start_token_id": 58100,
    }


@CONFIG_ONLY
def test_bart_cnn():
    settings = generation_settings(BART_CNN, end_token_id=2, pad_token_id=1)
    assert settings == {
        "max_length": 141,
        "sampler": decoding.BeamSampler(num_beams=4, length_penalty=2.0,
                                        length_penalty_form="hf", early_stopping=True),
        "min_length": 55, "no_repeat_ngram_size": 3, "forced_bos_token_id": 0,
        "forced_eos_token_id": 2, "decoder_start_token_id": 2,
    }


@CONFIG_ONLY
def test_t5_and_defaults():
    assert generation_settings(T5) == {"max_length": 19, "sampler": decoding.GreedySampler(),
                                       "decoder_start_token_id": 0}
    assert generation_settings({"max_new_tokens": 7, "max_length": 50, "min_length": 5,
                                "min_new_tokens": 6})["max_length"] == 7
    assert generation_settings({"min_length": 5, "min_new_tokens": 2})["min_length"] == 4
    assert generation_settings({"bos_token_id": 3})["decoder_start_token_id"] == 3
    assert generation_settings({"eos_token_id": [4, 4]}, end_token_id=4)["max_length"] == 19
    assert generation_settings({"suppress_tokens": [5, 3], "begin_suppress_tokens": [7]}) == {
        "max_length": 19, "sampler": decoding.GreedySampler(), "suppress_token_ids": [3, 5],
        "begin_suppress_token_ids": [7]}


@CONFIG_ONLY
def test_sampling_settings():
    def sampler(**config):
        return generation_settings({"do_sample": True, **config})["sampler"]

    assert sampler(temperature=0.7) == decoding.TopKSampler(k=50, temperature=0.7)
    assert sampler(top_k=0, top_p=0.9) == decoding.TopPSampler(p=0.9)
    assert sampler(top_k=0) == decoding.RandomSampler()


@CONFIG_ONLY
def test_read_from_a_folder_or_a_file(tmp_path):
    (tmp_path / "generation_config.json").write_text(json.dumps(BART_CNN))
    expected = generation_settings(BART_CNN)
    assert generation_settings(tmp_path) == expected
    assert generation_settings(str(tmp_path / "generation_config.json")) == expected
    with pytest.raises(FileNotFoundError, match="No generation_config.json"):
        generation_settings(tmp_path / "missing")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        generation_settings(tmp_path / "bad.json")


@CONFIG_ONLY
@pytest.mark.parametrize("config, pattern", [
    ({"repetition_penalty": 1.2}, r"`repetition_penalty`.*not supported.*"
                                  r"Received: repetition_penalty=1.2"),
    ({"num_beam_groups": 2, "diversity_penalty": 0.5}, r"Received: num_beam_groups=2"),
    ({"encoder_no_repeat_ngram_size": 3}, r"Received: encoder_no_repeat_ngram_size=3"),
    ({"forced_decoder_ids": [[1, 5]]}, r"Received: forced_decoder_ids=\[\[1, 5\]\]"),
    ({"a_new_setting": 3}, r"`a_new_setting`.*not a setting we know.*Received: a_new_setting=3"),
    ({"eos_token_id": [1, 2]}, r"single token id.*Received: eos_token_id=\[1, 2\]"),
    ({"eos_token_id": 3}, r"end token id 2.*Received: eos_token_id=3"),
    ({"pad_token_id": 5}, r"pad token id 0.*Received: pad_token_id=5"),
    ({"max_length": 1}, r"Received: max_length=1"),
    ({"num_beams": 0}, r"Received: num_beams=0"),
    ({"do_sample": True, "top_p": 0.9}, r"top_k.*top_p.*Received: top_k=50, top_p=0.9"),
    ({"do_sample": True, "num_beams": 2}, r"Beam sampling.*Received: num_beams=2"),
    ({"num_return_sequences": 2}, r"Received: num_return_sequences=2"),
    ({"num_beams": 2, "early_stopping": "sometimes"}, r"Received: early_stopping='sometimes'"),
    ({"bad_words_ids": [5]}, r"Received: bad_words_ids=\[5\]"),
    ({"do_sample": "yes"}, r"Received: do_sample='yes'"),
])
def test_unsupported_or_bad_settings_are_named(config, pattern):
    with pytest.raises(ValueError, match=pattern):
        generation_settings(config, end_token_id=2, pad_token_id=0)


@CONFIG_ONLY
def test_defaults_and_none_are_accepted():
    config = {**module.UNSUPPORTED_DEFAULTS, **{k: None for k in module.DEFAULTS},
              "a_new_setting": None, "use_cache": False, "output_scores": True}
    assert generation_settings(config) == generation_settings({})


@CONFIG_ONLY
def test_every_transformers_key_is_known_with_its_default():
    """Our lists follow the installed `transformers`: no key of its
    GenerationConfig falls outside them, and the defaults are its own."""
    from transformers import GenerationConfig

    defaults = GenerationConfig._get_default_generation_params()
    for key in GenerationConfig().to_dict():
        known = key in module.SUPPORTED or key in module.NO_EFFECT
        assert known or key in module.UNSUPPORTED_DEFAULTS or key in _NONE_ONLY, key
        ours = {**module.DEFAULTS, **module.UNSUPPORTED_DEFAULTS}
        if key in defaults and key in ours:
            assert ours[key] == defaults[key], key


#: Keys of recent `transformers` that only None (unset) passes: the
#: generic rule for keys not in our lists.
_NONE_ONLY = {"use_mtp", "max_cache_len", "speculation_type", "assistant_ensemble_weight",
              "continuous_batching_config", "prefill_chunk_size"}


# The settings give transformers' tokens -----------------------------------------

B, V, L = 3, 12, 8
PAD, START, END = 0, 1, 2
CONFIGS = [
    {"num_beams": 3, "bad_words_ids": [[PAD]], "forced_eos_token_id": END,
     "renormalize_logits": True, "max_length": L + 1},
    {"num_beams": 3, "early_stopping": True, "length_penalty": 2.0, "min_length": 4,
     "no_repeat_ngram_size": 2, "forced_bos_token_id": 5, "forced_eos_token_id": END,
     "max_new_tokens": L},
    {"max_length": L, "suppress_tokens": [3, 4], "begin_suppress_tokens": [END]},
]


@pytest.mark.large
def test_the_settings_give_the_tokens_of_transformers():
    """Each config's settings drive our search over a next-token table as
    `transformers`' `generate` does (`tests.decoding.hf_reference`, run in
    this process: tests/conftest.py loads triton before the backend, so
    `transformers.generation` imports here as the converter tests' do)."""
    from tests.decoding import hf_reference

    rng = np.random.default_rng(3)
    table = rng.normal(scale=2.0, size=(B, L, V, V)).astype("float32")
    table[..., END] += 1.0
    expected = hf_reference.run(CONFIGS, table, start_id=START, end_id=END, pad_id=PAD)
    flat = ops.reshape(ops.convert_to_tensor(table), (-1, V))
    for config, reference in zip(CONFIGS, expected):
        settings = generation_settings(config, end_token_id=END)
        sampler, max_length = settings.pop("sampler"), settings.pop("max_length")
        suppressed = settings.pop("suppress_token_ids", None)
        rules = decoding.GenerationRules(suppress_token_ids=suppressed, **settings)
        process = rules.processor(start_id=START, end_id=END, max_length=max_length,
                                  vocab_size=V)

        def step_fn(token_ids, index, state):
            rows = (state["item"] * L + index) * V + token_ids
            return ops.take(flat, rows, axis=0), state, ops.zeros((ops.shape(token_ids)[0], 1))

        state = {"item": ops.repeat(ops.arange(B, dtype="int32"), sampler.num_beams, axis=0)}
        out = sampler.search(step_fn, state, sampler.dynamic_values(), batch_size=B,
                             max_length=max_length, start_id=START, end_id=END, pad_id=PAD,
                             vocab_size=V, process_scores=process)
        tokens = ops.convert_to_numpy(out.token_ids)
        tokens = tokens[:, 0] if tokens.ndim == 3 else tokens
        theirs = np.asarray(reference["token_ids"])
        theirs = np.pad(theirs, ((0, 0), (0, max_length - theirs.shape[1])))
        after_end = np.cumsum(np.cumsum(theirs == END, axis=1), axis=1) > 1
        np.testing.assert_array_equal(tokens, np.where(after_end, PAD, theirs), str(config))
