"""`ContinuousDecoder`: greedy decoding where rows join and leave a running
batch between steps (continuous batching).

`Seq2SeqModel.generate` decodes a batch until its longest row ends: a row
that ends at step 3 of a batch whose longest row takes 14 steps keeps its
slot, computed for nothing, and a line that arrives meanwhile waits for the
whole batch. Here the batch is a set of **slots**: `admit` encodes new lines
into free slots at any time, `step` runs one decoding step of every slot and
hands back the rows that ended at once. The outputs are `generate`'s (greedy,
the same rules and suppressed ids): each row is decoded as if alone.

How rows that start at different times share one cache: every row writes
its step into the same cache position `index` (one position per step for
all rows, as `generate` does), and row `r`, admitted when the cache stood at
`row_starts[r]`, is at its own position `index - row_starts[r]` and attends
to positions `row_starts[r] .. index` only (the model's `decode_step(...,
row_starts=...)`). The cache holds `2 * max_length` positions; when a row
could run past its end, every cache moves back to the oldest running row's
start (at most `max_length` steps ago), so the cache never runs out.

Shapes: the slots come in batch buckets (`batch_buckets`) and the sources
in source buckets (`source_buckets`). The slots grow to the smallest bucket
that holds the running rows, and the memory to the longest running source's
bucket; they shrink back once a bucket a quarter of the size holds them
(not at every row that leaves). `warm_up` compiles one step and the
admissions of 1, 2 and 4 rows per (slot bucket, source bucket), so no
later call compiles. New rows are encoded in their own source bucket
(once per (rows, source bucket)), then padded to the running memory.
"""

import functools

import keras
import numpy as np
from keras import ops, tree

from keras_attention.decoding.generation_rules import GenerationRules
from keras_attention.decoding.samplers import get_sampler
from keras_attention.decoding.sampling import first_max_index
from keras_attention.decoding.search import SOURCE_STATE
from keras_attention.decoding.token_suppression import check_suppress_token_ids, suppress_tokens
from keras_attention.models.decoder_caches import resize_cross_caches, shift_self_caches
from keras_attention.validation import check_positive_int

__all__ = ["ContinuousDecoder"]

#: The most rows encoded by one admission call (more take several calls);
#: an admission of fewer is padded to a power of two.
ADMISSION_ROWS = 4


class ContinuousDecoder:
    """Greedy decoding of rows that join and leave between steps.

    Args:
        model: a `Seq2SeqModel` whose `decodes_rows_from_any_step` is True
            (`TransformerSeq2Seq` without a copy head).
        max_length: int `L`, as `generate`'s: the most tokens of a row.
        batch_buckets: ascending positive ints, the slot counts; the last is
            the most rows running at once (`capacity`). The state has at
            least two slots (`slot_buckets`) except on torch: XLA runs one
            row's step several times slower than two rows'.
        source_buckets: ascending positive ints, the source lengths; the
            last is the longest source admitted.
        sampler: `"greedy"` (or a `GreedySampler`, or its config), the only
            search that decodes each row alone.
        suppress_token_ids, decoder_start_token_id, **rules: as
            `generate`'s, with the rules that read a row's step only
            (`min_length`, `forced_bos_token_id`, `forced_eos_token_id`,
            one-token `bad_words_ids`, `begin_suppress_token_ids`,
            `renormalize_logits`).
        jit_compile: bool, as `generate`'s.

    Raises:
        ValueError: naming the argument that does not fit (a model without
            `row_starts`, a search other than greedy, a rule that reads the
            generated tokens), before any work.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import ContinuousDecoder, transformer_seq2seq
    >>> model = transformer_seq2seq(vocabulary_size=20, num_layers=1, hidden_dim=8,
    ...                             num_heads=2, intermediate_dim=16)
    >>> decoder = ContinuousDecoder(model, max_length=5, batch_buckets=[1, 2],
    ...                             source_buckets=[4])
    >>> decoder.admit([np.array([5, 6, 7])], keys=["first"])
    >>> ended = []
    >>> while decoder.running:
    ...     ended += decoder.step()
    >>> key, tokens = ended[0]
    >>> key, bool((tokens == model.generate(np.array([[5, 6, 7]]), 5)[0]).all())
    ('first', True)
    """

    def __init__(self, model, *, max_length, batch_buckets, source_buckets, sampler="greedy",
                 suppress_token_ids=None, decoder_start_token_id=None, jit_compile=True,
                 **rules):
        if not getattr(model, "decodes_rows_from_any_step", False):
            raise ValueError(
                "Argument `model` must decode rows that start at different steps "
                "(`decodes_rows_from_any_step`: a `TransformerSeq2Seq` without a copy head). "
                f"Received: model={type(model).__name__}")
        if get_sampler(sampler).name != "greedy":
            raise ValueError(
                "Argument `sampler` must be greedy: only greedy decoding gives each row "
                f"alone what a batch gives it. Received: sampler={sampler!r}")
        self.model = model
        self.max_length = check_positive_int("max_length", max_length)
        self.batch_buckets = _check_buckets("batch_buckets", batch_buckets)
        # One row runs as two slots (see `seq2seq_model.at_least_two_rows`:
        # XLA's one-row steps are several times slower), except on torch.
        smallest = 1 if keras.config.backend() == "torch" else 2
        self.slot_buckets = sorted({max(smallest, b) for b in self.batch_buckets})
        self.source_buckets = _check_buckets("source_buckets", source_buckets)
        self.rules = GenerationRules(**rules)
        if not self.rules.reads_step_only():
            raise ValueError(
                "Continuous batching applies rules that read a row's step only; "
                "`no_repeat_ngram_size` and bad words of several tokens read its tokens. "
                f"Received: {self.rules!r}")
        vocabulary = model.target_vocabulary_size
        self.rules.check(vocabulary, end_id=model.end_token_id, max_length=self.max_length)
        self.suppressed = check_suppress_token_ids(suppress_token_ids, vocabulary,
                                                   end_id=model.end_token_id)
        self.start_id = (model.start_token_id if decoder_start_token_id is None
                         else int(decoder_start_token_id))
        self.cache_length = 2 * self.max_length
        self._process = self.rules.processor(
            start_id=self.start_id, end_id=model.end_token_id, max_length=self.max_length,
            vocab_size=vocabulary)
        self._step_function = model.compile_function(self._step, jit_compile, donate_first=True)
        self._encode_function = model.compile_function(self._encode, jit_compile)
        self._insert_function = model.compile_function(self._insert, jit_compile,
                                                       donate_first=True)
        self._jit_compile = jit_compile
        self._widen_functions = {}  # memory width -> compiled `_widen`
        self._state = None
        self._keys = []  # per slot: the key of its running row, or None
        self._needs = []  # per slot: the source bucket its row needs (0 when free)
        self._index = 0

    # What the caller sees ----------------------------------------------
    @property
    def capacity(self):
        """The most rows running at once (the largest batch bucket)."""
        return self.batch_buckets[-1]

    @property
    def running(self):
        """The number of rows running."""
        return sum(key is not None for key in self._keys)

    @property
    def free(self):
        """How many more rows `admit` takes now."""
        return self.capacity - self.running

    def admit(self, sources, keys):
        """Puts rows into free slots; they run from the next `step`.

        Args:
            sources: list of 1-D int arrays, each line's source ids (no
                padding; an empty one is all padding, as in `generate`), at
                most `source_buckets[-1]` long.
            keys: one hashable per row, handed back by `step` with its
                tokens.

        Raises:
            ValueError: naming `sources` (more rows than `free`, a row
                longer than the last source bucket), before any work.
        """
        if len(sources) != len(keys):
            raise ValueError(f"Arguments `sources` and `keys` must have one entry per row. "
                             f"Received: {len(sources)} sources and {len(keys)} keys")
        if len(sources) > self.free:
            raise ValueError(f"Argument `sources` holds more rows than are free ({self.free}). "
                             f"Received: {len(sources)} rows")
        needs = []
        for source in sources:
            length = len(source)
            if length > self.source_buckets[-1]:
                raise ValueError(
                    f"Argument `sources` must hold rows of at most {self.source_buckets[-1]} "
                    f"tokens. Received: a row of {length}")
            needs.append(_bucket(max(1, length), self.source_buckets))
        if not sources:
            return
        self._make_room(self.running + len(sources), max(needs + self._needs))
        free = [slot for slot, key in enumerate(self._keys) if key is None]
        most = self._admission_sizes(len(self._keys))[-1]
        for start in range(0, len(sources), most):
            chunk = list(range(start, min(len(sources), start + most)))
            slots = [free[i] for i in chunk]
            for i, slot in zip(chunk, slots):
                self._keys[slot], self._needs[slot] = keys[i], needs[i]
            self._admit_rows(slots, [sources[i] for i in chunk])

    def step(self):
        """One decoding step of every running row; `[(key, token_ids (L,))]`
        for the rows that ended, their token ids as `generate` gives them
        (int32, `pad_token_id` after the end token)."""
        if not self.running:
            return []
        self._state, ended = self._step_function(self._state, np.int32(self._index))
        self._index += 1
        ended = np.asarray(ops.convert_to_numpy(ended))
        if not ended.any():
            return []
        tokens = np.asarray(ops.convert_to_numpy(self._state["tokens"]))
        finished = []
        for slot in np.flatnonzero(ended):
            finished.append((self._keys[slot], tokens[slot].copy()))
            self._keys[slot], self._needs[slot] = None, 0
        self._shrink()
        return finished

    def drop(self, keys):
        """Stops the running rows of `keys` (their callers went away): their
        slots are free for the next `admit`. Keys not running are ignored."""
        keys = set(keys)
        slots = [slot for slot, key in enumerate(self._keys) if key is not None and key in keys]
        if not slots:
            return
        for slot in slots:
            self._keys[slot], self._needs[slot] = None, 0
        kept = np.array([key is not None for key in self._keys])
        self._state = dict(self._state, active=ops.logical_and(self._state["active"], kept))
        self._shrink()

    def reset(self):
        """Forgets every running row (after an error)."""
        if self._state is not None:
            self._state = dict(self._state, active=ops.zeros_like(self._state["active"]))
        self._keys = [None] * len(self._keys)
        self._needs = [0] * len(self._keys)

    def shapes(self):
        """The `(slots, source length)` shapes `warm_up` compiles: every
        slot bucket with every source bucket."""
        return [(b, s) for b in self.slot_buckets for s in self.source_buckets]

    def warm_up(self, progress=None):
        """Compiles the admissions (encoding 1, 2 and 4 rows, putting them
        into the slots) and the step of every shape (`shapes()`);
        `progress(done, total, shape)` after each."""
        shapes = self.shapes()
        source = np.full((1,), self.model.end_token_id, "int32")
        for done, (slots, width) in enumerate(shapes, 1):
            self._make_room(slots, width)
            for rows in self._admission_sizes(slots):
                self._admit_rows(list(range(rows)), [np.resize(source, width)] * rows)
                for narrower in self.source_buckets:  # the pads of narrower rows
                    if narrower < width:
                        self._widened(self._encode_function(
                            np.resize(source, (rows, narrower))), width)
            self._state, _ = self._step_function(self._state, np.int32(self._index))
            if progress is not None:
                progress(done, len(shapes), (slots, width))
        self._state = dict(self._state, active=ops.zeros_like(self._state["active"]))
        self._shrink()

    # The compiled parts -------------------------------------------------
    def _step(self, state, index):
        """One step: `(state, ended (B,) bool)`."""
        tokens, steps, active = state["tokens"], state["steps"], state["active"]
        last = ops.take_along_axis(tokens, ops.maximum(steps - 1, 0)[:, None], axis=1)[:, 0]
        previous = ops.where(steps == 0, self.start_id, last)
        row_starts = state["row_starts"]

        def decode_step(token_ids, step_index, model_state):
            return self.model.decode_step(token_ids, step_index, model_state,
                                          row_starts=row_starts)

        step_fn = suppress_tokens(decode_step, self.suppressed,
                                  self.model.target_vocabulary_size)
        logits, model_state, _ = step_fn(previous, index, state["model"])
        logits = ops.cast(logits, "float32")
        if self._process is not None:
            logits = self._process(logits, steps[:, None], tokens)
        chosen = first_max_index(logits)
        here = ops.logical_and(
            ops.arange(self.max_length, dtype="int32")[None, :] == steps[:, None],
            active[:, None])
        tokens = ops.where(here, chosen[:, None], tokens)
        ended = ops.logical_and(active, ops.logical_or(chosen == self.model.end_token_id,
                                                       steps + 1 >= self.max_length))
        state = dict(state, model=model_state, tokens=tokens,
                     steps=steps + ops.cast(active, "int32"),
                     active=ops.logical_and(active, ops.logical_not(ended)))
        return state, ended

    def _encode(self, source):
        """The decoding state's source part of `source (n, S)` (the memory
        projected for cross-attention, with its padding)."""
        memory, memory_mask = self.model.encode(source)
        return self.model.init_decoder_state(memory, memory_mask, 1)[SOURCE_STATE]

    def _insert(self, state, slots, new, index):
        """`state` with the encoded rows `new` (`_encode`'s, as wide as the
        state's memory) in `slots (n,)`, starting at cache position
        `index`."""
        model_state = dict(state["model"])
        model_state[SOURCE_STATE] = tree.map_structure(
            lambda old, part: ops.scatter_update(old, slots[:, None], ops.cast(part, old.dtype)),
            model_state[SOURCE_STATE], new)
        rows = ops.shape(slots)[0]

        def put(name, values):
            return ops.scatter_update(state[name], slots[:, None], values)

        return dict(
            state, model=model_state,
            row_starts=put("row_starts", ops.full((rows,), index, "int32")),
            steps=put("steps", ops.zeros((rows,), "int32")),
            tokens=put("tokens", ops.full((rows, self.max_length), self.model.pad_token_id,
                                          "int32")),
            active=put("active", ops.ones((rows,), "bool")),
        )

    # Keeping the shapes few -----------------------------------------------
    def _admission_sizes(self, slots):
        """The row counts of one admission call into `slots` slots."""
        return _powers_of_two(min(ADMISSION_ROWS, slots))

    def _admit_rows(self, slots, sources):
        """One admission: up to ADMISSION_ROWS rows, padded to a power of
        two with the first (written twice to the same slot), encoded in
        their own source bucket (not the running memory's: a long row
        running makes no new row encode its padding), then padded to the
        memory's width and put into their slots."""
        rows = _bucket(len(slots), self._admission_sizes(len(self._keys)))
        width = _bucket(max([1] + [len(source) for source in sources]), self.source_buckets)
        array = np.full((rows, width), self.model.pad_token_id, "int32")
        slot_ids = np.full((rows,), slots[0], "int32")
        for i in range(rows):
            source = sources[i] if i < len(sources) else sources[0]
            array[i, :len(source)] = source
            slot_ids[i] = slots[i] if i < len(slots) else slots[0]
        new = self._widened(self._encode_function(array), self._width())
        self._state = self._insert_function(self._state, slot_ids, new, np.int32(self._index))

    def _widened(self, new, width):
        """Encoded rows padded (masked) to a memory of `width` positions,
        by a compiled function per width (a pad per cache, run one by one,
        would cost more than the encoder)."""
        if _memory_width(new) == width:
            return new
        if width not in self._widen_functions:
            self._widen_functions[width] = self.model.compile_function(
                functools.partial(_widen, width=width), self._jit_compile)
        return self._widen_functions[width](new)

    def _width(self):
        """The source length of the running memory."""
        return _memory_width(self._state["model"][SOURCE_STATE])

    def _make_room(self, rows, width):
        """Slots for `rows` running rows and a memory of `width` positions,
        and a cache with `max_length` positions left."""
        slots = _bucket(rows, self.slot_buckets)
        if self._state is None:
            self._state = self._empty_state(1, self.source_buckets[0])
            self._keys, self._needs = [None], [0]
        if slots != len(self._keys) and (slots > len(self._keys) or not self.running):
            self._resize_slots(slots)
        if width > self._width() or (width != self._width() and not self.running):
            self._state = dict(self._state, model=resize_cross_caches(
                self._state["model"], width))
        if self._index + self.max_length > self.cache_length:
            self._shift_cache()
        self._state = _distinct(self._state)

    def _shrink(self):
        """Fewer slots, and a shorter memory, once the running rows fit."""
        running = self.running
        if running == 0:
            return
        # A quarter, not a half: rows that come and go around a bucket's
        # edge do not resize the state at every step.
        slots = _bucket(running, self.slot_buckets)
        if slots <= len(self._keys) // 4:
            self._resize_slots(slots)
        width = max(self._needs)
        if width <= self._width() // 4:
            self._state = dict(self._state, model=resize_cross_caches(
                self._state["model"], width))
        self._state = _distinct(self._state)

    def _resize_slots(self, slots):
        """The running rows first, in `slots` slots (free ones repeat slot 0)."""
        order = [slot for slot, key in enumerate(self._keys) if key is not None]
        order = order + [0] * (slots - len(order))
        running = len([key for key in self._keys if key is not None])
        index = np.asarray(order, "int32")
        state = tree.map_structure(lambda part: ops.take(part, index, axis=0), self._state)
        active = np.arange(slots) < running
        self._state = dict(state, active=ops.logical_and(state["active"], active))
        self._keys = [self._keys[i] for i in order[:running]] + [None] * (slots - running)
        self._needs = [self._needs[i] for i in order[:running]] + [0] * (slots - running)

    def _shift_cache(self):
        """Moves every cache back to the oldest running row's start."""
        if not self.running:
            self._index = 0
            return
        starts = np.asarray(ops.convert_to_numpy(self._state["row_starts"]))
        running = [slot for slot, key in enumerate(self._keys) if key is not None]
        offset = int(min(starts[running]))
        if offset == 0:
            return
        self._state = dict(
            self._state, model=shift_self_caches(self._state["model"], offset),
            row_starts=ops.maximum(self._state["row_starts"] - offset, 0))
        self._index -= offset

    def _empty_state(self, slots, width):
        """The state of `slots` free slots over a memory of `width` positions."""
        source = np.full((slots, width), self.model.pad_token_id, "int32")
        source[:, 0] = self.model.end_token_id
        memory, memory_mask = self.model.encode(source)
        model_state = self.model.init_decoder_state(memory, memory_mask, self.cache_length)
        return {
            "model": model_state,
            "row_starts": ops.zeros((slots,), "int32"),
            "steps": ops.zeros((slots,), "int32"),
            "tokens": ops.full((slots, self.max_length), self.model.pad_token_id, "int32"),
            "active": ops.zeros((slots,), "bool"),
        }


def _memory_width(source_state):
    """The source length of a decoding state's source part."""
    return source_state["cross_caches"][0]["memory_mask"].shape[1]


def _widen(new, width):
    """`new` (a decoding state's source part) padded (masked) to `width`
    source positions."""
    return resize_cross_caches({SOURCE_STATE: new}, width)[SOURCE_STATE]


def _distinct(state):
    """`state` with no array in two places (a compiled step takes over the
    state's buffers: one buffer must not be given twice)."""
    seen = set()

    def once(part):
        if id(part) in seen:
            return ops.copy(part)
        seen.add(id(part))
        return part

    return tree.map_structure(once, state)


def _check_buckets(name, buckets):
    values = list(buckets) if isinstance(buckets, (list, tuple)) else None
    if (not values or any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in values)
            or values != sorted(set(values))):
        raise ValueError(f"Argument `{name}` must be ascending positive ints. "
                         f"Received: {name}={buckets!r}")
    return values


def _powers_of_two(limit):
    """1, 2, 4, ... up to `limit` (included where it is one)."""
    sizes = [1]
    while sizes[-1] * 2 <= limit:
        sizes.append(sizes[-1] * 2)
    return sizes


def _bucket(size, buckets):
    """The smallest bucket that holds `size` (the last one if none does)."""
    return next((bucket for bucket in buckets if bucket >= size), buckets[-1])
