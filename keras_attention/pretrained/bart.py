"""BART checkpoints as `TransformerSeq2Seq`, and the layout BART-style families share.

BART, mBART and Marian (OPUS-MT) share one layer layout (`transformers`'
`BartEncoderLayer`, `MBartEncoderLayer`, `MarianEncoderLayer`, ...):
`self_attn.{q,k,v,out}_proj`, `self_attn_layer_norm`, `encoder_attn*` in the
decoder, `fc1`, `fc2`, `final_layer_norm`. They differ in the embeddings and
the norms, which a `BartLayout` names:

| family | blocks    | positions                  | embedding norm | final norms |
|--------|-----------|----------------------------|----------------|-------------|
| BART   | post-norm | learned, offset 2          | yes            | no          |
| mBART  | pre-norm  | learned, offset 2          | yes            | yes         |
| Marian | post-norm | sinusoidal (sin, cos halves) | no           | no          |
| M2M100 | pre-norm  | fairseq's sinusoidal, after pad | no         | yes         |

This module is BART's (`bart_model`, `BART`); `marian.py`, `mbart.py`,
`pegasus.py` and `m2m_100.py` hold the others. `bart_style_model(config, weights, layout)`
builds the model of a `config.json` (a dict) and pairs its variables with
`weights` (a dict of arrays), after checking every value and shape.

>>> options = bart_options({
...     "model_type": "bart", "encoder_layers": 6, "decoder_layers": 6,
...     "encoder_attention_heads": 16, "decoder_attention_heads": 16,
...     "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "activation_function": "gelu",
...     "vocab_size": 50265, "d_model": 1024, "max_position_embeddings": 1024,
...     "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
...     "decoder_start_token_id": 2})
>>> options["position"], options["position_offset"], options["start_token_id"]
('learned', 2, 0)
"""

import dataclasses

import keras
import numpy as np

from keras_attention.models.transformer_seq2seq import transformer_seq2seq
from keras_attention.pretrained.checkpoint import (
    CheckpointWeights,
    assign_weights,
    attention_pairs,
    check_against_weights,
    check_all_read,
    check_config_value,
    check_token_table,
    config_int,
    count_blocks,
    dense_pairs,
    distinct_start_token_id,
    norm_pairs,
    weight,
    weight_shape,
)

#: `transformers`' activation names -> ours.
ACTIVATIONS = {
    "gelu": "gelu", "gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate",
    "relu": "relu", "swish": "swish", "silu": "swish",
}


@dataclasses.dataclass(frozen=True)
class BartLayout:
    """What sets a BART-style family apart (the table of the module docstring).

    Attributes:
        model_type: the `config.json` `model_type` of the family.
        position: `"learned"` (saved tables, offset 2),
            `"sinusoidal_halves"` or `"sinusoidal_fairseq"` (computed; a
            saved table must equal ours).
        positions_after_pad: positions start after the pad id (M2M100's
            `padding_idx + 1`: `position_offset = pad_token_id + 1`).
        output_bias: the checkpoint saves `final_logits_bias`.
        norm_first: pre-norm blocks and a final norm closing each stack.
        embedding_norm: a norm after the token and position embeddings.
        target_vocabulary: the config may give the decoder a vocabulary of its
            own (`share_encoder_decoder_embeddings`, `decoder_vocab_size`).
    """

    model_type: str
    position: str = "learned"
    norm_first: bool = False
    embedding_norm: bool = True
    target_vocabulary: bool = False
    positions_after_pad: bool = False
    output_bias: bool = True

    def position_offset(self, config):
        """What `transformer_seq2seq` adds to every position."""
        if self.position == "learned":
            return 2
        return config["pad_token_id"] + 1 if self.positions_after_pad else 0


#: BART's layout: post-norm, learned positions, an embedding norm.
BART = BartLayout("bart")
#: The names under which BART-style checkpoints also save a tied token table
#: read under another name (`embedding_tables`).
TABLE_COPIES = ("model.shared.weight", "model.encoder.embed_tokens.weight",
                "model.decoder.embed_tokens.weight")
#: The most positions of a computed (sinusoidal) table whose checkpoint
#: saves none: the table is built in memory, `max_position_embeddings` rows.
MAX_COMPUTED_POSITIONS = 65536


def bart_model(config, weights):
    """A `TransformerSeq2Seq` with the weights of a BART checkpoint
    (`config`: its `config.json` as a dict, `weights`: its arrays by name).
    The config is checked against the weights' shapes before anything is
    built, and every weight is found, its shape checked and every weight
    of the checkpoint used before any is copied."""
    return convert_bart_style(config, weights, BART)


def convert_bart_style(config, weights, layout):
    """The model of a checkpoint of the BART-style family `layout`, with
    its weights: `bart_style_model`, a saved sinusoidal table compared with
    ours (`check_sinusoidal_tables`), every weight of the checkpoint used
    (`check_all_read`), then the weights copied."""
    weights = CheckpointWeights(weights)
    model, pairs = bart_style_model(config, weights, layout)
    if layout.position != "learned":
        check_sinusoidal_tables(model, weights, layout)
    check_all_read(weights, TABLE_COPIES)
    assign_weights(pairs)
    return model


def bart_options(config, layout=BART):
    """The `transformer_seq2seq` arguments of a `config` (a dict) of the
    BART-style family `layout`; an error naming any value we do not support."""
    check_config_value(config, "model_type", (layout.model_type,))
    activation = check_config_value(config, "activation_function", tuple(ACTIVATIONS))
    vocabulary_size = config["vocab_size"]
    target_vocabulary_size = vocabulary_size
    share = True
    if layout.target_vocabulary:
        share = config.get("share_encoder_decoder_embeddings", True)
        if not share:
            target_vocabulary_size = config.get("decoder_vocab_size") or vocabulary_size
    tie = config.get("tie_word_embeddings", True)
    return dict(
        vocabulary_size=vocabulary_size,
        target_vocabulary_size=target_vocabulary_size,
        hidden_dim=config["d_model"],
        # Each side's depth, heads and feed-forward size (a deep encoder and a
        # shallow decoder is a common serving shape).
        num_layers=config_int(config, "encoder_layers"),
        num_heads=config_int(config, "encoder_attention_heads"),
        intermediate_dim=config_int(config, "encoder_ffn_dim"),
        num_decoder_layers=config_int(config, "decoder_layers"),
        decoder_num_heads=config_int(config, "decoder_attention_heads"),
        decoder_intermediate_dim=config_int(config, "decoder_ffn_dim"),
        dropout=0.0,
        max_length=config["max_position_embeddings"],
        position=layout.position,
        norm_first=layout.norm_first,
        final_norm=layout.norm_first,
        embedding_norm=layout.embedding_norm,
        position_offset=layout.position_offset(config),
        scale_embeddings=bool(config.get("scale_embedding", False)),
        activation=ACTIVATIONS[activation],
        layer_norm_epsilon=1e-5,
        share_embeddings=share,
        tie_embeddings=bool(tie),
        output_bias=layout.output_bias,
        pad_token_id=config["pad_token_id"],
        start_token_id=distinct_start_token_id(config),
        end_token_id=config["eos_token_id"],
    )


def bart_style_model(config, weights, layout):
    """`(model, pairs)`: the `TransformerSeq2Seq` of a checkpoint of the
    BART-style family `layout` and its `(variable, array, name)` pairs (see
    `checkpoint.assign_weights`), every weight found and its shape checked;
    nothing is copied yet.

    Whether the source and target tables are one, and whether the output
    projection is the target table, is read from the weights themselves
    (`transformers` saves a tied table once, and with
    `tie_word_embeddings=False` unties the encoder's and decoder's tables
    too)."""
    options = bart_options(config, layout)
    check_sizes(config, weights, layout)
    tables = embedding_tables(weights, options["share_embeddings"])
    options["share_embeddings"] = (
        tables["source"].shape == tables["target"].shape
        and np.array_equal(tables["source"], tables["target"])
    )
    output = tables["output"]
    options["tie_embeddings"] = output is None or (
        output.shape == tables["target"].shape and np.array_equal(output, tables["target"])
    )
    model = transformer_seq2seq(**options)
    return model, bart_weight_pairs(model, weights, options, tables)


def check_sizes(config, weights, layout):
    """The config's sizes are positive ints and match the weights' shapes
    (tables, layer counts, feed-forward sizes, position tables), before
    anything is built: a wrong or huge value is refused by name instead of
    building a model it describes."""
    sizes = ("encoder_layers", "decoder_layers", "encoder_attention_heads",
             "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "vocab_size",
             "d_model", "max_position_embeddings")
    for key in sizes:
        config_int(config, key)
    check_token_table(config, weights, ("model.shared.weight", "model.encoder.embed_tokens.weight"))
    if layout.target_vocabulary and config.get("decoder_vocab_size") is not None:
        config_int(config, "decoder_vocab_size")
        name = "model.decoder.embed_tokens.weight"
        shape = weight_shape(weights, name)
        if shape is not None and not config.get("share_encoder_decoder_embeddings", True):
            check_against_weights(config, "decoder_vocab_size", shape[0], f"{name} {shape}")
    for side in ("encoder", "decoder"):
        prefix = f"model.{side}.layers"
        check_against_weights(config, f"{side}_layers", count_blocks(weights, prefix),
                              f"the weights' {prefix}.N")
        name = f"{prefix}.0.fc1.weight"
        shape = weight_shape(weights, name)
        if shape is not None:
            check_against_weights(config, f"{side}_ffn_dim", shape[0], f"{name} {shape}")
        heads = config[f"{side}_attention_heads"]
        if config["d_model"] % heads:
            raise ValueError(f"The checkpoint's config value `{side}_attention_heads` must "
                             f"divide d_model={config['d_model']}. Received: "
                             f"{side}_attention_heads={heads}")
        name = f"model.{side}.embed_positions.weight"
        shape = weight_shape(weights, name)
        offset = 2 if layout.position == "learned" else 0
        if shape is not None:
            check_against_weights(config, "max_position_embeddings", shape[0] - offset,
                                  f"{name} {shape}")
        elif layout.position != "learned" and (
                config["max_position_embeddings"] > MAX_COMPUTED_POSITIONS):
            raise ValueError(f"The checkpoint's config value `max_position_embeddings` is "
                             f"more than the {MAX_COMPUTED_POSITIONS} positions of a table "
                             f"computed in memory (the checkpoint saves none). Received: "
                             f"max_position_embeddings={config['max_position_embeddings']}")


def check_sinusoidal_tables(model, weights, layout):
    """Marian and Pegasus save their fixed sinusoidal position tables; ours
    are computed, so a saved table must be the one we compute (an error
    naming the weight otherwise)."""
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
                f"The checkpoint weight {name!r} is not {layout.model_type}'s sinusoidal "
                "table (sines in the first half, cosines in the second), the only positions "
                f"we convert for {layout.model_type}. Received: {name}.shape={table.shape}"
            )


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


def bart_weight_pairs(model, weights, options, tables):
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
        if options["position"] == "learned":
            name = f"{prefix}.embed_positions.weight"
            pairs.append((embedding.position_encoding.position_embeddings,
                          weight(weights, name), name))
        if options["embedding_norm"]:
            norm = (model.source_embedding_norm if side == "encoder"
                    else model.target_embedding_norm)
            pairs += norm_pairs(norm, weights, f"{prefix}.layernorm_embedding")
        if options["final_norm"]:
            norm = model.encoder_norm if side == "encoder" else model.decoder_norm
            pairs += norm_pairs(norm, weights, f"{prefix}.layer_norm")
        for i, block in enumerate(blocks):
            pairs += bart_layer_pairs(block, weights, f"{prefix}.layers.{i}")
    if not options["tie_embeddings"]:
        pairs.append((model.output_projection.kernel, tables["output"].T, "lm_head.weight"))
    if options["output_bias"]:
        name = "final_logits_bias"
        pairs.append((model.output_projection.bias, weight(weights, name).reshape(-1), name))
    return pairs


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
