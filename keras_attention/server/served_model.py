"""`ServedModel`: a run folder's model answering batches of lines in a few
fixed shapes, all compiled before the server listens.

A compiled search is specialized to its input's shape, so a server that
passed every batch through as it came would compile again for every new
number of rows and source length, at a request's expense. Here a batch of
`n` rows, the longest `s` tokens, is padded up to a **batch bucket** (the
powers of two up to `max_batch_size`, and `max_batch_size` itself) and a
**source bucket** (the powers of two from 8 up to the run's source length,
and that length itself). Padding changes no answer: padded source positions
are masked, and padded rows repeat the batch's first row and are dropped.
`warm_up` runs every bucket pair once, so that no request pays a
compilation: `len(batch_buckets) * len(source_buckets)` compilations (3 x 3
for `max_batch_size=4` and a 32-token source).

Models that do not decode (an answer classifier, an extractive summarizer)
answer a batch with `TextToText.generate`, in one call.

**Continuous batching** (`continuous=True`, where the search allows it:
greedy, a `TransformerSeq2Seq`, rules that read a row's step only): rows are
decoded by a `models.ContinuousDecoder` instead, one step at a time, so a
row that ends leaves its slot at once and a waiting line takes it at the
next step (`admit`, `step`; the server's `ContinuousBatcher` drives them).
Its shapes are (slot bucket x source bucket), one step and one admission
each, compiled by `warm_up`.
"""

import numpy as np

from keras_attention.models.continuous_decoder import ContinuousDecoder
from keras_attention.models.seq2seq_model import SOURCE_BUCKET
from keras_attention.runs.text_generator import check_source_length

__all__ = ["ServedModel", "powers_of_two_up_to"]


def powers_of_two_up_to(limit, smallest=1):
    """`smallest, 2 * smallest, ...` below `limit`, then `limit` itself."""
    sizes, size = [], smallest
    while size < limit:
        sizes.append(size)
        size *= 2
    return sizes + [limit]


class ServedModel:
    """A `TextToText` (a run folder's, `runs.open_run`) answering rows in bucketed shapes.

    Args:
        text_to_text: a `keras_attention.runs.TextToText`.
        max_batch_size: positive int, the most rows of one call.
        strategy: `"greedy"` or `"beam"`; default: the run's.
        num_beams: positive int; default: the run's.
        max_source_tokens: positive int or None, the most tokens a line may
            have here, at most the run's source length (default: that
            length). Fewer source buckets to compile: a converted Marian
            (512 tokens) serving sentences of under 64 tokens compiles 4
            source buckets instead of 7, and starts in about half the time.
        continuous: bool (default False), decode by continuous batching
            where the search allows it (`continuous_off` then says why
            not).

    Raises:
        ValueError: naming `strategy`, `num_beams` (as `TextToText.generate`
            checks them) or `max_source_tokens`, before any work.
    """

    def __init__(self, text_to_text, *, max_batch_size, strategy=None, num_beams=None,
                 max_source_tokens=None, continuous=False):
        text_to_text.generate([], strategy, num_beams)  # checks the search, does no work
        self.text_to_text = text_to_text
        self.strategy = strategy
        self.num_beams = num_beams
        self.decodes = text_to_text.kind.decodes
        self.batch_buckets = powers_of_two_up_to(max_batch_size)
        limit = text_to_text.source_limit if self.decodes else None
        if max_source_tokens is not None and limit is not None:
            if max_source_tokens > limit:
                raise ValueError(
                    f"Argument `max_source_tokens` must be at most the run's source length "
                    f"({limit}). Received: max_source_tokens={max_source_tokens!r}")
            limit = max_source_tokens
        self.source_limit = limit
        self.source_buckets = (powers_of_two_up_to(limit, min(SOURCE_BUCKET, limit))
                               if limit else [])
        self.continuous, self.continuous_off = None, "not asked for"
        if continuous:
            self.continuous, self.continuous_off = self._continuous_decoder()

    def _continuous_decoder(self):
        """`(ContinuousDecoder, None)`, or `(None, why not)`."""
        if not self.decodes:
            return None, "the model does not decode"
        generation = self.text_to_text.generation.with_search(self.strategy, self.num_beams)
        try:
            decoder = ContinuousDecoder(
                self.text_to_text.model, batch_buckets=self.batch_buckets,
                source_buckets=self.source_buckets, **generation.generate_kwargs())
        except ValueError as error:
            return None, str(error)
        return decoder, None

    def rows(self, lines):
        """One row per line: its source ids `(S_i,)` for a model that
        decodes, else the line itself.

        Raises:
            SourceTooLongError: naming the first line longer than the model
                accepts (`TextGenerator.encode`).
        """
        if not self.decodes:
            return list(lines)
        ids = self.text_to_text.encode(lines)
        pad = self.text_to_text.model.pad_token_id
        if self.source_limit < ids.shape[1]:
            ids = check_source_length(ids, self.source_limit, pad)
        lengths = np.sum(np.cumsum((ids != pad)[:, ::-1], axis=1) > 0, axis=1)
        return [row[:length] for row, length in zip(ids, lengths)]

    def answer(self, rows):
        """The output string of each row (as `keras-attention generate`
        prints it: line breaks as spaces)."""
        if not rows:
            return []
        if not self.decodes:
            outputs = self.text_to_text.generate(rows, self.strategy, self.num_beams)
        else:
            outputs = self._decode(rows)
        return [output.replace("\n", " ") for output in outputs]

    def _decode(self, rows):
        batch = self.batch_array(rows)
        token_ids = self.text_to_text.generate_ids(
            batch, self.strategy, self.num_beams, batch_size=None, jit_compile=True)
        return self.text_to_text.detokenize(np.asarray(token_ids)[:len(rows)])

    # Continuous batching (`continuous`) ---------------------------------
    @property
    def free(self):
        """How many more rows `admit` takes now."""
        return self.continuous.free

    @property
    def running(self):
        """How many admitted rows have not ended."""
        return self.continuous.running

    def admit(self, rows, keys):
        """Starts decoding `rows` (from `rows()`), at most `free` of them;
        `step` hands each one's answer back with its key."""
        self.continuous.admit(rows, keys)

    def step(self):
        """One decoding step of the running rows: `[(key, answer)]` of the
        rows that ended."""
        ended = self.continuous.step()
        if not ended:
            return []
        keys, token_ids = zip(*ended)
        outputs = self.text_to_text.detokenize(np.stack(token_ids))
        return [(key, output.replace("\n", " ")) for key, output in zip(keys, outputs)]

    def drop(self, keys):
        """Stops the running rows of `keys` (their callers went away)."""
        self.continuous.drop(keys)

    def reset(self):
        """Drops every running row (after an error)."""
        self.continuous.reset()

    def batch_array(self, rows):
        """Rows padded into one `(batch bucket, source bucket)` int32 array."""
        rows_bucket = _bucket(len(rows), self.batch_buckets)
        width = _bucket(max(1, max(len(row) for row in rows)), self.source_buckets)
        pad = self.text_to_text.model.pad_token_id
        array = np.full((rows_bucket, width), pad, "int32")
        for i in range(rows_bucket):
            row = rows[i] if i < len(rows) else rows[0]
            array[i, :len(row)] = row
        return array

    def shapes(self):
        """The `(rows, source length)` shapes `warm_up` compiles."""
        if not self.decodes:
            return [(1, None)]
        if self.continuous is not None:
            return self.continuous.shapes()
        return [(b, s) for b in self.batch_buckets for s in self.source_buckets]

    def warm_up(self, progress=None):
        """Runs one batch of every shape (`shapes()`), so that no request
        compiles; `progress(done, total, shape)` after each."""
        if self.continuous is not None:
            self.continuous.warm_up(progress)
            return
        shapes = self.shapes()
        line = "warm up"
        for done, (rows, width) in enumerate(shapes, 1):
            if not self.decodes:
                self.answer([line])
            else:
                row = self.rows([line])[0][:width]
                padded = np.full((width,), self.text_to_text.model.pad_token_id, "int32")
                padded[:len(row)] = row
                self._decode([padded] * rows)
            if progress is not None:
                progress(done, len(shapes), (rows, width))


def _bucket(size, buckets):
    """The smallest bucket that holds `size` (buckets ascending)."""
    return next(bucket for bucket in buckets if bucket >= size)
