"""Decoding: how tokens are picked and how hypotheses are kept.

Samplers (`GreedySampler`, `BeamSampler`, `TopKSampler`, `TopPSampler`,
`RandomSampler`) are what `Seq2SeqModel.generate(..., sampler=...)` takes;
`get_sampler` makes one from a name or a config. Underneath, model-free
loops work on a `step_fn(token_ids, index, state) -> (logits, state,
attention)` (see `keras_attention.decoding.search`); `suppress_tokens`
wraps one so that given token ids (`<unk>`, pad, start) are never generated;
`GenerationRules` (min length, no repeated n-grams, forced first and last
tokens, bad words) and `hf_beam_search` reproduce `transformers`' `generate`
for pretrained checkpoints.
"""

from keras_attention.decoding.beam_search import beam_search
from keras_attention.decoding.generation_rules import GenerationRules
from keras_attention.decoding.hf_beam_search import hf_beam_search
from keras_attention.decoding.samplers import (
    BeamSampler,
    GreedySampler,
    RandomSampler,
    Sampler,
    TopKSampler,
    TopPSampler,
    get_sampler,
    serialize_sampler,
)
from keras_attention.decoding.sampling import (
    SAMPLING_STRATEGIES,
    select_tokens,
    top_k_logits,
    top_p_logits,
    validate_generation_args,
)
from keras_attention.decoding.search import (
    BEAM_SLOTS,
    SOURCE_STATE,
    SearchOutput,
    sampling_search,
)
from keras_attention.decoding.token_suppression import (
    SUPPRESSED_LOGIT,
    check_suppress_token_ids,
    suppress_tokens,
)

__all__ = [
    "BeamSampler",
    "GenerationRules",
    "GreedySampler",
    "RandomSampler",
    "SAMPLING_STRATEGIES",
    "SUPPRESSED_LOGIT",
    "Sampler",
    "TopKSampler",
    "TopPSampler",
    "get_sampler",
    "serialize_sampler",
    "BEAM_SLOTS",
    "SOURCE_STATE",
    "SearchOutput",
    "beam_search",
    "check_suppress_token_ids",
    "hf_beam_search",
    "sampling_search",
    "select_tokens",
    "suppress_tokens",
    "top_k_logits",
    "top_p_logits",
    "validate_generation_args",
]
