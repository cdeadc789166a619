"""A beam step of a Marian-base-sized model, the encoder output shared by
the beams of a source (as `generate` runs now) against tiled over them (as
it ran before): beam 4, batch 16, 32 source tokens, every row forced to
`--new-tokens` tokens, one process per backend.

The checkpoint is `bench/pretrained_decode.py`'s random Marian-base-sized
one (made in `--workdir` once). Two models are loaded, one per variant, so
that each keeps its own compiled search; the variants alternate. Both must
give the same tokens.

Run: `KERAS_BACKEND=jax python bench/beam_step.py [--new-tokens 64] [--reps 5]`
(also with `KERAS_BACKEND=tensorflow`).
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from bench.common import loadavg  # noqa: E402
from bench.pretrained_decode import generation_config, save_checkpoint  # noqa: E402

MARIAN_BASE = {"vocab": 58101, "hidden": 512, "layers": 6, "heads": 8, "intermediate": 2048}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workdir", default="beam_step_checkpoint")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.workdir, "config.json")):
        save_checkpoint(args.workdir, MARIAN_BASE, 0)

    import keras

    from keras_attention.models.transformer_seq2seq import TransformerSeq2Seq
    from keras_attention.pretrained import generation_settings, load_pretrained

    shared = TransformerSeq2Seq.shares_source_across_beams
    variants = {"tiled (before)": property(lambda self: False), "shared (now)": shared}
    models = {name: load_pretrained(args.workdir)[0] for name in variants}
    rng = np.random.default_rng(0)
    source = rng.integers(2, MARIAN_BASE["vocab"] - 2, size=(16, 32)).astype("int32")
    source[:, -1] = 0  # Marian's end id
    pad = MARIAN_BASE["vocab"] - 1
    model = models["shared (now)"]
    options = generation_settings(
        generation_config({"start": pad, "end": 0, "pad": pad},
                          {"new_tokens": args.new_tokens, "beams": 4}),
        end_token_id=model.end_token_id, pad_token_id=model.pad_token_id)

    def call(name):
        TransformerSeq2Seq.shares_source_across_beams = variants[name]
        try:
            return np.asarray(models[name].generate(source, **options))
        finally:
            TransformerSeq2Seq.shares_source_across_beams = shared

    print(f"backend {keras.config.backend()}, load average before: {loadavg()}")
    tokens = {name: call(name) for name in variants}  # compiles
    if not all((t == tokens["tiled (before)"]).all() for t in tokens.values()):
        raise SystemExit("the variants gave different tokens")
    seconds = {name: [] for name in variants}
    for _ in range(args.reps):
        for name in variants:
            begun = time.perf_counter()
            call(name)
            seconds[name].append(time.perf_counter() - begun)
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"{name}: {1000 * median / args.new_tokens:.1f} ms a step (median call "
              f"{median:.2f} s; " + " ".join(f"{t:.2f}" for t in times) + ")")
    print(f"same tokens {tokens['shared (now)'].shape}; load average after: {loadavg()}")


if __name__ == "__main__":
    main()
