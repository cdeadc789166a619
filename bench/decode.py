"""Generation throughput: ours vs a recomputing loop vs keras-hub's cache.

A benchmark run by hand, not a test, one process per backend:

    TF_CPP_MIN_LOG_LEVEL=3 KERAS_BACKEND=tensorflow \
        .venv/bin/python bench/decode.py [--reps 5] [--batch 8] \
        [--new-tokens 64] [--source-length 32] [--no-eager] [--quick]
    KERAS_BACKEND=jax .venv/bin/python bench/decode.py

On JAX the variants are `ours_greedy`, `ours_beam4` and `keras_hub_greedy`
(compiled with `jax.jit` over the variables' values in a
`keras.StatelessScope`, as keras-hub's `CausalLM.generate` does on JAX); the
recomputing loops are TensorFlow only. On torch (`KERAS_BACKEND=torch`) the
same three run eagerly under `torch.no_grad()`.

One model size for everyone (vocabulary 8000, 2 encoder + 2 decoder layers,
d=256, 8 heads, feed-forward 1024, pre-norm, ReLU, untied output projection,
dropout 0), batch 8, source length 32 (random tokens 3..7999), 64 new tokens.
Variants, all in one process and timed round-robin (`bench/common.py`):

- `ours_greedy`: `TransformerSeq2Seq.generate(src, max_length=64,
  sampler="greedy")`: encode once, KV caches, one compiled while loop.
- `ours_beam4`: the same with `sampler="beam"` (`BeamSampler(num_beams=4)`; tokens/s
  counts the B x 64 tokens returned, not the hypotheses explored).
- `recompute`: the keras.io "English-to-Spanish translation with a
  sequence-to-sequence Transformer" loop: a Python loop of 64 steps, each
  running the whole model (same weights as ours) on `{"encoder_token_ids":
  src, "decoder_token_ids": prefix}` over the growing prefix, argmax of the
  last position, append. The call is a `tf.function` with a dynamic-length
  input signature (traced once), which is faster than the recipe's eager call.
- `recompute_eager`: the same loop with the recipe's plain eager call
  `model(inputs)` (skip with `--no-eager`).
- `keras_hub_greedy`: an equivalent model made of keras-hub layers
  (`TokenAndPositionEmbedding`, `TransformerEncoder`, `TransformerDecoder`,
  `normalize_first=True` plus final layer norms, random weights) decoded with
  `keras_hub.samplers.GreedySampler()` and self- and cross-attention caches,
  the whole `generate` inside `tf.function(jit_compile=True)`, as
  `keras_hub.models.Seq2SeqLM` / `BartSeq2SeqLM.generate_step` does
  (including its seeding forward over the full decoder buffer).

Nothing stops early: no stop token is passed to keras-hub's sampler, and
both models' output bias for the pad, start and end tokens (0, 1, 2) is set
to -1e9 so that greedy and beam search never pick them; the script checks that
every row holds `new_tokens` real tokens. It prints one JSON line per
measurement, then a JSON summary line per variant, the ratios, and a table.
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402 (after the environment setup above)
from common import bench_interleaved, emit, format_table, loadavg, machine_info, versions  # noqa: E402 (bench/common.py, put on sys.path above)

PAD, START, END = 0, 1, 2

FULL = dict(vocab=8000, layers=2, hidden=256, heads=8, intermediate=1024)
QUICK = dict(vocab=512, layers=1, hidden=32, heads=2, intermediate=64)

TARGETS = {
    # ratio name: (numerator, denominator, target)
    "ours_greedy / recompute": ("ours_greedy", "recompute", 25.0),
    "ours_greedy / keras_hub_greedy": ("ours_greedy", "keras_hub_greedy", 1.0),
    "ours_beam4 / recompute": ("ours_beam4", "recompute", 4.0),
    "ours_greedy / recompute_eager": ("ours_greedy", "recompute_eager", None),
    "ours_beam4 / recompute_eager": ("ours_beam4", "recompute_eager", None),
    "recompute / recompute_eager": ("recompute", "recompute_eager", None),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=None,
                        help="timed repetitions (default 5; 2 with --quick)")
    parser.add_argument("--batch", type=int, default=None, help="batch size (default 8)")
    parser.add_argument("--new-tokens", type=int, default=None,
                        help="tokens generated per row (default 64)")
    parser.add_argument("--source-length", type=int, default=None,
                        help="source tokens per row (default 32)")
    parser.add_argument("--min-measure-s", type=float, default=0.5,
                        help="repeat fast variants within one measurement up to this many seconds")
    parser.add_argument("--no-eager", action="store_true", help="skip the eager recomputing loop")
    parser.add_argument("--quick", action="store_true",
                        help="tiny model and sizes, for a smoke check")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    quick = args.quick
    args.reps = args.reps if args.reps is not None else (2 if quick else 5)
    args.batch = args.batch if args.batch is not None else (2 if quick else 8)
    args.new_tokens = args.new_tokens if args.new_tokens is not None else (8 if quick else 64)
    if args.source_length is None:
        args.source_length = 8 if quick else 32
    if quick:
        args.min_measure_s = min(args.min_measure_s, 0.05)
    args.size = QUICK if quick else FULL
    return args


# ---------------------------------------------------------------------------
# 1. Ours
# ---------------------------------------------------------------------------
def build_ours(size):
    import keras

    from keras_attention.models import transformer_seq2seq

    model = transformer_seq2seq(
        vocabulary_size=size["vocab"],
        num_layers=size["layers"],
        hidden_dim=size["hidden"],
        num_heads=size["heads"],
        intermediate_dim=size["intermediate"],
        dropout=0.0,
        pad_token_id=PAD,
        start_token_id=START,
        end_token_id=END,
    )
    # Random weights: forbid pad/start/end so that every row runs to the end
    # in every implementation (and the recomputing loop never feeds a pad,
    # which the model would mask).
    bias = np.array(keras.ops.convert_to_numpy(model.output_projection.bias))
    bias[[PAD, START, END]] = -1e9
    model.output_projection.bias.assign(bias)
    return model


# ---------------------------------------------------------------------------
# 2. keras.io-style loop: the whole model re-run on the growing prefix
# ---------------------------------------------------------------------------
def make_recompute(model, source, new_tokens, compiled):
    import tensorflow as tf
    from keras import ops

    def next_token(src, prefix):
        logits = model({"encoder_token_ids": src, "decoder_token_ids": prefix}, training=False)
        return ops.argmax(logits[:, -1, :], axis=-1)

    if compiled:
        spec = tf.TensorSpec((None, None), tf.int32)
        next_token = tf.function(next_token, input_signature=[spec, spec])

    def run():
        src = tf.constant(source)
        prefix = np.full((source.shape[0], 1), START, "int32")
        for _ in range(new_tokens):
            token = np.asarray(next_token(src, tf.constant(prefix))).astype("int32")
            prefix = np.concatenate([prefix, token[:, None]], axis=1)
        return prefix[:, 1:]

    return run, next_token


# ---------------------------------------------------------------------------
# 3. keras-hub: layers + GreedySampler + self/cross-attention caches, XLA
# ---------------------------------------------------------------------------
class HubSeq2Seq:
    """An encoder-decoder made of keras-hub layers, shaped like ours."""

    def __init__(self, size, source_length, decoder_length, seed=0):
        import keras
        import keras_hub

        keras.utils.set_random_seed(seed)
        d, heads, inner = size["hidden"], size["heads"], size["intermediate"]
        self.num_layers = size["layers"]
        self.num_heads = heads
        self.head_dim = d // heads
        self.source_embedding = keras_hub.layers.TokenAndPositionEmbedding(
            size["vocab"], source_length, d, name="hub_source_embedding"
        )
        self.target_embedding = keras_hub.layers.TokenAndPositionEmbedding(
            size["vocab"], decoder_length, d, name="hub_target_embedding"
        )
        self.encoders = [
            keras_hub.layers.TransformerEncoder(
                intermediate_dim=inner, num_heads=heads, dropout=0.0, normalize_first=True,
                name=f"hub_encoder_{i}",
            )
            for i in range(self.num_layers)
        ]
        self.decoders = [
            keras_hub.layers.TransformerDecoder(
                intermediate_dim=inner, num_heads=heads, dropout=0.0, normalize_first=True,
                name=f"hub_decoder_{i}",
            )
            for i in range(self.num_layers)
        ]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="hub_encoder_norm")
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="hub_decoder_norm")
        self.output_projection = keras.layers.Dense(size["vocab"], name="hub_logits")
        self.sampler = keras_hub.samplers.GreedySampler()
        # Build every layer with one uncached forward.
        src = np.full((1, source_length), 3, "int32")
        tgt = np.full((1, decoder_length), 3, "int32")
        memory, mask = self.encode(src)
        hidden = self.target_embedding(tgt)
        for layer in self.decoders:
            hidden = layer(hidden, memory, encoder_padding_mask=mask)
        self.output_projection(self.decoder_norm(hidden))
        # As for ours: never pick pad/start/end (the loop runs to the end
        # anyway, since no stop token is passed; this keeps counts equal).
        bias = np.array(keras.ops.convert_to_numpy(self.output_projection.bias))
        bias[[PAD, START, END]] = -1e9
        self.output_projection.bias.assign(bias)

    def encode(self, token_ids):
        from keras import ops

        mask = ops.not_equal(token_ids, PAD)
        x = self.source_embedding(token_ids)
        for layer in self.encoders:
            x = layer(x, padding_mask=mask)
        return self.encoder_norm(x), mask

    def call_decoder_with_cache(self, memory, memory_mask, token_ids, self_cache, self_index,
                                cross_cache, cross_index):
        """As `BartSeq2SeqLM.call_decoder_with_cache` (caches stacked on axis 1)."""
        from keras import ops

        x = self.target_embedding(token_ids, start_index=self_index)
        self_caches, cross_caches = [], []
        for i, layer in enumerate(self.decoders):
            x, next_self, next_cross = layer(
                decoder_sequence=x,
                encoder_sequence=memory,
                encoder_padding_mask=memory_mask,
                self_attention_cache=self_cache[:, i, ...],
                self_attention_cache_update_index=self_index,
                cross_attention_cache=cross_cache[:, i, ...],
                cross_attention_cache_update_index=cross_index,
            )
            self_caches.append(next_self)
            if cross_index is not None:
                cross_caches.append(next_cross)
        self_cache = ops.stack(self_caches, axis=1)
        if cross_index is not None:
            cross_cache = ops.stack(cross_caches, axis=1)
        hidden = self.decoder_norm(x)
        logits = self.output_projection(hidden)
        return logits, hidden, self_cache, cross_cache

    def generate_step(self, encoder_token_ids, decoder_token_ids, decoder_padding_mask):
        """As `BartSeq2SeqLM.generate_step`, with `stop_token_ids=None`."""
        from keras import ops

        memory, memory_mask = self.encode(encoder_token_ids)
        batch = ops.shape(encoder_token_ids)[0]
        shape = [
            batch, self.num_layers, 2, ops.shape(decoder_token_ids)[1], self.num_heads,
            self.head_dim,
        ]
        self_cache = ops.zeros(shape, "float32")
        shape[3] = ops.shape(encoder_token_ids)[1]
        cross_cache = ops.zeros(shape, "float32")
        # Seed both caches with one forward over the decoder buffer.
        _, hidden, self_cache, cross_cache = self.call_decoder_with_cache(
            memory, memory_mask, decoder_token_ids, self_cache, 0, cross_cache, 0
        )
        row_lengths = ops.sum(ops.cast(decoder_padding_mask, "int32"), axis=-1)
        index = ops.min(row_lengths)

        def next(prompt, cache, index):
            cache_index = index - 1
            num_samples = ops.shape(prompt)[0]
            prompt = ops.slice(prompt, [0, cache_index], [num_samples, 1])
            self_cache, memory, memory_mask, cross_cache = cache
            logits, hidden, self_cache, _ = self.call_decoder_with_cache(
                memory, memory_mask, prompt, self_cache, cache_index, cross_cache, None
            )
            return (
                ops.squeeze(logits, axis=1),
                ops.squeeze(hidden, axis=1),
                (self_cache, memory, memory_mask, cross_cache),
            )

        return self.sampler(
            next=next,
            prompt=decoder_token_ids,
            cache=(self_cache, memory, memory_mask, cross_cache),
            index=index,
            mask=decoder_padding_mask,
            stop_token_ids=None,
            hidden_states=hidden,
        )


    def layers(self):
        return [self.source_embedding, self.target_embedding, *self.encoders, *self.decoders,
                self.encoder_norm, self.decoder_norm, self.output_projection]


class _CountedJit:
    """`jax.jit` of `hub.generate_step` over the variables' values (keras-hub's
    `CausalLM.generate` on JAX), with a trace counter."""

    def __init__(self, hub):
        import jax
        import keras

        self.variables = [v for layer in hub.layers() for v in layer.variables]
        self.traces = 0

        def stateless(values, *args):
            self.traces += 1
            with keras.StatelessScope(state_mapping=list(zip(self.variables, values))):
                return hub.generate_step(*args)

        self.compiled = jax.jit(stateless)

    def __call__(self, *args):
        return self.compiled([v.value for v in self.variables], *args)

    def experimental_get_tracing_count(self):
        return self.traces


class _Eager:
    """`hub.generate_step` under `torch.no_grad()`, eagerly (as ours on torch)."""

    def __init__(self, hub):
        self.hub = hub

    def __call__(self, *args):
        import torch

        with torch.no_grad():
            return self.hub.generate_step(*args)

    def experimental_get_tracing_count(self):
        return 0


def make_hub(size, source, new_tokens, seed):
    import keras

    hub = HubSeq2Seq(size, source.shape[1], new_tokens + 1, seed=seed)
    if keras.config.backend() == "jax":
        generate_step = _CountedJit(hub)
    elif keras.config.backend() == "torch":
        generate_step = _Eager(hub)
    else:
        import tensorflow as tf

        generate_step = tf.function(hub.generate_step, jit_compile=True)
    batch = source.shape[0]
    decoder_token_ids = np.zeros((batch, new_tokens + 1), "int32")
    decoder_token_ids[:, 0] = START
    decoder_padding_mask = np.zeros((batch, new_tokens + 1), bool)
    decoder_padding_mask[:, 0] = True

    def run():
        out = generate_step(source, decoder_token_ids, decoder_padding_mask)
        return np.asarray(keras.ops.convert_to_numpy(out))[:, 1:]

    return run, generate_step


# ---------------------------------------------------------------------------
def count_generated(tokens, new_tokens):
    """Tokens actually generated (not pad/start/end) per batch."""
    tokens = np.asarray(tokens)
    assert tokens.shape[-1] == new_tokens, tokens.shape
    return int(np.sum(tokens > END))


def main(argv=None):
    args = parse_args(argv)
    load_before = loadavg()
    t_import = time.perf_counter()
    import keras
    import keras_hub

    import keras_attention

    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        engine = tf
        threads = {"intra": tf.config.threading.get_intra_op_parallelism_threads(),
                   "inter": tf.config.threading.get_inter_op_parallelism_threads()}
    elif backend == "jax":
        import jax

        engine, threads = jax, {}
    else:
        import torch

        engine, threads = torch, {"intra": torch.get_num_threads()}
    import_s = time.perf_counter() - t_import
    info = {
        "kind": "setup",
        "backend": backend,
        "machine": machine_info(),
        "versions": versions(engine, keras, keras_hub, keras_attention),
        "tf_threads": threads,
        "config": {"batch": args.batch, "source_length": args.source_length,
                   "new_tokens": args.new_tokens, "reps": args.reps, **args.size},
        "loadavg_before": load_before,
        "import_s": round(import_s, 2),
    }
    emit(info)

    rng = np.random.default_rng(args.seed)
    source = rng.integers(3, args.size["vocab"], (args.batch, args.source_length)).astype("int32")
    keras.utils.set_random_seed(args.seed)
    ours = build_ours(args.size)
    n = args.new_tokens

    variants = {
        "ours_greedy": lambda: ours.generate(source, max_length=n, sampler="greedy"),
        "ours_beam4": lambda: ours.generate(source, max_length=n, sampler="beam"),
    }
    recompute_fn = None
    if backend == "tensorflow":
        variants["recompute"], recompute_fn = make_recompute(ours, source, n, compiled=True)
        if not args.no_eager:
            variants["recompute_eager"], _ = make_recompute(ours, source, n, compiled=False)
    variants["keras_hub_greedy"], hub_fn = make_hub(args.size, source, n, args.seed)

    # First calls (compilation), correctness and no-early-stop checks, all
    # outside the timing; `bench_interleaved` then warms up twice more.
    outputs, first_call_s = {}, {}
    for name, fn in variants.items():
        start = time.perf_counter()
        outputs[name] = fn()
        first_call_s[name] = time.perf_counter() - start  # tracing + XLA compile
    checks = {name: count_generated(out, n) for name, out in outputs.items()}
    expected = args.batch * n
    match = None
    if "recompute" in outputs:
        match = float(np.mean(outputs["ours_greedy"] == outputs["recompute"]))
    emit({"kind": "check", "generated_tokens": checks, "expected": expected,
          "ours_greedy_vs_recompute_token_match": match})
    short = {k: v for k, v in checks.items() if v != expected}
    if short:
        print(f"WARNING: some variants generated fewer tokens than {expected}: {short}",
              file=sys.stderr)

    def on_measure(name, rep, seconds, inner):
        emit({"kind": "measure", "variant": name, "rep": rep, "inner": inner,
              "seconds_per_call": round(seconds, 5),
              "tokens_per_s": round(checks[name] / seconds, 1),
              "loadavg": loadavg()})

    stats = bench_interleaved(variants, args.reps, args.min_measure_s, on_measure)

    summary = {}
    for name, s in stats.items():
        tokens = checks[name]
        summary[name] = {
            "tokens_per_s": tokens / s["median_s"],
            "tokens_per_s_min": tokens / s["max_s"],
            "tokens_per_s_max": tokens / s["min_s"],
            "ms_per_step": 1000 * s["median_s"] / n,
            "median_s": s["median_s"],
            "first_call_s": first_call_s[name],
            "inner": s["inner"],
        }
        emit({"kind": "summary", "variant": name,
              **{k: round(v, 4) if isinstance(v, float) else v for k, v in summary[name].items()},
              "spread_pct": round(100 * (s["max_s"] - s["min_s"]) / s["median_s"], 1)})

    ratios = {}
    for label, (num, den, target) in TARGETS.items():
        if num in summary and den in summary:
            value = summary[num]["tokens_per_s"] / summary[den]["tokens_per_s"]
            # Also the median of the per-round ratios: both variants of a
            # round ran within seconds of each other, so a slow drift of the
            # machine's load cancels out.
            paired = statistics.median(
                (checks[num] / t_num) / (checks[den] / t_den)
                for t_num, t_den in zip(stats[num]["times"], stats[den]["times"])
            )
            ratios[label] = {"ratio": round(value, 2), "paired_ratio": round(paired, 2),
                             "target": target,
                             "meets_target": None if target is None else bool(value >= target)}
    load_after = loadavg()
    emit({"kind": "ratios", "ratios": ratios,
          "loadavg_before": load_before, "loadavg_after": load_after,
          "traces": {"recompute": recompute_fn and recompute_fn.experimental_get_tracing_count(),
                     "keras_hub": hub_fn.experimental_get_tracing_count(),
                     "ours": ours.generate_trace_count()}})

    m = info["machine"]
    print()
    print(f"backend: {backend}; machine: {m['cpu']}, {m['cores']} cores; python {m['python']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    print(f"config: batch {args.batch}, source {args.source_length}, {n} new tokens, "
          f"reps {args.reps}, model {json.dumps(args.size)}")
    print(f"loadavg before {load_before}, after {load_after}")
    rows = [
        [name, f"{s['tokens_per_s']:.0f}",
         f"{s['tokens_per_s_min']:.0f}-{s['tokens_per_s_max']:.0f}",
         f"{s['ms_per_step']:.2f}", f"{s['first_call_s']:.2f}", s["inner"]]
        for name, s in summary.items()
    ]
    print(format_table(rows, ["variant", "tok/s (median)", "tok/s range", "ms/step", "first call s",
                              "inner"]))
    print()
    rows = [
        [label, f"{r['ratio']:.2f}x", f"{r['paired_ratio']:.2f}x",
         "-" if r["target"] is None else f">= {r['target']:g}x",
         "-" if r["meets_target"] is None else ("yes" if r["meets_target"] else "NO")]
        for label, r in ratios.items()
    ]
    print(format_table(rows, ["ratio", "of medians", "median per round", "target",
                              "met (of medians)"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
