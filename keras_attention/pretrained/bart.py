"""BART, mBART and Marian (OPUS-MT) checkpoints as `TransformerSeq2Seq`.

The three share one layer layout (`transformers`' `BartEncoderLayer`,
`MBartEncoderLayer`, `MarianEncoderLayer`, ...): `self_attn.{q,k,v,out}_proj`,
`self_attn_layer_norm`, `encoder_attn*` in the decoder, `fc1`, `fc2`,
`final_layer_norm`. They differ in the embeddings and the norms:

| family | blocks    | positions                  | embedding norm | final norms |
|--------|-----------|----------------------------|----------------|-------------|
| BART   | post-norm | learned, offset 2          | yes            | no          |
| mBART  | pre-norm  | learned, offset 2          | yes            | yes         |
| Marian | post-norm | sinusoidal (sin, cos halves) | no           | no          |

`bart_model(config, weights)` builds the model of a `config.json` (a dict)
and copies `weights` (a dict of arrays) into it, after checking every value
and shape.

>>> options = bart_options({
...     "model_type": "marian", "encoder_layers": 6, "decoder_layers": 6,
...     "encoder_attention_heads": 8, "decoder_attention_heads": 8,
...     "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "activation_function": "swish",
...     "vocab_size": 58101, "d_model": 512, "max_position_embeddings": 512,
...     "scale_embedding": True, "pad_token_id": 58100, "eos_token_id": 0,
...     "decoder_start_token_id": 58100})
>>> options["position"], options["norm_first"], options["start_token_id"]
('sinusoidal_halves', False, 1)
"""

import keras
import numpy as np

from keras_attention.models.transformer_seq2seq import transformer_seq2seq
from keras_attention.pretrained.checkpoint import (
    assign_weights,
    attention_pairs,
    check_config_value,
    check_equal,
    dense_pairs,
    distinct_start_token_id,
    norm_pairs,
    weight,
)

#: `config.json` `model_type` -> family.
MODEL_TYPES = ("bart", "mbart", "marian")
#: `transformers`' activation names -> ours.
ACTIVATIONS = {
    "gelu": "gelu", "gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate",
    "relu": "relu", "swish": "swish", "silu": "swish",
}


def bart_options(config):
    """The `transformer_seq2seq` arguments of a BART, mBART or Marian
    `config` (a dict); an error naming any value we do not support."""
    family = check_config_value(config, "model_type", MODEL_TYPES)
    num_layers = check_equal(config, "encoder_layers", "decoder_layers")
    num_heads = check_equal(config, "encoder_attention_heads", "decoder_attention_heads")
    intermediate_dim = check_equal(config, "encoder_ffn_dim", "decoder_ffn_dim")
    activation = check_config_value(config, "activation_function", tuple(ACTIVATIONS))
    vocabulary_size = config["vocab_size"]
    target_vocabulary_size = vocabulary_size
    share = True
    if family == "marian":
        share = config.get("share_encoder_decoder_embeddings", True)
        if not share:
            target_vocabulary_size = config.get("decoder_vocab_size") or vocabulary_size
    tie = config.get("tie_word_embeddings", True)
    return dict(
        vocabulary_size=vocabulary_size,
        target_vocabulary_size=target_vocabulary_size,
        num_layers=num_layers,
        hidden_dim=config["d_model"],
        num_heads=num_heads,
        intermediate_dim=intermediate_dim,
        dropout=0.0,
        max_length=config["max_position_embeddings"],
        position="sinusoidal_halves" if family == "marian" else "learned",
        norm_first=family == "mbart",
        final_norm=family == "mbart",
        embedding_norm=family != "marian",
        position_offset=0 if family == "marian" else 2,
        scale_embeddings=bool(config.get("scale_embedding", False)),
        activation=ACTIVATIONS[activation],
        layer_norm_epsilon=1e-5,
        share_embeddings=share,
        tie_embeddings=bool(tie),
        output_bias=True,
        pad_token_id=config["pad_token_id"],
        start_token_id=distinct_start_token_id(config),
        end_token_id=config["eos_token_id"],
    )


def bart_model(config, weights):
    """A `TransformerSeq2Seq` with the weights of a BART, mBART or Marian
    checkpoint (`config`: its `config.json` as a dict, `weights`: its
    arrays by name). Every weight is found and its shape checked before
    any is copied.

    Whether the source and target tables are one, and whether the output
    projection is the target table, is read from the weights themselves
    (`transformers` saves a tied table once, and with
    `tie_word_embeddings=False` unties the encoder's and decoder's tables
    too)."""
    options = bart_options(config)
    tables = embedding_tables(weights, options["share_embeddings"])
    options["share_embeddings"] = (
        tables["source"].shape == tables["target"].shape
        and np.array_equal(tables["source"], tables["target"])
    )
    output = tables["output"]
    options["tie_embeddings"] = output is None or (
        output.shape == tables["target"].shape and np.array_equal(output, tables["target"])
    )
    family = config["model_type"]
    model = transformer_seq2seq(**options)
    pairs = bart_weight_pairs(model, weights, family, options, tables)
    if family == "marian":
        _check_sinusoidal(model, weights)
    assign_weights(pairs)
    return model


def embedding_tables(weights, shared=True):
    """The source and target token tables and the output projection
    (None when not saved, i.e. tied) of a BART-style checkpoint. A tied
    table is saved under one of its names, which one depends on the
    version that wrote the file: with `shared` (one vocabulary) any of them
    serves."""
    encoder, decoder = "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"
    others = ("lm_head.weight",) if shared else ()
    return {
        "source": weight(weights, encoder, "model.shared.weight",
                         *((decoder,) + others if shared else ())),
        "target": weight(weights, decoder, "model.shared.weight",
                         *((encoder,) + others if shared else ())),
        "output": weights.get("lm_head.weight"),
    }


def bart_weight_pairs(model, weights, family, options, tables):
    """The `(variable, array, name)` pairs of a built model."""
    pairs = [(model.source_embedding.token_embedding.embeddings, tables["source"],
              "model.encoder.embed_tokens.weight")]
    if not options["share_embeddings"]:
        pairs.append((model.target_embedding.token_embedding.embeddings, tables["target"],
                      "model.decoder.embed_tokens.weight"))
    for side, embedding, blocks in (
        ("encoder", model.source_embedding, model.encoder_blocks),
        ("decoder", model.target_embedding, model.decoder_blocks),
    ):
        prefix = f"model.{side}"
        if family != "marian":
            name = f"{prefix}.embed_positions.weight"
            pairs.append((embedding.position_encoding.position_embeddings,
                          weight(weights, name), name))
            norm = (model.source_embedding_norm if side == "encoder"
                    else model.target_embedding_norm)
            pairs += norm_pairs(norm, weights, f"{prefix}.layernorm_embedding")
        if family == "mbart":
            norm = model.encoder_norm if side == "encoder" else model.decoder_norm
            pairs += norm_pairs(norm, weights, f"{prefix}.layer_norm")
        for i, block in enumerate(blocks):
            pairs += bart_layer_pairs(block, weights, f"{prefix}.layers.{i}")
    if not options["tie_embeddings"]:
        pairs.append((model.output_projection.kernel, tables["output"].T, "lm_head.weight"))
    name = "final_logits_bias"
    pairs.append((model.output_projection.bias, weight(weights, name).reshape(-1), name))
    return pairs


def _check_sinusoidal(model, weights):
    """Marian saves its (fixed) sinusoidal tables; ours are computed, so a
    saved table must be the one we compute."""
    for side, embedding in (("encoder", model.source_embedding),
                            ("decoder", model.target_embedding)):
        name = f"model.{side}.embed_positions.weight"
        if name not in weights:
            continue
        table = np.asarray(weights[name], "float32")
        ours = keras.ops.convert_to_numpy(
            embedding.position_encoding(np.zeros((1,) + table.shape, "float32"))
        )[0]
        if ours.shape != table.shape or not np.allclose(ours, table, atol=1e-4):
            raise ValueError(
                f"The checkpoint weight {name!r} is not Marian's sinusoidal table "
                "(sines in the first half, cosines in the second), the only positions "
                f"we convert for Marian. Received: {name}.shape={table.shape}"
            )


def bart_layer_pairs(block, weights, prefix):
    """An encoder or decoder block from a BART-style layer at `prefix`."""
    pairs = attention_pairs(block.self_attention, weights, _projections(f"{prefix}.self_attn"))
    pairs += norm_pairs(block.self_attention_norm, weights, f"{prefix}.self_attn_layer_norm")
    if getattr(block, "cross_attention", None) is not None:
        pairs += attention_pairs(block.cross_attention, weights,
                                 _projections(f"{prefix}.encoder_attn"))
        pairs += norm_pairs(block.cross_attention_norm, weights,
                            f"{prefix}.encoder_attn_layer_norm")
    pairs += dense_pairs(block.feed_forward.hidden, weights, f"{prefix}.fc1")
    pairs += dense_pairs(block.feed_forward.projection, weights, f"{prefix}.fc2")
    pairs += norm_pairs(block.feed_forward_norm, weights, f"{prefix}.final_layer_norm")
    return pairs


def _projections(prefix):
    return tuple(f"{prefix}.{name}_proj" for name in ("q", "k", "v", "out"))
