"""Training-step speed of attention layers against Keras and keras-hub.

Run by hand (not a test):

    .venv/bin/python bench/attention_train.py [--reps 7] [--policies float32,mixed_bfloat16]

Variants, at batch 8, length 256, model dim 256, 8 heads (head dim 32), all
in one process, timed round-robin after warm-up (`common.bench_interleaved`):

- `keras_mha` / `ours_mha`: `keras.layers.MultiHeadAttention` and
  `keras_attention.layers.MultiHeadAttention`, self-attention `layer(x, x)`;
- `hub_encoder` / `ours_encoder`: `keras_hub.layers.TransformerEncoder` and
  `keras_attention.layers.TransformerEncoderBlock` (FFN 1024, post-norm as
  keras-hub's default, dropout 0);
- `ours_flash_mha`: ours with `query_block_size=T`, i.e. the memory-saving
  flash-style gradient forced on at a length where "auto" leaves it off;
- `matmul`: a 2048^3 matmul in the same policy's compute dtype, the
  machine's rate that the steps are compared with.

One step = forward + GradientTape backward + SGD update, loss mean(y^2),
inside `tf.function` (graph mode, oneDNN). Prints one JSON line per
measurement group and a summary table.
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras_attention  # noqa: E402
from keras_attention import layers  # noqa: E402

import common  # noqa: E402  (bench/common.py, next to this script)

B, T, D, H, FFN = 8, 256, 256, 8, 1024


def mha_flops():
    """Matmul FLOPs of one training step (3x the forward)."""
    projections = 8 * B * T * D * D
    core = 4 * B * T * T * D
    return 3 * (projections + core)


def encoder_flops():
    return mha_flops() + 3 * 4 * B * T * D * FFN


def make_layers(policy):
    keras.config.set_dtype_policy(policy)
    keras.utils.set_random_seed(0)
    built = {
        "keras_mha": keras.layers.MultiHeadAttention(H, D // H),
        "ours_mha": layers.MultiHeadAttention(H, D // H),
        # The memory-saving path forced on at this length (one block of T
        # queries, flash-style gradient): does recomputation pay at T=256?
        "ours_flash_mha": layers.MultiHeadAttention(H, D // H, query_block_size=T),
        "hub_encoder": keras_hub.layers.TransformerEncoder(FFN, H, dropout=0.0),
        "ours_encoder": layers.TransformerEncoderBlock(
            num_heads=H, intermediate_dim=FFN, dropout=0.0, norm_first=False
        ),
    }
    keras.config.set_dtype_policy("float32")
    return built


def train_step(layer, x):
    optimizer = keras.optimizers.SGD(1e-3)
    is_mha = "MultiHeadAttention" in type(layer).__name__

    def forward(x):
        return layer(x, x) if is_mha else layer(x)

    forward(x)  # build
    optimizer.build(layer.trainable_variables)

    @tf.function(jit_compile=common.jit_compile())
    def step(x):
        with tf.GradientTape() as tape:
            y = forward(x)
            loss = tf.reduce_mean(tf.square(tf.cast(y, "float32")))
        grads = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply(grads, layer.trainable_variables)
        return loss

    return lambda: step(x).numpy()


def matmul_fn(dtype):
    a = tf.random.normal((2048, 2048), dtype="float32")
    a = tf.cast(a, dtype)
    fn = tf.function(lambda: tf.reduce_sum(tf.cast(tf.matmul(a, a)[:1, :1], "float32")))
    return lambda: fn().numpy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--policies", default="float32,mixed_bfloat16")
    args = parser.parse_args()
    x = np.random.default_rng(0).normal(size=(B, T, D)).astype("float32")
    common.emit({"machine": common.machine_info(), "loadavg_before": common.loadavg(),
                 "versions": common.versions(tf, keras, keras_hub, keras_attention)})
    summary = []
    for policy in args.policies.split(","):
        built = make_layers(policy)
        compute_dtype = "bfloat16" if "bfloat16" in policy else "float32"
        variants = {name: train_step(layer, tf.constant(x)) for name, layer in built.items()}
        variants["matmul"] = matmul_fn(compute_dtype)
        stats = common.bench_interleaved(variants, args.reps)
        peak = 2 * 2048**3 / stats["matmul"]["median_s"] / 1e9
        record = {"policy": policy, "matmul_gflops": round(peak, 1)}
        for name, s in stats.items():
            if name == "matmul":
                continue
            flops = mha_flops() if name.endswith("mha") else encoder_flops()
            gflops = flops / s["median_s"] / 1e9
            record[name] = {"ms": round(1e3 * s["median_s"], 2),
                            "range_ms": [round(1e3 * s["min_s"], 2), round(1e3 * s["max_s"], 2)],
                            "gflops": round(gflops, 1),
                            "share_of_matmul_rate": round(gflops / peak, 3)}
        record["ours_mha_vs_keras"] = round(
            stats["keras_mha"]["median_s"] / stats["ours_mha"]["median_s"], 3)
        record["ours_flash_mha_vs_keras"] = round(
            stats["keras_mha"]["median_s"] / stats["ours_flash_mha"]["median_s"], 3)
        record["ours_encoder_vs_hub"] = round(
            stats["hub_encoder"]["median_s"] / stats["ours_encoder"]["median_s"], 3)
        common.emit(record)
        summary.append(record)
    common.emit({"loadavg_after": common.loadavg()})
    print("\n| policy | layer | ours ms | theirs ms | speed-up | ours % of matmul rate | theirs % |")
    print("|---|---|---|---|---|---|---|")
    for r in summary:
        for ours, theirs, key in (("ours_mha", "keras_mha", "ours_mha_vs_keras"),
                                  ("ours_flash_mha", "keras_mha", "ours_flash_mha_vs_keras"),
                                  ("ours_encoder", "hub_encoder", "ours_encoder_vs_hub")):
            print(f"| {r['policy']} | {ours} vs {theirs} | {r[ours]['ms']} | {r[theirs]['ms']} | "
                  f"{r[key]}x | {100 * r[ours]['share_of_matmul_rate']:.0f} | "
                  f"{100 * r[theirs]['share_of_matmul_rate']:.0f} |")


if __name__ == "__main__":
    main()
