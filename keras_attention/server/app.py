"""The server's HTTP application (aiohttp): TensorFlow Serving's paths over a
`ServedModel` and its `Batcher`.

aiohttp parses HTTP, limits the body (`client_max_size`), keeps connections
alive and drains its handlers on shutdown; this module maps its requests to
`keras_attention.server.protocol` and answers every error as `{"error":
"one line"}`, paths aiohttp itself refuses (404, 405) included.
"""

import time

from aiohttp import web

from keras_attention.runs import SourceTooLongError
from keras_attention.server import monitoring, protocol
from keras_attention.server.batcher import QueueFull

__all__ = ["make_app"]

#: Seconds a client told "queue full" (503) waits before trying again.
RETRY_AFTER_S = 1


def make_app(served, batcher, metrics, *, model_name, max_body_bytes):
    """The `aiohttp.web.Application` of one served model.

    Args:
        served: the `ServedModel` (turns lines into rows).
        batcher: the `Batcher` (answers rows in batches; started by the caller).
        metrics: the server's `monitoring.Metrics`.
        model_name: str, the `NAME` of `/v1/models/NAME`.
        max_body_bytes: positive int, the largest request body (413 above).
    """
    app = web.Application(client_max_size=max_body_bytes, middlewares=[_errors_as_json])
    handler = _Handler(served, batcher, metrics, model_name, max_body_bytes)
    app.router.add_route("*", "/v1/models/{tail:.*}", handler.model)
    app.router.add_get(monitoring.PATH, handler.metrics)
    return app


class _Handler:
    def __init__(self, served, batcher, metrics, model_name, max_body_bytes):
        self.served = served
        self.batcher = batcher
        self.monitoring = metrics
        self.model_name = model_name
        self.max_body_bytes = max_body_bytes

    async def model(self, request):
        try:
            route = protocol.parse_route(request.match_info["tail"], request.method,
                                         self.model_name)
        except protocol.ProtocolError as error:
            return _error(error.status, error.message)
        if route.action == "status":
            return _json(200, protocol.status_body())
        if route.action == "metadata":
            return _json(200, protocol.metadata_body(self.model_name))
        return await self.predict(request)

    async def predict(self, request):
        started = time.monotonic()
        status = 500
        try:
            outputs, key = await self._outputs(request)
            status = 200
            return _json(200, protocol.predict_body(key, outputs))
        except protocol.ProtocolError as error:
            status = error.status
            headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else None
            return _error(status, error.message, headers)
        except Exception as error:  # the model failed: this request's answer, not the server
            return _error(500, f"the model failed on this request "
                               f"({type(error).__name__}: {error})")
        finally:
            self.monitoring.answered(status, time.monotonic() - started)

    async def _outputs(self, request):
        """The outputs of a predict request and the key they go under."""
        lines, key = protocol.parse_predict_body(await self._body(request))
        name = "instances" if key == "predictions" else "inputs"
        if len(lines) > self.batcher.max_queue:
            raise protocol.ProtocolError(
                400, f"`{name}` holds {len(lines)} lines, more than this server queues "
                     f"(--max_queue {self.batcher.max_queue}): send fewer per request")
        try:
            rows = self.served.rows(lines)
        except SourceTooLongError as error:
            raise protocol.ProtocolError(
                400, f"`{name}[{error.index}]` is longer than the model accepts: "
                     f"{error.length} tokens, more than the limit of {error.limit} (the run's "
                     f"source length, or --max_source_tokens). Shorten it or split it") from None
        try:
            future = self.batcher.submit(rows)
        except QueueFull as error:
            raise protocol.ProtocolError(503, str(error)) from None
        return await future, key

    async def _body(self, request):
        limit = self.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            raise protocol.ProtocolError(413, _too_large(request.content_length, limit))
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise protocol.ProtocolError(413, _too_large(None, limit)) from None

    async def metrics(self, request):
        return web.Response(body=self.monitoring.text(),
                            headers={"Content-Type": monitoring.CONTENT_TYPE})


def _too_large(size, limit):
    received = f"{size} bytes" if size is not None else "more"
    return (f"the request body is larger than this server takes ({limit} bytes, "
            f"--max_body_bytes). Received: {received}")


@web.middleware
async def _errors_as_json(request, handler):
    """aiohttp's own refusals (no such route, wrong method) as `{"error": ...}`."""
    try:
        return await handler(request)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        return _error(error.status, f"{error.reason}: {request.method} {request.path}")


def _json(status, body, headers=None):
    return web.Response(status=status, body=body, content_type="application/json",
                        charset="utf-8", headers=headers)


def _error(status, message, headers=None):
    return _json(status, protocol.error_body(message), headers)
