"""`transformer_seq2seq`: an encoder-decoder Transformer (Vaswani et al. 2017)."""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.decoding.search import SOURCE_STATE
from keras_attention.layers import (
    PointerGenerator,
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from keras_attention.layers.transformer_block import make_norm
from keras_attention.models.decoder_caches import (
    cache_length,
    init_self_caches,
    read_self_caches,
    self_cache_bytes_per_position,
    with_self_caches,
)
from keras_attention.models.seq2seq_model import Seq2SeqModel, token_inputs
from keras_attention.models.transformer_config import TransformerConfig


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerSeq2Seq(Seq2SeqModel):
    """A Transformer encoder-decoder with cached, compiled generation.

    ```
    memory = EncoderBlock^N(Embed(encoder_token_ids))        (B, S, D)
    h      = DecoderBlock^N(Embed(decoder_token_ids), memory) (B, T, D)
    logits = h W_out + b                                      (B, T, V)
    ```

    With `pointer_generator=True` the output layer is a `PointerGenerator`
    (See et al. 2017): each step mixes generating from the vocabulary with
    copying source tokens through an additive attention with coverage, and
    the model outputs log-probabilities `(B, T, V)` (a valid input for
    `SparseCategoricalCrossentropy(from_logits=True)`, which leaves them
    unchanged); the coverage loss is added to the model's losses.

    With `norm_first=True` (pre-norm) a final layer norm follows each stack.
    `position="rotary"` encodes positions inside self-attention (RoPE);
    `"sinusoidal"` and `"learned"` add them to the embeddings. Padding
    (`pad_token_id`) is masked everywhere through Keras masks, including the
    loss of `fit`; the first decoder position is the start token, never
    padding, even where the start id is the pad id (Marian's
    `decoder_start_token_id`; `masks.decoder_token_mask`). Build it with `transformer_seq2seq(...)`.

    With `packed=True` the training graph takes packed rows (several short
    examples per row, `keras_attention.data.pack_examples`): two more inputs,
    `encoder_segment_ids (B, S)` and `decoder_segment_ids (B, T)`, number
    the examples of each row `1, 2, ...` (0 on padding, the same numbers on
    both sides). Self-attention is then block-diagonal
    (`masks.segment_mask`; causal too in the decoder), cross-attention sees
    only the source of its own example, and embedding positions restart at
    every example (`masks.segment_positions`); rotary positions need no
    restart, since a rotary score depends only on the distance between two
    tokens of the same example. Each example thus gets the logits it would
    get alone. Generation (`encode`, `decode_step`) is the same for both
    settings: one example per row. `packed` is not available with
    `pointer_generator` (its coverage adds up over a whole row).

    Args:
        config: a `TransformerConfig` (its fields are documented in
            `transformer_seq2seq`'s `Args`); or, as `get_config()` and
            `.keras` files hold them, the fields as keyword arguments (the
            vocabulary size may come first, positionally).
        **kwargs: `name`, `trainable`, `quantized_sublayers` (of a saved
            quantized model).

    Attributes:
        config: the `TransformerConfig`.
    """

    def __init__(self, config=None, /, **kwargs):
        c = config = _config_of(config, kwargs)
        # Historical epsilons when not given: the blocks' 1e-5, Keras' 1e-3
        # in the final norms.
        block_epsilon = 1e-5 if c.layer_norm_epsilon is None else c.layer_norm_epsilon
        outer_epsilon = 1e-3 if c.layer_norm_epsilon is None else c.layer_norm_epsilon
        rotary = c.position == "rotary"
        embedding_position = "none" if rotary else c.position
        block_args = dict(
            num_heads=c.num_heads,
            intermediate_dim=c.intermediate_dim,
            dropout=c.dropout,
            norm_first=c.norm_first,
            num_key_value_heads=c.num_key_value_heads,
            rotary=rotary,
            activation=c.activation,
            gated_feed_forward=c.gated_feed_forward,
            use_bias=c.use_bias,
            normalization=c.normalization,
            layer_norm_epsilon=block_epsilon,
            attention_scale=c.attention_scale,
            dtype=c.dtype,
        )
        # Layers (kept as attributes for generation).
        embedding_args = dict(
            scale_embeddings=c.scale_embeddings, position_offset=c.position_offset,
            dtype=c.dtype,
        )
        source_embedding = TokenAndPositionEmbedding(
            c.vocabulary_size, c.hidden_dim, embedding_position, c.max_length,
            c.pad_token_id, name="source_embedding", **embedding_args,
        )
        # Shared: one token table (saved once, under the source); each side
        # keeps its own positions.
        target_embedding = TokenAndPositionEmbedding(
            c.target_vocabulary_size, c.hidden_dim, embedding_position, c.max_length,
            c.pad_token_id, name="target_embedding", mask_start=False,
            token_embedding=source_embedding.token_embedding if c.share_embeddings else None,
            **embedding_args,
        )
        source_embedding_norm = target_embedding_norm = None
        if c.embedding_norm:
            source_embedding_norm = make_norm(
                c.normalization, outer_epsilon, c.dtype, "source_embedding_norm"
            )
            target_embedding_norm = make_norm(
                c.normalization, outer_epsilon, c.dtype, "target_embedding_norm"
            )
        embedding_dropout = keras.layers.Dropout(c.dropout, dtype=c.dtype)
        encoder_blocks = [
            TransformerEncoderBlock(**block_args, name=f"encoder_block_{i}")
            for i in range(c.num_layers)
        ]
        decoder_args = dict(block_args, num_heads=c.decoder_num_heads,
                            intermediate_dim=c.decoder_intermediate_dim)
        decoder_blocks = [
            TransformerDecoderBlock(**decoder_args, name=f"decoder_block_{i}")
            for i in range(c.num_decoder_layers)
        ]
        encoder_norm = decoder_norm = None
        if c.final_norm:
            encoder_norm = make_norm(c.normalization, outer_epsilon, c.dtype, "encoder_norm")
            decoder_norm = make_norm(c.normalization, outer_epsilon, c.dtype, "decoder_norm")
        # The output layer: a projection, or the copy-or-generate head.
        output_projection = copy_head = output_rescaling = None
        if c.pointer_generator:
            copy_head = PointerGenerator(
                c.target_vocabulary_size, c.hidden_dim,
                coverage_loss_weight=c.coverage_loss_weight, dtype=c.dtype,
                name="pointer_generator",
            )
        elif c.tie_embeddings:
            output_projection = TiedOutputProjection(
                target_embedding, use_bias=c.output_bias, dtype=c.dtype, name="logits"
            )
        else:
            output_projection = keras.layers.Dense(
                c.target_vocabulary_size, use_bias=c.output_bias, dtype=c.dtype, name="logits"
            )
        if c.output_scale is not None:
            output_rescaling = keras.layers.Rescaling(
                c.output_scale, dtype=c.dtype, name="output_scale"
            )

        # Functional graph.
        inputs = token_inputs()
        if c.packed:
            inputs.update(segment_inputs())
        encoder_token_ids = inputs["encoder_token_ids"]
        decoder_token_ids = inputs["decoder_token_ids"]
        packing = packed_masks(inputs) if c.packed else {}
        memory = source_embedding(
            encoder_token_ids, positions=packing.get("encoder_positions")
        )
        if source_embedding_norm is not None:
            memory = source_embedding_norm(memory)
        memory = embedding_dropout(memory)
        for block in encoder_blocks:
            memory = block(memory, attention_mask=packing.get("encoder_mask"))
        if encoder_norm is not None:
            memory = encoder_norm(memory)
        hidden = target_embedding(
            decoder_token_ids, positions=packing.get("decoder_positions")
        )
        if target_embedding_norm is not None:
            hidden = target_embedding_norm(hidden)
        hidden = embedding_dropout(hidden)
        for block in decoder_blocks:
            hidden = block(
                hidden, memory, attention_mask=packing.get("decoder_mask"),
                memory_attention_mask=packing.get("cross_mask"),
            )
        if decoder_norm is not None:
            hidden = decoder_norm(hidden)
        if output_rescaling is not None:
            hidden = output_rescaling(hidden)
        if copy_head is not None:
            logits = copy_head(
                hidden, memory, encoder_token_ids,
                memory_mask=ops.not_equal(encoder_token_ids, c.pad_token_id),
            )
        else:
            logits = keras.layers.Activation(
                "linear", dtype="float32", name="float32_logits"
            )(output_projection(hidden))
        super().__init__(
            inputs=inputs,
            outputs=logits,
            pad_token_id=c.pad_token_id,
            start_token_id=c.start_token_id,
            end_token_id=c.end_token_id,
            **kwargs,
        )
        self.source_embedding = source_embedding
        self.target_embedding = target_embedding
        self.encoder_blocks = encoder_blocks
        self.decoder_blocks = decoder_blocks
        self.encoder_norm = encoder_norm
        self.decoder_norm = decoder_norm
        self.output_projection = output_projection
        self.output_rescaling = output_rescaling
        self.source_embedding_norm = source_embedding_norm
        self.target_embedding_norm = target_embedding_norm
        self.copy_head = copy_head
        self.config = config

    @property
    def source_vocabulary_size(self):
        return self.config.vocabulary_size

    @property
    def target_vocabulary_size(self):
        return self.config.target_vocabulary_size

    # Generation hooks ----------------------------------------------------
    def encode(self, encoder_token_ids):
        memory_mask = ops.not_equal(encoder_token_ids, self.pad_token_id)
        memory = self.source_embedding(encoder_token_ids)
        if self.source_embedding_norm is not None:
            memory = self.source_embedding_norm(memory)
        for block in self.encoder_blocks:
            memory = block(memory, x_mask=memory_mask)
        if self.encoder_norm is not None:
            memory = self.encoder_norm(memory)
        if self.copy_head is not None:
            return {"memory": memory, "token_ids": encoder_token_ids}, memory_mask
        return memory, memory_mask

    def max_sequence_length(self):
        """`max_length` with learned positions; None (no limit) with
        sinusoidal or rotary ones."""
        return self.config.max_length if self.config.position == "learned" else None

    def decoder_cache_bytes_per_position(self):
        """The self-attention caches' bytes per position and row, every block."""
        return self_cache_bytes_per_position(self.decoder_blocks)

    @property
    def shares_source_across_beams(self):
        """The cross-attention caches are read once for the beams of a
        source (not with a copy head, whose state follows each row)."""
        return self.copy_head is None

    def init_decoder_state(self, memory, memory_mask, max_length, rows_per_source=1):
        source_token_ids = None
        if self.copy_head is not None:
            memory, source_token_ids = memory["memory"], memory["token_ids"]
        batch_size = ops.shape(memory)[0] * rows_per_source
        # SOURCE_STATE: computed once from the source, never reordered by
        # beams; `B` sources serve `B * rows_per_source` rows.
        source = {"cross_caches": [b.compute_cache(memory, memory_mask)
                                   for b in self.decoder_blocks]}
        state = {SOURCE_STATE: source, **init_self_caches(
            self.decoder_blocks, ops.shape(memory)[0], max_length, rows_per_source)}
        if self.copy_head is not None:
            source_cache = self.copy_head.compute_cache(memory, source_token_ids, memory_mask)
            source["copy_cache"] = source_cache
            state["coverage"] = self.copy_head.init_cache(batch_size, max_length, source_cache)
        return state

    @property
    def decodes_rows_from_any_step(self):
        """True: `decode_step` takes `row_starts` (not with a copy head,
        whose coverage assumes rows that start together)."""
        return self.copy_head is None

    def decode_step(self, token_ids, index, state, row_starts=None):
        """One step of every row: `(logits (N, V), state, attention (N, S))`.

        `row_starts`: optional int32 `(N,)`, the cache position where each
        row's sequence begins (rows that joined a running batch later,
        `ContinuousDecoder`): row `r` is then at its own position `index -
        row_starts[r]` and attends to cache positions `row_starts[r] ..
        index` only.
        """
        self_mask = None
        if row_starts is None:
            hidden = self.target_embedding(token_ids[:, None], start_index=index)
        else:
            row_starts = ops.cast(row_starts, "int32")
            hidden = self.target_embedding(token_ids[:, None],
                                           positions=(index - row_starts)[:, None])
            cache_positions = ops.arange(cache_length(state), dtype="int32")
            self_mask = (cache_positions[None, :] >= row_starts[:, None])[:, None, :]
        if self.target_embedding_norm is not None:
            hidden = self.target_embedding_norm(hidden)
        caches, ancestry = read_self_caches(state, index, token_ids.shape[0])
        self_caches = []
        for block, self_cache, cross_cache in zip(
            self.decoder_blocks, caches, state[SOURCE_STATE]["cross_caches"]
        ):
            hidden, self_cache, cross_scores = block.call_cached(
                hidden, self_cache, index, memory_cache=cross_cache, cache_ancestry=ancestry,
                self_attention_mask=self_mask,
            )
            self_caches.append(self_cache)
        if self.decoder_norm is not None:
            hidden = self.decoder_norm(hidden)
        if self.output_rescaling is not None:
            hidden = self.output_rescaling(hidden)
        state = with_self_caches(state, self_caches, ancestry)
        if self.copy_head is not None:
            log_probs, coverage, attention = self.copy_head.call_cached(
                hidden, state["coverage"], index,
                memory_cache=state[SOURCE_STATE]["copy_cache"]
            )
            return log_probs[:, 0], dict(state, coverage=coverage), attention[:, 0]
        logits = ops.cast(self.output_projection(hidden)[:, 0], "float32")
        attention = ops.mean(cross_scores[:, :, 0, :], axis=1)  # (N, S), last layer
        return logits, state, attention

    def get_config(self):
        return {**super().get_config(), **self.config.to_dict()}


def _config_of(config, kwargs):
    """The `TransformerConfig` of `TransformerSeq2Seq`'s arguments: `config`
    itself, or the fields among `kwargs` (removed from them)."""
    fields = {name: kwargs.pop(name) for name in TransformerConfig.field_names()
              if name in kwargs}
    if isinstance(config, TransformerConfig):
        if fields:
            raise ValueError(
                f"Argument `config` is a `TransformerConfig`: give the settings there, not "
                f"also as keyword arguments. Received: {', '.join(sorted(fields))}")
        return config
    if config is not None:
        if "vocabulary_size" in fields:
            raise ValueError(f"Argument `vocabulary_size` is given twice. "
                             f"Received: {config!r} and vocabulary_size="
                             f"{fields['vocabulary_size']!r}")
        fields["vocabulary_size"] = config
    if "vocabulary_size" not in fields:
        raise ValueError("Argument `config` must be a `TransformerConfig` (or the settings, "
                         "with `vocabulary_size`). Received: config=None")
    return TransformerConfig(**fields)


class TiedOutputProjection(keras.layers.Layer):
    """The output logits of tied embeddings: `h @ E^T + b` `(B, T, D) ->
    (B, T, V)`, with `E` the token table of `embedding` (a
    `TokenAndPositionEmbedding`, through its `logits`) and `b` an optional
    `(V,)` weight `final_logits_bias` (Marian's and BART's). Made by
    `TransformerSeq2Seq`, which rebuilds it from its own arguments: the
    embedding is a layer of the same model, not part of a config."""

    def __init__(self, embedding, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.embedding = embedding
        self.use_bias = use_bias
        self.supports_masking = True
        self.bias = None

    def build(self, hidden_shape):
        if self.use_bias:
            self.bias = self.add_weight(
                name="final_logits_bias", shape=(self.embedding.vocab_size,),
                initializer="zeros",
            )
        self.built = True

    def call(self, hidden):
        logits = self.embedding.logits(hidden)
        if self.bias is not None:
            logits = logits + ops.cast(self.bias, logits.dtype)
        return logits

    def compute_output_shape(self, hidden_shape):
        return tuple(hidden_shape[:-1]) + (self.embedding.vocab_size,)


def segment_inputs():
    """The inputs of a packed model's training graph: int32
    `encoder_segment_ids (B, S)` and `decoder_segment_ids (B, T)`."""
    return {
        name: keras.Input((None,), dtype="int32", name=name)
        for name in ("encoder_segment_ids", "decoder_segment_ids")
    }


def packed_masks(inputs):
    """The masks and positions of packed rows, from the segment ids of
    `inputs`: `encoder_mask (B, S, S)`, `decoder_mask (B, T, T)` (block
    diagonal; the decoder blocks add the causal mask), `cross_mask
    (B, T, S)` and `encoder_positions (B, S)`, `decoder_positions (B, T)`."""
    source, target = inputs["encoder_segment_ids"], inputs["decoder_segment_ids"]
    return {
        "encoder_mask": masks.segment_mask(source),
        "decoder_mask": masks.segment_mask(target),
        "cross_mask": masks.segment_mask(target, source),
        "encoder_positions": masks.segment_positions(source),
        "decoder_positions": masks.segment_positions(target),
    }


def transformer_seq2seq(
    vocabulary_size,
    *,
    target_vocabulary_size=None,
    num_layers=2,
    hidden_dim=256,
    num_heads=8,
    intermediate_dim=1024,
    num_decoder_layers=None,
    decoder_num_heads=None,
    decoder_intermediate_dim=None,
    dropout=0.1,
    max_length=512,
    position="sinusoidal",
    norm_first=True,
    num_key_value_heads=None,
    pointer_generator=False,
    coverage_loss_weight=1.0,
    pad_token_id=0,
    start_token_id=1,
    end_token_id=2,
    dtype=None,
    packed=False,
    activation="relu",
    gated_feed_forward=False,
    use_bias=True,
    normalization="layer_norm",
    layer_norm_epsilon=None,
    attention_scale=None,
    final_norm=None,
    embedding_norm=False,
    scale_embeddings=True,
    position_offset=0,
    share_embeddings=False,
    tie_embeddings=False,
    output_bias=True,
    output_scale=None,
    name=None,
):
    """Builds a `TransformerSeq2Seq` (a `Seq2SeqModel`).

    Args:
        vocabulary_size: positive int, the source vocabulary size (and the
            target's, by default).
        target_vocabulary_size: positive int or `None` (the same as
            `vocabulary_size`), the target vocabulary size `V`.
        num_layers: positive int, the encoder's blocks (and the decoder's,
            by default).
        hidden_dim: int, the model size `D` (divisible by `num_heads` and
            `decoder_num_heads`).
        num_heads: int, the attention heads of the encoder's blocks (and the
            decoder's, by default).
        intermediate_dim: int, the feed-forward hidden size of the encoder's
            blocks (and the decoder's, by default).
        num_decoder_layers, decoder_num_heads, decoder_intermediate_dim:
            positive int or `None` (default: the encoder's), the decoder's
            blocks, attention heads (self- and cross-attention) and
            feed-forward size: a deep encoder with a shallow decoder, as
            converted checkpoints of that shape have.
        dropout: float in [0, 1), the dropout rate everywhere.
        max_length: int, the longest source or target sequence with
            `position="learned"` (the rows of its table; longer inputs and
            `generate(..., max_length=...)` beyond it are refused); no limit
            with sinusoidal or rotary positions, which need no table.
        position: `"sinusoidal"`, `"sinusoidal_halves"` (Marian's layout:
            sines in the first half of the features, cosines in the
            second), `"sinusoidal_fairseq"` (M2M100's and NLLB's, with
            `position_offset=pad_token_id + 1`), `"learned"` or `"rotary"`.
        norm_first: bool, pre-norm (default) or post-norm blocks.
        num_key_value_heads: int or `None`; grouped-query attention in every
            block (`None`: one key/value head per query head).
        pointer_generator: bool; a `PointerGenerator` output layer (copy
            attention with coverage) in place of the output projection: the
            model outputs log-probabilities. Needs one shared vocabulary.
        coverage_loss_weight: float >= 0, the weight of the coverage loss
            (with `pointer_generator=True`).
        pad_token_id, start_token_id, end_token_id: int, the special tokens,
            kept in the config so that `generate` needs none.
        dtype: `None`, a dtype or a `keras.DTypePolicy` name such as
            `"mixed_bfloat16"`, for every layer.
        packed: bool; the training graph takes packed rows, with two more
            inputs `encoder_segment_ids (B, S)` and `decoder_segment_ids
            (B, T)` (see `TransformerSeq2Seq`; not with
            `pointer_generator`). Generation is unchanged.
        activation: the feed-forward activation of every block (default
            `"relu"`; `"gelu"` (exact), `"gelu_approximate"` (tanh form),
            `"swish"` / `"silu"`, any Keras activation).
        gated_feed_forward: bool (default False), gated feed-forwards
            `W_2 (act(W_1 x) * (V x))` (GEGLU / SwiGLU, T5 v1.1).
        use_bias: bool (default True), biases in every attention and
            feed-forward projection (T5: False).
        normalization: `"layer_norm"` (default) or `"rms_norm"` (T5), every
            normalization of the model.
        layer_norm_epsilon: float or `None`, the epsilon of every
            normalization; `None` keeps the historical values (`1e-5` in
            the blocks, `1e-3` in the final and embedding norms).
        attention_scale: `None` (`1 / sqrt(head_size)`) or a positive float,
            the factor of every attention's logits (T5: `1.0`).
        final_norm: bool or `None`; a normalization after the last encoder
            block and after the last decoder block (T5, mBART). `None`
            (default): as `norm_first`.
        embedding_norm: bool (default False), a normalization of the
            embeddings (tokens plus positions) of each side before the first
            block (BART's `layernorm_embedding`).
        scale_embeddings: bool (default True), multiply the token
            embeddings by `sqrt(hidden_dim)` (Marian; BART's
            `scale_embedding`).
        position_offset: int >= 0 (default 0), added to every position
            before it is encoded (BART's learned positions: 2; the table has
            `max_length + position_offset` rows).
        share_embeddings: bool (default False), one token table for the
            source and the target (needs one vocabulary).
        tie_embeddings: bool (default False), the output logits are
            `h @ E^T` with `E` the target token table, in place of a separate
            projection (not with `pointer_generator`).
        output_bias: bool (default True), a bias on the output logits (the
            projection's, or with `tie_embeddings` a `(V,)` weight
            `final_logits_bias`, Marian's and BART's).
        output_scale: `None` or a positive float multiplying the final
            decoder states before the output projection (T5 with tied
            embeddings: `hidden_dim ** -0.5`).
        name: str or `None`, the model's name.

    Returns:
        A `TransformerSeq2Seq` with inputs `encoder_token_ids (B, S)` and
        `decoder_token_ids (B, T)` (plus the segment ids when `packed`) and
        float32 logits `(B, T, V)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import transformer_seq2seq
    >>> model = transformer_seq2seq(20, num_layers=1, hidden_dim=16,
    ...                             num_heads=2, intermediate_dim=32)
    >>> logits = model({"encoder_token_ids": np.array([[5, 6, 0]]),
    ...                 "decoder_token_ids": np.array([[1, 7]])})
    >>> tuple(logits.shape)
    (1, 2, 20)
    >>> model.generate(np.array([[5, 6, 0]]), max_length=4).shape
    (1, 4)
    """
    settings = dict(locals())  # the keyword arguments: the signature is the config's fields
    name = settings.pop("name")
    return TransformerSeq2Seq(TransformerConfig(**settings), name=name)
