"""Decoding: how tokens are picked and how hypotheses are kept.

Model-free: every function works on a `step_fn(token_ids, index, state) ->
(logits, state, attention)` (see `keras_attention.decoding.search`).
"""

from keras_attention.decoding.beam_search import beam_search
from keras_attention.decoding.sampling import (
    STRATEGIES,
    select_tokens,
    top_k_logits,
    top_p_logits,
    validate_generation_args,
)
from keras_attention.decoding.search import SearchOutput, sampling_search

__all__ = [
    "STRATEGIES",
    "SearchOutput",
    "beam_search",
    "sampling_search",
    "select_tokens",
    "top_k_logits",
    "top_p_logits",
    "validate_generation_args",
]
