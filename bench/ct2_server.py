"""CTranslate2 behind TensorFlow Serving's REST protocol, with dynamic
batching: the other side of `bench/serve_load.py` (which starts it).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/ct2_server.py CT2_DIR \
        --tokenizer_dir CHECKPOINT --run_dir RUN_DIR [--host 127.0.0.1] [--port 8502] \
        [--model_name NAME] [--max_batch_size 32] [--batch_timeout_ms 5] [--max_queue 1024] \
        [--intra_threads 2] [--max_body_bytes 1048576] [--drain_timeout_s 30]

The protocol is `keras-attention serve`'s: `GET /v1/models/NAME` -> 200
`{"model_version_status": [{"version": "1", "state": "AVAILABLE", ...}]}`;
`POST /v1/models/NAME:predict` with `{"instances": ["line", ...]}` ->
`{"predictions": ["output", ...]}` in order; errors `{"error": "..."}` with
400 (not JSON, no list of strings), 404 (another model or path), 413 (a body
over `--max_body_bytes`), 503 (the queue full, or draining). SIGTERM (or
SIGINT) stops taking requests, answers those queued, and exits 0.

Batching: every line of every request goes into one asyncio queue; a
batcher takes the first waiting line, gathers more for up to
`--batch_timeout_ms` (or until `--max_batch_size` lines), and runs one
`Translator.translate_batch` in a worker thread (one at a time, so the
event loop keeps reading requests, which form the next batch meanwhile).
`--max_batch_size 1` turns batching off.

Text: the checkpoint's SentencePiece models, as `transformers`'
`MarianTokenizer` uses them: `source.spm` pieces (a piece missing from
`vocab.json` becomes `<unk>`), `</s>` appended, a line longer than the run's
`source_length` keeps its first `source_length - 1` pieces and `</s>`; the
output's pieces without `</s>`, `<unk>` and `<pad>`, joined by
`target.spm`'s `decode_pieces`, `▁` as a space, stripped.

Decoding: the run folder's `config.json` `decoding` block (what `keras-attention
serve RUN_DIR` decodes with): `strategy`/`num_beams` -> `beam_size`,
`target_length` (new tokens, the end token included) -> `max_decoding_length`,
`length_penalty`; or `--beam_size` and `--max_decoding_length`.

Started by `serve_load.py` with `CT2_VERBOSE=1`, so that CTranslate2 logs the
ISA it selected (`CT2_FORCE_CPU_ISA` forces one) on stderr. Once the model is
loaded and one batch translated, the one line `serving NAME at
http://HOST:PORT` goes to stderr.
"""

import argparse
import asyncio
import concurrent.futures
import json
import os
import signal
import sys
import time

UNKNOWN, END, PAD = "<unk>", "</s>", "<pad>"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ct2_dir", help="a CTranslate2 model folder")
    parser.add_argument("--tokenizer_dir", required=True,
                        help="the Marian checkpoint folder (source.spm, target.spm, vocab.json)")
    parser.add_argument("--run_dir", default=None,
                        help="our run folder, whose config.json `decoding` block is followed")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8502)
    parser.add_argument("--model_name", default=None, help="default: the folder's name")
    parser.add_argument("--max_batch_size", type=int, default=32)
    parser.add_argument("--batch_timeout_ms", type=float, default=5.0)
    parser.add_argument("--max_queue", type=int, default=1024, help="lines waiting, at most")
    parser.add_argument("--max_body_bytes", type=int, default=1 << 20)
    parser.add_argument("--drain_timeout_s", type=float, default=30.0)
    parser.add_argument("--intra_threads", type=int, default=2)
    parser.add_argument("--compute_type", default="default")
    parser.add_argument("--beam_size", type=int, default=None, help="default: the run's")
    parser.add_argument("--max_decoding_length", type=int, default=None,
                        help="default: the run's target_length")
    parser.add_argument("--source_length", type=int, default=None,
                        help="default: the run's source_length (else no limit)")
    args = parser.parse_args(argv)
    for name in ("max_batch_size", "max_queue", "max_body_bytes", "intra_threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1. Received: {name}={getattr(args, name)}")
    return args


def decoding_options(decoding, beam_size=None, max_decoding_length=None):
    """`translate_batch` keyword arguments from a run's `decoding` block
    (`None`: greedy, 256 tokens) and overrides."""
    decoding = decoding or {}
    beams = decoding.get("num_beams", 1) if decoding.get("strategy") == "beam" else 1
    options = {
        "beam_size": beam_size or beams,
        "max_decoding_length": max_decoding_length or decoding.get("target_length", 256),
        "length_penalty": float(decoding.get("length_penalty", 1.0)),
        "return_end_token": False,
        "min_decoding_length": 0,
    }
    if decoding.get("min_length"):
        options["min_decoding_length"] = max(0, int(decoding["min_length"]) - 1)
    if decoding.get("no_repeat_ngram_size"):
        options["no_repeat_ngram_size"] = int(decoding["no_repeat_ngram_size"])
    return options


class Text:
    """Lines to CTranslate2's source tokens and its output tokens to lines,
    with the checkpoint's SentencePiece models."""

    def __init__(self, folder, source_length=None):
        import sentencepiece

        self.source = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(folder, "source.spm"))
        self.target = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(folder, "target.spm"))
        with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as file:
            self.vocabulary = json.load(file)
        self.source_length = source_length

    def tokens(self, line):
        pieces = [p if p in self.vocabulary else UNKNOWN
                  for p in self.source.encode(line, out_type=str)] + [END]
        if self.source_length and len(pieces) > self.source_length:
            pieces = pieces[:self.source_length - 1] + [END]
        return pieces

    def line(self, tokens):
        kept = [t for t in tokens if t not in (END, UNKNOWN, PAD)]
        return self.target.decode_pieces(kept).replace("\u2581", " ").strip()


class Batcher:
    """The queue of lines and the loop that translates them in batches."""

    def __init__(self, translate, max_batch_size, timeout_s, max_queue):
        self.translate = translate  # list of lines -> list of outputs, blocking
        self.max_batch_size, self.timeout_s, self.max_queue = max_batch_size, timeout_s, max_queue
        self.queue = asyncio.Queue()
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="translate")
        self.batches = self.lines = 0

    def room_for(self, count):
        return self.queue.qsize() + count <= self.max_queue

    async def submit(self, lines):
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in lines]
        for line, future in zip(lines, futures):
            self.queue.put_nowait((line, future))
        return await asyncio.gather(*futures)

    async def run(self):
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            deadline = loop.time() + self.timeout_s
            while len(batch) < self.max_batch_size:
                try:
                    batch.append(self.queue.get_nowait())
                    continue
                except asyncio.QueueEmpty:
                    pass
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self.queue.get(), left))
                except TimeoutError:
                    break
            lines = [line for line, _ in batch]
            try:
                outputs = await loop.run_in_executor(self.executor, self.translate, lines)
            except Exception as error:  # answered to every request of the batch
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            self.batches += 1
            self.lines += len(lines)
            for (_, future), output in zip(batch, outputs):
                if not future.done():
                    future.set_result(output)


def make_app(name, batcher, max_body_bytes, state):
    from aiohttp import web

    def error(status, message):
        return web.json_response({"error": message}, status=status)

    async def status(request):
        if request.match_info["spec"] != name:
            return error(404, f"Model {request.match_info['spec']!r} not found (this server "
                              f"serves {name!r})")
        return web.json_response({"model_version_status": [{
            "version": "1", "state": "AVAILABLE",
            "status": {"error_code": "OK", "error_message": ""}}]})

    async def predict(request):
        spec = request.match_info["spec"]
        model, _, verb = spec.partition(":")
        if model != name or verb != "predict":
            return error(404, f"No such endpoint: POST /v1/models/{spec} (this server serves "
                              f"POST /v1/models/{name}:predict)")
        if state["draining"]:
            return error(503, "The server is shutting down")
        if request.content_length is not None and request.content_length > max_body_bytes:
            return error(413, f"The body must be at most {max_body_bytes} bytes. "
                              f"Received: {request.content_length}")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return error(413, f"The body must be at most {max_body_bytes} bytes")
        try:
            instances = json.loads(body)["instances"]
        except (ValueError, KeyError, TypeError):
            return error(400, 'The body must be JSON {"instances": ["line", ...]}')
        if (not isinstance(instances, list) or not instances
                or not all(isinstance(x, str) for x in instances)):
            return error(400, '"instances" must be a non-empty list of strings')
        if not batcher.room_for(len(instances)):
            return error(503, "The queue is full; try again later")
        state["in_flight"] += 1
        try:
            predictions = await batcher.submit(instances)
        except Exception as failure:  # noqa: BLE001 (the client gets the message)
            return error(500, f"{type(failure).__name__}: {failure}")
        finally:
            state["in_flight"] -= 1
        return web.json_response({"predictions": predictions})

    app = web.Application(client_max_size=max_body_bytes)
    app.router.add_get("/v1/models/{spec}", status)
    app.router.add_post("/v1/models/{spec}", predict)
    return app


async def serve(args, translate, name):
    from aiohttp import web

    batcher = Batcher(translate, args.max_batch_size, args.batch_timeout_ms / 1000.0,
                      args.max_queue)
    state = {"draining": False, "in_flight": 0}
    app = make_app(name, batcher, args.max_body_bytes, state)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    await site.start()
    batch_task = asyncio.create_task(batcher.run())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(f"serving {name} at http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    await stop.wait()
    state["draining"] = True
    deadline = time.monotonic() + args.drain_timeout_s
    while (state["in_flight"] or not batcher.queue.empty()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    drained = not state["in_flight"] and batcher.queue.empty()
    batch_task.cancel()
    await runner.cleanup()
    batcher.executor.shutdown(wait=True)
    print(f"stopped: {batcher.batches} batches, {batcher.lines} lines"
          f"{'' if drained else ', NOT drained'}", file=sys.stderr, flush=True)
    return 0 if drained else 1


def main(argv=None):
    args = parse_args(argv)
    import ctranslate2

    decoding, source_length = None, args.source_length
    if args.run_dir:
        with open(os.path.join(args.run_dir, "config.json"), encoding="utf-8") as file:
            decoding = json.load(file).get("decoding")
        source_length = source_length or (decoding or {}).get("source_length")
    options = decoding_options(decoding, args.beam_size, args.max_decoding_length)
    text = Text(args.tokenizer_dir, source_length)
    translator = ctranslate2.Translator(args.ct2_dir, device="cpu", compute_type=args.compute_type,
                                        intra_threads=args.intra_threads, inter_threads=1)

    def translate(lines):
        results = translator.translate_batch([text.tokens(line) for line in lines],
                                             max_batch_size=0, **options)
        return [text.line(r.hypotheses[0]) for r in results]

    start = time.perf_counter()
    translate(["Warm-up."])
    print(f"ct2_server: compute type {translator.compute_type}, {json.dumps(options)}, "
          f"warm-up {time.perf_counter() - start:.2f} s", file=sys.stderr, flush=True)
    name = args.model_name or os.path.basename(os.path.normpath(args.ct2_dir))
    return asyncio.run(serve(args, translate, name))


if __name__ == "__main__":
    sys.exit(main())
