"""`Seq2SeqModel`: a functional encoder-decoder `keras.Model` with `generate`."""

import collections
import math
import os

import keras
import numpy as np
from keras import ops

from keras_attention.decoding.generation_rules import GenerationRules
from keras_attention.decoding.samplers import get_sampler
from keras_attention.decoding.token_suppression import check_suppress_token_ids, suppress_tokens
from keras_attention.layers.quantization import (
    check_quantized_sublayers,
    quantized_sublayers,
    restore_quantization,
)
from keras_attention.runtime import build_optimizer_before_fit
from keras_attention.validation import (
    check_call_bool,
    check_non_negative_int,
    check_positive_int,
    concrete_values,
)

GenerationResult = collections.namedtuple(
    "GenerationResult", ["token_ids", "scores", "logits", "attention"]
)
GenerationResult.__doc__ = """What `generate(..., return_scores=True)` (or
`return_logits` / `return_attention`) and `search` return.

token_ids: int `(B, L)`, or `(B, n, L)` with `num_return_sequences=n > 1`.
scores: float32 `(B,)` (or `(B, n)`): the sum of log-probabilities of the
    generated tokens, or the penalised beam score.
logits: float32 `(B, L, V)` step logits (not for beam search), else None.
attention: float32 `(B, L, S)` (or `(B, n, L, S)`) cross-attention of each
    generated token over the source, else None.
"""

SOURCE_BUCKET = 8  # encoder lengths are padded up to a multiple of this


def token_inputs():
    """The two named inputs of every `Seq2SeqModel`: int32 `(B, S)` and `(B, T)`."""
    return {
        name: keras.Input((None,), dtype="int32", name=name)
        for name in ("encoder_token_ids", "decoder_token_ids")
    }


def check_token_ids(name, token_ids, vocabulary_size):
    """Raises a ValueError naming `name` and the first id of the integer
    array `token_ids` outside `[0, vocabulary_size)`."""
    outside = np.argwhere((token_ids < 0) | (token_ids >= vocabulary_size))
    if len(outside):
        where = tuple(int(i) for i in outside[0])
        raise ValueError(
            f"`{name}` must hold token ids in [0, {vocabulary_size}). "
            f"Received: {int(token_ids[where])} at {list(where)}"
        )


def at_least_two_rows(x):
    """`x (B, ...)` with its row repeated when `B == 1` (also when `B` is
    known only at run time); unchanged otherwise.

    XLA's CPU code runs the matrix-vector products of a one-row decoding step
    several times slower than the matrix products of two rows (per-step
    figures in bench/RESULTS.md), and rows are decoded independently, so the
    search runs a single source as two and keeps the first. torch, which
    does not compile the loop, runs one row as it is.
    """
    if keras.config.backend() == "torch":
        return x
    rows = x.shape[0]
    if rows is not None:
        return ops.concatenate([x, x], axis=0) if rows == 1 else x
    extra = ops.maximum(2 - ops.shape(x)[0], 0)
    return ops.concatenate([x, x[:extra]], axis=0)


def _physical_memory_bytes():
    """This machine's memory in bytes, or None where it cannot be read."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _integer_array(name, value, batch_size=None):
    """`value` as a 2-D integer NumPy array `(batch, length)`."""
    array = np.asarray(value)
    valid = array.ndim == 2 and (array.size == 0 or np.issubdtype(array.dtype, np.integer))
    if valid and batch_size is not None:
        valid = array.shape[0] == batch_size
    if not valid:
        batch = "batch" if batch_size is None else f"batch={batch_size}"
        raise ValueError(
            f"`{name}` must be an integer array of shape ({batch}, length). "
            f"Received: shape {array.shape}, dtype {array.dtype}"
        )
    return array.astype("int32")


class _TraceCounter:
    """How many times the compiled generation functions were traced."""

    def __init__(self):
        self.count = 0


class _VariableList:
    """The model's variables, listed once for its compiled functions (held
    outside Keras' attribute tracking, which would count them twice)."""

    def __init__(self):
        self.variables = None


class Seq2SeqModel(keras.Model):
    """An encoder-decoder model made with the functional API, plus `generate`.

    Inputs are a dict `{"encoder_token_ids": (B, S), "decoder_token_ids":
    (B, T)}` of int tokens; the output is logits `(B, T, vocab)`. The token
    ids (pad, start, end) live in the model's config, so `generate` needs
    none; they are checked against the target vocabulary when the model is
    made. Subclasses build the graph, give `source_vocabulary_size` and
    `target_vocabulary_size`, and implement three hooks used by generation:

    - `encode(encoder_token_ids) -> (memory, memory_mask)`, where `memory`
      is a tensor or a nested structure of tensors with batch first,
    - `init_decoder_state(memory, memory_mask, max_length) -> state`,
    - `decode_step(token_ids (N,), index, state) -> (logits (N, V), state,
      attention (N, S))`.

    Beam search tiles `memory` and `memory_mask` over the `K` beams of each
    source before `init_decoder_state`; a subclass whose state reads the
    memory once for the beams of a source sets `shares_source_across_beams`
    and takes `init_decoder_state(memory, memory_mask, max_length,
    rows_per_source=K)` of the untiled memory (its state then serves `B * K`
    rows). A subclass whose `decode_step` also takes `row_starts` (rows
    that begin at different cache positions: continuous batching,
    `models.ContinuousDecoder`) sets `decodes_rows_from_any_step`.

    `generate` encodes once, then runs one `keras.ops.while_loop` over
    fixed-size caches, compiled once per shape bucket (batch size, source
    length rounded up to a multiple of 8) and static sampler settings:
    with XLA on TensorFlow (`tf.function(jit_compile=True)`), with `jax.jit`
    over the variables' values on JAX; on torch it runs eagerly under
    `torch.no_grad()`.
    """

    def __init__(self, *args, pad_token_id=0, start_token_id=1, end_token_id=2,
                 quantized_sublayers=None, **kwargs):
        quantized_sublayers = check_quantized_sublayers(quantized_sublayers)
        super().__init__(*args, **kwargs)
        ids = {
            "pad_token_id": pad_token_id,
            "start_token_id": start_token_id,
            "end_token_id": end_token_id,
        }
        for name, value in ids.items():
            check_non_negative_int(name, value)
        if len(set(ids.values())) != 3:
            raise ValueError(
                "`pad_token_id`, `start_token_id` and `end_token_id` must "
                f"differ. Received: {ids}"
            )
        self._check_special_token_ids(ids)
        self.pad_token_id = pad_token_id
        self.start_token_id = start_token_id
        self.end_token_id = end_token_id
        self._generate_functions = {}
        self._generate_traces = _TraceCounter()
        self._compiled_variables = _VariableList()  # `_variables_once()`
        # The sublayers a saved quantized model had quantized: the model is
        # rebuilt from its constructor arguments, in float, so they are
        # quantized again before the file's variables are loaded.
        self._saved_quantization = quantized_sublayers

    def _check_special_token_ids(self, ids):
        """Special ids must be target tokens: the logits' last dimension."""
        outputs = getattr(self, "outputs", None) or []
        vocabulary_size = outputs[0].shape[-1] if outputs else None
        if vocabulary_size is None:
            return
        for name, value in ids.items():
            if value >= vocabulary_size:
                raise ValueError(
                    f"Argument `{name}` must be a token id in [0, {vocabulary_size}) "
                    f"(the target vocabulary). Received: {name}={value}"
                )

    # Hooks implemented by subclasses -----------------------------------
    #: Whether `init_decoder_state` takes `rows_per_source` (see the class).
    shares_source_across_beams = False
    #: Whether `decode_step` takes `row_starts` (see the class).
    decodes_rows_from_any_step = False

    def encode(self, encoder_token_ids):
        raise NotImplementedError

    def init_decoder_state(self, memory, memory_mask, max_length):
        raise NotImplementedError

    def decode_step(self, token_ids, index, state):
        raise NotImplementedError

    @property
    def source_vocabulary_size(self):
        """The number of source token ids (`encoder_token_ids` < this)."""
        raise NotImplementedError

    @property
    def target_vocabulary_size(self):
        """The number of target token ids (the logits' last dimension)."""
        raise NotImplementedError

    # Training ------------------------------------------------------------
    def fit(self, *args, **kwargs):
        """`keras.Model.fit`, with the optimizer's variables created first,
        so that TensorFlow traces the train step once, not twice
        (`keras_attention.runtime.build_optimizer_before_fit`)."""
        build_optimizer_before_fit(self)
        return super().fit(*args, **kwargs)

    # Generation ----------------------------------------------------------
    def generate(
        self,
        encoder_token_ids,
        max_length,
        sampler="greedy",
        *,
        decoder_prompt=None,
        batch_size=None,
        return_scores=False,
        return_logits=False,
        return_attention=False,
        jit_compile=True,
        verbose=0,
        suppress_token_ids=None,
        min_length=0,
        no_repeat_ngram_size=0,
        forced_bos_token_id=None,
        forced_eos_token_id=None,
        bad_words_ids=None,
        begin_suppress_token_ids=None,
        renormalize_logits=False,
        decoder_start_token_id=None,
    ):
        """Generates target tokens for a batch of source sequences.

        Args:
            encoder_token_ids: int array `(B, S)` of ids in
                `[0, source_vocabulary_size)`, padded with `pad_token_id`.
            max_length: int `L`, the number of target tokens to produce
                (after the start token; includes the prompt). At most
                `max_sequence_length()` where the model has a learned
                position table (the decoder reads positions `0 .. L - 1`),
                as is the source length `S`.
            sampler: a `keras_attention.decoding` sampler
                (`GreedySampler()`, `BeamSampler(num_beams=4, ...)`,
                `TopKSampler`, `TopPSampler`, `RandomSampler`), its name or
                its config dict (see `decoding.get_sampler`).
            decoder_prompt: optional int array `(B, P)` of target ids forced
                at the first `P` positions (not scored, cannot end a row).
            batch_size: split the sources into batches of this size (the
                last batch is padded, so all batches share one compiled
                function); a progress bar is shown with `verbose=1`.
            return_scores, return_logits, return_attention: return a
                `GenerationResult` instead of the token ids alone
                (`return_logits` is not available with beam search).
            jit_compile: compile the loop (XLA on TensorFlow, `jax.jit` on
                JAX; torch always runs eagerly).
            verbose: 0 or 1 (a progress bar over batches).
            suppress_token_ids: optional list of target ids never generated
                by any sampler (e.g. `<unk>`, pad and start: see
                `data.never_generated_ids`); a `decoder_prompt` may still
                hold them. Ids in `[0, target_vocabulary_size)`, not the end
                token, not every id; duplicates are ignored. Their logits
                are `decoding.SUPPRESSED_LOGIT` (also in `return_logits`).
                Each set of suppressed ids compiles its own function (see
                `decoding.suppress_tokens`). With
                `BeamSampler(length_penalty_form="hf")` they are banned on
                the log-probabilities instead, as `transformers` does.
            min_length, no_repeat_ngram_size, forced_bos_token_id,
                forced_eos_token_id, bad_words_ids, begin_suppress_token_ids,
                renormalize_logits:
                the generation rules of pretrained checkpoints, as
                `transformers` applies them (see `decoding.GenerationRules`;
                `min_length` here is `transformers`' minus one: the end token
                cannot come before `min_length` other tokens). Each set of
                rules compiles its own function.
                `pretrained.generation_settings` reads them (and the sampler,
                `max_length`, `decoder_start_token_id`) from a checkpoint.
            decoder_start_token_id: the first input token of the decoder;
                None: the model's `start_token_id`. Any target id (Marian
                starts with its pad id, BART with its end id).

        Returns:
            int32 token ids `(B, L)` (`(B, n, L)` when a beam sampler returns
            `n > 1` sequences), padded with `pad_token_id` after each row's
            end token; or a `GenerationResult` when any `return_*` flag is
            set.
        """
        return_scores, return_logits, return_attention, jit_compile = (
            check_call_bool(name, value) for name, value in (
                ("return_scores", return_scores), ("return_logits", return_logits),
                ("return_attention", return_attention), ("jit_compile", jit_compile)))
        source = _integer_array("encoder_token_ids", encoder_token_ids)
        prompt = None
        if decoder_prompt is not None:
            prompt = _integer_array("decoder_prompt", decoder_prompt, source.shape[0])
        prompt_length = 0 if prompt is None else prompt.shape[1]
        sampler = get_sampler(sampler)
        rules = GenerationRules(
            min_length=min_length, no_repeat_ngram_size=no_repeat_ngram_size,
            forced_bos_token_id=forced_bos_token_id, forced_eos_token_id=forced_eos_token_id,
            bad_words_ids=bad_words_ids, begin_suppress_token_ids=begin_suppress_token_ids,
            renormalize_logits=renormalize_logits,
        )
        suppressed = self._check_search_arguments(
            source, prompt, prompt_length, sampler, max_length, return_logits,
            suppress_token_ids, rules, decoder_start_token_id, return_attention,
        )
        self._check_position_limit(source.shape[1], max_length)
        self._check_memory(max_length, source.shape[0], batch_size, sampler, return_logits)
        function = self._generate_function(
            sampler, int(max_length), return_logits, return_attention, jit_compile,
            suppressed, rules, decoder_start_token_id,
        )
        values = sampler.dynamic_values()
        empty_prompt = np.zeros((source.shape[0], 0), "int32")
        results = [
            self._generate_batch(function, source[i], (empty_prompt if prompt is None
                                                       else prompt)[i], values)
            for i in self._batches(source.shape[0], batch_size, verbose)
        ]
        result = GenerationResult(
            *(
                None if parts[0] is None else np.concatenate(parts, axis=0)
                for parts in zip(*results)
            )
        )
        if return_scores or return_logits or return_attention:
            return result
        return result.token_ids

    def max_sequence_length(self):
        """The most positions a source or target sequence may have (the
        rows of a learned position table), or None: no limit (sinusoidal
        and rotary positions, recurrent models)."""
        return None

    def _check_position_limit(self, source_length, max_length):
        """Raises a ValueError naming `max_length` or `encoder_token_ids`
        when it goes past `max_sequence_length()`: the decoder reads
        positions `0 .. max_length - 1` (the start token at 0), the encoder
        `0 .. S - 1`. An unknown (symbolic) `source_length` is checked by the
        embedding when the graph runs."""
        limit = self.max_sequence_length()
        if limit is None:
            return
        if max_length > limit:
            raise ValueError(
                f"Argument `max_length` must be at most {limit}: the decoder reads positions "
                f"0 .. max_length - 1 and the model's learned position table has {limit}. "
                f"Received: max_length={max_length!r}"
            )
        if isinstance(source_length, (int, np.integer)) and source_length > limit:
            raise ValueError(
                f"`encoder_token_ids` may hold at most {limit} tokens per row (the model's "
                f"learned position table); cut the sources. Received: "
                f"encoder_token_ids of length {int(source_length)}"
            )

    def decoder_cache_bytes_per_position(self):
        """Bytes the decoder state grows by per target position and row
        (its self-attention caches); 0 by default (an RNN state does not grow)."""
        return 0

    def _check_memory(self, max_length, num_sources, batch_size, sampler, return_logits):
        """Raises a ValueError naming `max_length` when the decoder caches and
        outputs it needs (a lower bound) exceed this machine's memory."""
        rows = num_sources * sampler.num_beams
        batch_rows = min(num_sources, batch_size or num_sources) * sampler.num_beams
        per_position = 4 * rows + (4 * rows * self.target_vocabulary_size if return_logits
                                   else 0) + batch_rows * self.decoder_cache_bytes_per_position()
        needed, available = int(max_length) * per_position, _physical_memory_bytes()
        if available and needed > available:
            raise ValueError(
                f"Argument `max_length` needs at least {needed / 2**30:.1f} GiB for the decoder "
                f"caches and outputs ({rows} rows of {max_length} positions), more than this "
                f"machine's {available / 2**30:.1f} GiB of memory. Received: "
                f"max_length={max_length!r}"
            )

    def _check_search_arguments(self, source, prompt, prompt_length, sampler, max_length,
                                return_logits, suppress_token_ids, rules=None,
                                decoder_start_token_id=None, return_attention=False):
        """Raises a ValueError naming the first argument `search` cannot use;
        returns the suppressed ids as a sorted tuple.

        `source` and `prompt` are NumPy arrays, or None where there is no
        prompt or the values are not known (symbolic tensors): then their
        ids are not checked.
        """
        if (
            not isinstance(max_length, (int, np.integer))
            or isinstance(max_length, bool)
            or max_length < max(prompt_length, 1)
        ):
            raise ValueError(
                "Argument `max_length` must be an integer >= 1 and >= the prompt "
                f"length ({prompt_length}). Received: max_length={max_length!r}"
            )
        if source is not None:
            check_token_ids("encoder_token_ids", source, self.source_vocabulary_size)
        if prompt is not None:
            check_token_ids("decoder_prompt", prompt, self.target_vocabulary_size)
        sampler.check_vocabulary(self.target_vocabulary_size)
        if return_logits and not sampler.returns_logits:
            raise ValueError(
                f"`return_logits` is not available with {type(sampler).__name__}. "
                f"Received: return_logits=True, sampler={sampler!r}"
            )
        if return_attention and not sampler.returns_attention:
            raise ValueError(
                f"`return_attention` is not available with {sampler!r}. "
                "Received: return_attention=True"
            )
        suppressed = check_suppress_token_ids(
            suppress_token_ids, self.target_vocabulary_size, end_id=self.end_token_id
        )
        if decoder_start_token_id is not None and (
            isinstance(decoder_start_token_id, bool)
            or not isinstance(decoder_start_token_id, (int, np.integer))
            or not 0 <= decoder_start_token_id < self.target_vocabulary_size
        ):
            raise ValueError(
                "Argument `decoder_start_token_id` must be None or a token id in [0, "
                f"{self.target_vocabulary_size}) (the target vocabulary). "
                f"Received: decoder_start_token_id={decoder_start_token_id!r}"
            )
        if rules is not None and not isinstance(rules, GenerationRules):
            raise ValueError(
                f"Argument `rules` must be None or a `decoding.GenerationRules`. "
                f"Received: rules={rules!r}"
            )
        if rules is not None:
            rules.check(self.target_vocabulary_size, end_id=self.end_token_id,
                        max_length=max_length)
        return suppressed

    def search(self, encoder_token_ids, sampler, max_length, decoder_prompt=None,
               return_attention=False, return_logits=False, suppress_token_ids=None,
               rules=None, decoder_start_token_id=None):
        """The decoding loop of `generate` as tensors, traceable.

        Usable inside a `tf.function` (symbolic `B` and `S` included, as
        `keras_attention.export` does), `jax.jit` or eagerly; no batching,
        no source bucketing, no conversion to NumPy. Token ids are checked
        (as in `generate`) when their values are known.

        Args:
            encoder_token_ids: int32 `(B, S)`.
            sampler: a sampler, its name or config (`decoding.get_sampler`).
            max_length: int `L`.
            decoder_prompt: optional int32 `(B, P)` forced prefix.
            return_attention, return_logits: fill those fields.
            suppress_token_ids: optional list of target ids never generated
                (checked as in `generate`).
            rules: optional `decoding.GenerationRules` (`generate`'s
                `min_length`, ..., `begin_suppress_token_ids`).
            decoder_start_token_id: as in `generate`.

        Returns:
            A `GenerationResult` of tensors (`token_ids (B, L)`, or `(B, n,
            L)` for a beam sampler with `n > 1` sequences).
        """
        return_attention = check_call_bool("return_attention", return_attention)
        return_logits = check_call_bool("return_logits", return_logits)
        sampler = get_sampler(sampler)
        source_values = concrete_values(encoder_token_ids)
        prompt_values = None if decoder_prompt is None else concrete_values(decoder_prompt)
        prompt_length = 0 if decoder_prompt is None else decoder_prompt.shape[1]
        rules = rules if rules is not None else GenerationRules()
        suppressed = self._check_search_arguments(
            source_values, prompt_values, prompt_length, sampler, max_length, return_logits,
            suppress_token_ids, rules, decoder_start_token_id, return_attention,
        )
        source_shape = (encoder_token_ids.shape if hasattr(encoder_token_ids, "shape")
                        else np.shape(encoder_token_ids))
        self._check_position_limit(source_shape[1], max_length)
        result = self._search_with_values(
            encoder_token_ids, decoder_prompt, sampler, max_length, sampler.dynamic_values(),
            return_logits, return_attention, suppressed, rules, decoder_start_token_id,
        )
        return self._best_only(result, sampler)

    @staticmethod
    def _best_only(result, sampler):
        """Drops the n-best axis of a beam result when `n == 1`."""
        if len(result.token_ids.shape) == 3 and sampler.num_return_sequences == 1:
            return GenerationResult(
                result.token_ids[:, 0],
                result.scores[:, 0],
                None,
                None if result.attention is None else result.attention[:, 0],
            )
        return result

    def _search_with_values(self, source, prompt, sampler, max_length, values,
                            return_logits, return_attention, suppressed=(), rules=None,
                            decoder_start_token_id=None):
        """Encodes once, then runs the sampler's loop; a `GenerationResult`.

        `values` are the sampler's dynamic values (NumPy scalars or scalar
        tensors); `suppressed`, the checked ids never generated; `rules`, the
        checked `GenerationRules` (or None). `B` and `S`
        come from the static shape of `source`, or at run time where it has
        none (a serving graph over a `(None,)` batch of strings).
        """
        source = ops.convert_to_tensor(source, "int32")
        if prompt is not None and prompt.shape[1] == 0:
            prompt = None
        if prompt is not None:
            prompt = ops.convert_to_tensor(prompt, "int32")
        rows = source.shape[0] if source.shape[0] is not None else ops.shape(source)[0]
        source = at_least_two_rows(source)
        prompt = None if prompt is None else at_least_two_rows(prompt)
        batch_size, source_length = source.shape
        if batch_size is None or source_length is None:
            batch_size, source_length = ops.shape(source)
        with self._autocast():
            memory, memory_mask = self.encode(source)
            beams = sampler.num_beams
            # Shared where the batch is static (the layers see `B` sources for
            # `B * K` rows in their shapes); a serving graph's `(None,)` batch tiles.
            if beams > 1 and self.shares_source_across_beams and source.shape[0] is not None:
                state = self.init_decoder_state(memory, memory_mask, max_length,
                                                rows_per_source=beams)
                memory_mask = ops.repeat(memory_mask, beams, axis=0)
            else:
                if beams > 1:

                    def tile(x):
                        return ops.repeat(x, beams, axis=0)

                    memory = keras.tree.map_structure(tile, memory)
                    memory_mask = tile(memory_mask)
                state = self.init_decoder_state(memory, memory_mask, max_length)
            rules = rules if rules is not None else GenerationRules()
            if suppressed and sampler.suppresses_log_probs:
                rules, suppressed = rules.with_suppressed(suppressed), ()
            start_id = (self.start_token_id if decoder_start_token_id is None
                        else int(decoder_start_token_id))
            process_scores = rules.processor(
                start_id=start_id, end_id=self.end_token_id, max_length=max_length,
                vocab_size=self.target_vocabulary_size,
            )
            step_fn = suppress_tokens(self.decode_step, suppressed, self.target_vocabulary_size)
            extra = {} if process_scores is None else {"process_scores": process_scores}
            output = sampler.search(
                step_fn, state, values, batch_size=batch_size, max_length=max_length,
                start_id=start_id, end_id=self.end_token_id,
                pad_id=self.pad_token_id, vocab_size=self.target_vocabulary_size,
                prompt=prompt, source_mask=memory_mask, source_length=source_length,
                collect_logits=return_logits, collect_attention=return_attention, **extra,
            )
        return GenerationResult(*(None if x is None else x[:rows] for x in output))

    def _autocast(self):
        """Variables read in the compute dtype under a mixed policy, as in a
        layer's `__call__` (the hooks call layer methods directly, and torch's
        einsum does not promote `bfloat16 x float32`)."""
        from keras_attention.keras_internals import autocast_scope

        mixed = [layer.compute_dtype for layer in self.layers
                 if layer.compute_dtype != layer.variable_dtype]
        return autocast_scope(mixed[0] if mixed else None)

    @staticmethod
    def _batches(total, batch_size, verbose):
        """Index slices of the batches, with an optional progress bar."""
        if batch_size is None:
            yield slice(0, total)
            return
        batch_size = check_positive_int("batch_size", batch_size)
        steps = math.ceil(total / batch_size)
        bar = keras.utils.Progbar(steps, verbose=verbose, unit_name="batch") if verbose else None
        for step in range(steps):
            yield slice(step * batch_size, min(total, (step + 1) * batch_size))
            if bar is not None:
                bar.update(step + 1)

    def _generate_batch(self, function, source, prompt, values):
        source_length = source.shape[1]
        outputs = function(self._bucket_source(source), prompt, values)
        token_ids, scores, logits, attention = (
            None if x is None else np.asarray(ops.convert_to_numpy(x)) for x in outputs
        )
        if attention is not None:
            attention = attention[..., :source_length]
        return token_ids, scores, logits, attention

    def _bucket_source(self, source):
        """Pads the source length up to a multiple of SOURCE_BUCKET (padding
        is masked, so results do not change) to limit retracing, or up to
        `max_sequence_length()` where that is less."""
        length = max(1, source.shape[1])
        bucketed = math.ceil(length / SOURCE_BUCKET) * SOURCE_BUCKET
        # Never past a learned position table (`generate` checked `length`).
        bucketed = min(bucketed, self.max_sequence_length() or bucketed)
        return np.pad(
            source.astype("int32"),
            ((0, 0), (0, bucketed - source.shape[1])),
            constant_values=self.pad_token_id,
        )

    def _generate_function(self, sampler, max_length, return_logits, return_attention,
                           jit_compile, suppressed=(), rules=None, decoder_start_token_id=None):
        """`function(source, prompt, values) -> GenerationResult`, one per
        static configuration (compiled functions trace once per shape); the
        suppressed ids (a tuple), the rules and the start id are part of it."""
        rules = rules if rules is not None else GenerationRules()
        key = (sampler.static_key(), max_length, return_logits, return_attention, jit_compile,
               tuple(suppressed), rules.key(), decoder_start_token_id,
               bool(self.shares_source_across_beams))
        if key not in self._generate_functions:
            def run(source, prompt, values):
                result = self._search_with_values(
                    source, prompt, sampler, max_length, values, return_logits,
                    return_attention, suppressed, rules, decoder_start_token_id,
                )
                return self._best_only(result, sampler)

            self._generate_functions[key] = self._compile(run, jit_compile)
        return self._generate_functions[key]

    def compile_function(self, run, jit_compile=True, donate_first=False):
        """`run(*arrays)`, a function of tensors that reads this model's
        variables, compiled as `generate`'s loop is (`jax.jit` over the
        variables' values on JAX, XLA on TensorFlow, `torch.no_grad` on
        torch); each trace adds one to `generate_trace_count()`.
        `donate_first=True`: on JAX, the first argument's buffers are given
        to the outputs (a state replaced by the result is then updated in
        place, not copied); the caller must not read them again."""
        jit_compile = check_call_bool("jit_compile", jit_compile)
        donate_first = check_call_bool("donate_first", donate_first)
        return self._compile(run, jit_compile, donate_first)

    def _compile(self, run, jit_compile, donate_first=False):
        """`run` compiled for the backend: XLA (or a graph) on TensorFlow,
        `jax.jit` over the variables' values on JAX, `torch.no_grad` on
        torch. Every trace adds one to `generate_trace_count()`."""
        backend = keras.config.backend()
        counter = self._generate_traces

        def traced(*args):
            counter.count += 1
            return run(*args)

        if backend == "tensorflow":
            import tensorflow as tf

            return tf.function(traced, jit_compile=jit_compile, autograph=False)
        if backend == "jax":
            return self._jax_jit(traced, donate_first) if jit_compile else run
        if backend == "torch":
            import torch

            def without_gradients(*args):
                with torch.no_grad():
                    return run(*args)

            return without_gradients
        return run

    def _jax_jit(self, traced, donate_first=False):
        """`jax.jit` of a stateless `traced`: the variables' values are
        arguments (as keras-hub's `CausalLM.generate` does on JAX), so one
        compiled program serves any weights of the same shapes."""
        import jax

        def stateless(values, *args):
            mapping = list(zip(self._variables_once(), values))
            with keras.StatelessScope(state_mapping=mapping):
                return traced(*args)

        compiled = jax.jit(stateless, donate_argnums=(1,) if donate_first else ())

        def call(*args):
            return compiled([v.value for v in self._variables_once()], *args)

        return call

    def _forget_compiled_functions(self):
        """Drops the compiled generation functions and the variable list
        they read (a quantization replaces variables)."""
        self._generate_functions = {}
        self._compiled_variables.variables = None

    def _variables_once(self):
        """Every variable of the model, listed once: listing them walks
        every sublayer, milliseconds that a decoding step called per token
        (`ContinuousDecoder`) would pay at each call. Listed again after a
        quantization (`quantize`, `load_own_variables`), which replaces
        variables."""
        if self._compiled_variables.variables is None:
            self._compiled_variables.variables = list(self.variables)
        return self._compiled_variables.variables

    def generate_trace_count(self):
        """How many times the compiled generation functions were traced (0
        on torch, which runs eagerly, and with `jit_compile=False` on JAX)."""
        return self._generate_traces.count

    # Quantization --------------------------------------------------------
    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize`, then drops the compiled generation
        functions: they hold the float weights the quantization replaced."""
        super().quantize(mode, config=config, filters=filters, **kwargs)
        self._forget_compiled_functions()

    def load_own_variables(self, store):
        """Quantizes the sublayers the saved config lists (`quantized_sublayers`)
        before Keras loads their variables, which follows this call."""
        restore_quantization(self, self._saved_quantization)
        self._saved_quantization = {}
        self._forget_compiled_functions()
        super().load_own_variables(store)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "pad_token_id": self.pad_token_id,
            "start_token_id": self.start_token_id,
            "end_token_id": self.end_token_id,
            # {sublayer path: dtype policy} of a quantized model, else None.
            "quantized_sublayers": quantized_sublayers(self) or None,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
