"""T5's own attention numbers, written to a `.npz` file for the tests.

Run as a script in a process of its own (`python t5_reference.py OUT.npz`):
it imports torch and transformers but not TensorFlow, because importing
`torch._dynamo` (transformers' T5 does) after TensorFlow crashes the process
(a segmentation fault), and the tests' process has TensorFlow loaded.

For every case of `CASES`, a Hugging Face `T5Attention` with a relative
bias (seeded weights, its table drawn with std 2, as a trained one is far
from zero) runs on seeded inputs with padding; the file holds, under
`"{case}/{name}"`, the weights, inputs, boolean mask, bias and output. It
also holds T5's bucket of every relative position from -1500 to 1500 for
the bucket configurations of `BUCKETS`, and `compute_bias` at offsets.
"""

import sys

import numpy as np

# torch and transformers are imported in the functions that run in the
# reference's own process: the tests import this module for its tables.

# name -> (num_heads, d_kv, num_buckets, max_distance, decoder, lengths)
CASES = {
    "encoder_small": (4, 4, 8, 20, False, (30, 17, 4)),
    "decoder_small": (4, 4, 8, 20, True, (30, 17, 4)),
    "encoder_t5_buckets": (2, 6, 32, 128, False, (30, 30, 9)),
    "decoder_t5_buckets": (2, 6, 32, 128, True, (30, 30, 9)),
    "encoder_odd_buckets": (4, 4, 5, 7, False, (30, 1, 12)),
    "decoder_odd_buckets": (4, 4, 5, 7, True, (30, 1, 12)),
    "decoder_unpadded": (4, 4, 16, 40, True, (24, 24)),
}
D_MODEL = 12

# (num_buckets, max_distance) for both directions (bidirectional from 4).
BUCKETS = [(32, 128), (2, 3), (4, 5), (5, 7), (8, 16), (16, 20), (33, 100), (64, 1000)]
OFFSETS = (0, 7, 60)


def attention(heads, d_kv, buckets, max_distance, decoder, seed):
    import torch
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    config = T5Config(
        d_model=D_MODEL, d_kv=d_kv, num_heads=heads,
        relative_attention_num_buckets=buckets,
        relative_attention_max_distance=max_distance, is_decoder=decoder,
        dropout_rate=0.0, attn_implementation="eager",
    )
    torch.manual_seed(seed)
    layer = T5Attention(config, has_relative_attention_bias=True, layer_idx=0,
                        is_causal=decoder)
    with torch.no_grad():
        layer.relative_attention_bias.weight.normal_(0.0, 2.0)
    return layer.eval()


def case_arrays(name, heads, d_kv, buckets, max_distance, decoder, lengths, seed):
    import torch

    layer = attention(heads, d_kv, buckets, max_distance, decoder, seed)
    length = lengths[0]
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(len(lengths), length, D_MODEL)).astype("float32")
    padding = np.arange(length)[None] < np.asarray(lengths)[:, None]
    mask = padding[:, None, :] & padding[:, :, None]
    if decoder:
        mask &= np.tril(np.ones((length, length), bool))
    additive = torch.where(torch.from_numpy(mask)[:, None], 0.0,
                           torch.finfo(torch.float32).min)
    with torch.no_grad():
        output, bias, _ = layer(torch.from_numpy(x), mask=additive)
        arrays = {
            "x": x, "padding": padding, "output": output.numpy(), "bias": bias.numpy(),
            "q": layer.q.weight.numpy(), "k": layer.k.weight.numpy(),
            "v": layer.v.weight.numpy(), "o": layer.o.weight.numpy(),
            "table": layer.relative_attention_bias.weight.numpy(),
        }
        for offset in OFFSETS:
            arrays[f"bias_at_{offset}"] = layer.compute_bias(
                3, 70, past_seen_tokens=offset).numpy()
    return {f"{name}/{key}": value for key, value in arrays.items()}


def bucket_arrays():
    import torch
    from transformers.models.t5.modeling_t5 import T5Attention

    relative = torch.arange(-1500, 1501)
    arrays = {}
    for buckets, max_distance in BUCKETS:
        for bidirectional in (True, False):
            if bidirectional and buckets < 4:
                continue
            arrays[f"buckets/{buckets}/{max_distance}/{bidirectional}"] = (
                T5Attention._relative_position_bucket(
                    relative, bidirectional=bidirectional, num_buckets=buckets,
                    max_distance=max_distance,
                ).numpy()
            )
    return arrays


def main(path):
    arrays = bucket_arrays()
    for seed, (name, case) in enumerate(CASES.items()):
        arrays.update(case_arrays(name, *case, seed=seed))
    np.savez(path, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
