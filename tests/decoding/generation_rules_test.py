"""Each generation rule against `transformers`' own LogitsProcessor on the
same random scores and token histories."""

import numpy as np
import pytest
import torch
from keras import ops
from transformers.generation import logits_process as hf

from keras_attention.decoding import GenerationRules
from tests.decoding.scripted import compiled

V, N, L = 12, 8, 9
START, END = 1, 2
BAD_WORDS = [[3], [1, 2, 5], [0, 7], [END], [3, 3, 3, 8], [4, 4]]

# (our rules, the transformers processor); its lengths count the start token.
CASES = {
    "no_repeat_2": (GenerationRules(no_repeat_ngram_size=2), hf.NoRepeatNGramLogitsProcessor(2)),
    "no_repeat_3": (GenerationRules(no_repeat_ngram_size=3), hf.NoRepeatNGramLogitsProcessor(3)),
    "bad_words": (GenerationRules(bad_words_ids=BAD_WORDS),
                  hf.NoBadWordsLogitsProcessor(BAD_WORDS, END)),
    "min_length": (GenerationRules(min_length=3), hf.MinLengthLogitsProcessor(4, END)),
    "forced_bos": (GenerationRules(forced_bos_token_id=5), hf.ForcedBOSTokenLogitsProcessor(5)),
    "forced_eos": (GenerationRules(forced_eos_token_id=END),
                   hf.ForcedEOSTokenLogitsProcessor(L + 1, END)),
    "suppress": (GenerationRules(suppress_token_ids=[0, 4, 11]),
                 hf.SuppressTokensLogitsProcessor([0, 4, 11])),
    "begin_suppress": (GenerationRules(begin_suppress_token_ids=[END, 6]),
                       hf.SuppressTokensAtBeginLogitsProcessor([END, 6], 1)),
    "renormalize": (GenerationRules(renormalize_logits=True), hf.LogitNormalization()),
}


def histories(index, seed):
    """Token buffers `(N, L)` over a 4-token alphabet (many repeats); only
    `[:, :index]` is generated, the rest holds junk the rules must ignore."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 4, (N, L)).astype("int32")
    tokens[:, index:] = rng.integers(0, V, (N, L - index))
    with_start = np.concatenate([np.full((N, 1), START), tokens[:, :index]], axis=1)
    return tokens, torch.tensor(with_start, dtype=torch.long)


@pytest.mark.parametrize("name", CASES)
def test_each_rule_equals_the_transformers_processor(name):
    rules, processor = CASES[name]
    process = compiled(rules.processor(start_id=START, end_id=END, max_length=L, vocab_size=V))
    rng = np.random.default_rng(1)
    for index in range(L):
        tokens, input_ids = histories(index, seed=index)
        scores = rng.normal(size=(N, V)).astype("float32")
        ours = ops.convert_to_numpy(process(scores, ops.convert_to_tensor(index, "int32"),
                                            tokens))
        theirs = processor(input_ids, torch.tensor(scores)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6,
                                   err_msg=f"step {index}")
        np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(theirs))


def test_rules_in_transformers_order():
    """Forced tokens come after the bans, suppression after forcing."""
    rules = GenerationRules(min_length=3, forced_bos_token_id=END, suppress_token_ids=[5],
                            forced_eos_token_id=5, no_repeat_ngram_size=2,
                            renormalize_logits=True)
    processors = hf.LogitsProcessorList([
        hf.NoRepeatNGramLogitsProcessor(2), hf.MinLengthLogitsProcessor(4, END),
        hf.ForcedBOSTokenLogitsProcessor(END), hf.ForcedEOSTokenLogitsProcessor(L + 1, 5),
        hf.SuppressTokensLogitsProcessor([5]), hf.LogitNormalization(),
    ])
    process = rules.processor(start_id=START, end_id=END, max_length=L, vocab_size=V)
    for index in (0, 1, L - 1):
        tokens, input_ids = histories(index, seed=index)
        scores = np.random.default_rng(index).normal(size=(N, V)).astype("float32")
        ours = ops.convert_to_numpy(process(scores, ops.convert_to_tensor(index), tokens))
        theirs = processors(input_ids, torch.tensor(scores)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(theirs))


def test_begin_suppression_moves_after_a_forced_first_token():
    rules = GenerationRules(begin_suppress_token_ids=[6], forced_bos_token_id=4)
    process = rules.processor(start_id=START, end_id=END, max_length=L, vocab_size=V)
    tokens = np.full((1, L), 4, "int32")
    at = {i: ops.convert_to_numpy(process(np.zeros((1, V), "float32"), i, tokens))[0]
          for i in (0, 1, 2)}
    assert at[0][4] == 0 and np.isneginf(at[0][6])  # forced
    assert np.isneginf(at[1][6]) and at[1][5] == 0  # suppressed at the first free step
    assert at[2][6] == 0


def test_empty_rules_make_no_processor():
    assert GenerationRules().processor(start_id=1, end_id=2, max_length=4, vocab_size=5) is None
    assert GenerationRules().is_empty()
    assert not GenerationRules(min_length=1).is_empty()


def test_config_round_trip_and_equality():
    rules = GenerationRules(min_length=2, no_repeat_ngram_size=3, forced_bos_token_id=0,
                            forced_eos_token_id=2, bad_words_ids=[[1], [3, 4]],
                            suppress_token_ids=[5, 5, 6], begin_suppress_token_ids=[7],
                            renormalize_logits=True)
    again = GenerationRules.from_config(rules.get_config())
    assert again == rules and hash(again) == hash(rules)
    assert again.suppress_token_ids == (5, 6)
    assert rules.with_suppressed([9]).suppress_token_ids == (5, 6, 9)
    assert "min_length=2" in repr(rules)


@pytest.mark.parametrize("kwargs, name", [
    ({"min_length": -1}, "min_length"),
    ({"min_length": 1.5}, "min_length"),
    ({"no_repeat_ngram_size": True}, "no_repeat_ngram_size"),
    ({"forced_bos_token_id": -2}, "forced_bos_token_id"),
    ({"forced_eos_token_id": "2"}, "forced_eos_token_id"),
    ({"bad_words_ids": [1, 2]}, "bad_words_ids"),
    ({"bad_words_ids": [[]]}, "bad_words_ids"),
    ({"suppress_token_ids": [1, -1]}, "suppress_token_ids"),
    ({"begin_suppress_token_ids": 3}, "begin_suppress_token_ids"),
    ({"renormalize_logits": 1}, "renormalize_logits"),
])
def test_bad_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=rf"`{name}`.*Received: {name}="):
        GenerationRules(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    ({"forced_bos_token_id": 12}, "forced_bos_token_id"),
    ({"bad_words_ids": [[1, 40]]}, "bad_words_ids"),
    ({"suppress_token_ids": [END]}, "suppress_token_ids"),
    ({"begin_suppress_token_ids": [99]}, "begin_suppress_token_ids"),
    ({"forced_eos_token_id": V}, "forced_eos_token_id"),
])
def test_settings_that_do_not_fit_the_model_are_named(kwargs, name):
    with pytest.raises(ValueError, match=rf"`{name}`.*Received: {name}="):
        GenerationRules(**kwargs).check(V, end_id=END, max_length=L)


@pytest.mark.parametrize("kwargs, rules_out_only", [
    ({"suppress_token_ids": [3], "no_repeat_ngram_size": 2, "bad_words_ids": [[4, 5]],
      "min_length": 2, "begin_suppress_token_ids": [6]}, True),
    ({"forced_bos_token_id": 3}, False),   # a forced token scores 0, whatever its logit
    ({"forced_eos_token_id": 3}, False),
    ({"suppress_token_ids": [3], "renormalize_logits": True}, False),
])
def test_a_processor_says_whether_it_only_rules_tokens_out(kwargs, rules_out_only):
    process = GenerationRules(**kwargs).processor(start_id=0, end_id=1, max_length=8,
                                                  vocab_size=10)
    assert process.rules_out_only is rules_out_only
    scores = ops.convert_to_numpy(process(np.linspace(-2, 2, 20, dtype="float32").reshape(2, 10),
                                          ops.convert_to_tensor(0),
                                          np.zeros((2, 3), "int32")))
    if rules_out_only:
        # Every score is either the one given or -inf.
        given = np.linspace(-2, 2, 20, dtype="float32").reshape(2, 10)
        assert np.all((scores == given) | (scores == -np.inf))
