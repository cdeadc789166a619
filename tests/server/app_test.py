"""The HTTP application: every status of the protocol, in-process, with a
stand-in model (no Keras), and the next good request answered after each."""

import asyncio
import json
import threading

import pytest
from aiohttp import test_utils

from keras_attention.runs import SourceTooLongError
from keras_attention.server.app import make_app
from keras_attention.server.batcher import Batcher
from keras_attention.server.monitoring import PATH, Metrics

LIMIT = 10  # the stand-in model's most characters per line


class _Model:
    """Upper-cases lines of at most LIMIT characters, once `gate` is open."""

    def __init__(self):
        self.gate = threading.Event()
        self.gate.set()

    def rows(self, lines):
        for index, line in enumerate(lines):
            if len(line) > LIMIT:
                raise SourceTooLongError(index, len(line), LIMIT)
        return list(lines)

    def answer(self, rows):
        self.gate.wait(10)
        if "boom" in rows:
            raise RuntimeError("the model broke")
        return [row.upper() for row in rows]


def _serve(test, **options):
    """Runs `test(client, model)` against a fresh app on a free port."""
    model = _Model()
    settings = dict(max_batch_size=4, batch_timeout_ms=1, max_queue=6)
    settings.update(options.pop("batcher", {}))
    batcher = Batcher(model.answer, **settings)
    metrics = Metrics(settings["max_batch_size"], lambda: batcher.waiting)
    batcher.on_batch = metrics.batch
    app = make_app(model, batcher, metrics, model_name="dates",
                   max_body_bytes=options.pop("max_body_bytes", 2048))

    async def run():
        async with test_utils.TestClient(test_utils.TestServer(app)) as client:
            return await test(client, model)

    batcher.start()
    try:
        return asyncio.run(run())
    finally:
        model.gate.set()
        batcher.stop(5)


async def _post(client, body, path="/v1/models/dates:predict", **kwargs):
    data = body if isinstance(body, (bytes, str)) or hasattr(body, "__aiter__") else (
        json.dumps(body))
    response = await client.post(path, data=data, **kwargs)
    return response.status, await response.json(), response.headers


async def _still_serving(client):
    status, answer, _ = await _post(client, {"instances": ["ok"]})
    assert (status, answer) == (200, {"predictions": ["OK"]})


def test_status_and_metadata():
    async def test(client, model):
        response = await client.get("/v1/models/dates")
        status = (await response.json())["model_version_status"][0]
        assert response.status == 200 and status["state"] == "AVAILABLE"
        response = await client.get("/v1/models/dates/versions/1/metadata")
        assert response.status == 200
        assert (await response.json())["model_spec"]["name"] == "dates"

    _serve(test)


def test_predictions_in_input_order_row_and_columnar():
    async def test(client, model):
        lines = [f"line {i}" for i in range(9)]  # more than a batch
        assert (await _post(client, {"instances": lines}))[:2] == (
            200, {"predictions": [line.upper() for line in lines]})
        assert (await _post(client, {"inputs": ["a", "b"]}))[:2] == (
            200, {"outputs": ["A", "B"]})
        assert (await _post(client, {"instances": ["ä"]},
                            path="/v1/models/dates/versions/1:predict"))[:2] == (
            200, {"predictions": ["Ä"]})

    _serve(test, batcher={"max_queue": 16})


@pytest.mark.parametrize("body, status, words", [
    (b"{not json", 400, "not JSON"),
    ({"instance": ["a"]}, 400, "unknown key 'instance'"),
    ({"instances": []}, 400, "non-empty list"),
    ({"instances": ["a", 7]}, 400, "`instances[1]` must be a string"),
    ({"instances": ["short", "far too long for it"]}, 400,
     "`instances[1]` is longer than the model accepts: 19 tokens, more than the limit of 10"),
    ({"inputs": ["far too long for it"]}, 400, "`inputs[0]` is longer"),
    ({"instances": ["a"] * 7}, 400, "more than this server queues (--max_queue 6)"),
    ({"instances": ["x" * 5000]}, 413, "larger than this server takes (2048 bytes"),
    ({"instances": ["boom"]}, 500, "the model failed on this request (RuntimeError"),
])
def test_each_bad_request_gets_its_status_and_one_line(body, status, words):
    async def test(client, model):
        got_status, answer, _ = await _post(client, body)
        assert got_status == status and list(answer) == ["error"]
        assert words in answer["error"] and "\n" not in answer["error"]
        await _still_serving(client)

    _serve(test)


def test_a_chunked_body_over_the_limit_gets_413():
    async def test(client, model):
        async def chunks():
            for _ in range(10):
                yield b"x" * 1000

        status, answer, _ = await _post(client, chunks())
        assert status == 413 and "--max_body_bytes" in answer["error"]
        await _still_serving(client)

    _serve(test)


@pytest.mark.parametrize("method, path, status, words", [
    ("POST", "/v1/models/other:predict", 404, "no model 'other'"),
    ("GET", "/v1/models/other", 404, "no model 'other'"),
    ("GET", "/v2/models/dates", 404, "Not Found"),
    ("GET", "/v1/models/dates:predict", 405, "use POST"),
    ("POST", "/monitoring/prometheus/metrics", 405, "Method Not Allowed"),
])
def test_unknown_paths_and_methods_answer_json(method, path, status, words):
    async def test(client, model):
        response = await client.request(method, path, data=b"{}")
        answer = await response.json()
        assert response.status == status and words in answer["error"]
        await _still_serving(client)

    _serve(test)


def test_a_full_queue_answers_503_with_retry_after():
    async def test(client, model):
        model.gate.clear()  # the worker holds its first batch
        first = asyncio.ensure_future(_post(client, {"instances": ["a", "b", "c", "d"]}))
        await asyncio.sleep(0.3)
        waiting = asyncio.ensure_future(_post(client, {"instances": ["e"] * 6}))
        await asyncio.sleep(0.3)
        status, answer, headers = await _post(client, {"instances": ["f"]})
        assert status == 503 and headers["Retry-After"] == "1"
        assert "queue is full (6 of 6 lines waiting" in answer["error"]
        model.gate.set()
        assert (await first)[:2] == (200, {"predictions": ["A", "B", "C", "D"]})
        assert (await waiting)[:2] == (200, {"predictions": ["E"] * 6})
        await _still_serving(client)

    _serve(test)


def test_metrics_count_requests_batches_and_the_queue():
    async def test(client, model):
        await _post(client, {"instances": ["a", "b"]})
        await _post(client, {"instances": [1]})
        response = await client.get(PATH)
        text = await response.text()
        assert response.status == 200 and response.content_type.startswith("text/plain")
        assert 'keras_attention_requests_total{status="200"} 1.0' in text
        assert 'keras_attention_requests_total{status="400"} 1.0' in text
        assert "keras_attention_request_seconds_count 2.0" in text
        assert "keras_attention_batch_rows_sum 2.0" in text
        assert "keras_attention_queue_rows 0.0" in text

    _serve(test)
