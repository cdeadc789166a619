"""`Batcher`: requests that arrive together are answered in one model call.

HTTP handlers run on an asyncio event loop; the model runs on one worker
thread (a compiled search releases Python's lock, so the loop keeps taking
requests meanwhile). A request is a list of rows (one per input line). The
worker takes up to `max_batch_size` waiting rows, from as many requests as it
takes, and hands them to `answer_rows` in one call. A batch that is not
full waits for more rows until `batch_timeout_ms` after the latest of the
oldest waiting row's arrival, the end of the previous batch and the newest
row's arrival, but never more than `GATHER_LIMIT` timeouts after the first
two. So a lone request waits at most the timeout; the clients answered by
one batch (who send their next request at once: closed-loop clients, a
pipeline) join the next batch instead of leaving it half empty, even when
their requests come back spread over more than one timeout (16 answers and
16 new requests through one event loop on a busy machine take longer than
5 ms); and rows that keep arriving delay a batch by at most
`GATHER_LIMIT` timeouts. A request larger than
`max_batch_size` is split across batches; its answers come back in its order
once all of its rows are answered.

`ContinuousBatcher` drives a model that decodes step by step instead
(`ServedModel` with continuous batching): before every step, waiting rows
take the slots that rows which ended have left, so a row never waits for a
batch to finish, and each row is answered at the step it ends. The running
rows of a request whose caller went away stop before the next step.

The queue holds at most `max_queue` waiting rows: a request that would go past
it is refused at once (`QueueFull`, HTTP 503), never left to wait without
bound. A request whose caller went away (its future cancelled) keeps its
rows out of any later batch; the others are answered as if it had never
come.
"""

import asyncio
import collections
import threading
import time

__all__ = ["Batcher", "ContinuousBatcher", "QueueFull"]

#: The longest a batch waits for rows that keep arriving, in batch timeouts.
GATHER_LIMIT = 4


class QueueFull(Exception):
    """The queue cannot take a request's rows now (`Batcher.submit`)."""

    def __init__(self, rows, waiting, max_queue):
        self.rows, self.waiting, self.max_queue = rows, waiting, max_queue
        super().__init__(
            f"the server's queue is full ({waiting} of {max_queue} lines waiting; this "
            f"request has {rows}): try again shortly")


class _Request:
    """The rows of one request and where their answers go."""

    def __init__(self, rows, loop):
        self.rows = rows
        self.answers = [None] * len(rows)
        self.remaining = len(rows)
        self.loop = loop
        self.future = loop.create_future()
        self.arrived = time.monotonic()

    def abandoned(self):
        return self.future.done()

    def answered(self, index, answer):
        """Records one row's answer (on the worker thread); the last one
        resolves the future on the loop."""
        self.answers[index] = answer
        self.remaining -= 1
        if self.remaining == 0:
            self.loop.call_soon_threadsafe(_resolve, self.future, self.answers)

    def failed(self, error):
        self.loop.call_soon_threadsafe(_fail, self.future, error)


def _resolve(future, answers):
    if not future.done():
        future.set_result(answers)


def _fail(future, error):
    if not future.done():
        future.set_exception(error)


class Batcher:
    """Gathers rows of concurrent requests into batches for one worker thread.

    Args:
        answer_rows: `answer_rows(rows) -> list of answers`, one per row, in
            order; called on the worker thread with 1 to `max_batch_size`
            rows. An exception fails the requests of that batch only.
        max_batch_size: positive int, the most rows in one call.
        batch_timeout_ms: float >= 0, how long a batch that is not full
            waits for one more row (while rows keep arriving, up to
            `GATHER_LIMIT` times as long).
        max_queue: positive int, the most rows waiting (not yet in a batch).
        on_batch: optional `on_batch(rows, seconds)`, called after each batch
            (metrics).

    Example:

    >>> import asyncio
    >>> batcher = Batcher(lambda rows: [row.upper() for row in rows], max_batch_size=4)
    >>> batcher.start()
    >>> asyncio.run(batcher.answer(["a", "b"]))
    ['A', 'B']
    >>> batcher.stop()
    """

    def __init__(self, answer_rows, *, max_batch_size=32, batch_timeout_ms=5.0, max_queue=1024,
                 on_batch=None):
        self.answer_rows = answer_rows
        self.max_batch_size = max_batch_size
        self.batch_timeout_s = batch_timeout_ms / 1000.0
        self.max_queue = max_queue
        self.on_batch = on_batch
        self._waiting = collections.deque()  # (request, row index)
        self._condition = threading.Condition()
        self._stopping = False
        self._thread = None
        self._idle_since = 0.0  # when the previous batch ended (time.monotonic())

    @property
    def waiting(self):
        """Rows waiting for a batch."""
        return len(self._waiting)

    def start(self):
        """Starts the worker thread."""
        self._thread = threading.Thread(target=self._work, name="keras-attention-batcher",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout=None):
        """Answers the rows still waiting, then ends the worker thread."""
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def submit(self, rows):
        """Queues a request's rows; returns the future of its answers (on the
        running loop).

        Raises:
            QueueFull: the rows do not fit in the queue now.
        """
        request = _Request(list(rows), asyncio.get_running_loop())
        with self._condition:
            if self._stopping:
                raise QueueFull(len(request.rows), len(self._waiting), self.max_queue)
            if len(self._waiting) + len(request.rows) > self.max_queue:
                raise QueueFull(len(request.rows), len(self._waiting), self.max_queue)
            self._waiting.extend((request, index) for index in range(len(request.rows)))
            self._condition.notify()
        return request.future

    async def answer(self, rows):
        """The answers of `rows`, in order, once their batches ran."""
        return await self.submit(rows)

    def _work(self):
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._run(batch)

    def _next_batch(self):
        """Up to `max_batch_size` rows of live requests, once the batch is
        full or its oldest row has waited `batch_timeout_ms`; `None` when
        stopping with nothing left."""
        with self._condition:
            while True:
                self._drop_abandoned()
                if self._waiting:
                    left = self._gathering_deadline() - time.monotonic()
                    if len(self._waiting) >= self.max_batch_size or left <= 0 or self._stopping:
                        count = min(self.max_batch_size, len(self._waiting))
                        return [self._waiting.popleft() for _ in range(count)]
                    self._condition.wait(left)
                elif self._stopping:
                    return None
                else:
                    self._condition.wait()

    def _gathering_deadline(self):
        """When a batch that is not full stops waiting for more rows
        (`time.monotonic()`): a timeout after the latest of the oldest
        waiting row's arrival, the previous batch's end and the newest row's
        arrival, and at most `GATHER_LIMIT` timeouts after the first two."""
        start = max(self._waiting[0][0].arrived, self._idle_since)
        newest = self._waiting[-1][0].arrived
        return min(max(start, newest) + self.batch_timeout_s,
                   start + GATHER_LIMIT * self.batch_timeout_s)

    def _drop_abandoned(self):
        while self._waiting and self._waiting[0][0].abandoned():
            self._waiting.popleft()
        if any(request.abandoned() for request, _ in self._waiting):
            kept = [item for item in self._waiting if not item[0].abandoned()]
            self._waiting.clear()
            self._waiting.extend(kept)

    def _run(self, batch):
        started = time.monotonic()
        try:
            self._answer(batch, started)
        finally:
            self._idle_since = time.monotonic()

    def _answer(self, batch, started):
        try:
            answers = self.answer_rows([request.rows[index] for request, index in batch])
            if len(answers) != len(batch):
                raise RuntimeError(f"answer_rows gave {len(answers)} answers for "
                                   f"{len(batch)} rows")
        except Exception as error:  # fails this batch's requests, not the server
            for request in {id(request): request for request, _ in batch}.values():
                request.failed(error)
            return
        for (request, index), answer in zip(batch, answers):
            request.answered(index, answer)
        if self.on_batch is not None:
            self.on_batch(len(batch), time.monotonic() - started)


class ContinuousBatcher(Batcher):
    """Admits waiting rows into a step-by-step decoder between its steps.

    Args:
        engine: an object with `free` (rows it takes now), `running`,
            `admit(rows, keys)`, `step() -> [(key, answer)]` (the rows that
            ended), `drop(keys)` (stop rows whose callers went away) and
            `reset()` (drop every running row): a `ServedModel` with
            continuous batching. Called on the worker thread only.
        batch_timeout_ms: float >= 0, while nothing runs, how long the
            waiting rows wait for one more row (as `Batcher`'s); while rows
            run, waiting rows join at the next step.
        max_queue: positive int, the most rows waiting (not yet admitted).
        on_batch: optional `on_batch(rows, seconds)`, called after each step
            (metrics: the rows the step decoded).

    Example:

    >>> import asyncio
    >>> class Upper:  # each row ends after one step
    ...     free, running, rows = 2, 0, []
    ...     def admit(self, rows, keys): self.rows += list(zip(keys, rows))
    ...     def step(self):
    ...         ended, self.rows = [(k, r.upper()) for k, r in self.rows], []
    ...         return ended
    ...     def drop(self, keys): pass
    ...     def reset(self): self.rows = []
    >>> batcher = ContinuousBatcher(Upper())
    >>> batcher.start()
    >>> asyncio.run(batcher.answer(["a", "b", "c"]))
    ['A', 'B', 'C']
    >>> batcher.stop()
    """

    def __init__(self, engine, *, batch_timeout_ms=5.0, max_queue=1024, on_batch=None):
        super().__init__(None, max_batch_size=1, batch_timeout_ms=batch_timeout_ms,
                         max_queue=max_queue, on_batch=on_batch)
        self.engine = engine
        self._in_flight = {}  # key -> request, for rows admitted and not ended

    def _work(self):
        while True:
            admitted = self._next_admission()
            if admitted is None:
                return
            if admitted:
                self._admit(admitted)
            if self._in_flight:
                self._step()

    def _next_admission(self):
        """The rows to admit before the next step (up to `engine.free`):
        at once while rows run; when nothing runs, once the free slots are
        full or the oldest row has waited `batch_timeout_ms`. `None` when
        stopping with nothing waiting or running."""
        with self._condition:
            while True:
                self._drop_abandoned()
                free = self.engine.free
                if self._waiting and free:
                    left = self._gathering_deadline() - time.monotonic()
                    if (self._in_flight or len(self._waiting) >= free or left <= 0
                            or self._stopping):
                        return [self._waiting.popleft()
                                for _ in range(min(free, len(self._waiting)))]
                    self._condition.wait(left)
                elif self._in_flight:
                    return []
                elif self._stopping:
                    return None
                else:
                    self._condition.wait()

    def _admit(self, admitted):
        try:
            self.engine.admit([request.rows[index] for request, index in admitted],
                              list(admitted))
        except Exception as error:  # fails these requests, not the server
            for request in {id(request): request for request, _ in admitted}.values():
                request.failed(error)
            return
        self._in_flight.update((item, item[0]) for item in admitted)

    def _step(self):
        abandoned = [key for key, request in self._in_flight.items() if request.abandoned()]
        if abandoned:
            self.engine.drop(abandoned)
            for key in abandoned:
                del self._in_flight[key]
            if not self._in_flight:
                return
        started = time.monotonic()
        rows = len(self._in_flight)
        try:
            ended = self.engine.step()
        except Exception as error:  # fails the running requests, not the server
            self.engine.reset()
            for request in {id(r): r for r in self._in_flight.values()}.values():
                request.failed(error)
            self._in_flight.clear()
            self._idle_since = time.monotonic()
            return
        for key, answer in ended:
            request, index = key
            del self._in_flight[key]
            request.answered(index, answer)
        if not self._in_flight:
            self._idle_since = time.monotonic()
        if self.on_batch is not None:
            self.on_batch(rows, time.monotonic() - started)
