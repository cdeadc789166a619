"""How a token is picked from logits: greedy, top-k, top-p and sampling.

Every function takes float32 logits `(N, V)` and keeps `-inf` logits (banned
tokens) out of reach: a token with logit `-inf` is never picked.
"""

import math
import numbers

from keras import ops

from keras_attention.decoding import stateless_random

SAMPLING_STRATEGIES = ("greedy", "beam", "top_k", "top_p", "sample")


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def validate_generation_args(
    *,
    strategy,
    max_length,
    prompt_length,
    num_beams,
    num_return_sequences,
    k,
    p,
    temperature,
    length_penalty,
    coverage_penalty,
    vocab_size,
):
    """Raises a ValueError naming the first bad argument."""
    if strategy not in SAMPLING_STRATEGIES:
        raise ValueError(
            f"Argument `strategy` must be one of {', '.join(map(repr, SAMPLING_STRATEGIES))}. "
            f"Received: strategy={strategy!r}"
        )
    if not isinstance(max_length, numbers.Integral) or isinstance(max_length, bool) or (
        max_length < max(prompt_length, 1)
    ):
        raise ValueError(
            "Argument `max_length` must be an integer >= 1 and >= the prompt "
            f"length ({prompt_length}). Received: max_length={max_length!r}"
        )
    if not isinstance(num_beams, numbers.Integral) or isinstance(num_beams, bool) or num_beams < 1:
        raise ValueError(
            f"Argument `num_beams` must be an integer >= 1. Received: num_beams={num_beams!r}"
        )
    limit = num_beams if strategy == "beam" else 1
    if (
        not isinstance(num_return_sequences, numbers.Integral)
        or not 1 <= num_return_sequences <= limit
    ):
        raise ValueError(
            "Argument `num_return_sequences` must be an integer in [1, "
            f"num_beams] for beam search and 1 otherwise (here {limit}). "
            f"Received: num_return_sequences={num_return_sequences!r}"
        )
    if strategy == "top_k" and (
        not isinstance(k, numbers.Integral) or isinstance(k, bool) or not 1 <= k <= vocab_size
    ):
        raise ValueError(
            f"Argument `k` must be an integer in [1, vocab_size={vocab_size}]. "
            f"Received: k={k!r}"
        )
    if strategy == "top_p" and (not _is_number(p) or not 0.0 < p <= 1.0):
        raise ValueError(f"Argument `p` must be in (0, 1]. Received: p={p!r}")
    if not _is_number(temperature) or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(
            "Argument `temperature` must be a finite number >= 0 (0 means "
            f"greedy). Received: temperature={temperature!r}"
        )
    for name, value in (
        ("length_penalty", length_penalty),
        ("coverage_penalty", coverage_penalty),
    ):
        if not _is_number(value) or not math.isfinite(value) or value < 0:
            raise ValueError(
                f"Argument `{name}` must be a finite number >= 0. "
                f"Received: {name}={value!r}"
            )


def top_k_logits(logits, k):
    """Logits outside the `k` largest set to `-inf` (ties at the k-th value
    are kept)."""
    logits = ops.convert_to_tensor(logits)
    kth = ops.top_k(logits, k)[0][:, -1:]
    return ops.where(ops.greater_equal(logits, kth), logits, float("-inf"))


def top_p_logits(logits, p):
    """Logits outside the nucleus set to `-inf`: the smallest set of most
    likely tokens whose probability reaches `p` (the top token is always
    kept)."""
    logits = ops.convert_to_tensor(logits)
    sorted_logits = ops.top_k(logits, ops.shape(logits)[-1])[0]
    probs = ops.softmax(sorted_logits, axis=-1)
    before = ops.cumsum(probs, axis=-1) - probs  # mass of better tokens
    kept = ops.logical_or(before < p, ops.arange(ops.shape(logits)[-1]) == 0)
    threshold = ops.min(
        ops.where(kept, sorted_logits, float("inf")), axis=-1, keepdims=True
    )
    return ops.where(ops.greater_equal(logits, threshold), logits, float("-inf"))


def first_max_index(values):
    """`argmax` over the last axis, int32: the first of equal maxima, and
    the first NaN in a row that has one, as `ops.argmax`. Two vectorized
    reductions (the maximum, then the least index that holds it): XLA's
    CPU argmax reduces value-index pairs one by one, three times slower
    over a (16, 58101) row of logits.

    Args:
        values: float `(..., V)`.

    Returns:
        int32 `(...)`.
    """
    size = ops.shape(values)[-1]
    best = ops.max(values, axis=-1, keepdims=True)
    holds = ops.logical_or(values == best, ops.isnan(values))
    return ops.min(ops.where(holds, ops.arange(size, dtype="int32"), size), axis=-1)


def select_tokens(logits, *, strategy, k, p, temperature, seed, step):
    """Picks one token per row.

    Args:
        logits: float32 `(N, V)`.
        strategy: `"greedy"`, `"top_k"`, `"top_p"` or `"sample"`.
        k: int (top-k), static.
        p: float or scalar tensor (top-p).
        temperature: float or scalar tensor; 0 means greedy.
        seed: int or scalar tensor.
        step: scalar tensor, mixed into the random stream.

    Returns:
        int32 `(N,)`.
    """
    logits = ops.cast(logits, "float32")
    greedy = first_max_index(logits)
    if strategy == "greedy":
        return greedy
    if strategy == "top_k":
        logits = top_k_logits(logits, k)
    elif strategy == "top_p":
        logits = top_p_logits(logits, p)
    temperature = ops.cast(temperature, "float32")
    scaled = logits / ops.maximum(temperature, 1e-6)
    noise = stateless_random.gumbel(seed, step, ops.shape(logits)[0], ops.shape(logits)[1])
    # Gumbel-max: argmax(logits / T + G) is a sample of softmax(logits / T);
    # -inf logits stay -inf, so banned tokens are never drawn.
    sampled = first_max_index(scaled + noise)
    return ops.where(temperature > 0.0, sampled, greedy)
