"""Training step of keras-hub's encoder-decoder vs the same model on
`keras_attention.compat.keras_hub` (only the import changed).

Run by hand (not a test):

    .venv/bin/python bench/compat_train.py [--reps 7] [--batch 16] [--length 32]

The model is keras.io's English-to-Spanish KerasHub example
(`tests/compat/keras_io_translation_test.build_transformer`): token and
position embeddings, one `TransformerEncoder`, one `TransformerDecoder`
(post-norm, keras-hub's default), a softmax over the vocabulary, compiled
with `"rmsprop"` as the example. One unit of work = one `train_on_batch`
(forward + backward + update, the backend's compiled train step). Both
models are timed round-robin in one process (`common.bench_interleaved`).
Prints one JSON line per model and the ratio of medians.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402

import tests.compat.keras_io_translation_test as example  # noqa: E402
from bench import common  # noqa: E402
from keras_attention.compat import keras_hub as compat_hub  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--dim", type=int, default=128)
    args = parser.parse_args()
    example.MAX_SEQUENCE_LENGTH = args.length
    example.EMBED_DIM, example.INTERMEDIATE_DIM, example.NUM_HEADS = args.dim, 2 * args.dim, 4
    example.ENG_VOCAB_SIZE = example.SPA_VOCAB_SIZE = 1000
    rng = np.random.default_rng(0)
    inputs = {
        "encoder_inputs": rng.integers(1, 1000, (args.batch, args.length)).astype("int32"),
        "decoder_inputs": rng.integers(1, 1000, (args.batch, args.length)).astype("int32"),
    }
    targets = rng.integers(1, 1000, (args.batch, args.length)).astype("int32")
    variants = {}
    for name, module in (("keras_hub", keras_hub.layers), ("compat", compat_hub)):
        keras.utils.set_random_seed(0)
        model = example.build_transformer(module)
        variants[name] = lambda model=model: model.train_on_batch(inputs, targets)
    stats = common.bench_interleaved(variants, args.reps)
    for name, s in stats.items():
        common.emit({"variant": name, "median_ms": 1000 * s["median_s"],
                     "min_ms": 1000 * s["min_s"], "max_ms": 1000 * s["max_s"],
                     "first_call_s": s["first_call_s"], "backend": keras.backend.backend(),
                     **vars(args)})
    ratio = stats["compat"]["median_s"] / stats["keras_hub"]["median_s"]
    per_round = [c / h for c, h in zip(stats["compat"]["times"], stats["keras_hub"]["times"])]
    common.emit({"compat_over_keras_hub_step_time": ratio,
                 "per_round": [round(r, 3) for r in per_round],
                 "machine": common.machine_info()})


if __name__ == "__main__":
    main()
