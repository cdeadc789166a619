"""Serving under load: `keras-attention serve` against CTranslate2 behind the
same protocol, closed-loop clients on 127.0.0.1, issue 53's targets checked.

A benchmark run by hand, not a test (`tests/bench/serve_load_test.py` checks
its percentiles, table and verdicts on made-up figures):

    .venv/bin/python bench/serve_load.py [--isa native|avx2] [--workdir DIR] \
        [--clients 1,4,16,64] [--requests-per-client 32] [--min-requests 128] \
        [--level-seconds 60] [--servers ours,ours_fixed,ours_nobatch,ct2] [--ct2-int8] \
        [--compile-cache fresh|user] [--backend jax|tensorflow] [--quick]

Needs the `bench` and `hf` extras (ctranslate2, transformers, torch,
sentencepiece, aiohttp) and the installed `keras-attention` script with its
`serve` command.

**The model.** A Marian-base-shaped `MarianMTModel` (OPUS-MT base: 6 + 6
layers, d=512, 8 heads, FFN 2048, swish, tied embeddings, sinusoidal
positions) with random seeded weights (`bench/pretrained_decode.py`'s
`save_checkpoint`), saved by `transformers` with real tokenizer files
(`source.spm`, `target.spm`, `vocab.json`, `tokenizer_config.json`, written
by `transformers.MarianTokenizer.save_pretrained`): SentencePiece unigram
models (what OPUS-MT uses) trained on the English and the German side of
`shared/data/translation/eng-deu.tsv` beside the checkout (read in place). The file's
36,765 distinct English sentences (1-7 words, ~10,000 distinct words) only
allow 5,121 unigram pieces (spm refuses more with a hard limit), the German
side 8,652; so `--spm-vocab 8000` is asked with `hard_vocab_limit=false`:
English gets 5,121 pieces, German 8,000, and `vocab.json` (Marian's joint
vocabulary: `</s>` 0, `<unk>` 1, the pieces of both models, `<pad>` last) has
~12,500 real pieces. The vocabulary is what costs most per generated token
(the output projection, 512 x V, is larger than the six decoder layers
together at V=58,101), so `--vocab 58101` (the default) pads `vocab.json` with
pieces no tokenizer produces up to OPUS-MT en-de's 58,101 entries, the real
cost; `--vocab 0` keeps the ~12,500.

Random weights answer with any piece and end a sentence at random. So, as a
trained model behaves: `final_logits_bias` (read by both converters) is -1000
for every id that is not a piece of `target.spm` (English-only pieces, the
padding pieces, `<unk>`, `<pad>`) and 0 for the German pieces; and the
decoder gets a step counter that `</s>`'s logit reads (`add_step_counter`:
an attention head of the first decoder layer whose weight on the start
position falls smoothly with the step, carried to the output in a freed
dimension), so that `</s>` wins after a few steps. Its bias is calibrated so
that greedy outputs are as long as the German references on average: one
greedy pass of `transformers` over 64 served sentences with `</s>` banned
records, per step, how far `</s>`'s logit is below the chosen token's; the
length of a row under bias b is its first step whose gap is below b, so b is
found by bisection without re-decoding (midway between two gaps: no exact
tie), and checked by one more pass. On the full model: mean 6.6 tokens, sd
2.6, 3 to 14 (references: 6.6, sd 1.3, 4 to 10); a bias alone gives lengths
1 to 63 for the same mean, a batch then as slow as a 63-token row far more
often than with real text. The lengths do not follow each source's length
as real ones would. `generation_config.json`: greedy (`--num-beams`),
`max_length` `--max-length` (64: up to 63 new tokens), `bad_words_ids=[[pad]]`.

**The text served.** `--sentences` (512) distinct English sentences, evenly
spaced over the file (which is sorted by length, so every length 1-7 words is
there), shuffled with `--seed`. Client c of C sends line `(j*C + c) mod N`
as its j-th request, one line per request.

**The servers**, one at a time, each a subprocess on 127.0.0.1 waited for
through `GET /v1/models/NAME`, stopped with SIGTERM (exit 0 expected):
`ours`: `keras-attention serve RUN_DIR --max_batch_size 32
--batch_timeout_ms 5` (the run folder made by `keras-attention convert
CHECKPOINT RUN_DIR`; greedy, so with continuous batching);
`ours_fixed`: the same with `--continuous_batching false` (batches run to
their longest row); `ours_nobatch`: the same with `--max_batch_size 1`;
`ct2`: `bench/ct2_server.py` (CTranslate2 float32 from
`ct2-transformers-converter`, `intra_threads=2, inter_threads=1`, the same
batching numbers, the run's `decoding` block; its docstring says how);
`ct2_int8` with `--ct2-int8`. Every server gets `OMP_WAIT_POLICY=PASSIVE`
(`--omp-wait-policy`; see pretrained_decode's docstring) and
`TF_CPP_MIN_LOG_LEVEL=3`; ours keeps its backend choice unless `--backend`
(the backend it ran is read from its loaded libraries) and, with
`--compile-cache fresh` (the default), starts from an empty JAX compilation
cache (`KERAS_ATTENTION_CACHE_DIR`), so `ready s` is a first start's: every
(batch bucket x source bucket) shape compiled (`ours_nobatch`, started next
with the same cache, finds its batch-1 shapes there). Right after start: a
few protocol checks (404, 400, 413 and a two-line request), a warm-up (16
clients x 2 requests), the RSS of the server's process tree.

**The load**, from this process (aiohttp, keep-alive connections): for each
of `--clients` C, C closed-loop clients each send `max(--requests-per-client,
ceil(--min-requests / C))` requests, but none after `--level-seconds` (the
level is then marked capped). Per level: sentences/s (answers with status
200 / the level's wall seconds), p50/p95/p99 latency of those answers, errors
(every other outcome), the server's CPU seconds per sentence (its process
tree's, from /proc), this client's CPU and what the rest of the machine used
meanwhile ("others' CPU %", of one core, from /proc/stat: another user's work
on a shared machine shows there), and the load average (in the JSON).

**Correctness.** After the servers have run, one more process computes
`keras_attention.runs.open_run(RUN_DIR).generate([line])` for every line, one
line per call, on the backend ours served with (seen in its loaded
libraries) and the same ISA settings; every answer of every level is compared
with it ("wrong"). For CTranslate2 the count is of answers that differ from
ours' reference (informational: random weights make near-ties possible).

**ISA.** The CPU's (AVX-512 or AVX2, from /proc/cpuinfo flags) is printed.
`--isa avx2` runs every server (and the reference) with
`ONEDNN_MAX_CPU_ISA=AVX2` (oneDNN, in TensorFlow and in CTranslate2's GEMMs),
`XLA_FLAGS=--xla_cpu_max_isa=AVX2` (jaxlib's and TensorFlow's XLA both know
the flag; an unknown value is only a warning, "Unknown CPU ISA", which the
check looks for) and `CT2_FORCE_CPU_ISA=AVX2`. What the libraries used is
checked, not assumed, by small probes under the same environment: the count
of AVX-512-only instructions (zmm, EVEX registers, masks) in the object code
XLA generates for a small `jax.jit` and `tf.function(jit_compile=True)`
(`--xla_dump_to`, objdump), oneDNN's `ONEDNN_VERBOSE` ISA line from a
TensorFlow matmul and from one CTranslate2 translation, and CTranslate2's
"Selected ISA" (`CT2_VERBOSE=1`, also read from the CTranslate2 server's
log). On AMD CPUs CTranslate2 4.x selects AVX2 for its own kernels even with
AVX-512 (it enables AVX-512 on Intel only), while its oneDNN GEMMs use
AVX-512: the native runs are not the same ISA on both sides.

One limit the probes show: jaxlib's XLA (0.10) hands matmuls to YNNPACK
(`__ynn_fusion` in the optimized HLO, reported as "YNNPACK dots"), whose
kernels are chosen by CPUID and ignore `--xla_cpu_max_isa` (perf shows
`ynn::dot_fp32_5x64x1_1x16x1_avx512` under `--xla_cpu_max_isa=AVX2`). So
with `--isa avx2` ours' generated code is AVX2 but its matmuls still AVX-512
on an AVX-512 CPU. `--no-ynn` adds `--xla_cpu_experimental_ynn_fusion_type=`
(YNNPACK off): the matmuls then run in Eigen, AVX2 under the cap (only
glibc's memcpy still uses AVX-512), but Eigen is slower than YNNPACK (a
32x512 by 512x58101 matmul: 1.7x), so that run is a floor for an AVX2-only
CPU, where YNNPACK would pick its AVX2 kernels.

**The verdicts** (issue 53's "Must show", float32, at 16 clients): ours'
sentences/s >= 1.0x CTranslate2's and >= 3x ours with batching off; ours'
p99 <= CTranslate2's p99; and (ours, both servers) no errors, every answer
equal to the reference.

Files in `--workdir` (default `$TMPDIR/serve_load`, reused: the checkpoint,
run folder and CTranslate2 folders are made once; `model.json` records what
they were made with), under `full/` or `quick/`: `checkpoint/`, `run/`,
`ct2-float32/`, `lines.json`, `reference-BACKEND-ISA.json`, the servers' logs
and `results-ISA-DATE.json`. `--quick`: a tiny model (1 + 1 layers, d=32, spm 1000
pieces, no padding pieces), 32 lines, 1 and 4 clients, 4 requests each.
"""

import argparse
import asyncio
import collections
import glob
import http.client
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.common import (  # noqa: E402
    cpu_flags,
    cpu_isa,
    format_table,
    isa_env,
    loadavg,
    machine_info,
)

# The project's copy of the Tatoeba pairs, in the shared/ folder beside the checkout.
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "shared", "data", "translation", "eng-deu.tsv")
FULL = dict(layers=6, hidden=512, heads=8, intermediate=2048)
QUICK = dict(layers=1, hidden=32, heads=2, intermediate=64)
OPUS_MT_EN_DE_VOCAB = 58101
SERVERS = ("ours", "ours_fixed", "ours_nobatch", "ct2", "ct2_int8")
LABELS = {"ours": "ours", "ours_fixed": "ours, continuous batching off",
          "ours_nobatch": "ours, batching off", "ct2": "CTranslate2",
          "ct2_int8": "CTranslate2 int8"}
OURS = ("ours", "ours_fixed", "ours_nobatch")
HOST = "127.0.0.1"
MODEL_NAME = "marian"
#: The "Must show" targets: at this many clients, ours >= these ratios.
TARGET_CLIENTS, VS_CT2, VS_NOBATCH = 16, 1.0, 3.0
#: The bias of ids a trained model would never give (see the docstring).
NEVER = -1000.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model, 32 lines, 1 and 4 clients, 4 requests each: a smoke run")
    parser.add_argument("--isa", choices=("native", "avx2"), default="native",
                        help="avx2: every server limited to AVX2 (oneDNN, XLA, CTranslate2)")
    parser.add_argument("--workdir", default=None,
                        help="checkpoint, run folder, logs, results (default "
                             "$TMPDIR/serve_load, reused)")
    parser.add_argument("--servers", default="ours,ours_fixed,ours_nobatch,ct2",
                        help=f"comma-separated subset of {','.join(SERVERS)}")
    parser.add_argument("--ct2-int8", action="store_true", help="add ct2_int8 to --servers")
    parser.add_argument("--clients", default=None, help="concurrency levels (default 1,4,16,64)")
    parser.add_argument("--requests-per-client", type=int, default=None,
                        help="requests per client per level (default 32; 4 with --quick)")
    parser.add_argument("--min-requests", type=int, default=None,
                        help="at least this many requests per level (default 128; 0 quick)")
    parser.add_argument("--level-seconds", type=float, default=None,
                        help="no new request after this many seconds of a level (default 60)")
    parser.add_argument("--warmup-requests", type=int, default=2,
                        help="warm-up requests per client, 16 clients, before the levels")
    parser.add_argument("--request-timeout", type=float, default=300.0)
    parser.add_argument("--start-timeout", type=float, default=900.0,
                        help="seconds a server may take to answer GET /v1/models/NAME")
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--batch-timeout-ms", type=float, default=5.0)
    parser.add_argument("--sentences", type=int, default=None,
                        help="distinct lines served (default 512; 32 with --quick)")
    parser.add_argument("--vocab", type=int, default=None,
                        help=f"vocab.json entries, padded (default {OPUS_MT_EN_DE_VOCAB}, "
                             f"OPUS-MT en-de's; 0: the pieces alone; 0 with --quick)")
    parser.add_argument("--spm-vocab", type=int, default=None,
                        help="SentencePiece pieces asked per side (default 8000; 1000 quick)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="generation_config max_length, the start token counted "
                             "(default 64; 16 with --quick)")
    parser.add_argument("--num-beams", type=int, default=1, help="1: greedy (default)")
    parser.add_argument("--backend", default=None,
                        help="KERAS_BACKEND for ours (default: the server's own choice)")
    parser.add_argument("--no-ynn", action="store_true",
                        help="with --isa avx2: also turn XLA's YNNPACK dots off "
                             "(--xla_cpu_experimental_ynn_fusion_type=), so that ours' matmuls "
                             "run AVX2 too (in Eigen: YNNPACK ignores --xla_cpu_max_isa)")
    parser.add_argument("--compile-cache", choices=("fresh", "user"), default="fresh",
                        help="fresh (default): ours starts with an empty JAX compilation "
                             "cache (KERAS_ATTENTION_CACHE_DIR, a new folder in the workdir, "
                             "removed at the end), so its start-up is a first start's; user: "
                             "the user's cache")
    parser.add_argument("--omp-wait-policy", default="PASSIVE",
                        help="OMP_WAIT_POLICY of every server ('' leaves the environment's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    quick = args.quick
    args.size = QUICK if quick else FULL
    args.clients = [int(c) for c in (args.clients or ("1,4" if quick else "1,4,16,64")).split(",")]
    defaults = dict(requests_per_client=(4, 32), min_requests=(0, 128), level_seconds=(20.0, 60.0),
                    sentences=(32, 512), vocab=(0, OPUS_MT_EN_DE_VOCAB), spm_vocab=(1000, 8000),
                    max_length=(16, 64))
    for name, (small, full) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, small if quick else full)
    args.servers = [s for s in args.servers.split(",") if s]
    if args.ct2_int8 and "ct2_int8" not in args.servers:
        args.servers.append("ct2_int8")
    for server in args.servers:
        if server not in SERVERS:
            parser.error(f"--servers takes {', '.join(SERVERS)}. Received: servers={server!r}")
    for name in ("requests_per_client", "sentences", "max_batch_size", "num_beams"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1. "
                         f"Received: {name}={getattr(args, name)}")
    if min(args.clients) < 1:
        parser.error(f"--clients must be positive. Received: clients={args.clients}")
    if args.max_length < 2:
        parser.error(f"--max-length must be at least 2. Received: max_length={args.max_length}")
    if args.workdir is None:
        args.workdir = os.path.join(tempfile.gettempdir(), "serve_load")
    return args


# ---------------------------------------------------------------------------
# Pure parts (tests/bench/serve_load_test.py)
# ---------------------------------------------------------------------------
def percentile(values, q):
    """The `q`-th percentile of `values` with linear interpolation between
    the two nearest ranks (numpy's default); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100.0
    low = math.floor(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def requests_per_client(clients, per_client, min_requests):
    """Requests each of `clients` clients sends: `per_client`, or more so that
    the level has at least `min_requests`."""
    return max(per_client, math.ceil(min_requests / clients))


def line_index(client, request, clients, lines):
    """The line client `client` (of `clients`) sends as its `request`-th."""
    return (request * clients + client) % lines


def summarize(records, seconds, clients, planned):
    """One level's figures from `records`, `(line index, start s, latency s,
    status, answer)` per request: an answer is right-shaped when the status is
    200 and the answer a str; every other outcome is an error."""
    ok = [r for r in records if r[3] == 200 and isinstance(r[4], str)]
    latencies = [r[2] for r in ok]
    kinds = collections.Counter(str(r[3]) for r in records if r not in ok)

    def ms(q):
        value = percentile(latencies, q)
        return None if value is None else 1000.0 * value

    return {
        "clients": clients, "planned": planned, "requests": len(records), "ok": len(ok),
        "errors": len(records) - len(ok), "error_kinds": dict(kinds),
        "seconds": seconds, "sentences_per_s": len(ok) / seconds if seconds > 0 else 0.0,
        "p50_ms": ms(50), "p95_ms": ms(95), "p99_ms": ms(99),
        "max_ms": None if not latencies else 1000.0 * max(latencies),
        "capped": len(records) < planned,
    }


def count_wrong(answers, lines, reference):
    """`(wrong, examples)`: answers `[(line index, answer)]` that differ from
    `reference[line]`, and up to three `(line, expected, answer)`."""
    wrong, examples = 0, []
    for index, answer in answers:
        expected = reference[lines[index]]
        if answer != expected:
            wrong += 1
            if len(examples) < 3:
                examples.append((lines[index], expected, answer))
    return wrong, examples


def _fmt(value, digits=0):
    return "-" if value is None else f"{value:.{digits}f}"


def table_rows(levels, servers, clients):
    """Rows of the main table: one per server and client count present in
    `levels` (`{(server, clients): summary}`, with `wrong` where checked)."""
    rows = []
    for server in servers:
        for c in clients:
            s = levels.get((server, c))
            if s is None:
                continue
            ct2 = levels.get(("ct2", c))
            ratio = (s["sentences_per_s"] / ct2["sentences_per_s"]
                     if ct2 and ct2["sentences_per_s"] else None)
            cpu = s.get("server_cpu_s")
            rows.append([
                LABELS.get(server, server), c, f"{s['ok']}/{s['requests']}"
                + (" (capped)" if s["capped"] else ""),
                _fmt(s["sentences_per_s"], 1), _fmt(s["p50_ms"]), _fmt(s["p95_ms"]),
                _fmt(s["p99_ms"]), s["errors"], _fmt(s.get("wrong")),
                "-" if ratio is None else f"{ratio:.2f}x",
                "-" if cpu is None or not s["ok"] else f"{1000 * cpu / s['ok']:.0f}",
                _fmt(s.get("client_cpu_percent"), 1), _fmt(s.get("others_cpu_percent")),
            ])
    return rows


TABLE_HEADER = ["server", "clients", "answered/sent", "sentences/s", "p50 ms", "p95 ms",
                "p99 ms", "errors", "wrong", "vs CTranslate2", "server CPU ms/sentence",
                "client CPU %", "others' CPU %"]


def verdicts(levels, clients=TARGET_CLIENTS):
    """`[(target, figure, met)]` of issue 53's "Must show" at `clients`
    clients (`met` None where a figure is missing), then ours' correctness
    over every level."""
    ours, off, ct2 = (levels.get((s, clients)) for s in ("ours", "ours_nobatch", "ct2"))
    out = []

    def ratio_target(name, other, target):
        if ours is None or other is None or not other["sentences_per_s"]:
            out.append((f"ours sentences/s at {clients} clients >= {target:.1f}x {name}",
                        "not measured", None))
            return
        ratio = ours["sentences_per_s"] / other["sentences_per_s"]
        out.append((f"ours sentences/s at {clients} clients >= {target:.1f}x {name}",
                    f"{ratio:.2f}x ({ours['sentences_per_s']:.1f} vs "
                    f"{other['sentences_per_s']:.1f})", ratio >= target))

    ratio_target("CTranslate2", ct2, VS_CT2)
    ratio_target("ours with batching off", off, VS_NOBATCH)
    target = f"ours p99 at {clients} clients <= CTranslate2's p99"
    if ours is None or ct2 is None or ours["p99_ms"] is None or ct2["p99_ms"] is None:
        out.append((target, "not measured", None))
    else:
        out.append((target, f"{ours['p99_ms']:.0f} ms vs {ct2['p99_ms']:.0f} ms",
                    ours["p99_ms"] <= ct2["p99_ms"]))
    for server in OURS:
        mine = [s for (name, _), s in sorted(levels.items()) if name == server]
        if not mine:
            continue
        sent = sum(s["requests"] for s in mine)
        errors = sum(s["errors"] for s in mine)
        checked = [s["wrong"] for s in mine if s.get("wrong") is not None]
        wrong = sum(checked) if len(checked) == len(mine) else None
        figure = (f"{errors} errors, " + ("not checked" if wrong is None else f"{wrong} wrong")
                  + f" of {sent}")
        out.append((f"{LABELS[server]}: no errors, every answer the reference's", figure,
                    None if wrong is None else (errors == 0 and wrong == 0 and sent > 0)))
    return out


def verdict_rows(rows):
    return [[t, f, {True: "met", False: "MISSED", None: "n/a"}[ok]] for t, f, ok in rows]


def backend_of(maps_text):
    """The Keras backend a server process runs, from its /proc/PID/maps:
    `"jax"` when jaxlib is loaded (TensorFlow may be loaded beside it, for
    TensorFlow Text), else `"tensorflow"`, `"torch"` or None."""
    if "jaxlib" in maps_text or "libjax_common" in maps_text:
        return "jax"
    if "libtensorflow" in maps_text or "_pywrap_tensorflow" in maps_text:
        return "tensorflow"
    if "libtorch" in maps_text:
        return "torch"
    return None


# ---------------------------------------------------------------------------
# The text and the model (workers run in their own processes)
# ---------------------------------------------------------------------------
def read_pairs(path=DATA):
    """`(English sentences, {English: its first German translation}, German
    sentences)`, distinct, in file order."""
    english, german, first = [], [], {}
    seen_german = set()
    with open(path, encoding="utf-8") as file:
        for row in file:
            source, target = row.rstrip("\n").split("\t")[:2]
            if source not in first:
                first[source] = target
                english.append(source)
            if target not in seen_german:
                seen_german.add(target)
                german.append(target)
    return english, first, german


def choose_lines(english, count, seed):
    """`count` sentences evenly spaced over `english` (sorted by length in
    the file), shuffled with `seed`."""
    count = min(count, len(english))
    if count == 1:
        picked = [english[0]]
    else:
        picked = [english[round(i * (len(english) - 1) / (count - 1))] for i in range(count)]
    random.Random(seed).shuffle(picked)
    return picked


def eos_bias_for(margins, target_mean, steps):
    """`(bias, mean length)`: the `</s>` bias whose greedy lengths average
    closest to `target_mean`. `margins` are rows of per-step gaps (chosen
    logit - `</s>` logit, `</s>` banned); under bias b a row ends at its
    first step whose gap is <= b (length step + 1, the end token counted),
    else runs `steps` tokens. The bias is the midpoint between two adjacent
    gaps, never a gap itself (which would make an exact tie)."""
    def mean_length(b):
        total = 0
        for row in margins:
            total += next((t + 1 for t, gap in enumerate(row) if gap <= b), steps)
        return total / len(margins)

    gaps = sorted({gap for row in margins for gap in row})
    candidates = ([gaps[0] - 1.0] + [(a + b) / 2 for a, b in zip(gaps, gaps[1:])]
                  + [gaps[-1] + 1.0])
    low, high = 0, len(candidates) - 1  # mean_length falls along the candidates
    while high - low > 1:
        middle = (low + high) // 2
        if mean_length(candidates[middle]) > target_mean:
            low = middle
        else:
            high = middle
    best = min((low, high), key=lambda i: abs(mean_length(candidates[i]) - target_mean))
    return candidates[best], mean_length(candidates[best])


def _train_spm(sentences, path, vocab_size):
    import sentencepiece

    with open(path, "wb") as file:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=file, vocab_size=vocab_size,
            model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
            minloglevel=2, num_threads=1)
    return sentencepiece.SentencePieceProcessor(model_file=path)


#: The step counter (see `add_step_counter`): attention logit gap lambda * C
#: between the start position and the others, C the constant carried in
#: dimension M, A what the counter head writes, and `</s>`'s weight on it.
COUNTER = dict(C=4.0, lam=0.5, A=5.0, eos_weight=3.0, eos_random=0.3)


def add_step_counter(model, batch, common, end, pad, seed):
    """Gives a random Marian decoder a step counter that `</s>` reads, so
    that outputs end after a few steps (as a trained model's do) instead of
    at random (the geometric lengths a random model with a `</s>` bias
    gives: 1 to 63 tokens for a mean of 6.5, which would make every batch as
    slow as its longest row far more often than real text does).

    Two of the lowest-frequency sinusoid dimensions, M and K (their position
    values stay below 0.01 for 64 steps), are freed in the shared embedding:
    every token but `<pad>` carries C/sqrt(d) in M (C after the embedding
    scale; the decoder's start, the zero `<pad>` row, carries 0), and none
    carries anything in K. Head 0 of the first decoder self-attention gets a
    constant query and keys reading M, so that at step t it gives the start
    position the weight w(t) = 1 / (1 + t exp(-lambda C)), a smooth decrease;
    its value reads 1 at the start and 0 elsewhere, and its output projection
    writes A w(t) into K alone. No other sublayer of the decoder writes K
    (their output rows K are zero) and each decoder norm's scale at K is the
    mean std of its inputs (measured on `batch`), so K reaches the last
    hidden state as roughly A w(t). `</s>`'s embedding row (tied: its
    output row too) is -eos_weight at K, small random elsewhere: its logit
    rises with t, and `final_logits_bias` then sets where it overtakes the
    others (`eos_bias_for`). The shapes, hence the cost, are unchanged; every
    engine computes the same function."""
    import torch

    c = COUNTER
    decoder = model.model.decoder
    table = model.model.shared.weight
    d = table.shape[1]
    dim_m, dim_k = d // 2 - 1, d // 2 - 2  # the last two sine dimensions: the lowest frequencies
    first = decoder.layers[0].self_attn
    head = first.head_dim
    with torch.no_grad():
        table[:, dim_m] = c["C"] / d ** 0.5
        table[:, dim_k] = 0.0
        table[pad] = 0.0
        for projection in (first.q_proj, first.k_proj, first.v_proj):
            projection.weight[:head] = 0.0
            projection.bias[:head] = 0.0
        first.q_proj.bias[0] = -c["lam"] / first.scaling  # score_i = -lam * x_i[M]
        first.k_proj.weight[0, dim_m] = 1.0
        first.v_proj.weight[0, dim_m] = -1.0 / c["C"]  # 1 at the start, 0 elsewhere
        first.v_proj.bias[0] = 1.0
        first.out_proj.weight[:, :head] = 0.0
        for layer in decoder.layers:
            for projection in (layer.self_attn.out_proj, layer.encoder_attn.out_proj, layer.fc2):
                projection.weight[dim_k] = 0.0
                projection.bias[dim_k] = 0.0
        first.out_proj.weight[dim_k, 0] = c["A"]
    norms = [norm for layer in decoder.layers for norm in (
        layer.self_attn_layer_norm, layer.encoder_attn_layer_norm, layer.final_layer_norm)]
    stds = {}
    hooks = [norm.register_forward_pre_hook(
        lambda module, inputs: stds.__setitem__(id(module), float(inputs[0].std(-1).mean())))
        for norm in norms]
    try:
        with torch.inference_mode():
            sequences = model.generate(**batch, **common, suppress_tokens=[end, pad])
            model(**batch, decoder_input_ids=sequences[:, :-1])  # every step at once
    finally:
        for hook in hooks:
            hook.remove()
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for norm in norms:
            norm.weight[dim_k] = stds[id(norm)]
            norm.bias[dim_k] = 0.0
        table[end] = c["eos_random"] * torch.randn(d, generator=generator) / d ** 0.5
        table[end, dim_m] = c["C"] / d ** 0.5
        table[end, dim_k] = -c["eos_weight"]


def build_checkpoint(folder, settings):
    """The checkpoint of the docstring in `folder`; returns what it is."""
    import torch
    import transformers

    from bench import pretrained_decode

    torch.set_num_threads(2)
    english, first, german = read_pairs()
    lines = settings["lines"]
    os.makedirs(folder, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="spm_")
    try:
        source = _train_spm(english, os.path.join(scratch, "source.spm"),
                            settings["spm_vocab"])
        target = _train_spm(german, os.path.join(scratch, "target.spm"),
                            settings["spm_vocab"])
        pieces, seen = ["</s>", "<unk>"], {"</s>", "<unk>"}
        for model in (source, target):
            for i in range(model.get_piece_size()):
                piece = model.id_to_piece(i)
                if not (model.is_control(i) or model.is_unknown(i)) and piece not in seen:
                    seen.add(piece)
                    pieces.append(piece)
        real = len(pieces)
        pieces += [f"\u2581<unused{i}>" for i in range(max(0, settings["vocab"] - real - 1))]
        pieces.append("<pad>")
        vocabulary = {piece: i for i, piece in enumerate(pieces)}
        with open(os.path.join(scratch, "vocab.json"), "w", encoding="utf-8") as file:
            json.dump(vocabulary, file, ensure_ascii=False)
        tokenizer = transformers.MarianTokenizer(
            os.path.join(scratch, "source.spm"), os.path.join(scratch, "target.spm"),
            os.path.join(scratch, "vocab.json"), source_lang="en", target_lang="de",
            model_max_length=512)
        tokenizer.save_pretrained(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    size = dict(settings["size"], vocab=len(pieces))
    pretrained_decode.save_checkpoint(folder, size, settings["seed"])
    model = transformers.MarianMTModel.from_pretrained(folder).eval()
    end, pad = vocabulary["</s>"], vocabulary["<pad>"]
    bias = torch.full((len(pieces),), NEVER)
    for i in range(target.get_piece_size()):
        if not (target.is_control(i) or target.is_unknown(i)):
            bias[vocabulary[target.id_to_piece(i)]] = 0.0
    bias[end] = 0.0
    with torch.no_grad():
        model.final_logits_bias.copy_(bias[None])

    calibration = lines[:64]
    steps = settings["max_length"] - 1
    references = [len(target.encode(first[line])) + 1 for line in calibration]
    target_mean = sum(references) / len(references)
    batch = tokenizer(calibration, return_tensors="pt", padding=True)
    common = dict(max_new_tokens=steps, num_beams=1, do_sample=False, min_length=0,
                  forced_eos_token_id=None, decoder_start_token_id=pad, pad_token_id=pad,
                  eos_token_id=end, bad_words_ids=None)
    add_step_counter(model, batch, common, end, pad, settings["seed"])
    with torch.inference_mode():
        out = model.generate(**batch, **common, suppress_tokens=[end, pad], output_logits=True,
                             return_dict_in_generate=True)
    logits = torch.stack(out.logits, dim=1)  # raw: the output bias in, no rule applied
    chosen = out.sequences[:, 1:1 + logits.shape[1]]
    gaps = (logits.gather(-1, chosen[..., None])[..., 0] - logits[..., end]).tolist()
    eos_bias, predicted = eos_bias_for(gaps, target_mean, steps)
    bias[end] = eos_bias
    with torch.no_grad():
        model.final_logits_bias.copy_(bias[None])
        out = model.generate(**batch, **common, suppress_tokens=[pad])
    lengths = [int(n) for n in ((out[:, 1:] != pad).sum(dim=1)).tolist()]
    model.generation_config = transformers.GenerationConfig(
        decoder_start_token_id=pad, eos_token_id=end, pad_token_id=pad, bos_token_id=None,
        forced_eos_token_id=None, max_length=settings["max_length"],
        num_beams=settings["num_beams"], do_sample=False, length_penalty=1.0,
        early_stopping=False, bad_words_ids=[[pad]])
    model.save_pretrained(folder)
    return {"vocabulary": len(pieces), "real_pieces": real,
            "source_pieces": source.get_piece_size(), "target_pieces": target.get_piece_size(),
            "eos_bias": round(eos_bias, 4), "reference_mean_length": round(target_mean, 2),
            "reference_lengths": {"min": min(references), "max": max(references),
                                  "sd": round(statistics.pstdev(references), 2)},
            "predicted_mean_length": round(predicted, 2),
            "greedy_lengths": {"mean": round(sum(lengths) / len(lengths), 2),
                               "sd": round(statistics.pstdev(lengths), 2),
                               "min": min(lengths), "max": max(lengths),
                               "at_max": sum(n >= steps for n in lengths)},
            "source_tokens_mean": round(float(batch["input_ids"].ne(pad).sum(1).float()
                                              .mean()), 2)}


def compute_reference(run_dir, lines, out_path):
    """`open_run(run_dir).generate([line])` for every line, one per call."""
    from keras_attention.runs import open_run

    start = time.perf_counter()
    run = open_run(run_dir)
    load_s = time.perf_counter() - start
    answers = {}
    for i, line in enumerate(lines):
        answers[line] = run.generate([line])[0]
        if (i + 1) % 64 == 0:
            print(f"reference: {i + 1}/{len(lines)} lines, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)
    import keras

    with open(out_path, "w", encoding="utf-8") as file:
        json.dump({"backend": keras.backend.backend(), "load_s": load_s,
                   "seconds": time.perf_counter() - start, "answers": answers}, file,
                  ensure_ascii=False)


def _isa_probe(which, settings):
    """A small XLA-compiled call (and, on TensorFlow, a oneDNN matmul), or
    one CTranslate2 translation, for the parent to read the ISA the libraries
    used (XLA's dumps, ONEDNN_VERBOSE, CT2_VERBOSE)."""
    if which == "jax":
        import jax
        import jax.numpy as jnp

        x, w = jnp.ones((32, 512)), jnp.ones((512, 512))
        jax.jit(lambda x, w: jnp.tanh(x @ w))(x, w).block_until_ready()
    elif which == "ctranslate2":
        import ctranslate2

        translator = ctranslate2.Translator(settings["ct2_dir"], device="cpu", intra_threads=2)
        translator.translate_batch([["\u2581Hi", "</s>"]], max_decoding_length=4)
    else:
        import tensorflow as tf

        x, w = tf.ones((32, 512)), tf.ones((512, 512))
        tf.matmul(x, w).numpy()
        tf.function(lambda x, w: tf.tanh(tf.matmul(x, w)), jit_compile=True)(x, w).numpy()


def run_worker(args):
    settings_path = os.path.join(args.workdir, "worker.json")
    with open(settings_path, encoding="utf-8") as file:
        settings = json.load(file)
    if args.worker == "checkpoint":
        info = build_checkpoint(settings["folder"], settings)
        with open(settings["out"], "w", encoding="utf-8") as file:
            json.dump(info, file)
    elif args.worker == "reference":
        compute_reference(settings["run_dir"], settings["lines"], settings["out"])
    elif args.worker in ("isa_jax", "isa_tensorflow", "isa_ctranslate2"):
        _isa_probe(args.worker.split("_", 1)[1], settings)
    else:
        raise SystemExit(f"unknown worker {args.worker!r}")
    return 0


def call_worker(args, name, settings, env=None, capture=False):
    """Runs this script's worker `name` with `settings` in its own process."""
    path = os.path.join(args.workdir, "worker.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(settings, file, ensure_ascii=False)
    command = [sys.executable, os.path.abspath(__file__), "--worker", name,
               "--workdir", args.workdir]
    env = dict(env or os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env["PYTHONPATH"] = ROOT
    if capture:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    return subprocess.run(command, env=env, timeout=3600)


# ---------------------------------------------------------------------------
# Setup: lines, checkpoint, run folder, CTranslate2 folders
# ---------------------------------------------------------------------------
def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def prepare(args, sub):
    english, _, _ = read_pairs()
    lines = choose_lines(english, args.sentences, args.seed)
    with open(os.path.join(sub, "lines.json"), "w", encoding="utf-8") as file:
        json.dump(lines, file, ensure_ascii=False)
    recipe = {"size": args.size, "vocab": args.vocab, "spm_vocab": args.spm_vocab,
              "seed": args.seed, "max_length": args.max_length, "num_beams": args.num_beams,
              "sentences": args.sentences, "data": DATA, "counter": COUNTER}
    stamp_path = os.path.join(sub, "model.json")
    checkpoint = os.path.join(sub, "checkpoint")
    run_dir = os.path.join(sub, "run")
    stamp = None
    if os.path.isfile(stamp_path):
        with open(stamp_path, encoding="utf-8") as file:
            stamp = json.load(file)
    if stamp is None or stamp.get("recipe") != recipe or not os.path.isfile(
            os.path.join(checkpoint, "config.json")):
        stale = [checkpoint, run_dir] + glob.glob(os.path.join(sub, "ct2-*"))
        for folder in stale:
            shutil.rmtree(folder, ignore_errors=True)
        for path in glob.glob(os.path.join(sub, "reference-*.json")):
            os.remove(path)
        log(f"building the checkpoint in {checkpoint}")
        start = time.perf_counter()
        out = os.path.join(sub, "checkpoint-info.json")
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        result = call_worker(args, "checkpoint", {"folder": checkpoint, "lines": lines,
                                                  "out": out, **recipe}, env=env)
        if result.returncode != 0:
            raise SystemExit("building the checkpoint failed")
        with open(out, encoding="utf-8") as file:
            info = json.load(file)
        stamp = {"recipe": recipe, "checkpoint": info,
                 "build_s": round(time.perf_counter() - start, 1)}
        with open(stamp_path, "w", encoding="utf-8") as file:
            json.dump(stamp, file)
    log(f"checkpoint: {json.dumps(stamp['checkpoint'])}")
    bin_dir = os.path.dirname(sys.executable)
    if not os.path.isfile(os.path.join(run_dir, "config.json")):
        log("keras-attention convert")
        start = time.perf_counter()
        subprocess.run([os.path.join(bin_dir, "keras-attention"), "convert", checkpoint, run_dir,
                        "--overwrite=true"], check=True, env=dict(os.environ,
                                                                   TF_CPP_MIN_LOG_LEVEL="3"))
        stamp["convert_s"] = round(time.perf_counter() - start, 1)
    precisions = ["float32"] + (["int8"] if "ct2_int8" in args.servers else [])
    for precision in precisions:
        out = os.path.join(sub, f"ct2-{precision}")
        if not os.path.isfile(os.path.join(out, "model.bin")):
            log(f"ct2-transformers-converter --quantization {precision}")
            subprocess.run([os.path.join(bin_dir, "ct2-transformers-converter"), "--model",
                            checkpoint, "--output_dir", out, "--quantization", precision,
                            "--copy_files", "source.spm", "target.spm", "--force"],
                           check=True, stdout=subprocess.DEVNULL)
    with open(stamp_path, "w", encoding="utf-8") as file:
        json.dump(stamp, file)
    with open(os.path.join(run_dir, "config.json"), encoding="utf-8") as file:
        decoding = json.load(file)["decoding"]
    return lines, checkpoint, run_dir, stamp, decoding


# ---------------------------------------------------------------------------
# ISA
# ---------------------------------------------------------------------------
#: What only AVX-512 code holds: zmm registers, xmm/ymm 16-31 (EVEX), mask
#: registers, embedded broadcasts, vpternlog.
AVX512_SIGNS = re.compile(r"zmm|[xy]mm(1[6-9]|2[0-9]|3[01])\b|%k[1-7]|\{1to|vpternlog")


def avx512_instructions(folder):
    """Instructions only AVX-512 has in the object files XLA dumped under
    `folder`, or None without objdump or objects."""
    objects = glob.glob(os.path.join(folder, "**", "*.o"), recursive=True)
    if not objects or shutil.which("objdump") is None:
        return None
    count = 0
    for path in objects:
        text = subprocess.run(["objdump", "-d", path], capture_output=True, text=True).stdout
        count += sum(1 for row in text.splitlines() if AVX512_SIGNS.search(row))
    return count


def ynn_dots(folder):
    """Whether XLA handed a dot to YNNPACK (`__ynn_fusion` in the optimized
    HLO dumped under `folder`): YNNPACK picks its kernels by CPUID, whatever
    `--xla_cpu_max_isa` says (perf shows `ynn::dot_fp32_..._avx512` under
    `--xla_cpu_max_isa=AVX2` with jaxlib 0.10.2)."""
    for path in glob.glob(os.path.join(folder, "**", "*after_optimizations.txt"), recursive=True):
        with open(path, encoding="utf-8", errors="replace") as file:
            if "__ynn_fusion" in file.read():
                return True
    return False


def isa_check(args, env, ct2_dir):
    """What oneDNN, XLA and CTranslate2 use under `env`: `{"onednn": ISA line
    (TensorFlow's oneDNN), "xla_jax_avx512": count, "xla_tensorflow_avx512":
    count (AVX-512-only instructions in XLA's code), "ct2": CTranslate2's
    selected ISA, "ct2_onednn": its oneDNN's ISA line, "xla_flag_rejected":
    bool}`."""
    out = {}
    for which in ("jax", "tensorflow", "ctranslate2"):
        dump = tempfile.mkdtemp(prefix=f"xla_dump_{which}_")
        try:
            probe_env = dict(env, XLA_FLAGS=(env.get("XLA_FLAGS", "") +
                                             f" --xla_dump_to={dump}").strip(),
                             ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="1", CT2_VERBOSE="1")
            result = call_worker(args, f"isa_{which}", {"ct2_dir": ct2_dir}, env=probe_env,
                                 capture=True)
            text = result.stdout + result.stderr
            out[f"{which}_exit"] = result.returncode
            if "Unknown CPU ISA" in text:
                out["xla_flag_rejected"] = True
            isa_lines = [line.split(",isa:", 1)[1] for line in text.splitlines()
                         if ",isa:" in line]
            if which == "ctranslate2":
                selected = [line.split("Selected ISA:", 1)[1].strip()
                            for line in text.splitlines() if "Selected ISA:" in line]
                out["ct2"] = selected[0] if selected else None
                out["ct2_onednn"] = isa_lines[0] if isa_lines else None
            else:
                out[f"xla_{which}_avx512"] = avx512_instructions(dump)
                out[f"xla_{which}_ynn"] = ynn_dots(dump)
            if which == "tensorflow":
                out["onednn"] = isa_lines[0] if isa_lines else None
        finally:
            shutil.rmtree(dump, ignore_errors=True)
    return out


def isa_used(name, backend, checks, cpu="AVX-512"):
    """What the ISA probes say server `name` (on `backend`) ran with; `cpu`:
    the CPU's own ISA (what YNNPACK's dots use)."""
    def xla(which):
        count = checks.get(f"xla_{which}_avx512")
        code = "?" if count is None else ("AVX-512" if count else "AVX2 or less")
        dots = (f"YNNPACK dots {cpu} (CPUID)" if checks.get(f"xla_{which}_ynn")
                else "Eigen dots")
        return f"XLA code {code}, {dots}"

    if name not in OURS:
        return (f"CTranslate2 kernels {checks.get('ct2') or '?'}, its oneDNN GEMM "
                f"{checks.get('ct2_onednn') or '?'}")
    if backend == "jax":
        return xla("jax")
    return f"{xla('tensorflow')}, oneDNN {checks.get('onednn') or '?'}"


# ---------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _request(port, method, path, body=None, timeout=10.0):
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def tree_pids(pid):
    """`pid` and its descendants (from /proc/*/stat)."""
    children = collections.defaultdict(list)
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as file:
                fields = file.read().rsplit(")", 1)[1].split()
            children[int(fields[1])].append(int(stat.split("/")[2]))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def tree_rss_mb(pid):
    total = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/status") as file:
                for row in file:
                    if row.startswith("VmRSS:"):
                        total += int(row.split()[1])
        except OSError:
            continue
    return total / 1024.0


def tree_cpu_s(pid):
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return total / ticks


def busy_cpu_s():
    """CPU seconds every process of the machine has used (/proc/stat: user,
    nice, system, irq, softirq, steal), or None."""
    try:
        with open("/proc/stat") as file:
            fields = [int(x) for x in file.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _, _, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class Server:
    """One server subprocess: started, waited for, stopped with SIGTERM."""

    def __init__(self, name, command, env, log_path, start_timeout):
        self.name, self.log_path = name, log_path
        self.port = int(command[command.index("--port") + 1])
        self.log = open(log_path, "w", encoding="utf-8")
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self.ready_s = self._wait(start_timeout)

    def _wait(self, timeout):
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode} before "
                                   f"answering; its log:\n{self.log_tail()}")
            try:
                status, body = _request(self.port, "GET", f"/v1/models/{MODEL_NAME}", timeout=2)
                if status == 200 and b"AVAILABLE" in body:
                    return time.perf_counter() - self.started
            except OSError:
                pass
            time.sleep(0.5)
        self.kill()
        raise RuntimeError(f"{self.name} did not answer within {timeout:.0f} s; its log:\n"
                           f"{self.log_tail()}")

    def log_text(self):
        self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as file:
            return file.read()

    def log_tail(self, lines=30):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def backend(self):
        try:
            maps = ""
            for p in tree_pids(self.process.pid):
                with open(f"/proc/{p}/maps") as file:
                    maps += file.read()
            return backend_of(maps)
        except OSError:
            return None

    def stop(self, timeout):
        start = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            code = "killed after SIGTERM timeout"
        self.log.close()
        return code, time.perf_counter() - start

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


def server_command(args, name, port, run_dir, checkpoint, sub):
    bin_dir = os.path.dirname(sys.executable)
    batch = "1" if name == "ours_nobatch" else str(args.max_batch_size)
    common = ["--host", HOST, "--port", str(port), "--model_name", MODEL_NAME,
              "--max_batch_size", batch, "--batch_timeout_ms", f"{args.batch_timeout_ms:g}"]
    if name in OURS:
        continuous = ["--continuous_batching", "false"] if name == "ours_fixed" else []
        return [os.path.join(bin_dir, "keras-attention"), "serve", run_dir] + common + continuous
    precision = "int8" if name == "ct2_int8" else "float32"
    return [sys.executable, os.path.join(ROOT, "bench", "ct2_server.py"),
            os.path.join(sub, f"ct2-{precision}"), "--tokenizer_dir", checkpoint,
            "--run_dir", run_dir, "--intra_threads", "2"] + common


def protocol_checks(port, max_body_bytes=1 << 20):
    """`{check: passed}` for the protocol's answers."""
    base = f"/v1/models/{MODEL_NAME}"
    checks = {}

    def check(name, method, path, body, want, predictions=None):
        try:
            status, text = _request(port, method, path, body, timeout=120)
            data = json.loads(text) if text else None
        except (OSError, ValueError) as error:
            checks[name] = f"failed: {type(error).__name__}"
            return
        good = status == want
        if want != 200:
            good = good and isinstance(data, dict) and "error" in data
        elif predictions is not None:
            got = data.get("predictions") if isinstance(data, dict) else None
            good = good and isinstance(got, list) and len(got) == predictions
        checks[name] = "ok" if good else f"got {status}: {text[:120]!r}"

    check("GET other model -> 404", "GET", "/v1/models/nope", None, 404)
    check("POST not JSON -> 400", "POST", base + ":predict", b"{not json", 400)
    check("POST instances not a list -> 400", "POST", base + ":predict",
          json.dumps({"instances": "Hi."}).encode(), 400)
    check("POST body over 1 MiB -> 413", "POST", base + ":predict",
          json.dumps({"instances": ["x" * (max_body_bytes + 10)]}).encode(), 413)
    check("POST two lines -> 2 predictions", "POST", base + ":predict",
          json.dumps({"instances": ["Hi.", "I am here."]}).encode(), 200, predictions=2)
    return checks


# ---------------------------------------------------------------------------
# The load
# ---------------------------------------------------------------------------
async def _level(port, lines, clients, per_client, seconds, timeout_s):
    import aiohttp

    url = f"http://{HOST}:{port}/v1/models/{MODEL_NAME}:predict"
    records = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
        start = time.perf_counter()
        deadline = start + seconds

        async def client(c):
            for j in range(per_client):
                if time.perf_counter() >= deadline:
                    return
                index = line_index(c, j, clients, len(lines))
                t0 = time.perf_counter()
                status, answer = None, None
                try:
                    async with session.post(url, json={"instances": [lines[index]]}) as response:
                        status = response.status
                        body = await response.read()
                    if status == 200:
                        predictions = json.loads(body)["predictions"]
                        if isinstance(predictions, list) and len(predictions) == 1:
                            answer = predictions[0]
                        else:
                            status = "bad predictions"
                except TimeoutError:
                    status = "timeout"
                except aiohttp.ClientError as error:
                    status = type(error).__name__
                except (ValueError, KeyError, TypeError):
                    status = "bad body"
                records.append((index, t0 - start, time.perf_counter() - t0, status, answer))

        await asyncio.gather(*(client(c) for c in range(clients)))
        seconds_taken = time.perf_counter() - start
    return records, seconds_taken


def run_level(server, lines, clients, per_client, seconds, timeout_s):
    cpu0, client0, busy0 = tree_cpu_s(server.process.pid), time.process_time(), busy_cpu_s()
    records, taken = asyncio.run(_level(server.port, lines, clients, per_client, seconds,
                                        timeout_s))
    summary = summarize(records, taken, clients, clients * per_client)
    summary["server_cpu_s"] = tree_cpu_s(server.process.pid) - cpu0
    client_s = time.process_time() - client0
    summary["client_cpu_percent"] = 100.0 * client_s / taken
    if busy0 is not None:  # what the rest of the machine took meanwhile, % of one core
        others = busy_cpu_s() - busy0 - summary["server_cpu_s"] - client_s
        summary["others_cpu_percent"] = max(0.0, 100.0 * others / taken)
    summary["answers"] = [(r[0], r[4]) for r in records if r[3] == 200 and isinstance(r[4], str)]
    return summary


def run_server(args, name, lines, run_dir, checkpoint, sub, env):
    port = free_port()
    command = server_command(args, name, port, run_dir, checkpoint, sub)
    server_env = dict(env, TF_CPP_MIN_LOG_LEVEL="3")
    if args.omp_wait_policy:
        server_env["OMP_WAIT_POLICY"] = args.omp_wait_policy
    if name in OURS and args.backend:
        server_env["KERAS_BACKEND"] = args.backend
    if name in OURS and args.cache_dir:
        server_env["KERAS_ATTENTION_CACHE_DIR"] = args.cache_dir
    if name not in OURS:
        server_env["CT2_VERBOSE"] = "1"
    log(f"{name}: {' '.join(command)}")
    record = {"name": name, "command": command, "loadavg_start": loadavg(), "levels": {}}
    server = Server(name, command, server_env, os.path.join(sub, f"server-{name}-{args.isa}.log"),
                    args.start_timeout)
    try:
        record["ready_s"] = server.ready_s
        record["backend"] = server.backend() if name in OURS else "ctranslate2"
        text = server.log_text()
        record["serving_lines"] = sum(line.startswith("serving ") for line in text.splitlines())
        selected = [line.split("Selected ISA:", 1)[1].strip() for line in text.splitlines()
                    if "Selected ISA:" in line]
        record["ct2_isa"] = selected[0] if selected else None
        record["rss_mb_ready"] = tree_rss_mb(server.process.pid)
        log(f"{name}: ready in {server.ready_s:.1f} s, backend {record['backend']}, "
            f"RSS {record['rss_mb_ready']:.0f} MB")
        record["protocol"] = protocol_checks(server.port)
        bad = {k: v for k, v in record["protocol"].items() if v != "ok"}
        log(f"{name}: protocol checks " + ("all ok" if not bad else json.dumps(bad)))
        warm = run_level(server, lines, min(16, len(lines)), args.warmup_requests,
                         args.level_seconds, args.request_timeout)
        record["warmup"] = {k: v for k, v in warm.items() if k != "answers"}
        record["rss_mb_warm"] = tree_rss_mb(server.process.pid)
        for clients in args.clients:
            per_client = requests_per_client(clients, args.requests_per_client,
                                             args.min_requests)
            load = loadavg()
            summary = run_level(server, lines, clients, per_client, args.level_seconds,
                                args.request_timeout)
            summary["loadavg"] = load
            summary["rss_mb"] = tree_rss_mb(server.process.pid)
            record["levels"][clients] = summary
            log(f"{name}: {clients} clients: {summary['ok']}/{summary['requests']} answered, "
                f"{summary['sentences_per_s']:.1f} sentences/s, p50 {_fmt(summary['p50_ms'])} "
                f"p99 {_fmt(summary['p99_ms'])} ms, errors {summary['errors']}"
                f"{' ' + json.dumps(summary['error_kinds']) if summary['errors'] else ''}, "
                f"RSS {summary['rss_mb']:.0f} MB, load {load}")
        record["rss_mb_end"] = tree_rss_mb(server.process.pid)
    finally:
        code, stop_s = server.stop(timeout=90)
        record["exit_code"], record["stop_s"] = code, round(stop_s, 2)
        record["loadavg_end"] = loadavg()
        if code != 0:
            record["log_tail"] = server.log_tail()
        log(f"{name}: stopped with SIGTERM in {stop_s:.1f} s, exit {code}")
    return record


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------
def ours_installed():
    script = os.path.join(os.path.dirname(sys.executable), "keras-attention")
    try:
        return subprocess.run([script, "serve", "--help"], capture_output=True,
                              timeout=300).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(args)
    started = time.perf_counter()
    flags = cpu_flags()
    machine = machine_info()
    isa = cpu_isa(flags)
    avx512 = sorted(f for f in flags if f.startswith("avx512"))
    load_before = loadavg()
    log(f"machine: {machine['cpu']}, {machine['cores']} cores, ISA {isa} "
        f"({' '.join(avx512) or 'no avx512'}); load {load_before}; --isa {args.isa}")
    if any(s in OURS for s in args.servers) and not ours_installed():
        raise SystemExit("`keras-attention serve --help` fails: ours is not installed yet. "
                         "Run with --servers ct2 to measure CTranslate2 alone.")
    sub = os.path.join(args.workdir, "quick" if args.quick else "full")
    os.makedirs(sub, exist_ok=True)
    lines, checkpoint, run_dir, stamp, decoding = prepare(args, sub)
    log(f"run decoding: {json.dumps(decoding)}")
    env = dict(os.environ)
    env.update(isa_env(args.isa, os.environ, args.no_ynn))
    checks = isa_check(args, env, os.path.join(sub, "ct2-float32"))
    log(f"ISA check ({args.isa}): {json.dumps(checks)}")

    records, failed = {}, []
    args.cache_dir = (tempfile.mkdtemp(prefix=f"compile-cache-{args.isa}-", dir=sub)
                      if args.compile_cache == "fresh" else None)
    try:
        for name in args.servers:
            try:
                records[name] = run_server(args, name, lines, run_dir, checkpoint, sub, env)
            except (RuntimeError, OSError) as error:
                failed.append(name)
                log(f"{name} FAILED: {error}")
    finally:
        if args.cache_dir:
            shutil.rmtree(args.cache_dir, ignore_errors=True)

    # The reference, on the backend ours served with, once the servers are stopped.
    backend = next((records[s]["backend"] for s in OURS if s in records
                    and records[s].get("backend") in ("jax", "tensorflow", "torch")),
                   args.backend or "tensorflow")
    reference_path = os.path.join(
        sub, f"reference-{backend}-{args.isa}{'-no-ynn' if args.no_ynn else ''}.json")
    if not os.path.isfile(reference_path):
        log(f"reference: open_run(...).generate([line]) for {len(lines)} lines on {backend}")
        result = call_worker(args, "reference", {"run_dir": run_dir, "lines": lines,
                                                 "out": reference_path},
                             env=dict(env, KERAS_BACKEND=backend, OMP_WAIT_POLICY="PASSIVE"))
        if result.returncode != 0:
            log("reference FAILED")
    reference = None
    if os.path.isfile(reference_path):
        with open(reference_path, encoding="utf-8") as file:
            reference = json.load(file)
        log(f"reference: {reference['seconds']:.0f} s on {reference['backend']}")

    levels, wrong_examples = {}, {}
    for name, record in records.items():
        for clients, summary in record["levels"].items():
            if reference is not None:
                summary["wrong"], examples = count_wrong(summary["answers"], lines,
                                                         reference["answers"])
                if examples:
                    wrong_examples.setdefault(name, examples)
            levels[name, clients] = summary

    load_after = loadavg()
    print()
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: "
          f"{machine['cpu']}, {machine['cores']} cores; CPU ISA: {isa} "
          f"({' '.join(avx512) or 'no avx512 flags'}); wall {time.perf_counter() - started:.0f} s")
    print(f"--isa {args.isa}: environment "
          f"{json.dumps(isa_env(args.isa, os.environ, args.no_ynn)) or '{}'}; "
          f"oneDNN (TensorFlow matmul): {checks.get('onednn')}; AVX-512-only instructions in "
          f"XLA's code: JAX {checks.get('xla_jax_avx512')}, TensorFlow "
          f"{checks.get('xla_tensorflow_avx512')}; CTranslate2: kernels {checks.get('ct2')}, "
          f"oneDNN {checks.get('ct2_onednn')}"
          + ("; XLA REJECTED the ISA flag" if checks.get("xla_flag_rejected") else ""))
    print(f"model: {json.dumps(args.size)}, vocabulary {stamp['checkpoint']['vocabulary']} "
          f"({stamp['checkpoint']['real_pieces']} real pieces), greedy lengths of 64 lines "
          f"{json.dumps(stamp['checkpoint']['greedy_lengths'])} (German references: mean "
          f"{stamp['checkpoint']['reference_mean_length']}); decoding {json.dumps(decoding)}")
    print(f"load: {len(lines)} distinct lines; clients {args.clients}; requests per client "
          f"max({args.requests_per_client}, ceil({args.min_requests}/clients)); "
          f"{args.level_seconds:g} s cap per level; batching {args.max_batch_size} lines / "
          f"{args.batch_timeout_ms:g} ms; OMP_WAIT_POLICY={args.omp_wait_policy}")
    print(f"loadavg before {load_before}, after {load_after}")
    print()
    print(format_table(table_rows(levels, args.servers, args.clients), TABLE_HEADER))
    print()
    server_rows = []
    for name, record in records.items():
        used = isa_used(name, record.get("backend"),
                        dict(checks, ct2=record.get("ct2_isa") or checks.get("ct2")), isa)
        server_rows.append([
            LABELS[name], record.get("backend"), used, _fmt(record.get("ready_s"), 1),
            _fmt(record.get("rss_mb_ready")), _fmt(record.get("rss_mb_warm")),
            _fmt(record.get("rss_mb_end")), record.get("serving_lines"),
            record.get("exit_code"),
            "all ok" if all(v == "ok" for v in record.get("protocol", {}).values())
            else "; ".join(f"{k}: {v}" for k, v in record.get("protocol", {}).items()
                           if v != "ok")])
    print(format_table(server_rows, ["server", "backend", "ISA used", "ready s",
                                     "RSS MB ready", "RSS MB warm", "RSS MB end",
                                     "'serving' lines", "exit (SIGTERM)", "protocol checks"]))
    for name, examples in wrong_examples.items():
        print(f"{LABELS[name]}: answers unlike the reference, e.g.:")
        for line, expected, got in examples:
            print(f"  {line!r}: reference {expected!r}, served {got!r}")
    for name in failed:
        print(f"FAILED: {LABELS[name]}")
    rows = verdicts(levels)
    print()
    print(format_table(verdict_rows(rows), ["target", "figure", ""]))
    met = sum(ok is True for _, _, ok in rows)
    print(f"{met} of {len(rows)} targets met")
    results_path = os.path.join(sub, f"results-{args.isa}{'-no-ynn' if args.no_ynn else ''}-"
                                     f"{time.strftime('%Y%m%d-%H%M%S')}.json")
    for record in records.values():
        for summary in record["levels"].values():
            summary.pop("answers", None)
    with open(results_path, "w", encoding="utf-8") as file:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                   "argv": sys.argv, "machine": machine, "cpu_isa": isa, "avx512": avx512,
                   "isa": args.isa, "isa_env": isa_env(args.isa, os.environ, args.no_ynn),
                   "isa_check": checks, "model": stamp, "decoding": decoding,
                   "loadavg_before": load_before, "loadavg_after": load_after,
                   "servers": {k: {**v, "levels": {str(c): s for c, s in v["levels"].items()}}
                               for k, v in records.items()},
                   "failed": failed, "reference_backend": backend,
                   "wrong_examples": wrong_examples,
                   "verdicts": [{"target": t, "figure": f, "met": ok} for t, f, ok in rows]},
                  file, indent=1, ensure_ascii=False, default=str)
    print(f"results: {results_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
