"""Copying the weights of `transformers` torch modules into our layers, for
the tests that compare a block, feed-forward, norm or embedding with the
module it reproduces (BART, mBART, Marian, T5).

`transformers` and torch are test-only dependencies (the `test` extra).
"""

import numpy as np
import torch


def numpy_of(parameter):
    return parameter.detach().cpu().numpy()


def set_dense(dense, linear):
    """A Keras `Dense` from a torch `nn.Linear` (`y = x W^T + b`)."""
    dense.kernel.assign(numpy_of(linear.weight).T)
    if linear.bias is not None:
        dense.bias.assign(numpy_of(linear.bias))


def set_norm(norm, torch_norm):
    """A Keras `LayerNormalization` from `nn.LayerNorm`, or an
    `RMSNormalization` from `T5LayerNorm`."""
    if hasattr(norm, "gamma"):
        norm.gamma.assign(numpy_of(torch_norm.weight))
        norm.beta.assign(numpy_of(torch_norm.bias))
    else:
        norm.scale.assign(numpy_of(torch_norm.weight))


def set_attention(attention, query, key, value, output):
    """Our `MultiHeadAttention` from four `nn.Linear` (query, key, value,
    output) of `D -> H * head_size` (and back)."""
    heads, head_size = attention.num_heads, attention.key_dim
    for ours, linear in ((attention.query_dense, query), (attention.key_dense, key),
                         (attention.value_dense, value)):
        kernel = numpy_of(linear.weight).T
        ours.kernel.assign(kernel.reshape(kernel.shape[0], heads, head_size))
        if linear.bias is not None:
            ours.bias.assign(numpy_of(linear.bias).reshape(heads, head_size))
    kernel = numpy_of(output.weight).T
    attention.output_dense.kernel.assign(kernel.reshape(heads, head_size, -1))
    if output.bias is not None:
        attention.output_dense.bias.assign(numpy_of(output.bias))


def set_bart_attention(attention, hf_attention):
    """From a BART / mBART / Marian attention (`q_proj`, `k_proj`, `v_proj`,
    `out_proj`)."""
    set_attention(attention, hf_attention.q_proj, hf_attention.k_proj,
                  hf_attention.v_proj, hf_attention.out_proj)


def set_bart_layer(block, layer):
    """Our encoder or decoder block from a `BartEncoderLayer` /
    `BartDecoderLayer` (or mBART's, Marian's: the same names)."""
    set_bart_attention(block.self_attention, layer.self_attn)
    set_norm(block.self_attention_norm, layer.self_attn_layer_norm)
    if getattr(layer, "encoder_attn", None) is not None:
        set_bart_attention(block.cross_attention, layer.encoder_attn)
        set_norm(block.cross_attention_norm, layer.encoder_attn_layer_norm)
    set_dense(block.feed_forward.hidden, layer.fc1)
    set_dense(block.feed_forward.projection, layer.fc2)
    set_norm(block.feed_forward_norm, layer.final_layer_norm)


def additive_mask(allowed):
    """A boolean `(B, T, S)` mask as the float `(B, 1, T, S)` mask the
    `transformers` eager attention adds to its logits."""
    allowed = torch.as_tensor(np.asarray(allowed))
    return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[:, None]


def torch_tensor(array):
    return torch.as_tensor(np.asarray(array))


def run_torch(module, *args, **kwargs):
    """`module(*args, **kwargs)` in eval mode without gradients, numpy
    arrays in and out (the first output when it returns a tuple)."""
    module.eval()
    with torch.no_grad():
        args = [torch.as_tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        out = module(*args, **kwargs)
    if isinstance(out, tuple):
        out = out[0]
    return out.numpy()


def bart_style_config(family, dim=16, heads=2, ffn=32, **kwargs):
    """A `transformers` config of `family` ("bart", "mbart" or "marian"),
    one layer unless `kwargs` say otherwise, without dropout and with the
    eager attention."""
    import transformers

    config_class = {"bart": transformers.BartConfig, "mbart": transformers.MBartConfig,
                    "marian": transformers.MarianConfig}[family]
    arguments = dict(
        vocab_size=32, d_model=dim, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=ffn, decoder_ffn_dim=ffn, dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0,
    )
    config = config_class(**{**arguments, **kwargs})
    config._attn_implementation = "eager"
    return config


def randomize(module, seed=0):
    """Random values in every parameter of `module` (layer norms included,
    whose ones and zeros would hide a swapped weight)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(0.5 * torch.randn(parameter.shape, generator=generator))
    return module
