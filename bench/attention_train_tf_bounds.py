"""How far TensorFlow's stock ops can take a MultiHeadAttention training step.

Run by hand (not a test), TensorFlow only (graph mode, oneDNN, as Keras'
`fit` runs on a CPU):

    .venv/bin/python bench/attention_train_tf_bounds.py [--reps 25]
        [--variants keras_mha,ours_mha,hand,...]

The same step as `bench/attention_train.py` (B=8, T=256, model dim 256, 8
heads of 32, float32; forward + backward + SGD of mean(y^2)), timed
round-robin in one process (`common.bench_interleaved`) for Keras' and our
layer and for hand-written steps that bound what another arrangement of
the same stock ops could give (issue 36, item 6: 1.3x Keras without a
mask). Every hand-written step uses FlashAttention's gradient with the
forward pass's weights kept, as our exact path does:

- `hand`: our layer's arrangement without the layer: three GEMMs on the
  flattened `(B*T, D)` input, each followed by a transpose to heads first
  `(B, H, T, d)`, the attention core, a transpose back and the output GEMM;
- `hand_fused_qkv`: one `(D, 3D)` GEMM for the three projections, one
  transpose to `(3, B, H, T, d)` and an unstack;
- `hand_transposed`: no transpose at all: the projections computed as
  `W^T x^T`, heads `(B, H, d, T)`, every matmul of the core and of the
  output projection reading its operands through `transpose_a/b`;
- `hand_batch_chunks`: the core run on 2 sources at a time, so that a
  chunk's `(2, H, T, T)` scores stay in the cache.
"""

import argparse
import os
import sys

os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_train  # noqa: E402 (bench/attention_train.py: the same layers and step; imported, it reads no argv)
import common  # noqa: E402 (bench/common.py)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HAND = ("hand", "hand_fused_qkv", "hand_transposed", "hand_batch_chunks")
DEFAULT_VARIANTS = ("keras_mha", "ours_mha") + HAND
B, T, D, H = attention_train.B, attention_train.T, attention_train.D, attention_train.H
HEAD = D // H


def parse_args(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=25)
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    return parser.parse_args(argv)


@tf.custom_gradient
def heads_first_core(query, key, value):
    """Softmax attention of `(B, H, T, d)` heads (query scaled), with
    FlashAttention's gradient from the kept weights."""
    weights = tf.nn.softmax(tf.matmul(query, key, transpose_b=True))
    output = tf.matmul(weights, value)

    def grad(d_output):
        d_value = tf.transpose(tf.matmul(d_output, weights, transpose_a=True), (0, 1, 3, 2))
        row_dot = tf.reduce_sum(d_output * output, -1, keepdims=True)
        d_scores = weights * (tf.matmul(d_output, value, transpose_b=True) - row_dot)
        d_key = tf.transpose(tf.matmul(query, d_scores, transpose_a=True), (0, 1, 3, 2))
        return tf.matmul(d_scores, key), d_key, d_value

    return output, grad


@tf.custom_gradient
def transposed_core(query_t, key_t, value_t):
    """The same attention over transposed heads `(B, H, d, T)`: contexts
    `(B, H, d, T)`, every operand read through `transpose_a/b`."""
    weights = tf.nn.softmax(tf.matmul(query_t, key_t, transpose_a=True))
    context_t = tf.matmul(value_t, weights, transpose_b=True)

    def grad(d_context_t):
        row_dot = tf.reduce_sum(d_context_t * context_t, axis=-2)[..., None]
        d_scores = weights * (tf.matmul(d_context_t, value_t, transpose_a=True) - row_dot)
        return (tf.matmul(key_t, d_scores, transpose_b=True), tf.matmul(query_t, d_scores),
                tf.matmul(d_context_t, weights))

    return context_t, grad


def hand_weights(seed=1):
    rng = np.random.RandomState(seed)
    shapes = {"query": (D, D), "key": (D, D), "value": (D, D), "output": (D, D)}
    weights = {n: tf.Variable(rng.normal(0, 0.05, s).astype("float32")) for n, s in shapes.items()}
    weights.update({f"{n}_bias": tf.Variable(np.zeros(D, "float32")) for n in shapes})
    return weights


def hand_forward(name, w, x):
    """`(B, T, D) -> (B, T, D)` of hand-written step `name`."""
    if name == "hand_transposed":
        def projected_t(n):  # (B, D, T): W^T x^T, no transpose of x
            return (tf.matmul(w[n], x, transpose_a=True, transpose_b=True)
                    + w[f"{n}_bias"][:, None])

        query_t, key_t, value_t = (tf.reshape(projected_t(n), (B, H, HEAD, T))
                                   for n in ("query", "key", "value"))
        context_t = tf.reshape(transposed_core(query_t * HEAD ** -0.5, key_t, value_t), (B, D, T))
        return tf.matmul(context_t, w["output"], transpose_a=True) + w["output_bias"]
    flat = tf.reshape(x, (B * T, D))
    if name == "hand_fused_qkv":
        kernel = tf.concat([w["query"], w["key"], w["value"]], axis=1)
        bias = tf.concat([w["query_bias"], w["key_bias"], w["value_bias"]], axis=0)
        heads = tf.transpose(tf.reshape(tf.matmul(flat, kernel) + bias, (B, T, 3, H, HEAD)),
                             (2, 0, 3, 1, 4))
        query, key, value = tf.unstack(heads)
    else:
        query, key, value = (
            tf.transpose(tf.reshape(tf.matmul(flat, w[n]) + w[f"{n}_bias"], (B, T, H, HEAD)),
                         (0, 2, 1, 3))
            for n in ("query", "key", "value"))
    query = query * HEAD ** -0.5
    if name == "hand_batch_chunks":
        output = tf.concat([heads_first_core(query[i:i + 2], key[i:i + 2], value[i:i + 2])
                            for i in range(0, B, 2)], axis=0)
    else:
        output = heads_first_core(query, key, value)
    context = tf.reshape(tf.transpose(output, (0, 2, 1, 3)), (B * T, D))
    return tf.reshape(tf.matmul(context, w["output"]) + w["output_bias"], (B, T, D))


def hand_step(name, x):
    """A zero-argument callable running one compiled step of `name`."""
    weights = hand_weights()
    variables = list(weights.values())
    x = tf.constant(x)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(hand_forward(name, weights, x)))
        for variable, gradient in zip(variables, tape.gradient(loss, variables)):
            variable.assign_sub(1e-3 * gradient)
        return loss

    return lambda: step(x).numpy()


def check_same_function(x):
    """The hand-written steps compute the same layer: equal outputs."""
    weights = hand_weights()
    outputs = {name: hand_forward(name, weights, tf.constant(x)).numpy() for name in HAND}
    for name in HAND[1:]:
        np.testing.assert_allclose(outputs[name], outputs["hand"], rtol=1e-4, atol=1e-5)


def main(argv):
    args = parse_args(argv)
    names = args.variants.split(",")
    x = np.random.RandomState(0).normal(size=(B, T, D)).astype("float32")
    check_same_function(x)
    steps = {}
    layers = attention_train.make_layers("float32", [n for n in names if n not in HAND])
    for name in names:
        if name in HAND:
            steps[name] = hand_step(name, x)
        else:
            layer, kwargs = layers[name]
            steps[name] = attention_train.train_step(name, layer, kwargs, x)
    stats = common.bench_interleaved(steps, args.reps)
    medians = {name: float(np.median(s["times"])) * 1e3 for name, s in stats.items()}
    keras_ms = medians.get("keras_mha")
    common.emit({"machine": common.machine_info(), "loadavg": common.loadavg(),
                 "median_ms": {k: round(v, 2) for k, v in medians.items()}})
    rows = [[name, f"{ms:.2f}", f"{keras_ms / ms:.3f}x" if keras_ms else "-"]
            for name, ms in medians.items()]
    print(common.format_table(rows, ["variant", "ms a step", "vs keras_mha"]))


if __name__ == "__main__":
    main(sys.argv[1:])
