"""Pretrained-checkpoint generation: ours vs `transformers` vs CTranslate2.

A benchmark run by hand, not a test (`tests/bench/pretrained_decode_test.py`
runs its `--quick` mode):

    TF_CPP_MIN_LOG_LEVEL=3 .venv/bin/python bench/pretrained_decode.py \
        [--reps 3] [--new-tokens 64] [--beam-batch-tokens N] [--batches 1,16] \
        [--threads 2] [--checkpoint DIR] [--engines ...] [--quick]

Needs the `bench` extra (`ctranslate2`) beside the `hf` and `jax` extras.

The checkpoint: a Marian-base-sized `MarianMTModel` (6 + 6 layers, d=512,
8 heads, FFN 2048, swish, vocabulary 58,101 with the pad id last, shared and
tied embeddings, scaled by sqrt(d), sinusoidal positions, post-norm), random
weights seeded with `--seed` (matrices at 2/sqrt(fan-in), embeddings at
1/sqrt(d), norms and biases random, so that the tokens depend on the source;
the pad row zero as Marian's is), saved with `save_pretrained` into a temporary
folder; or `--checkpoint DIR`, a Marian folder you have (with its tokenizer
files, which CTranslate2's converter reads). With a generated checkpoint
CTranslate2's converter gets the vocabulary from a stand-in tokenizer
(`</s>`, `<unk>`, `▁w2`, ..., `<pad>`: CTranslate2 needs token strings; the
ids are what every engine sees).

Every engine decodes the same sources (random ids, `--source-length` tokens
ending with the end token, no padding) with the same settings, which force
every row to exactly `--new-tokens` new tokens: the end token is forbidden
before that length (`transformers` `min_length = max_length = n + 1`, which
count the decoder start; ours the same via `pretrained.generation_settings`;
CTranslate2 `min_decoding_length = max_decoding_length = n`), the pad id is
never generated (`bad_words_ids=[[pad]]`, as OPUS-MT's configs have it;
CTranslate2 drops the pad from Marian's vocabulary), no forced end token,
beam search with `transformers`' scoring (length penalty 1, no early stop).
The script counts the tokens each engine returned per row and prints the
lengths.

Engines, each in its own process, one after the other (`KERAS_BACKEND` is
fixed per process):

- `ours_tensorflow`: `load_pretrained(folder)`, then `model.generate(src,
  **generation_settings(...))`, XLA-compiled (`jit_compile=True`, the
  default); also `int8`: the same after `model.quantize("int8")`.
- `ours_jax`: the same on JAX (`jax.jit`), float32 and int8.
- `transformers`: `MarianMTModel.from_pretrained(folder).generate(...)` in
  torch (CPU, eager, `torch.inference_mode()`), float32.
- `ctranslate2`: `TransformersConverter(folder).convert(out,
  quantization="float32" | "int8")`, then `Translator(out,
  intra_threads=--threads, inter_threads=1).translate_batch(source_tokens,
  beam_size=..., max_decoding_length=n, min_decoding_length=n)`.

Threads: torch `set_num_threads(--threads)`, CTranslate2
`intra_threads=--threads`; TensorFlow and JAX keep their defaults (XLA's CPU
runtime uses every core: 2 on the 2-core machine, where `--threads 2` makes
them equal). Every engine's process gets `OMP_WAIT_POLICY=PASSIVE`
(`--omp-wait-policy`): on the shared 2-core machine two spinning OpenMP
threads made CTranslate2's greedy call 10-20x slower (0.4 s with one thread
or PASSIVE, 4-9 s with two spinning), and torch has the same problem.

Cases: greedy and beam 4 at each batch size of `--batches`. Tokens/s =
tokens returned (batch x new tokens; beams explored are not counted) /
wall seconds of one `generate`/`translate_batch` call, after one warm-up
call (compilation, reported as `first call`), median of `--reps` calls; in
each process the cases and precisions are timed round-robin. Ratios: each
row against `transformers` (float32) and against CTranslate2 at the same
precision. Every engine's tokens are compared with `transformers`' float32
tokens of the same case (agreement in % of positions and of whole rows):
float32 greedy should agree (random weights make near-ties rare, not
impossible); int8 need not. Random tied weights make most rows repeat one
source-dependent token, so the count of distinct rows is printed too.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402 (after the environment setup above)
from common import (  # noqa: E402 (bench/common.py, on sys.path)
    check_at_least_one,
    emit,
    format_table,
    loadavg,
    machine_info,
    rotation,
)

FULL = dict(vocab=58101, layers=6, hidden=512, heads=8, intermediate=2048)
QUICK = dict(vocab=500, layers=1, hidden=32, heads=2, intermediate=64)
ENGINES = ("ctranslate2", "transformers", "ours_tensorflow", "ours_jax")
#: Row labels, per engine and precision.
LABELS = {
    ("ours_tensorflow", "float32"): "ours TF (XLA)",
    ("ours_tensorflow", "int8"): "ours TF (XLA) int8",
    ("ours_jax", "float32"): "ours JAX (jit)",
    ("ours_jax", "int8"): "ours JAX (jit) int8",
    ("transformers", "float32"): "transformers (torch)",
    ("ctranslate2", "float32"): "CTranslate2",
    ("ctranslate2", "int8"): "CTranslate2 int8",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model (1 + 1 layers, d=32, vocabulary 500), 8 tokens, batches "
                             "1 and 2, one repetition: a smoke check")
    parser.add_argument("--checkpoint", default=None,
                        help="a Marian checkpoint folder to use instead of the generated one")
    parser.add_argument("--reps", type=int, default=None, help="timed calls per case (default 3)")
    parser.add_argument("--new-tokens", type=int, default=None,
                        help="new tokens per row (default 64; 8 with --quick)")
    parser.add_argument("--beam-batch-tokens", type=int, default=None,
                        help="new tokens for beam search at the largest batch (default: "
                             "--new-tokens); fewer keeps a loaded machine's run short")
    parser.add_argument("--batches", default=None, help="batch sizes (default 1,16; 1,2 quick)")
    parser.add_argument("--source-length", type=int, default=None,
                        help="source tokens per row, the end token included (default 32)")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch and CTranslate2 intra-op threads (TF/JAX keep defaults)")
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help=f"comma-separated subset of {','.join(ENGINES)}")
    parser.add_argument("--no-int8", action="store_true", help="float32 only")
    parser.add_argument("--ours-int8", default="tensorflow,jax",
                        help="the backends on which ours also runs int8 (default tensorflow,jax)")
    parser.add_argument("--omp-wait-policy", default="PASSIVE",
                        help="OMP_WAIT_POLICY of every engine's process (default PASSIVE: on a "
                             "loaded machine, spinning OpenMP threads made CTranslate2 10-20x "
                             "slower with 2 threads); '' leaves the environment's")
    parser.add_argument("--workdir", default=None,
                        help="folder for the checkpoint, conversions and logs (default: a "
                             "temporary folder, removed at the end)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    quick = args.quick
    args.reps = args.reps if args.reps is not None else (1 if quick else 3)
    args.new_tokens = args.new_tokens if args.new_tokens is not None else (8 if quick else 64)
    args.batches = [int(b) for b in (args.batches or ("1,2" if quick else "1,16")).split(",")]
    if args.source_length is None:
        args.source_length = 8 if quick else 32
    args.engines = [e for e in args.engines.split(",") if e]
    args.ours_int8 = [b for b in args.ours_int8.split(",") if b]
    for backend in args.ours_int8:
        if backend not in ("tensorflow", "jax"):
            parser.error(f"--ours-int8 takes tensorflow and jax. Received: ours_int8={backend!r}")
    for engine in args.engines:
        if engine not in ENGINES:
            parser.error(f"--engines takes {', '.join(ENGINES)}. Received: engines={engine!r}")
    check_at_least_one(parser, args, ("reps", "new_tokens", "source_length", "threads"))
    if args.source_length < 2:
        parser.error(f"--source-length must be at least 2. "
                     f"Received: source_length={args.source_length}")
    args.size = QUICK if quick else FULL
    return args


def cases(args):
    """`[{"name", "beams", "batch", "new_tokens"}]`: greedy and beam 4 at
    each batch size."""
    out = []
    for beams in (1, 4):
        for batch in args.batches:
            tokens = args.new_tokens
            if beams > 1 and batch == max(args.batches) and args.beam_batch_tokens:
                tokens = args.beam_batch_tokens
            out.append({"name": f"{'greedy' if beams == 1 else f'beam{beams}'} b{batch}",
                        "beams": beams, "batch": batch, "new_tokens": tokens})
    return out


def generation_config(ids, case):
    """The `generation_config.json` values every engine follows for `case`."""
    return {
        "decoder_start_token_id": ids["start"], "eos_token_id": ids["end"],
        "pad_token_id": ids["pad"], "bos_token_id": None, "forced_eos_token_id": None,
        "max_length": case["new_tokens"] + 1, "min_length": case["new_tokens"] + 1,
        "num_beams": case["beams"], "do_sample": False, "length_penalty": 1.0,
        "early_stopping": False, "bad_words_ids": [[ids["pad"]]],
    }


# ---------------------------------------------------------------------------
# The checkpoint (parent process)
# ---------------------------------------------------------------------------
def save_checkpoint(folder, size, seed):
    """A random Marian-shaped checkpoint in `folder`; returns its vocabulary
    (token strings, by id) for the stand-in tokenizer."""
    import torch
    import transformers

    vocab = size["vocab"]
    pad, end = vocab - 1, 0
    config = transformers.MarianConfig(
        vocab_size=vocab, decoder_vocab_size=vocab, d_model=size["hidden"],
        encoder_layers=size["layers"], decoder_layers=size["layers"],
        encoder_attention_heads=size["heads"], decoder_attention_heads=size["heads"],
        encoder_ffn_dim=size["intermediate"], decoder_ffn_dim=size["intermediate"],
        activation_function="swish", max_position_embeddings=512, scale_embedding=True,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        pad_token_id=pad, eos_token_id=end, decoder_start_token_id=pad,
        forced_eos_token_id=None, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    )
    torch.manual_seed(seed)
    model = transformers.MarianMTModel(config).eval()
    # `transformers`' own initialisation (std 0.02) gives a decoder whose output hardly
    # depends on its input: every row then repeats one token, and the engines would agree
    # trivially. Matrices at 2/sqrt(fan-in), embeddings at 1/sqrt(d), norms and biases random, so
    # that the tokens depend on the source (the shapes, hence the speed, are the same).
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_positions" in name or "final_logits_bias" in name:
                continue  # Marian's fixed sinusoidal table; its zero logits bias
            noise = torch.randn(parameter.shape, generator=generator)
            if "norm" in name and name.endswith("weight"):
                parameter.copy_(1.0 + 0.2 * noise)
            elif "shared" in name or "embed_tokens" in name:
                parameter.copy_(noise / parameter.shape[1] ** 0.5)  # x sqrt(d) in the model
            elif parameter.dim() == 2:
                parameter.copy_(2.0 * noise / parameter.shape[1] ** 0.5)
            else:
                parameter.copy_(0.1 * noise)
        model.model.shared.weight[pad].zero_()  # Marian's pad row (CTranslate2 relies on it)
    ids = {"start": pad, "end": end, "pad": pad}
    model.generation_config = transformers.GenerationConfig(
        **generation_config(ids, {"new_tokens": 64, "beams": 1}))
    model.save_pretrained(folder)
    return ["</s>", "<unk>"] + [f"\u2581w{i}" for i in range(2, vocab - 1)] + ["<pad>"]


def checkpoint_ids(folder):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as file:
        config = json.load(file)
    if config.get("model_type") != "marian":
        raise SystemExit(f"--checkpoint must be a Marian folder. "
                         f"Received: model_type={config.get('model_type')!r}")
    return config, {"start": config["decoder_start_token_id"], "end": config["eos_token_id"],
                    "pad": config["pad_token_id"]}


# ---------------------------------------------------------------------------
# Workers (one process per engine)
# ---------------------------------------------------------------------------
def time_variants(calls, reps, on_measure):
    """Warm-up once, then `reps` timed calls per key, round-robin. `calls`:
    `{key: zero-argument callable returning the tokens}`. Returns
    `{key: {"first_call_s", "times", "tokens"}}`."""
    stats = {}
    for key, call in calls.items():
        start = time.perf_counter()
        tokens = call()
        stats[key] = {"first_call_s": time.perf_counter() - start, "times": [],
                      "tokens": tokens}
        emit({"kind": "warmup", "key": key, "first_call_s": round(stats[key]["first_call_s"], 3)})
    keys = list(calls)
    for rep in range(reps):
        for key in rotation(keys, rep):
            start = time.perf_counter()
            calls[key]()
            seconds = time.perf_counter() - start
            stats[key]["times"].append(seconds)
            on_measure(key, rep, seconds)
    return stats


def _ours(settings, precisions):
    import warnings

    import keras

    import keras_attention
    from keras_attention.pretrained import generation_settings, load_pretrained

    start = time.perf_counter()
    models = {}
    for precision in precisions:
        model, _ = load_pretrained(settings["folder"])
        if precision == "int8":
            with warnings.catch_warnings():  # "Layer LayerNormalization does not have a
                warnings.simplefilter("ignore")  # `quantize` method", one per such layer
                model.quantize("int8")
        models[precision] = model
    load_s = time.perf_counter() - start
    source = np.load(settings["source"])
    ids = settings["ids"]

    def call(model, case):
        options = generation_settings(generation_config(ids, case),
                                      end_token_id=model.end_token_id,
                                      pad_token_id=model.pad_token_id)
        src = source[: case["batch"]]
        return lambda: np.asarray(model.generate(src, **options))

    calls = {(p, c["name"]): call(models[p], c) for p in precisions for c in settings["cases"]}
    backend = keras.config.backend()
    engine = __import__("tensorflow" if backend == "tensorflow" else "jax")
    meta = {"load_s": load_s, "versions": {backend: engine.__version__,
                                           "keras": keras.__version__,
                                           "keras_attention": keras_attention.__version__},
            "threads": "backend default"}
    return calls, meta, lambda tokens: tokens


def _transformers(settings, precisions):
    import torch
    import transformers

    torch.set_num_threads(settings["threads"])
    start = time.perf_counter()
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(settings["folder"]).eval()
    load_s = time.perf_counter() - start
    source = torch.as_tensor(np.load(settings["source"]).astype("int64"))
    ids = settings["ids"]

    def call(case):
        config = transformers.GenerationConfig(**generation_config(ids, case))
        src = source[: case["batch"]]
        mask = torch.ones_like(src)

        def run():
            with torch.inference_mode():
                out = model.generate(input_ids=src, attention_mask=mask, generation_config=config)
            return out.numpy()[:, 1:]  # without the decoder start token

        return run

    calls = {("float32", c["name"]): call(c) for c in settings["cases"]}
    meta = {"load_s": load_s, "threads": f"torch.set_num_threads({torch.get_num_threads()})",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    return calls, meta, lambda tokens: tokens


class _StandInTokenizer:
    """What CTranslate2's Marian loader reads of a tokenizer, for a generated
    checkpoint (which has no SentencePiece files)."""

    eos_token, unk_token, pad_token, bos_token = "</s>", "<unk>", "<pad>", None

    def __init__(self, tokens):
        self.tokens = tokens

    def get_vocab(self):
        return {token: i for i, token in enumerate(self.tokens)}

    def convert_ids_to_tokens(self, ids):
        return [self.tokens[i] for i in ids] if isinstance(ids, list) else self.tokens[ids]


def _ctranslate2(settings, precisions):
    import ctranslate2

    vocabulary = None
    if settings["vocabulary"]:
        with open(settings["vocabulary"], encoding="utf-8") as file:
            vocabulary = json.load(file)

    class Converter(ctranslate2.converters.TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            if vocabulary is None:
                return super().load_tokenizer(tokenizer_class, model_name_or_path, **kwargs)
            return _StandInTokenizer(vocabulary)

    start = time.perf_counter()
    translators, convert_s = {}, {}
    for precision in precisions:
        out = os.path.join(settings["workdir"], f"ct2-{precision}")
        t0 = time.perf_counter()
        if not os.path.isdir(out):
            Converter(settings["folder"]).convert(out, quantization=precision)
        convert_s[precision] = round(time.perf_counter() - t0, 2)
        translators[precision] = ctranslate2.Translator(
            out, device="cpu", intra_threads=settings["threads"], inter_threads=1)
    load_s = time.perf_counter() - start
    out = os.path.join(settings["workdir"], f"ct2-{precisions[0]}")
    names = ("shared_vocabulary", "source_vocabulary", "target_vocabulary")
    vocabularies = {}
    for name in names:
        path = os.path.join(out, name + ".json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                vocabularies[name] = json.load(file)
    source_tokens = vocabularies.get("source_vocabulary", vocabularies.get("shared_vocabulary"))
    target_tokens = vocabularies.get("target_vocabulary", vocabularies.get("shared_vocabulary"))
    target_ids = {token: i for i, token in enumerate(target_tokens)}
    source = [[source_tokens[i] for i in row] for row in np.load(settings["source"]).tolist()]

    def call(translator, case):
        src = source[: case["batch"]]

        def run():
            return translator.translate_batch(
                src, beam_size=case["beams"], max_decoding_length=case["new_tokens"],
                min_decoding_length=case["new_tokens"])

        return run

    def to_ids(results):
        rows = [[target_ids[t] for t in r.hypotheses[0]] for r in results]
        width = max(len(r) for r in rows)
        return np.array([r + [settings["ids"]["pad"]] * (width - len(r)) for r in rows])

    calls = {(p, c["name"]): call(translators[p], c) for p in precisions
             for c in settings["cases"]}
    meta = {"load_s": load_s, "convert_s": convert_s,
            "compute_types": {p: t.compute_type for p, t in translators.items()},
            "threads": f"intra_threads={settings['threads']}, inter_threads=1",
            "versions": {"ctranslate2": ctranslate2.__version__}}
    return calls, meta, to_ids


WORKERS = {"ours_tensorflow": _ours, "ours_jax": _ours, "transformers": _transformers,
           "ctranslate2": _ctranslate2}


def run_worker(engine, workdir):
    with open(os.path.join(workdir, "settings.json"), encoding="utf-8") as file:
        settings = json.load(file)
    int8 = not settings["no_int8"] and (
        engine == "ctranslate2"
        or (engine.startswith("ours_") and engine.split("_", 1)[1] in settings["ours_int8"]))
    precisions = ["float32"] + (["int8"] if int8 else [])
    calls, meta, to_ids = WORKERS[engine](settings, precisions)
    new_tokens = {c["name"]: c["new_tokens"] for c in settings["cases"]}
    batches = {c["name"]: c["batch"] for c in settings["cases"]}

    def on_measure(key, rep, seconds):
        emit({"kind": "measure", "engine": engine, "precision": key[0], "case": key[1],
              "rep": rep, "s": round(seconds, 4),
              "tokens_per_s": round(batches[key[1]] * new_tokens[key[1]] / seconds, 1)})

    stats = time_variants(calls, settings["reps"], on_measure)
    results = []
    for (precision, case), s in stats.items():
        tokens = np.asarray(to_ids(s["tokens"]))
        np.save(os.path.join(workdir, f"tokens-{engine}-{precision}-{case.replace(' ', '_')}.npy"),
                tokens)
        ids = settings["ids"]
        lengths = np.sum((tokens != ids["pad"]) & (tokens != ids["end"]), axis=-1)
        median = statistics.median(s["times"])
        generated = batches[case] * new_tokens[case]
        results.append({
            "engine": engine, "precision": precision, "case": case,
            "new_tokens": new_tokens[case], "batch": batches[case],
            "tokens_per_s": generated / median,
            "tokens_per_s_min": generated / max(s["times"]),
            "tokens_per_s_max": generated / min(s["times"]),
            "first_call_s": s["first_call_s"], "times": s["times"],
            "lengths": [int(lengths.min()), int(lengths.max())],
        })
    with open(os.path.join(workdir, f"result-{engine}.json"), "w", encoding="utf-8") as file:
        json.dump({"meta": meta, "results": results}, file)
    emit({"kind": "worker_done", "engine": engine, **meta})
    return 0


# ---------------------------------------------------------------------------
# The parent: checkpoint, workers, table
# ---------------------------------------------------------------------------
def agreement(workdir, engines, cases_):
    """Tokens of every engine and precision against `transformers`' (float32,
    the same case): `{"engine precision": {case: (% positions equal, % rows
    equal)}}`, and `{case: distinct rows in transformers' output}`."""
    out, distinct = {}, {}
    for case in cases_:
        name = case["name"].replace(" ", "_")
        path = os.path.join(workdir, f"tokens-transformers-float32-{name}.npy")
        if not os.path.isfile(path):
            continue
        reference = np.load(path)
        distinct[case["name"]] = len({tuple(row) for row in reference.tolist()})
        for engine, precision in LABELS:
            other = os.path.join(workdir, f"tokens-{engine}-{precision}-{name}.npy")
            if engine == "transformers" or engine not in engines or not os.path.isfile(other):
                continue
            tokens = np.load(other)
            width = min(tokens.shape[1], reference.shape[1])
            same = tokens[:, :width] == reference[:, :width]
            out.setdefault(f"{engine} {precision}", {})[case["name"]] = (
                round(100 * float(same.mean()), 1), round(100 * float(same.all(axis=1).mean()), 1))
    return out, distinct


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(args.worker, args.workdir)
    load_before = loadavg()
    started = time.perf_counter()
    emit({"kind": "setup", "machine": machine_info(), "loadavg_before": load_before,
          "size": args.size, "batches": args.batches, "new_tokens": args.new_tokens,
          "reps": args.reps, "threads": args.threads, "engines": args.engines,
          "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())})
    temporary = None
    if args.workdir is None:
        temporary = tempfile.TemporaryDirectory(prefix="pretrained_decode_")
        args.workdir = temporary.name
    os.makedirs(args.workdir, exist_ok=True)
    try:
        return _run(args, load_before, started)
    finally:
        if temporary is not None:
            temporary.cleanup()


def _run(args, load_before, started):
    workdir = args.workdir
    vocabulary = None
    if args.checkpoint:
        folder = args.checkpoint
        config, ids = checkpoint_ids(folder)
        vocab = config["vocab_size"]
    else:
        folder = os.path.join(workdir, "checkpoint")
        t0 = time.perf_counter()
        tokens = save_checkpoint(folder, args.size, args.seed)
        vocabulary = os.path.join(workdir, "vocabulary.json")
        with open(vocabulary, "w", encoding="utf-8") as file:
            json.dump(tokens, file)
        config, ids = checkpoint_ids(folder)
        vocab = args.size["vocab"]
        emit({"kind": "checkpoint", "folder": folder,
              "seconds": round(time.perf_counter() - t0, 1)})
    rng = np.random.default_rng(args.seed)
    source = rng.integers(2, vocab, size=(max(args.batches), args.source_length - 1))
    source[np.isin(source, [ids["end"], ids["pad"]])] = 2  # 0 and 1: Marian's </s> and <unk>
    source = np.concatenate([source, np.full((source.shape[0], 1), ids["end"])], axis=1)
    np.save(os.path.join(workdir, "source.npy"), source.astype("int32"))
    settings = {"folder": folder, "vocabulary": vocabulary, "ids": ids, "cases": cases(args),
                "reps": args.reps, "threads": args.threads, "no_int8": args.no_int8,
                "ours_int8": args.ours_int8,
                "workdir": workdir, "source": os.path.join(workdir, "source.npy")}
    with open(os.path.join(workdir, "settings.json"), "w", encoding="utf-8") as file:
        json.dump(settings, file)

    metas, results, failed = {}, [], []
    for engine in args.engines:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        if args.omp_wait_policy:
            env["OMP_WAIT_POLICY"] = args.omp_wait_policy
        if engine.startswith("ours_"):
            env["KERAS_BACKEND"] = engine.split("_", 1)[1]
        emit({"kind": "engine_start", "engine": engine, "loadavg": loadavg()})
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, os.path.abspath(__file__), "--worker", engine,
                                "--workdir", workdir], env=env)
        path = os.path.join(workdir, f"result-{engine}.json")
        if code != 0 or not os.path.isfile(path):
            failed.append(engine)
            emit({"kind": "engine_failed", "engine": engine, "exit_status": code})
            continue
        with open(path, encoding="utf-8") as file:
            result = json.load(file)
        metas[engine] = {**result["meta"], "wall_s": round(time.perf_counter() - t0, 1)}
        results.extend(result["results"])

    load_after = loadavg()
    agree, distinct = agreement(workdir, args.engines, settings["cases"])
    emit({"kind": "summary", "engines": metas, "agreement": agree,
          "distinct_reference_rows": distinct, "failed": failed,
          "loadavg_before": load_before, "loadavg_after": load_after})
    by_key = {(r["engine"], r["precision"], r["case"]): r for r in results}
    rows = []
    for case in settings["cases"]:
        reference = by_key.get(("transformers", "float32", case["name"]))
        for engine, precision in LABELS:
            r = by_key.get((engine, precision, case["name"]))
            if r is None:
                continue
            ct2 = by_key.get(("ctranslate2", precision, case["name"]))
            tps = r["tokens_per_s"]
            rows.append([
                case["name"], LABELS[engine, precision], r["new_tokens"],
                f"{r['tokens_per_s']:.0f}",
                f"{r['tokens_per_s_min']:.0f}-{r['tokens_per_s_max']:.0f}",
                f"{r['first_call_s']:.1f}",
                "-" if reference is None else f"{tps / reference['tokens_per_s']:.2f}x",
                "-" if ct2 is None else f"{tps / ct2['tokens_per_s']:.2f}x",
                "{}-{}".format(*r["lengths"]),
            ])
    m = machine_info()
    print()
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {m['cpu']}, "
          f"{m['cores']} cores; python {m['python']}; wall {time.perf_counter() - started:.0f} s")
    versions = {k: v for meta in metas.values() for k, v in meta["versions"].items()}
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print("threads: " + "; ".join(f"{e}: {meta['threads']}" for e, meta in metas.items())
          + f"; OMP_WAIT_POLICY={args.omp_wait_policy or os.environ.get('OMP_WAIT_POLICY')}")
    print(f"model: {json.dumps(args.size) if not args.checkpoint else folder}; source length "
          f"{args.source_length}; reps {args.reps} (median)")
    if "ctranslate2" in metas:
        print(f"CTranslate2 compute types: {metas['ctranslate2']['compute_types']}, "
              f"conversion s: {metas['ctranslate2']['convert_s']}")
    print(f"loadavg before {load_before}, after {load_after}")
    print(format_table(rows, ["case", "engine", "new tokens", "tok/s (median)", "tok/s range",
                              "first call s", "vs transformers", "vs CTranslate2 (same precision)",
                              "tokens per row"]))
    print()
    print("tokens equal to transformers' (% positions / % rows); distinct rows in "
          "transformers' output: " + ", ".join(f"{c}: {n}" for c, n in distinct.items()))
    for engine, by_case in agree.items():
        print(f"  {engine}: " + ", ".join(f"{c}: {p}% / {r}%" for c, (p, r) in by_case.items()))
    bad = [r for r in results if r["lengths"] != [r["new_tokens"]] * 2]
    for r in bad:
        print(f"WARNING: {r['engine']} {r['precision']} {r['case']} returned "
              f"{r['lengths']} tokens per row, not {r['new_tokens']}")
    if failed:
        print(f"FAILED engines: {', '.join(failed)}")
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
