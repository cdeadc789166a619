"""Generation rules: tokens a search may not pick at a given step.

`GenerationRules` holds the constraints that pretrained checkpoints'
generation settings use (Hugging Face's `min_length`, `no_repeat_ngram_size`,
`forced_bos_token_id`, `forced_eos_token_id`, `bad_words_ids`,
`suppress_tokens`, `begin_suppress_tokens`), each reproducing the
`transformers` logits processor of the same name, in the order
`transformers` applies them. A search calls the rules' `processor(...)` at
every step on the scores of every row: on the logits before a token is
picked (greedy, top-k, top-p, sampling), on the log-probabilities after the
log-softmax (beam search), as `transformers` does. A banned token's score is
`-inf`; a forced token's score is 0 and every other one `-inf`.

Lengths count the tokens after the start token (the decoder start token):
step `index` generates token `index`, and the rules see the sequence
`[start, tokens[0], ..., tokens[index - 1]]`, as `transformers` sees its
`input_ids`. `keras_attention.pretrained.generation_settings` converts a
`generation_config.json` to these arguments (its `min_length` and
`max_length` count the start token, so they are one more than ours).
"""

import numbers

import numpy as np
from keras import ops

NEG_INF = float("-inf")


def _is_int(value):
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def _check_id(name, value, allow_none=True):
    if value is None and allow_none:
        return None
    if not _is_int(value) or value < 0:
        raise ValueError(
            f"Argument `{name}` must be None or a token id (an integer >= 0). "
            f"Received: {name}={value!r}"
        )
    return int(value)


def _check_ids(name, value):
    """A tuple of distinct sorted ids from None or a list of ints."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple, np.ndarray)) or not all(
        _is_int(i) and i >= 0 for i in value
    ):
        raise ValueError(
            f"Argument `{name}` must be None or a list of token ids (integers >= 0). "
            f"Received: {name}={value!r}"
        )
    return tuple(sorted({int(i) for i in value}))


def _check_bad_words(value):
    if value is None:
        return ()
    valid = isinstance(value, (list, tuple)) and all(
        isinstance(word, (list, tuple)) and len(word) > 0
        and all(_is_int(i) and i >= 0 for i in word)
        for word in value
    )
    if not valid:
        raise ValueError(
            "Argument `bad_words_ids` must be None or a list of non-empty lists of token "
            f"ids (integers >= 0). Received: bad_words_ids={value!r}"
        )
    words = []
    for word in value:
        word = tuple(int(i) for i in word)
        if word not in words:
            words.append(word)
    return tuple(words)


class GenerationRules:
    """Constraints on the tokens a search picks, as `transformers` applies them.

    Args:
        min_length: int >= 0; the end token is banned at steps `index <
            min_length`, so at least `min_length` tokens come before it
            (`transformers`' `min_length` minus one).
        no_repeat_ngram_size: int >= 0 (0: off); no n-gram of this size
            occurs twice in `[start] + tokens`.
        forced_bos_token_id: None or the id forced as the first generated
            token (step 0).
        forced_eos_token_id: None or the id forced at the last step
            (`index == max_length - 1`).
        bad_words_ids: None or a list of token id sequences never generated:
            a single-token sequence is banned at every step (except the end
            token, which `transformers` leaves allowed); a longer one bans its
            last token when the tokens before it end the sequence so far.
        suppress_token_ids: None or ids banned at every step (as
            `transformers`' `suppress_tokens`: `-inf` on the scores).
        begin_suppress_token_ids: None or ids banned at the first free step
            (step 0, or step 1 when `forced_bos_token_id` is set).
        renormalize_logits: bool; a log-softmax after the other rules, so
            that beam search scores with the banned tokens' mass removed
            (`transformers`' `renormalize_logits`, which Marian checkpoints
            set).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> rules = GenerationRules(min_length=2)
    >>> process = rules.processor(start_id=1, end_id=2, max_length=5, vocab_size=4)
    >>> scores = ops.zeros((1, 4))
    >>> tokens = ops.zeros((1, 5), "int32")
    >>> ops.convert_to_numpy(process(scores, ops.convert_to_tensor(0), tokens))
    array([[  0.,   0., -inf,   0.]], dtype=float32)
    """

    def __init__(self, min_length=0, no_repeat_ngram_size=0, forced_bos_token_id=None,
                 forced_eos_token_id=None, bad_words_ids=None, suppress_token_ids=None,
                 begin_suppress_token_ids=None, renormalize_logits=False):
        for name, value in (("min_length", min_length),
                            ("no_repeat_ngram_size", no_repeat_ngram_size)):
            if not _is_int(value) or value < 0:
                raise ValueError(
                    f"Argument `{name}` must be an integer >= 0. Received: {name}={value!r}"
                )
        self.min_length = int(min_length)
        self.no_repeat_ngram_size = int(no_repeat_ngram_size)
        self.forced_bos_token_id = _check_id("forced_bos_token_id", forced_bos_token_id)
        self.forced_eos_token_id = _check_id("forced_eos_token_id", forced_eos_token_id)
        self.bad_words_ids = _check_bad_words(bad_words_ids)
        self.suppress_token_ids = _check_ids("suppress_token_ids", suppress_token_ids)
        self.begin_suppress_token_ids = _check_ids(
            "begin_suppress_token_ids", begin_suppress_token_ids
        )
        if not isinstance(renormalize_logits, (bool, np.bool_)):
            raise ValueError(
                "Argument `renormalize_logits` must be True or False. "
                f"Received: renormalize_logits={renormalize_logits!r}"
            )
        self.renormalize_logits = bool(renormalize_logits)

    def get_config(self):
        return {
            "min_length": self.min_length,
            "no_repeat_ngram_size": self.no_repeat_ngram_size,
            "forced_bos_token_id": self.forced_bos_token_id,
            "forced_eos_token_id": self.forced_eos_token_id,
            "bad_words_ids": [list(word) for word in self.bad_words_ids] or None,
            "suppress_token_ids": list(self.suppress_token_ids) or None,
            "begin_suppress_token_ids": list(self.begin_suppress_token_ids) or None,
            "renormalize_logits": self.renormalize_logits,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def key(self):
        """A hashable form (the rules are part of a compiled program)."""
        return (self.min_length, self.no_repeat_ngram_size, self.forced_bos_token_id,
                self.forced_eos_token_id, self.bad_words_ids, self.suppress_token_ids,
                self.begin_suppress_token_ids, self.renormalize_logits)

    def __eq__(self, other):
        return isinstance(other, GenerationRules) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        changed = {k: v for k, v in self.get_config().items()
                   if v != GenerationRules().get_config()[k]}
        return f"GenerationRules({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def is_empty(self):
        """Whether the rules change nothing."""
        return self == GenerationRules()

    def reads_step_only(self):
        """Whether every rule depends on a row's step alone, not on the
        tokens it generated (no `no_repeat_ngram_size`, no bad word of two
        tokens or more): then `processor`'s `index` may be a step per row,
        `(N, 1)`, for rows at different steps (continuous batching)."""
        return self.no_repeat_ngram_size == 0 and all(
            len(word) == 1 for word in self.bad_words_ids)

    def with_suppressed(self, token_ids):
        """These rules with `token_ids` added to `suppress_token_ids`."""
        config = self.get_config()
        config["suppress_token_ids"] = sorted(set(self.suppress_token_ids) | set(token_ids))
        return GenerationRules.from_config(config)

    def check(self, vocab_size, *, end_id, max_length=None):
        """Raises a ValueError naming the first setting that does not fit a
        target vocabulary of `vocab_size` ids and its end token.

        (A `min_length` of `max_length` or more is allowed, as in
        `transformers`: rows then end only where `forced_eos_token_id`
        ends them.)"""
        ids = {
            "forced_bos_token_id": [self.forced_bos_token_id],
            "forced_eos_token_id": [self.forced_eos_token_id],
            "bad_words_ids": [i for word in self.bad_words_ids for i in word],
            "suppress_token_ids": list(self.suppress_token_ids),
            "begin_suppress_token_ids": list(self.begin_suppress_token_ids),
        }
        for name, values in ids.items():
            outside = [i for i in values if i is not None and i >= vocab_size]
            if outside:
                value = getattr(self, name)
                raise ValueError(
                    f"Argument `{name}` must hold token ids in [0, {vocab_size}) (the target "
                    f"vocabulary); {outside[0]} is not. Received: {name}={value!r}"
                )
        if end_id in self.suppress_token_ids:
            raise ValueError(
                f"Argument `suppress_token_ids` must not hold the end token id {end_id} (rows "
                f"must be able to end). Received: suppress_token_ids="
                f"{list(self.suppress_token_ids)!r}"
            )

    def processor(self, *, start_id, end_id, max_length, vocab_size):
        """`process(scores (N, V), index, tokens (N, L)) -> scores (N, V)`.

        `tokens` holds each row's tokens so far (`tokens[:, :index]`, the rest
        is ignored); `index` is the step, a scalar int tensor, or int `(N,
        1)`, each row's own step, where `reads_step_only()`. Returns None
        when the rules change nothing.
        """
        if self.is_empty():
            return None
        steps = []
        if self.no_repeat_ngram_size > 0:
            steps.append(lambda s, i, full: _no_repeat_ngram(
                s, i, full, self.no_repeat_ngram_size))
        bad_words = [w for w in self.bad_words_ids if w != (end_id,)]
        if bad_words:
            steps.append(lambda s, i, full: _bad_words(s, i, full, bad_words, vocab_size))
        if self.min_length > 0:
            steps.append(lambda s, i, full: _ban_where(
                s, i < self.min_length, [end_id], vocab_size))
        if self.forced_bos_token_id is not None:
            steps.append(lambda s, i, full: _force_where(
                s, i == 0, self.forced_bos_token_id, vocab_size))
        if self.forced_eos_token_id is not None:
            steps.append(lambda s, i, full: _force_where(
                s, i == max_length - 1, self.forced_eos_token_id, vocab_size))
        if self.suppress_token_ids:
            steps.append(lambda s, i, full: _ban_where(
                s, True, self.suppress_token_ids, vocab_size))
        if self.begin_suppress_token_ids:
            begin = 0 if self.forced_bos_token_id is None else 1
            steps.append(lambda s, i, full: _ban_where(
                s, i == begin, self.begin_suppress_token_ids, vocab_size))
        if self.renormalize_logits:
            steps.append(lambda s, i, full: ops.log_softmax(s, axis=-1))

        rules_out_only = (self.forced_bos_token_id is None and self.forced_eos_token_id is None
                          and not self.renormalize_logits)
        return ScoresProcess(steps, start_id=start_id, rules_out_only=rules_out_only)


class ScoresProcess:
    """`process(scores (N, V), index, tokens (N, L)) -> scores (N, V)`: the
    steps of `GenerationRules.processor`, in order.

    `rules_out_only` is True when every step only sets some scores to `-inf`,
    whatever the scores are (bans; no forced token, no renormalization).
    Such a process rules out the same tokens whether it sees logits or
    log-probabilities, so a beam search may apply it to the logits
    (`beam_search.extend_beams`).
    """

    def __init__(self, steps, *, start_id, rules_out_only):
        self.steps = tuple(steps)
        self.start_id = start_id
        self.rules_out_only = rules_out_only

    def __call__(self, scores, index, tokens):
        scores = ops.cast(scores, "float32")
        index = ops.cast(index, "int32")
        start = ops.full((ops.shape(tokens)[0], 1), self.start_id, "int32")
        full = ops.concatenate([start, ops.cast(tokens, "int32")], axis=1)
        for step in self.steps:
            scores = step(scores, index, full)
        return scores


def _id_mask(token_ids, vocab_size):
    mask = np.zeros((vocab_size,), "bool")
    mask[list(token_ids)] = True
    return ops.convert_to_tensor(mask)


def _ban_where(scores, condition, token_ids, vocab_size):
    banned = ops.logical_and(_id_mask(token_ids, vocab_size)[None, :], condition)
    return ops.where(banned, NEG_INF, scores)


def _force_where(scores, condition, token_id, vocab_size):
    forced = ops.where(_id_mask([token_id], vocab_size), 0.0, NEG_INF)
    return ops.where(condition, forced[None, :], scores)


def _no_repeat_ngram(scores, index, full, n):
    """`transformers`' NoRepeatNGramLogitsProcessor over `full[:, :index + 1]`."""
    rows, width = full.shape[0], full.shape[1]
    if rows is None:
        rows = ops.shape(full)[0]
    vocab_size = scores.shape[-1]
    windows = width - n + 1  # windows start at j = 0 .. width - n
    if windows <= 0:
        return scores
    length = index + 1
    banned_token = full[:, n - 1:n - 1 + windows]
    # Windows that end before the next token and start with the last n - 1
    # tokens ban their own last token.
    match = ops.logical_and(ops.arange(windows)[None, :] <= length - n,
                            ops.ones_like(banned_token, dtype="bool"))
    for k in range(n - 1):
        prefix_k = ops.take(full, ops.maximum(length - (n - 1) + k, 0), axis=1)
        match = ops.logical_and(match, full[:, k:k + windows] == prefix_k[:, None])
    row_ids = ops.arange(rows, dtype="int32")[:, None] * vocab_size
    segments = ops.reshape(row_ids + ops.minimum(banned_token, vocab_size - 1), (-1,))
    hits = ops.segment_max(
        ops.reshape(ops.cast(match, "float32"), (-1,)), segments,
        num_segments=rows * vocab_size if isinstance(rows, int) else None,
    )
    banned = ops.reshape(hits > 0.5, (rows, vocab_size))
    banned = ops.logical_and(banned, length >= n)
    return ops.where(banned, NEG_INF, scores)


def _bad_words(scores, index, full, words, vocab_size):
    """`transformers`' NoBadWordsLogitsProcessor: single tokens always, longer
    words when their prefix ends `full[:, :index + 1]`."""
    length = index + 1
    banned = ops.zeros_like(scores, dtype="bool")
    single = [w[0] for w in words if len(w) == 1]
    if single:
        banned = ops.logical_or(banned, _id_mask(single, vocab_size)[None, :])
    by_prefix = {}
    for word in words:
        if len(word) > 1:
            by_prefix.setdefault(len(word) - 1, []).append(word)
    for m, group in sorted(by_prefix.items()):
        if m > full.shape[1]:
            continue
        prefixes = np.array([w[:-1] for w in group], "int32")  # (G, m)
        last = np.zeros((len(group), vocab_size), "float32")
        last[np.arange(len(group)), [w[-1] for w in group]] = 1.0
        ends = ops.stack(
            [ops.take(full, ops.maximum(length - m + k, 0), axis=1) for k in range(m)], axis=1
        )  # (N, m)
        matches = ops.all(ends[:, None, :] == prefixes[None], axis=-1)  # (N, G)
        matches = ops.logical_and(matches, length >= m)
        hits = ops.matmul(ops.cast(matches, "float32"), ops.convert_to_tensor(last))
        banned = ops.logical_or(banned, hits > 0.5)
    return ops.where(banned, NEG_INF, scores)
