"""T5 checkpoints (v1.0, v1.1, flan-T5) as a `Seq2SeqModel` of our blocks.

```
x      = E[token]                                     (no scale, no positions)
memory = RMSNorm(EncoderBlock^N(x, bias=RelativePositionBias(bidirectional)))
h      = RMSNorm(DecoderBlock^N(E[target], memory, bias=RelativePositionBias(causal)))
logits = (h * D^-0.5) E^T   (v1.0)   or   h W_lm   (v1.1 / flan: not scaled, own lm_head)
```

The blocks are pre-norm, RMS-normalized, bias-free, with unscaled attention
(T5 folds the scale into its weights) and a ReLU (v1.0) or gated-GELU (v1.1)
feed-forward. One relative position bias per stack is computed once and
added to every self-attention layer, as in `transformers`' `T5Attention`.
`transformer_seq2seq` has no relative bias, so the model is assembled here.

>>> options = t5_options({
...     "model_type": "t5", "feed_forward_proj": "gated-gelu", "vocab_size": 32128,
...     "num_layers": 8, "num_decoder_layers": 8, "d_model": 512, "d_kv": 64,
...     "num_heads": 8, "d_ff": 1024, "tie_word_embeddings": False,
...     "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0})
>>> options["activation"], options["gated_feed_forward"], options["scale_outputs"]
('gelu_approximate', True, False)
"""

import keras
import numpy as np
from keras import ops

from keras_attention import masks
from keras_attention.decoding.search import SOURCE_STATE
from keras_attention.layers import (
    RelativePositionBias,
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from keras_attention.models.decoder_caches import (
    cache_length,
    init_self_caches,
    read_self_caches,
    self_cache_bytes_per_position,
    with_self_caches,
)
from keras_attention.models.seq2seq_model import Seq2SeqModel, token_inputs
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
from keras_attention.pretrained.weight_links import (
    WeightLink,
    attention_links,
    dense_links,
    norm_links,
    pairs_from_links,
    tensors_from_links,
)

#: `feed_forward_proj` values -> (activation, gated).
FEED_FORWARDS = {
    "relu": ("relu", False), "gated-gelu": ("gelu_approximate", True),
    "gated-relu": ("relu", True), "gated-silu": ("swish", True),
    "gelu": ("gelu", False), "gated-gelu_new": ("gelu_approximate", True),
}


@keras.saving.register_keras_serializable(package="keras_attention")
class T5Seq2Seq(Seq2SeqModel):
    """T5's encoder-decoder on our blocks (see the module docstring).

    Args:
        vocabulary_size: int `V`.
        num_layers, num_decoder_layers: blocks of the encoder and decoder.
        hidden_dim: `d_model`; key_dim: `d_kv`; num_heads; intermediate_dim:
            `d_ff`. The attention's inner size `num_heads * key_dim` need
            not be `hidden_dim` (flan-t5-small and mt5-small: 6 heads of
            64 on 512; t5-3b: 32 heads of 128 on 1024): the q, k and v
            kernels are `(hidden_dim, num_heads, key_dim)`, o's
            `(num_heads, key_dim, hidden_dim)`.
        activation, gated_feed_forward: the feed-forward.
        num_buckets, max_distance: the relative position buckets.
        layer_norm_epsilon: of the RMS norms.
        tie_embeddings: the output projection is the token table (else a
            bias-free `lm_head`).
        scale_outputs: the decoder output is scaled by `hidden_dim ** -0.5`
            before the projection (T5 v1.0; not v1.1 / flan).
        pad_token_id, start_token_id, end_token_id: as `Seq2SeqModel`.
    """

    def __init__(self, vocabulary_size, num_layers, num_decoder_layers, hidden_dim, key_dim,
                 num_heads, intermediate_dim, activation="relu", gated_feed_forward=False,
                 num_buckets=32, max_distance=128, layer_norm_epsilon=1e-6,
                 tie_embeddings=True, scale_outputs=True, pad_token_id=0, start_token_id=2,
                 end_token_id=1, **kwargs):
        block_args = dict(
            num_heads=num_heads, key_dim=key_dim, intermediate_dim=intermediate_dim, dropout=0.0,
            norm_first=True, activation=activation, gated_feed_forward=gated_feed_forward,
            use_bias=False, normalization="rms_norm", layer_norm_epsilon=layer_norm_epsilon,
            attention_scale=1.0,
        )
        embedding = TokenAndPositionEmbedding(
            vocabulary_size, hidden_dim, "none", pad_token_id=pad_token_id,
            scale_embeddings=False, name="shared_embedding",
        )
        encoder_bias = RelativePositionBias(num_heads, num_buckets, max_distance, True,
                                            name="encoder_position_bias")
        decoder_bias = RelativePositionBias(num_heads, num_buckets, max_distance, False,
                                            name="decoder_position_bias")
        encoder_blocks = [TransformerEncoderBlock(**block_args, name=f"encoder_block_{i}")
                          for i in range(num_layers)]
        decoder_blocks = [TransformerDecoderBlock(**block_args, name=f"decoder_block_{i}")
                          for i in range(num_decoder_layers)]
        norm = dict(epsilon=layer_norm_epsilon)
        encoder_norm = keras.layers.RMSNormalization(**norm, name="encoder_norm")
        decoder_norm = keras.layers.RMSNormalization(**norm, name="decoder_norm")
        lm_head = None
        if not tie_embeddings:
            lm_head = keras.layers.Dense(vocabulary_size, use_bias=False, name="lm_head")

        inputs = token_inputs()
        source, target = inputs["encoder_token_ids"], inputs["decoder_token_ids"]
        # The masks are passed, not propagated: the RMS norms drop Keras masks.
        source_mask = ops.not_equal(source, pad_token_id)
        target_mask = masks.decoder_token_mask(target, pad_token_id)  # starts with pad
        memory = embedding(source)
        bias = encoder_bias(query_length=memory, key_length=memory)
        for block in encoder_blocks:
            memory = block(memory, x_mask=source_mask, self_attention_bias=bias)
        memory = encoder_norm(memory)
        hidden = embedding(target)
        bias = decoder_bias(query_length=hidden, key_length=hidden)
        for block in decoder_blocks:
            hidden = block(hidden, memory, x_mask=target_mask, memory_mask=source_mask,
                           self_attention_bias=bias)
        hidden = decoder_norm(hidden)
        output = _Logits(embedding, lm_head, hidden_dim ** -0.5 if scale_outputs else None,
                         name="logits")
        super().__init__(inputs=inputs, outputs=output(hidden),
                         pad_token_id=pad_token_id, start_token_id=start_token_id,
                         end_token_id=end_token_id, **kwargs)
        self.embedding = embedding
        self.encoder_bias, self.decoder_bias = encoder_bias, decoder_bias
        self.encoder_blocks, self.decoder_blocks = encoder_blocks, decoder_blocks
        self.encoder_norm, self.decoder_norm = encoder_norm, decoder_norm
        self.lm_head = lm_head
        self.hidden_dim = hidden_dim
        self._arguments = dict(
            vocabulary_size=vocabulary_size, num_layers=num_layers,
            num_decoder_layers=num_decoder_layers, hidden_dim=hidden_dim, key_dim=key_dim,
            num_heads=num_heads, intermediate_dim=intermediate_dim, activation=activation,
            gated_feed_forward=gated_feed_forward, num_buckets=num_buckets,
            max_distance=max_distance, layer_norm_epsilon=layer_norm_epsilon,
            tie_embeddings=tie_embeddings, scale_outputs=scale_outputs,
        )

    @property
    def source_vocabulary_size(self):
        return self._arguments["vocabulary_size"]

    @property
    def target_vocabulary_size(self):
        return self._arguments["vocabulary_size"]

    def encode(self, encoder_token_ids):
        memory_mask = ops.not_equal(encoder_token_ids, self.pad_token_id)
        memory = self.embedding(encoder_token_ids)
        bias = self.encoder_bias(query_length=memory, key_length=memory)
        for block in self.encoder_blocks:
            memory = block(memory, x_mask=memory_mask, self_attention_bias=bias)
        return self.encoder_norm(memory), memory_mask

    #: The cross-attention caches are read once for the beams of a source.
    shares_source_across_beams = True

    def init_decoder_state(self, memory, memory_mask, max_length, rows_per_source=1):
        return {
            **init_self_caches(self.decoder_blocks, ops.shape(memory)[0], max_length,
                               rows_per_source),
            SOURCE_STATE: {"cross_caches": [b.compute_cache(memory, memory_mask)
                                            for b in self.decoder_blocks]},
        }

    def decode_step(self, token_ids, index, state):
        hidden = self.embedding(token_ids[:, None])
        bias = self.decoder_bias(query_length=1, key_length=cache_length(state),
                                 query_offset=index)
        caches, ancestry = read_self_caches(state, index, token_ids.shape[0])
        self_caches = []
        for block, self_cache, cross_cache in zip(
            self.decoder_blocks, caches, state[SOURCE_STATE]["cross_caches"]
        ):
            hidden, self_cache, cross_scores = block.call_cached(
                hidden, self_cache, index, memory_cache=cross_cache, self_attention_bias=bias,
                cache_ancestry=ancestry,
            )
            self_caches.append(self_cache)
        hidden = self.decoder_norm(hidden)
        logits = ops.cast(self.get_layer("logits")(hidden)[:, 0], "float32")
        attention = ops.mean(cross_scores[:, :, 0, :], axis=1)
        return logits, with_self_caches(state, self_caches, ancestry), attention

    def decoder_cache_bytes_per_position(self):
        """The self-attention caches' bytes per position and row, every
        block (heads of `key_dim`)."""
        return self_cache_bytes_per_position(self.decoder_blocks)

    def get_config(self):
        return {**super().get_config(), **self._arguments}


class _Logits(keras.layers.Layer):
    """T5's output: `(h * scale) E^T` (tied) or `lm_head(h * scale)`."""

    def __init__(self, embedding, lm_head, scale, **kwargs):
        super().__init__(**kwargs)
        self.embedding, self.lm_head, self.scale = embedding, lm_head, scale

    def call(self, hidden):
        if self.scale is not None:
            hidden = hidden * ops.cast(self.scale, hidden.dtype)
        if self.lm_head is not None:
            return self.lm_head(hidden)
        return self.embedding.logits(hidden)

    def compute_output_shape(self, hidden_shape):
        return tuple(hidden_shape[:-1]) + (self.embedding.vocab_size,)


def t5_options(config, model_type="t5"):
    """The `T5Seq2Seq` arguments of a `config` (a dict) of T5's layout
    (`model_type`: `"t5"`, or `"mt5"`, whose checkpoints are T5 v1.1's); an
    error naming any value we do not support."""
    check_config_value(config, "model_type", (model_type,))
    projection = check_config_value(config, "feed_forward_proj", tuple(FEED_FORWARDS), "relu")
    check_config_value(config, "is_encoder_decoder", (True,), True)
    activation, gated = FEED_FORWARDS[projection]
    num_decoder_layers = config.get("num_decoder_layers")
    if num_decoder_layers is None:
        num_decoder_layers = config["num_layers"]
    return dict(
        vocabulary_size=config["vocab_size"], num_layers=config["num_layers"],
        num_decoder_layers=num_decoder_layers, hidden_dim=config["d_model"],
        key_dim=config["d_kv"], num_heads=config["num_heads"], intermediate_dim=config["d_ff"],
        activation=activation, gated_feed_forward=gated,
        num_buckets=config.get("relative_attention_num_buckets", 32),
        max_distance=config.get("relative_attention_max_distance", 128),
        layer_norm_epsilon=config.get("layer_norm_epsilon", 1e-6),
        tie_embeddings=True,
        scale_outputs=_scale_outputs(config, model_type),
        pad_token_id=config["pad_token_id"], end_token_id=config["eos_token_id"],
        start_token_id=distinct_start_token_id(config),
    )


def _scale_outputs(config, model_type):
    """Whether the decoder's outputs are scaled by `d_model ** -0.5` before
    the output projection: `scale_decoder_outputs` where the config says
    (transformers 5's T5), else T5 with a tied output projection (older T5
    configs); never mT5 (transformers 5 does not scale mT5's, whatever its
    config says, and mT5 checkpoints have their own `lm_head`)."""
    scale = config.get("scale_decoder_outputs")
    if scale is None:
        scale = model_type == "t5" and config.get("tie_word_embeddings", True) is not False
    return bool(scale)


#: The names under which T5 checkpoints also save the token table read as
#: `shared.weight`.
TABLE_COPIES = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight")


def t5_model(config, weights):
    """A `T5Seq2Seq` with the weights of a T5 checkpoint. The config is
    checked against the weights' shapes before anything is built; every
    weight is found, its shape checked and every weight of the checkpoint
    used before any is copied."""
    return t5_style_model(config, weights, "t5")


def t5_style_model(config, weights, model_type):
    """`t5_model` for the family `model_type` of T5's layout (T5, mT5)."""
    weights = CheckpointWeights(weights)
    options = t5_options(config, model_type)
    check_sizes(config, weights)
    # A saved `lm_head.weight` that is not the token table is its own
    # projection (T5 v1.1 and flan-T5 files; transformers 5 ties it).
    output = weights.get("lm_head.weight")
    if output is not None:
        shared = weight(weights, "shared.weight", "encoder.embed_tokens.weight")
        options["tie_embeddings"] = (output.shape == shared.shape
                                     and np.array_equal(output, shared))
    model = T5Seq2Seq(**options)
    pairs = pairs_from_links(t5_weight_links(model), weights)
    check_all_read(weights, TABLE_COPIES)
    assign_weights(pairs)
    return model


def check_sizes(config, weights):
    """The config's sizes are positive ints and match the weights' shapes
    (the token table, block counts, attention and feed-forward widths, the
    relative position buckets), before anything is built."""
    for key in ("num_layers", "d_model", "d_kv", "num_heads", "d_ff", "vocab_size"):
        config_int(config, key)
    config_int(config, "num_decoder_layers", config["num_layers"])
    config_int(config, "relative_attention_num_buckets", 32)
    check_token_table(config, weights, TABLE_COPIES)
    check_against_weights(config, "num_layers", count_blocks(weights, "encoder.block"),
                          "the weights' encoder.block.N")
    check_against_weights(config, "num_decoder_layers", count_blocks(weights, "decoder.block"),
                          "the weights' decoder.block.N", default=config["num_layers"])
    name = "encoder.block.0.layer.0.SelfAttention.q.weight"
    shape = weight_shape(weights, name)
    if shape is not None and shape[0] != config["d_kv"] * config["num_heads"]:
        raise ValueError(f"The checkpoint's config values `d_kv` * `num_heads` do not match "
                         f"its weights ({name} {shape}). Received: d_kv={config['d_kv']}, "
                         f"num_heads={config['num_heads']}")
    for name in ("encoder.block.0.layer.1.DenseReluDense.wi.weight",
                 "encoder.block.0.layer.1.DenseReluDense.wi_0.weight"):
        shape = weight_shape(weights, name)
        if shape is not None:
            check_against_weights(config, "d_ff", shape[0], f"{name} {shape}")
    name = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    shape = weight_shape(weights, name)
    if shape is not None:
        buckets = config.get("relative_attention_num_buckets", 32)
        if shape != (buckets, config["num_heads"]):
            raise ValueError(f"The checkpoint's config values `relative_attention_num_buckets`"
                             f" and `num_heads` do not match its weights ({name} {shape}). "
                             f"Received: relative_attention_num_buckets={buckets}, "
                             f"num_heads={config['num_heads']}")


def t5_weight_links(model):
    """The `weight_links.WeightLink`s of a built `T5Seq2Seq`: every variable
    and the tensor `transformers` saves it as."""
    links = [WeightLink(model.embedding.token_embedding.embeddings, "shared.weight",
                        other_names=("encoder.embed_tokens.weight",
                                     "decoder.embed_tokens.weight"))]
    gated = model.get_config()["gated_feed_forward"]
    for side, bias, blocks, norm in (
        ("encoder", model.encoder_bias, model.encoder_blocks, model.encoder_norm),
        ("decoder", model.decoder_bias, model.decoder_blocks, model.decoder_norm),
    ):
        name = f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
        links.append(WeightLink(bias.embeddings, name))
        for i, block in enumerate(blocks):
            prefix = f"{side}.block.{i}.layer"
            links += attention_links(block.self_attention,
                                     _projections(f"{prefix}.0.SelfAttention"))
            links += norm_links(block.self_attention_norm, f"{prefix}.0.layer_norm")
            feed_forward = 1
            if side == "decoder":
                feed_forward = 2
                links += attention_links(block.cross_attention,
                                         _projections(f"{prefix}.1.EncDecAttention"))
                links += norm_links(block.cross_attention_norm, f"{prefix}.1.layer_norm")
            ff = f"{prefix}.{feed_forward}.DenseReluDense"
            if gated:
                links += dense_links(block.feed_forward.hidden, f"{ff}.wi_0")
                links += dense_links(block.feed_forward.hidden_linear, f"{ff}.wi_1")
            else:
                links += dense_links(block.feed_forward.hidden, f"{ff}.wi")
            links += dense_links(block.feed_forward.projection, f"{ff}.wo")
            links += norm_links(block.feed_forward_norm, f"{prefix}.{feed_forward}.layer_norm")
        links += norm_links(norm, f"{side}.final_layer_norm")
    if model.lm_head is not None:
        links.append(WeightLink(model.lm_head.kernel, "lm_head.weight", "linear"))
    return links


def t5_checkpoint(model, config):
    """`(config, tensors)`: the `config.json` dict and the tensors of a T5
    (or mT5) checkpoint of `model` (a `T5Seq2Seq`), converted from one whose
    config is `config`: its output settings set to the model's."""
    arguments = model.get_config()
    config = dict(config, tie_word_embeddings=model.lm_head is None,
                  scale_decoder_outputs=bool(arguments["scale_outputs"]))
    return config, tensors_from_links(t5_weight_links(model))


def _projections(prefix):
    return tuple(f"{prefix}.{name}" for name in ("q", "k", "v", "o"))
