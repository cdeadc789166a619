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
    check_against_weights,
    check_all_read,
    check_config_value,
    check_token_table,
    config_int,
    count_blocks,
    distinct_start_token_id,
    weight,
    weight_shape,
)
from keras_attention.pretrained.generation_json import renumber_token_ids
from keras_attention.pretrained.weight_links import (
    WeightLink,
    attention_links,
    dense_links,
    norm_links,
    pairs_from_links,
    tensors_from_links,
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
        saves_positions: `transformers` 5 saves its computed sinusoidal
            tables (Pegasus; not Marian or M2M100).
    """

    model_type: str
    position: str = "learned"
    norm_first: bool = False
    embedding_norm: bool = True
    target_vocabulary: bool = False
    positions_after_pad: bool = False
    output_bias: bool = True
    saves_positions: bool = False

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


def bart_checkpoint(model, config):
    """`(config, tensors)`: the `config.json` dict and the tensors of a BART
    checkpoint of `model` (`config`: the checkpoint config it was
    converted from; see `bart_style_checkpoint`)."""
    return bart_style_checkpoint(model, config, BART)


def bart_style_checkpoint(model, config, layout):
    """`(config, tensors)` of a checkpoint of the BART-style family `layout`
    holding `model`'s weights: `config` (the checkpoint config the model
    was converted from) with its table settings set to the model's, and
    the tensors `transformers` 5 saves (`bart_style_tensors`).

    Raises:
        ValueError: a model whose settings the family's architecture cannot
            express (its own target table outside Marian), in one line.
    """
    ours = model.config
    config = dict(config, tie_word_embeddings=bool(ours.tie_embeddings))
    if layout.target_vocabulary:
        config["share_encoder_decoder_embeddings"] = bool(ours.share_embeddings)
        if not ours.share_embeddings:
            config["decoder_vocab_size"] = int(ours.target_vocabulary_size)
    elif not ours.share_embeddings:
        raise ValueError(f"A {layout.model_type} checkpoint has one token table for both "
                         f"sides; the model has two. Received: share_embeddings=False")
    return config, bart_style_tensors(model, layout)


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
    return model, bart_weight_pairs(model, weights, layout, tables)


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


def bart_weight_links(model, layout):
    """The `weight_links.WeightLink`s of a built BART-style model: every
    variable and the tensor `transformers` saves it as (a tied table once,
    as `model.shared.weight`; Marian's own target table as
    `model.decoder.embed_tokens.weight`)."""
    config = model.config
    shared = config.share_embeddings
    links = [WeightLink(model.source_embedding.token_embedding.embeddings,
                        "model.shared.weight" if shared else "model.encoder.embed_tokens.weight")]
    if not shared:
        links.append(WeightLink(model.target_embedding.token_embedding.embeddings,
                                "model.decoder.embed_tokens.weight"))
    for side, embedding, blocks in (
        ("encoder", model.source_embedding, model.encoder_blocks),
        ("decoder", model.target_embedding, model.decoder_blocks),
    ):
        prefix = f"model.{side}"
        if config.position == "learned":
            links.append(WeightLink(embedding.position_encoding.position_embeddings,
                                    f"{prefix}.embed_positions.weight"))
        if config.embedding_norm:
            norm = (model.source_embedding_norm if side == "encoder"
                    else model.target_embedding_norm)
            links += norm_links(norm, f"{prefix}.layernorm_embedding")
        if config.final_norm:
            norm = model.encoder_norm if side == "encoder" else model.decoder_norm
            links += norm_links(norm, f"{prefix}.layer_norm")
        for i, block in enumerate(blocks):
            links += bart_layer_links(block, f"{prefix}.layers.{i}")
    if not config.tie_embeddings:
        links.append(WeightLink(model.output_projection.kernel, "lm_head.weight", "linear"))
    if layout.output_bias:
        links.append(WeightLink(model.output_projection.bias, "final_logits_bias", "flat",
                                tensor_shape=(1, -1)))
    return links


def bart_weight_pairs(model, weights, layout, tables):
    """The `(variable, array, name)` pairs of a built model (`tables`:
    `embedding_tables`' source, target and output tables)."""
    read = {"model.shared.weight": tables["source"],
            "model.encoder.embed_tokens.weight": tables["source"],
            "model.decoder.embed_tokens.weight": tables["target"]}
    if tables["output"] is not None:
        read["lm_head.weight"] = tables["output"]
    return pairs_from_links(bart_weight_links(model, layout), weights, read)


def bart_style_tensors(model, layout):
    """`{name: array}`: the tensors of a checkpoint of the BART-style family
    `layout` holding the weights of `model` (what `transformers` 5 saves,
    Pegasus's fixed position tables included)."""
    tensors = tensors_from_links(bart_weight_links(model, layout))
    config = model.config
    if config.share_embeddings and not config.tie_embeddings:
        # transformers 5 ties the sides' tables to `shared` only with tied
        # output weights; untied, it saves (and reads) each side's copy.
        for side in ("encoder", "decoder"):
            tensors[f"model.{side}.embed_tokens.weight"] = tensors["model.shared.weight"]
    if layout.saves_positions:
        table = sinusoidal_halves_table(model.config.max_length, model.config.hidden_dim)
        for side in ("encoder", "decoder"):
            tensors[f"model.{side}.embed_positions.weight"] = table
    return tensors


def renumber_tokens(config, tensors, order):
    """The same BART-style checkpoint with its tokens renumbered: the token
    of id `order[i]` gets id `i`. The token tables' rows (`TABLE_COPIES`,
    `lm_head.weight`) and `final_logits_bias`'s columns move with them, and
    the config's token ids (`generation_json.renumber_token_ids`): the
    checkpoint computes the same function of the renumbered tokens.

    Args:
        config: the `config.json` dict.
        tensors: `{name: array}` as `transformers` saves them.
        order: a permutation of `range(config["vocab_size"])`.

    Returns:
        `(config, tensors)`, new dicts.

    Raises:
        ValueError: naming `order` when it is not such a permutation.

    Example:

    >>> config, tensors = renumber_tokens(
    ...     {"vocab_size": 3, "pad_token_id": 0, "eos_token_id": 2},
    ...     {"model.shared.weight": np.array([[0.0], [1.0], [2.0]])}, [1, 0, 2])
    >>> config["pad_token_id"], tensors["model.shared.weight"].ravel().tolist()
    (1, [1.0, 0.0, 2.0])
    """
    order = np.asarray(order)
    size = config.get("vocab_size")
    if order.ndim != 1 or sorted(order.tolist()) != list(range(size if size else -1)):
        raise ValueError(f"Argument `order` must be a permutation of the {size} token ids. "
                         f"Received: order of {order.size} ids")
    renumbered = {}
    for name, tensor in tensors.items():
        if name in TABLE_COPIES + ("lm_head.weight",):
            tensor = tensor[order]
        elif name == "final_logits_bias":
            tensor = tensor[..., order]
        renumbered[name] = tensor
    new_id = {int(old): new for new, old in enumerate(order)}
    return renumber_token_ids(config, new_id), renumbered


def sinusoidal_halves_table(rows, dim):
    """The fixed position table `(rows, dim)` of Marian and Pegasus as
    `transformers` computes it (in float64, then float32): sines in the
    first half of each row, cosines in the second."""
    positions = np.arange(rows, dtype=np.float64)[:, None]
    rates = np.power(10000.0, 2 * (np.arange(dim) // 2) / dim)[None, :]
    angles = positions / rates
    table = np.zeros((rows, dim), np.float64)
    half = dim // 2 + dim % 2
    table[:, :half] = np.sin(angles[:, 0::2])
    table[:, half:] = np.cos(angles[:, 1::2])
    return table.astype(np.float32)


def bart_layer_links(block, prefix):
    """An encoder or decoder block as a BART-style layer at `prefix`."""
    links = attention_links(block.self_attention, _projections(f"{prefix}.self_attn"))
    links += norm_links(block.self_attention_norm, f"{prefix}.self_attn_layer_norm")
    if getattr(block, "cross_attention", None) is not None:
        links += attention_links(block.cross_attention, _projections(f"{prefix}.encoder_attn"))
        links += norm_links(block.cross_attention_norm, f"{prefix}.encoder_attn_layer_norm")
    links += dense_links(block.feed_forward.hidden, f"{prefix}.fc1")
    links += dense_links(block.feed_forward.projection, f"{prefix}.fc2")
    links += norm_links(block.feed_forward_norm, f"{prefix}.final_layer_norm")
    return links


def _projections(prefix):
    return tuple(f"{prefix}.{name}_proj" for name in ("q", "k", "v", "out"))
