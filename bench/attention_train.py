"""Training-step speed of attention layers against Keras and keras-hub.

Run by hand (not a test), one process per backend:

    .venv/bin/python bench/attention_train.py [--backend tensorflow|jax|torch]
        [--reps 7] [--policies float32,mixed_bfloat16] [--batch 8] [--length 256]
        [--variants keras_mha,ours_mha,...]

Variants, at batch 8, length 256, model dim 256, 8 heads (head dim 32), all
in one process, timed round-robin after warm-up (`common.bench_interleaved`):

- `keras_mha` / `ours_mha`: `keras.layers.MultiHeadAttention` and
  `keras_attention.layers.MultiHeadAttention` (implementation "auto"),
  self-attention `layer(x, x)`;
- `keras_mha_causal` / `ours_mha_causal`: the same with
  `use_causal_mask=True`;
- `ours_exact`, `ours_blocked`, `ours_fused` (and `_causal`): ours with
  `implementation="exact" | "blocked" | "fused"` (blocked: one block of 512
  queries at T <= 512, i.e. the flash-style gradient), to measure what
  "auto" should pick on this device;
- `*_tril`: a variant given the causal mask as an explicit `(T, T)`
  `attention_mask` instead (the general masked path);
- `hub_encoder` / `ours_encoder`: `keras_hub.layers.TransformerEncoder` and
  `keras_attention.layers.TransformerEncoderBlock` (FFN 1024, post-norm as
  keras-hub's default, dropout 0);
- `matmul`: a 2048^3 matmul in the same policy's compute dtype, the
  machine's rate that the steps are compared with.

One step = forward (`training=True`, as `fit` calls layers) + backward + SGD
update, loss mean(y^2), compiled as the
backend compiles a training step: TensorFlow `tf.function` (graph mode,
oneDNN; XLA with `BENCH_JIT_COMPILE=1`), JAX `jax.jit` over the layer's
`stateless_call` and the optimizer's `stateless_apply`, torch eager
autograd. Prints one JSON line per measurement group and a summary table.
"""

import argparse
import os
import sys


def parse_args(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default=os.environ.get("KERAS_BACKEND", "tensorflow"),
                        choices=("tensorflow", "jax", "torch"))
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--policies", default="float32,mixed_bfloat16")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    return parser.parse_args(argv)


DEFAULT_VARIANTS = (
    "keras_mha", "ours_mha", "keras_mha_causal", "ours_mha_causal",
    "ours_blocked", "ours_fused", "ours_fused_causal", "hub_encoder", "ours_encoder",
)
ARGS = parse_args() if __name__ == "__main__" else parse_args([])
os.environ["KERAS_BACKEND"] = ARGS.backend
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# This checkout's keras_attention, not an installed one.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402 (after the backend is chosen)
import keras_hub  # noqa: E402 (after the backend is chosen)
import numpy as np  # noqa: E402 (after the backend is chosen)

import keras_attention  # noqa: E402 (after the backend is chosen and the checkout is on sys.path)
from keras_attention import layers  # noqa: E402 (after the backend is chosen and the checkout is on sys.path)
from keras_attention.layers import attention_implementations  # noqa: E402 (after the backend is chosen and the checkout is on sys.path)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (bench/common.py, next to this script)

D, H, FFN = 256, 8, 1024
B, T = ARGS.batch, ARGS.length
BACKEND = keras.backend.backend()


def mha_flops():
    """Matmul FLOPs of one training step (3x the forward)."""
    projections = 8 * B * T * D * D
    core = 4 * B * T * T * D
    return 3 * (projections + core)


def encoder_flops():
    return mha_flops() + 3 * 4 * B * T * D * FFN


def make_layer(name):
    """`(layer, call kwargs)` of variant `name`; MHA variants are called
    `layer(x, x, **kwargs)`, encoders `layer(x)`."""
    causal = {"use_causal_mask": True} if name.endswith("_causal") else {}
    base = name[: -len("_causal")] if causal else name
    if name.endswith("_tril"):  # the causal mask given as an explicit mask
        causal = {"attention_mask": np.tril(np.ones((T, T), bool))}
        base = name[: -len("_tril")]
    if base == "keras_mha":
        return keras.layers.MultiHeadAttention(H, D // H), causal
    if base == "ours_mha":
        return layers.MultiHeadAttention(H, D // H), causal
    if base in ("ours_exact", "ours_blocked", "ours_fused"):
        implementation = base.split("_")[1]
        return layers.MultiHeadAttention(H, D // H, implementation=implementation), causal
    if base == "hub_encoder":
        return keras_hub.layers.TransformerEncoder(FFN, H, dropout=0.0), {}
    if base == "ours_encoder":
        return layers.TransformerEncoderBlock(
            num_heads=H, intermediate_dim=FFN, dropout=0.0, norm_first=False
        ), {}
    raise ValueError(f"Unknown variant. Received: {name!r}")


def make_layers(policy, names):
    keras.config.set_dtype_policy(policy)
    keras.utils.set_random_seed(0)
    built = {name: make_layer(name) for name in names}
    keras.config.set_dtype_policy("float32")
    return built


def call_args(name, x):
    return (x,) if "encoder" in name else (x, x)


def train_step(name, layer, kwargs, x):
    """A zero-argument callable running one compiled training step."""
    optimizer = keras.optimizers.SGD(1e-3)
    layer(*call_args(name, x), **kwargs)  # build
    optimizer.build(layer.trainable_variables)
    return {"tensorflow": _tf_step, "jax": _jax_step, "torch": _torch_step}[BACKEND](
        name, layer, kwargs, x, optimizer
    )


def _tf_step(name, layer, kwargs, x, optimizer):
    import tensorflow as tf

    x = tf.constant(x)

    @tf.function(jit_compile=common.jit_compile())
    def step(x):
        with tf.GradientTape() as tape:
            y = layer(*call_args(name, x), training=True, **kwargs)
            loss = tf.reduce_mean(tf.square(tf.cast(y, "float32")))
        grads = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply(grads, layer.trainable_variables)
        return loss

    return lambda: step(x).numpy()


def _jax_step(name, layer, kwargs, x, optimizer):
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(x)
    non_trainable = [v.value for v in layer.non_trainable_variables]

    @jax.jit
    def step(trainable, optimizer_values, x):
        def loss_fn(trainable):
            y, _ = layer.stateless_call(trainable, non_trainable, *call_args(name, x),
                                        training=True, **kwargs)
            return jnp.mean(jnp.square(y.astype("float32")))

        loss, grads = jax.value_and_grad(loss_fn)(trainable)
        trainable, optimizer_values = optimizer.stateless_apply(
            optimizer_values, grads, trainable
        )
        return loss, trainable, optimizer_values

    state = [[v.value for v in layer.trainable_variables],
             [v.value for v in optimizer.variables]]

    def run():
        loss, state[0], state[1] = step(state[0], state[1], x)
        return np.asarray(loss)

    return run


def _torch_step(name, layer, kwargs, x, optimizer):
    import torch

    x = keras.ops.convert_to_tensor(x)
    variables = layer.trainable_variables

    def run():
        y = layer(*call_args(name, x), training=True, **kwargs)
        loss = torch.mean(torch.square(y.float()))
        grads = torch.autograd.grad(loss, [v.value for v in variables])
        with torch.no_grad():
            optimizer.apply(list(grads), variables)
        return float(loss)

    return run


def matmul_fn(dtype):
    a = keras.ops.cast(keras.random.normal((2048, 2048), seed=0), dtype)

    def product(a):
        return keras.ops.sum(keras.ops.cast(keras.ops.matmul(a, a)[:1, :1], "float32"))

    if BACKEND == "tensorflow":
        import tensorflow as tf

        fn = tf.function(product)
    elif BACKEND == "jax":
        import jax

        fn = jax.jit(product)
    else:
        fn = product
    return lambda: np.asarray(keras.ops.convert_to_numpy(fn(a)))


def ratio(stats, theirs, ours):
    if theirs in stats and ours in stats:
        return round(stats[theirs]["median_s"] / stats[ours]["median_s"], 3)
    return None


COMPARISONS = (
    ("ours_mha", "keras_mha"), ("ours_mha_causal", "keras_mha_causal"),
    ("ours_exact", "keras_mha"), ("ours_blocked", "keras_mha"), ("ours_fused", "keras_mha"),
    ("ours_exact_causal", "keras_mha_causal"), ("ours_blocked_causal", "keras_mha_causal"),
    ("ours_fused_causal", "keras_mha_causal"), ("ours_mha_tril", "keras_mha_causal"),
    ("ours_encoder", "hub_encoder"),
)


def main():
    names = [n for n in ARGS.variants.split(",") if n]
    x = np.random.default_rng(0).normal(size=(B, T, D)).astype("float32")
    chosen = attention_implementations.choose_implementation(
        "auto", backend=BACKEND, device=attention_implementations.default_device(),
        dtype="float32", query_length=T, key_length=T, scores_requested=False,
        dropout_active=False, score_is_scaled_dot=True)
    common.emit({"machine": common.machine_info(), "loadavg_before": common.loadavg(),
                 "backend": BACKEND, "batch": B, "length": T, "auto_picks": chosen,
                 "versions": common.versions(keras, keras_hub, keras_attention)})
    summary = []
    for policy in ARGS.policies.split(","):
        built = make_layers(policy, names)
        compute_dtype = "bfloat16" if "bfloat16" in policy else "float32"
        variants = {name: train_step(name, layer, kwargs, x)
                    for name, (layer, kwargs) in built.items()}
        variants["matmul"] = matmul_fn(compute_dtype)
        stats = common.bench_interleaved(variants, ARGS.reps)
        peak = 2 * 2048**3 / stats["matmul"]["median_s"] / 1e9
        record = {"policy": policy, "matmul_gflops": round(peak, 1)}
        for name, s in stats.items():
            if name == "matmul":
                continue
            flops = encoder_flops() if "encoder" in name else mha_flops()
            gflops = flops / s["median_s"] / 1e9
            record[name] = {"ms": round(1e3 * s["median_s"], 2),
                            "range_ms": [round(1e3 * s["min_s"], 2), round(1e3 * s["max_s"], 2)],
                            "gflops": round(gflops, 1),
                            "share_of_matmul_rate": round(gflops / peak, 3)}
        record["ratios"] = {f"{ours}_vs_{theirs}": ratio(stats, theirs, ours)
                            for ours, theirs in COMPARISONS if ratio(stats, theirs, ours)}
        common.emit(record)
        summary.append(record)
    common.emit({"loadavg_after": common.loadavg()})
    print(f"\nbackend {BACKEND}, B{B} T{T} D{D} H{H}; auto picks {chosen!r} here")
    print("| policy | ours vs theirs | ours ms | theirs ms | speed-up | ours % of matmul rate |")
    print("|---|---|---|---|---|---|")
    for r in summary:
        for ours, theirs in COMPARISONS:
            if ours in r and theirs in r:
                print(f"| {r['policy']} | {ours} vs {theirs} | {r[ours]['ms']} | "
                      f"{r[theirs]['ms']} | {r['ratios'][f'{ours}_vs_{theirs}']}x | "
                      f"{100 * r[ours]['share_of_matmul_rate']:.0f} |")


if __name__ == "__main__":
    main()
