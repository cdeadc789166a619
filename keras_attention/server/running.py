"""`serve`: a run folder behind TensorFlow Serving's REST protocol, from start
to drain.

In order: the settings are checked and the port bound (a busy port fails here,
in one line, before the model loads); the run folder loads and every batch
shape compiles (`ServedModel.warm_up`) while the bound port is not yet
listening (a client's connection is refused, never kept waiting on a
compilation); then the port listens and one line says so on stderr,
`serving NAME at http://HOST:PORT`. SIGTERM or SIGINT closes the port (new
connections are refused), answers every request already received (at most
`drain_timeout_s` seconds), then `serve` returns; while the model loads and
compiles, they stop it at once (there is nothing to answer), and `serve`
returns too (the command exits 0).
"""

import asyncio
import contextlib
import errno
import logging
import numbers
import os
import signal
import socket
import sys

__all__ = ["ServerSettings", "bind", "serve"]


class ServerSettings:
    """The settings of `serve`, checked at construction.

    Args:
        host: str, the address to listen on (default `127.0.0.1`: this
            machine only; `0.0.0.0` for every interface).
        port: int in `[0, 65535]` (0: any free port, named in the ready line).
        model_name: str or None, the `NAME` of `/v1/models/NAME` (default:
            the run folder's name).
        max_batch_size: positive int, the most lines decoded together (1:
            no batching).
        batch_timeout_ms: number >= 0, how long a batch that is not full
            waits for one more line (while lines keep arriving, up to 4
            times as long: `server.batcher.GATHER_LIMIT`).
        max_queue: positive int, the most lines waiting; a request beyond it
            gets 503 with `Retry-After`.
        strategy: `"greedy"`, `"beam"` or None (the run's).
        num_beams: positive int or None (the run's).
        max_body_bytes: positive int, the largest request body (413 above).
        drain_timeout_s: number >= 0, how long a stop waits for the requests
            already received.
        max_source_tokens: positive int or None, the most tokens an input
            line may have (default: the run's source length; less compiles
            fewer shapes: `ServedModel`).
        continuous_batching: bool (default True): where the search allows
            it (greedy decoding of a Transformer), a row that ends leaves
            its batch at once and a waiting line joins at the next step;
            otherwise (or False) batches run to their longest row.
        verbose: bool, progress of the warm-up and one log line per request
            on stderr.

    Raises:
        ValueError: naming the setting, with `Received: ...`.
    """

    def __init__(self, *, host="127.0.0.1", port=8501, model_name=None, max_batch_size=32,
                 batch_timeout_ms=5.0, max_queue=1024, strategy=None, num_beams=None,
                 max_body_bytes=2**20, drain_timeout_s=30.0, max_source_tokens=None,
                 continuous_batching=True, verbose=False):
        if not isinstance(host, str) or not host:
            raise ValueError(f"Argument `host` must be a host name or address. "
                             f"Received: host={host!r}")
        if isinstance(port, bool) or not isinstance(port, numbers.Integral) or not (
                0 <= port <= 65535):
            raise ValueError(f"Argument `port` must be an integer in [0, 65535]. "
                             f"Received: port={port!r}")
        if model_name is not None and (not isinstance(model_name, str) or not model_name
                                       or any(c in model_name for c in "/: ")):
            raise ValueError(f"Argument `model_name` must be a non-empty name without '/', "
                             f"':' or spaces (it is a URL path part). "
                             f"Received: model_name={model_name!r}")
        for name, value in (("max_batch_size", max_batch_size), ("max_queue", max_queue),
                            ("max_body_bytes", max_body_bytes)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"Argument `{name}` must be a positive integer. "
                                 f"Received: {name}={value!r}")
        if max_source_tokens is not None and (
                isinstance(max_source_tokens, bool)
                or not isinstance(max_source_tokens, numbers.Integral) or max_source_tokens <= 0):
            raise ValueError(f"Argument `max_source_tokens` must be a positive integer. "
                             f"Received: max_source_tokens={max_source_tokens!r}")
        if max_queue < max_batch_size:
            raise ValueError(f"Argument `max_queue` must be at least `max_batch_size` "
                             f"({max_batch_size}). Received: max_queue={max_queue!r}")
        for name, value in (("batch_timeout_ms", batch_timeout_ms),
                            ("drain_timeout_s", drain_timeout_s)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
                    value >= 0):
                raise ValueError(f"Argument `{name}` must be a number >= 0. "
                                 f"Received: {name}={value!r}")
        for name, value in (("continuous_batching", continuous_batching), ("verbose", verbose)):
            if not isinstance(value, bool):
                raise ValueError(f"Argument `{name}` must be a bool. Received: {name}={value!r}")
        self.continuous_batching = continuous_batching
        self.host, self.port, self.model_name = host, int(port), model_name
        self.max_batch_size, self.max_queue = int(max_batch_size), int(max_queue)
        self.batch_timeout_ms, self.drain_timeout_s = float(batch_timeout_ms), float(
            drain_timeout_s)
        self.strategy, self.num_beams = strategy, num_beams
        self.max_body_bytes, self.verbose = int(max_body_bytes), verbose
        self.max_source_tokens = None if max_source_tokens is None else int(max_source_tokens)


def bind(host, port):
    """A TCP socket bound to `(host, port)`, not yet listening.

    Raises:
        ValueError: naming `port` when the address is in use, `host` when it
            cannot be bound.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise ValueError(f"Argument `host` must be an address of this machine "
                         f"({error.strerror}). Received: host={host!r}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        raise _bind_error(error, host, port) from None
    return sock


def _bind_error(error, host, port):
    if error.errno == errno.EADDRINUSE:
        return ValueError(f"Argument `port` names a port in use on {host} (another server?): "
                          f"stop it or choose another port. Received: port={port}")
    return ValueError(f"Argument `host` must be an address of this machine to listen on "
                      f"({error.strerror or error}). Received: host={host!r}, port={port}")


def url(host, port):
    """`http://HOST:PORT` (an IPv6 address in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(run_dir, settings=None, *, stderr=None):
    """Serves the run folder `run_dir` until SIGTERM or SIGINT (see the module
    docstring); returns once every request received is answered.

    Args:
        run_dir: a run folder (a recipe's run or a converted checkpoint).
        settings: a `ServerSettings` (default: its defaults).
        stderr: where the ready line and verbose lines go (default
            `sys.stderr`).

    Raises:
        ValueError: naming the setting or the run folder's file, before the
            port listens.
    """
    from keras_attention import runs, runtime
    from keras_attention.server.batcher import Batcher, ContinuousBatcher
    from keras_attention.server.monitoring import Metrics
    from keras_attention.server.served_model import ServedModel

    settings = settings or ServerSettings()
    stderr = stderr or sys.stderr
    # TensorFlow warns from the fifth shape its search is traced for: the
    # warm-up traces every bucket on purpose (`--verbose` shows its progress).
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    name = settings.model_name or os.path.basename(os.path.normpath(os.path.abspath(run_dir)))
    sock = bind(settings.host, settings.port)
    try:
        runtime.cache_compilations()
        try:
            with _stopped_by_signals() as signalled:
                served = ServedModel(runs.open_run(run_dir),
                                     max_batch_size=settings.max_batch_size,
                                     strategy=settings.strategy, num_beams=settings.num_beams,
                                     max_source_tokens=settings.max_source_tokens,
                                     continuous=settings.continuous_batching)
                if settings.verbose:
                    print("continuous batching: " + (
                        "on" if served.continuous is not None else
                        f"off ({served.continuous_off})"), file=stderr, flush=True)
                served.warm_up(_warm_up_progress(stderr, settings.verbose, signalled))
                if signalled:  # raised where something swallowed it
                    raise _Stopped()
        except _Stopped:
            if settings.verbose:
                print("stopped before serving", file=stderr, flush=True)
            return
        if served.continuous is not None:
            batcher = ContinuousBatcher(served, batch_timeout_ms=settings.batch_timeout_ms,
                                        max_queue=settings.max_queue)
        else:
            batcher = Batcher(served.answer, max_batch_size=settings.max_batch_size,
                              batch_timeout_ms=settings.batch_timeout_ms,
                              max_queue=settings.max_queue)
        metrics = Metrics(settings.max_batch_size, lambda: batcher.waiting)
        batcher.on_batch = metrics.batch
        batcher.start()
        try:
            asyncio.run(_listen_until_stopped(sock, served, batcher, metrics, name, settings,
                                              stderr))
        finally:
            batcher.stop(settings.drain_timeout_s)
    finally:
        sock.close()


class _Stopped(Exception):
    """SIGTERM or SIGINT while the model loads: nothing to drain, exit 0."""


@contextlib.contextmanager
def _stopped_by_signals():
    """Within: SIGTERM and SIGINT raise `_Stopped` (in the main thread; elsewhere
    the process's own handlers stay) and are recorded in the yielded list:
    library code that catches every exception (a compilation cache's) may
    swallow the raise, so the warm-up also checks the list between shapes."""
    signalled = []

    def stop(number, frame):
        signalled.append(number)
        raise _Stopped()

    try:
        previous = {number: signal.signal(number, stop)
                    for number in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread
        previous = {}
    try:
        yield signalled
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _warm_up_progress(stderr, verbose, signalled):
    """After each shape: a line on `stderr` if `verbose`; `_Stopped` if a
    signal came (`signalled` not empty)."""
    def progress(done, total, shape):
        if signalled:
            raise _Stopped()
        if verbose:
            rows, width = shape
            what = f"{rows} rows" + (f" of {width} source tokens" if width else "")
            print(f"warm-up: {done}/{total} shapes compiled ({what})", file=stderr, flush=True)

    return progress


async def _listen_until_stopped(sock, served, batcher, metrics, name, settings, stderr):
    from aiohttp import web

    from keras_attention.server.app import make_app

    app = make_app(served, batcher, metrics, model_name=name,
                   max_body_bytes=settings.max_body_bytes)
    access_log = None
    if settings.verbose:
        access_log = logging.getLogger("keras_attention.server.access")
        access_log.setLevel(logging.INFO)
        if not access_log.handlers:
            access_log.addHandler(logging.StreamHandler(stderr))
    runner = web.AppRunner(app, handle_signals=False, access_log=access_log,
                           shutdown_timeout=settings.drain_timeout_s)
    await runner.setup()
    try:
        try:
            await web.SockSite(runner, sock).start()
        except OSError as error:
            raise _bind_error(error, settings.host, settings.port) from None
        stopped = asyncio.Event()
        _on_signals(stopped.set)
        host, port = sock.getsockname()[:2]
        print(f"serving {name} at {url(settings.host, port)}", file=stderr, flush=True)
        await stopped.wait()
        if settings.verbose:
            print(f"stopping: answering the requests received "
                  f"(at most {settings.drain_timeout_s:g} s)", file=stderr, flush=True)
    finally:
        await runner.cleanup()


def _on_signals(callback):
    """Calls `callback` on SIGTERM and SIGINT (where the loop can: the main
    thread of a process)."""
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(number, callback)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
