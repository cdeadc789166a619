"""`Batcher`: concurrent requests answered together, in order, within bounds."""

import asyncio
import threading
import time

import pytest

from keras_attention.server.batcher import Batcher, QueueFull


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
