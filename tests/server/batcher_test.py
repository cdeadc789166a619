"""`Batcher`: concurrent requests answered together, in order, within bounds."""

import asyncio
import threading
import time

import pytest

from keras_attention.server.batcher import Batcher, ContinuousBatcher, QueueFull


class _Recorder:
    """`answer_rows` that records each batch (and may wait or fail)."""

    def __init__(self, delay=0.0, fail_on=None):
        self.batches, self.delay, self.fail_on = [], delay, fail_on

    def __call__(self, rows):
        self.batches.append(list(rows))
        time.sleep(self.delay)
        if self.fail_on is not None and self.fail_on in rows:
            raise RuntimeError(f"cannot answer {self.fail_on!r}")
        return [row.upper() for row in rows]


def _run(batcher, coroutine):
    batcher.start()
    try:
        return asyncio.run(coroutine)
    finally:
        batcher.stop(5)


def test_requests_arriving_together_share_a_batch_and_keep_their_order():
    recorder = _Recorder()
    batcher = Batcher(recorder, max_batch_size=8, batch_timeout_ms=200)

    async def clients():
        return await asyncio.gather(*(batcher.answer([f"r{i}a", f"r{i}b"]) for i in range(3)))

    answers = _run(batcher, clients())
    assert answers == [[f"R{i}A", f"R{i}B"] for i in range(3)]
    assert recorder.batches == [["r0a", "r0b", "r1a", "r1b", "r2a", "r2b"]]


def test_a_request_larger_than_a_batch_is_split_and_answered_whole():
    recorder = _Recorder()
    batcher = Batcher(recorder, max_batch_size=2, batch_timeout_ms=0)
    answers = _run(batcher, batcher.answer(["a", "b", "c", "d", "e"]))
    assert answers == ["A", "B", "C", "D", "E"]
    assert [len(batch) for batch in recorder.batches] == [2, 2, 1]


def test_a_lone_request_waits_at_most_the_timeout():
    batcher = Batcher(_Recorder(), max_batch_size=64, batch_timeout_ms=50)

    async def one():
        started = time.monotonic()
        await batcher.answer(["a"])
        return time.monotonic() - started

    assert _run(batcher, one()) < 2.0  # 50 ms plus scheduling, never an unbounded wait


def test_clients_answered_by_a_batch_join_the_next_one():
    """Closed-loop clients: each sends its next line as soon as it is
    answered. The rows that arrived while a batch decoded (longer than the
    timeout) wait for them instead of running as a half-empty batch."""
    recorder = _Recorder(delay=0.2)
    batcher = Batcher(recorder, max_batch_size=4, batch_timeout_ms=100)

    async def client(name):
        for step in range(2):
            await batcher.answer([f"{name}{step}"])

    async def clients():
        await asyncio.gather(*(client(name) for name in "abcdef"))

    _run(batcher, clients())
    assert [len(batch) for batch in recorder.batches] == [4, 4, 4]


async def _spaced(batcher, rows, seconds):
    """One request per row, `seconds` apart; their answers, in order."""
    async def later(row, delay):
        await asyncio.sleep(delay)
        return await batcher.answer([row])

    return await asyncio.gather(*(later(row, seconds * i) for i, row in enumerate(rows)))


def test_rows_that_keep_arriving_within_the_timeout_share_a_batch():
    """Five requests 100 ms apart, a 300 ms timeout: spread over 400 ms, more
    than one timeout, yet each arrives within the timeout of the one before
    (closed-loop clients answered by one batch come back spread out)."""
    recorder = _Recorder()
    batcher = Batcher(recorder, max_batch_size=8, batch_timeout_ms=300)
    assert _run(batcher, _spaced(batcher, list("abcde"), 0.1)) == [["A"], ["B"], ["C"], ["D"],
                                                                   ["E"]]
    assert recorder.batches == [["a", "b", "c", "d", "e"]]


def test_rows_that_keep_arriving_delay_a_batch_at_most_the_gather_limit():
    """A request every 20 ms for 1.2 s, a 50 ms timeout: the first batch
    starts within GATHER_LIMIT timeouts (200 ms) of the first row, not
    when the arrivals stop."""
    recorder = _Recorder()
    batcher = Batcher(recorder, max_batch_size=100, batch_timeout_ms=50)
    answers = _run(batcher, _spaced(batcher, [f"r{i}" for i in range(60)], 0.02))
    assert answers == [[f"R{i}"] for i in range(60)]
    assert len(recorder.batches) >= 2
    assert sum(len(batch) for batch in recorder.batches) == 60


def test_batching_off_answers_one_row_per_call():
    recorder = _Recorder()
    batcher = Batcher(recorder, max_batch_size=1, batch_timeout_ms=100)

    async def clients():
        return await asyncio.gather(*(batcher.answer([str(i)]) for i in range(4)))

    assert _run(batcher, clients()) == [["0"], ["1"], ["2"], ["3"]]
    assert all(len(batch) == 1 for batch in recorder.batches)


def test_a_full_queue_refuses_at_once_and_keeps_serving():
    release = threading.Event()

    def slow(rows):
        release.wait(5)
        return rows

    batcher = Batcher(slow, max_batch_size=2, batch_timeout_ms=0, max_queue=3)

    async def flood():
        first = batcher.submit(["a", "b"])  # taken by the worker, which then waits
        await asyncio.sleep(0.2)
        second = batcher.submit(["c", "d", "e"])  # the queue holds 3
        with pytest.raises(QueueFull) as info:
            batcher.submit(["f"])
        assert "3 of 3 lines waiting" in str(info.value)
        release.set()
        return await first, await second, await batcher.answer(["g"])

    assert _run(batcher, flood()) == (["a", "b"], ["c", "d", "e"], ["g"])


def test_a_failing_batch_fails_its_requests_only():
    recorder = _Recorder(fail_on="bad")
    batcher = Batcher(recorder, max_batch_size=1, batch_timeout_ms=0)

    async def clients():
        return await asyncio.gather(batcher.answer(["bad"]), batcher.answer(["good"]),
                                    return_exceptions=True)

    failed, answered = _run(batcher, clients())
    assert isinstance(failed, RuntimeError) and "cannot answer 'bad'" in str(failed)
    assert answered == ["GOOD"]


def test_an_abandoned_request_is_not_decoded():
    release = threading.Event()
    recorder = _Recorder()

    def gated(rows):
        release.wait(5)
        return recorder(rows)

    batcher = Batcher(gated, max_batch_size=1, batch_timeout_ms=0)

    async def clients():
        first = batcher.submit(["first"])
        await asyncio.sleep(0.2)  # the worker holds "first"
        gone = batcher.submit(["gone"])
        kept = batcher.submit(["kept"])
        gone.cancel()  # its caller went away
        release.set()
        return await first, await kept

    assert _run(batcher, clients()) == (["FIRST"], ["KEPT"])
    assert ["gone"] not in recorder.batches


def test_stop_answers_what_is_waiting_first():
    recorder = _Recorder(delay=0.05)
    batcher = Batcher(recorder, max_batch_size=2, batch_timeout_ms=1000)

    async def clients():
        futures = [batcher.submit([str(i)]) for i in range(5)]
        await asyncio.sleep(0.01)
        stopper = threading.Thread(target=batcher.stop)
        stopper.start()
        answers = [await future for future in futures]
        stopper.join()
        return answers

    batcher.start()
    assert asyncio.run(clients()) == [[str(i)] for i in range(5)]
    with pytest.raises(QueueFull):  # a stopped batcher takes nothing new
        asyncio.run(_submit(batcher))


async def _submit(batcher):
    return batcher.submit(["late"])


def test_on_batch_sees_every_batch():
    seen = []
    batcher = Batcher(_Recorder(), max_batch_size=2, batch_timeout_ms=0,
                      on_batch=lambda rows, seconds: seen.append((rows, seconds >= 0)))
    _run(batcher, batcher.answer(["a", "b", "c"]))
    assert seen == [(2, True), (1, True)]


class _Steps:
    """A step-by-step engine: row `"name:n"` ends after `n` steps, answered
    `"NAME"`; a row `"fail"` makes its step raise. Records what each step ran."""

    def __init__(self, capacity=2, delay=0.01):
        self.capacity, self.delay = capacity, delay
        self.rows, self.steps, self.resets, self.dropped = {}, [], 0, []

    @property
    def free(self):
        return self.capacity - len(self.rows)

    @property
    def running(self):
        return len(self.rows)

    def admit(self, rows, keys):
        assert len(rows) <= self.free
        for key, row in zip(keys, rows):
            self.rows[key] = [row, 0]

    def step(self):
        time.sleep(self.delay)
        self.steps.append(sorted(row for row, _ in self.rows.values()))
        if any(row == "fail" for row, _ in self.rows.values()):
            raise RuntimeError("cannot step")
        ended = []
        for key, entry in list(self.rows.items()):
            entry[1] += 1
            name, _, length = entry[0].partition(":")
            if entry[1] >= int(length or 1):
                ended.append((key, name.upper()))
                del self.rows[key]
        return ended

    def drop(self, keys):
        self.dropped += list(keys)
        for key in keys:
            del self.rows[key]

    def reset(self):
        self.resets += 1
        self.rows.clear()


def test_continuous_a_line_joins_a_running_batch_and_leaves_it_when_it_ends():
    engine = _Steps(capacity=2)
    batcher = ContinuousBatcher(engine, batch_timeout_ms=0)
    order = []

    async def clients():
        async def one(row, delay):
            await asyncio.sleep(delay)
            answer = await batcher.answer([row])
            order.append(answer[0])
            return answer

        return await asyncio.gather(one("long:30", 0), one("short:2", 0.05),
                                    one("next:2", 0.1))

    assert _run(batcher, clients()) == [["LONG"], ["SHORT"], ["NEXT"]]
    assert order == ["SHORT", "NEXT", "LONG"]  # neither waited for the long row
    assert sum("short:2" in step for step in engine.steps) == 2
    assert any(step == ["long:30", "next:2"] for step in engine.steps)
    assert max(len(step) for step in engine.steps) <= 2


def test_continuous_a_request_larger_than_the_slots_is_answered_whole_in_order():
    engine = _Steps(capacity=2, delay=0)
    batcher = ContinuousBatcher(engine, batch_timeout_ms=0)
    answers = _run(batcher, batcher.answer(["a:3", "b:1", "c:2", "d:1", "e:1"]))
    assert answers == ["A", "B", "C", "D", "E"]


def test_continuous_a_failing_step_fails_the_running_requests_only():
    engine = _Steps(capacity=4)
    batcher = ContinuousBatcher(engine, batch_timeout_ms=100)

    async def clients():
        together = asyncio.gather(batcher.answer(["fail"]), batcher.answer(["ok:1"]),
                                  return_exceptions=True)
        first = await together
        return first, await batcher.answer(["after:2"])

    (failed, also_failed), after = _run(batcher, clients())
    assert isinstance(failed, RuntimeError) and isinstance(also_failed, RuntimeError)
    assert after == ["AFTER"] and engine.resets == 1


def test_continuous_stop_answers_the_running_and_the_waiting_rows():
    engine = _Steps(capacity=1, delay=0.02)
    batcher = ContinuousBatcher(engine, batch_timeout_ms=0)
    batcher.start()

    stopper = threading.Thread(target=batcher.stop, args=(10,))

    async def clients():
        pending = [asyncio.ensure_future(batcher.answer([f"r{i}:3"])) for i in range(3)]
        await asyncio.sleep(0.03)
        stopper.start()
        return await asyncio.gather(*pending)

    assert asyncio.run(clients()) == [["R0"], ["R1"], ["R2"]]
    stopper.join(10)  # the answers may arrive before the worker thread has returned
    assert not stopper.is_alive() and not batcher._thread.is_alive()


def test_continuous_on_batch_sees_the_rows_of_every_step():
    engine = _Steps(capacity=4, delay=0)
    seen = []
    batcher = ContinuousBatcher(engine, batch_timeout_ms=50,
                                on_batch=lambda rows, seconds: seen.append(rows))
    _run(batcher, batcher.answer(["a:1", "b:3"]))
    assert seen == [2, 1, 1]


def test_continuous_a_caller_who_went_away_frees_its_slot_for_the_next_line():
    engine = _Steps(capacity=1, delay=0.01)
    batcher = ContinuousBatcher(engine, batch_timeout_ms=0)

    async def clients():
        gone = asyncio.ensure_future(batcher.answer(["gone:1000"]))
        await asyncio.sleep(0.05)
        gone.cancel()
        return await asyncio.wait_for(batcher.answer(["next:2"]), timeout=5)

    assert _run(batcher, clients()) == ["NEXT"]
    assert len(engine.dropped) == 1 and engine.dropped[0][1] == 0
    assert sum("gone:1000" in step for step in engine.steps) < 50
