"""`transformer_seq2seq`: an encoder-decoder Transformer (Vaswani et al. 2017)."""

import math

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers import (
    PointerGenerator,
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from keras_attention.models.seq2seq_model import Seq2SeqModel, token_inputs
from keras_attention.validation import check_bool, check_choice, check_positive_int

POSITIONS = ("sinusoidal", "learned", "rotary")


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
    loss of `fit`. Build it with `transformer_seq2seq(...)`.

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

    Args: see `transformer_seq2seq`.
    """

    def __init__(
        self,
        vocabulary_size,
        target_vocabulary_size=None,
        num_layers=2,
        hidden_dim=256,
        num_heads=8,
        intermediate_dim=1024,
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
        **kwargs,
    ):
        vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        packed = check_bool("packed", packed)
        target_vocabulary_size = check_positive_int(
            "target_vocabulary_size", target_vocabulary_size or vocabulary_size
        )
        num_layers = check_positive_int("num_layers", num_layers)
        position = check_choice("position", position, POSITIONS)
        pointer_generator = check_bool("pointer_generator", pointer_generator)
        if pointer_generator and target_vocabulary_size != vocabulary_size:
            raise ValueError(
                "`pointer_generator=True` copies source tokens by id, so the "
                "source and target vocabularies must be the same. Received: "
                f"vocabulary_size={vocabulary_size}, "
                f"target_vocabulary_size={target_vocabulary_size}"
            )
        if packed and pointer_generator:
            raise ValueError(
                "`packed=True` is not available with `pointer_generator=True`: "
                "the copy head's coverage adds up over a whole row, across "
                f"examples. Received: packed={packed}, "
                f"pointer_generator={pointer_generator}"
            )
        rotary = position == "rotary"
        embedding_position = "none" if rotary else position
        block_args = dict(
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            norm_first=norm_first,
            num_key_value_heads=num_key_value_heads,
            rotary=rotary,
            dtype=dtype,
        )
        # Layers (kept as attributes for generation).
        source_embedding = TokenAndPositionEmbedding(
            vocabulary_size, hidden_dim, embedding_position, max_length,
            pad_token_id, dtype=dtype, name="source_embedding",
        )
        target_embedding = TokenAndPositionEmbedding(
            target_vocabulary_size, hidden_dim, embedding_position, max_length,
            pad_token_id, dtype=dtype, name="target_embedding",
        )
        embedding_dropout = keras.layers.Dropout(dropout, dtype=dtype)
        encoder_blocks = [
            TransformerEncoderBlock(**block_args, name=f"encoder_block_{i}")
            for i in range(num_layers)
        ]
        decoder_blocks = [
            TransformerDecoderBlock(**block_args, name=f"decoder_block_{i}")
            for i in range(num_layers)
        ]
        encoder_norm = decoder_norm = None
        if norm_first:
            encoder_norm = keras.layers.LayerNormalization(dtype=dtype, name="encoder_norm")
            decoder_norm = keras.layers.LayerNormalization(dtype=dtype, name="decoder_norm")
        # The output layer: a projection, or the copy-or-generate head.
        output_projection = copy_head = None
        if pointer_generator:
            copy_head = PointerGenerator(
                target_vocabulary_size, hidden_dim,
                coverage_loss_weight=coverage_loss_weight, dtype=dtype,
                name="pointer_generator",
            )
        else:
            output_projection = keras.layers.Dense(
                target_vocabulary_size, dtype=dtype, name="logits"
            )

        # Functional graph.
        inputs = token_inputs()
        if packed:
            inputs.update(segment_inputs())
        encoder_token_ids = inputs["encoder_token_ids"]
        decoder_token_ids = inputs["decoder_token_ids"]
        packing = packed_masks(inputs) if packed else {}
        memory = embedding_dropout(
            source_embedding(encoder_token_ids, positions=packing.get("encoder_positions"))
        )
        for block in encoder_blocks:
            memory = block(memory, attention_mask=packing.get("encoder_mask"))
        if encoder_norm is not None:
            memory = encoder_norm(memory)
        hidden = embedding_dropout(
            target_embedding(decoder_token_ids, positions=packing.get("decoder_positions"))
        )
        for block in decoder_blocks:
            hidden = block(
                hidden, memory, attention_mask=packing.get("decoder_mask"),
                memory_attention_mask=packing.get("cross_mask"),
            )
        if decoder_norm is not None:
            hidden = decoder_norm(hidden)
        if copy_head is not None:
            logits = copy_head(
                hidden, memory, encoder_token_ids,
                memory_mask=ops.not_equal(encoder_token_ids, pad_token_id),
            )
        else:
            logits = keras.layers.Activation(
                "linear", dtype="float32", name="float32_logits"
            )(output_projection(hidden))
        super().__init__(
            inputs=inputs,
            outputs=logits,
            pad_token_id=pad_token_id,
            start_token_id=start_token_id,
            end_token_id=end_token_id,
            **kwargs,
        )
        self.source_embedding = source_embedding
        self.target_embedding = target_embedding
        self.encoder_blocks = encoder_blocks
        self.decoder_blocks = decoder_blocks
        self.encoder_norm = encoder_norm
        self.decoder_norm = decoder_norm
        self.output_projection = output_projection
        self.copy_head = copy_head
        self._arguments = dict(
            vocabulary_size=vocabulary_size,
            target_vocabulary_size=target_vocabulary_size,
            num_layers=num_layers,
            hidden_dim=hidden_dim,
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            max_length=max_length,
            position=position,
            norm_first=norm_first,
            num_key_value_heads=num_key_value_heads,
            pointer_generator=pointer_generator,
            coverage_loss_weight=coverage_loss_weight,
            dtype=dtype,
            packed=packed,
        )

    @property
    def source_vocabulary_size(self):
        return self._arguments["vocabulary_size"]

    @property
    def target_vocabulary_size(self):
        return self._arguments["target_vocabulary_size"]

    # Generation hooks ----------------------------------------------------
    def encode(self, encoder_token_ids):
        memory_mask = ops.not_equal(encoder_token_ids, self.pad_token_id)
        memory = self.source_embedding(encoder_token_ids)
        for block in self.encoder_blocks:
            memory = block(memory, x_mask=memory_mask)
        if self.encoder_norm is not None:
            memory = self.encoder_norm(memory)
        if self.copy_head is not None:
            return {"memory": memory, "token_ids": encoder_token_ids}, memory_mask
        return memory, memory_mask

    def decoder_cache_bytes_per_position(self):
        """The self-attention caches' bytes per position and row, every block."""
        total = 0
        for block in self.decoder_blocks:
            for part in block.init_cache(1, 1):
                bits = int("".join(filter(str.isdigit, keras.backend.standardize_dtype(
                    part.dtype))) or 32)
                total += math.prod(part.shape) * bits // 8
        return total

    def init_decoder_state(self, memory, memory_mask, max_length):
        source_token_ids = None
        if self.copy_head is not None:
            memory, source_token_ids = memory["memory"], memory["token_ids"]
        batch_size = ops.shape(memory)[0]
        state = {
            "self_caches": [b.init_cache(batch_size, max_length) for b in self.decoder_blocks],
            "cross_caches": [b.compute_cache(memory, memory_mask) for b in self.decoder_blocks],
        }
        if self.copy_head is not None:
            source_cache = self.copy_head.compute_cache(memory, source_token_ids, memory_mask)
            state["source_cache"] = source_cache
            state["coverage"] = self.copy_head.init_cache(batch_size, max_length, source_cache)
        return state

    def decode_step(self, token_ids, index, state):
        hidden = self.target_embedding(token_ids[:, None], start_index=index)
        self_caches = []
        for block, self_cache, cross_cache in zip(
            self.decoder_blocks, state["self_caches"], state["cross_caches"]
        ):
            hidden, self_cache, cross_scores = block.call_cached(
                hidden, self_cache, index, memory_cache=cross_cache
            )
            self_caches.append(self_cache)
        if self.decoder_norm is not None:
            hidden = self.decoder_norm(hidden)
        state = dict(state, self_caches=self_caches)
        if self.copy_head is not None:
            log_probs, coverage, attention = self.copy_head.call_cached(
                hidden, state["coverage"], index, memory_cache=state["source_cache"]
            )
            return log_probs[:, 0], dict(state, coverage=coverage), attention[:, 0]
        logits = ops.cast(self.output_projection(hidden)[:, 0], "float32")
        attention = ops.mean(cross_scores[:, :, 0, :], axis=1)  # (N, S), last layer
        return logits, state, attention

    def get_config(self):
        return {**super().get_config(), **self._arguments}


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
    name=None,
):
    """Builds a `TransformerSeq2Seq` (a `Seq2SeqModel`).

    Args:
        vocabulary_size: positive int, the source vocabulary size (and the
            target's, by default).
        target_vocabulary_size: positive int or `None` (the same as
            `vocabulary_size`), the target vocabulary size `V`.
        num_layers: positive int, encoder and decoder blocks each.
        hidden_dim: int, the model size `D` (divisible by `num_heads`).
        num_heads: int, attention heads.
        intermediate_dim: int, the feed-forward hidden size.
        dropout: float in [0, 1), the dropout rate everywhere.
        max_length: int, the longest sequence (rows of learned positions).
        position: `"sinusoidal"`, `"learned"` or `"rotary"`.
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
    return TransformerSeq2Seq(
        vocabulary_size,
        target_vocabulary_size=target_vocabulary_size,
        num_layers=num_layers,
        hidden_dim=hidden_dim,
        num_heads=num_heads,
        intermediate_dim=intermediate_dim,
        dropout=dropout,
        max_length=max_length,
        position=position,
        norm_first=norm_first,
        num_key_value_heads=num_key_value_heads,
        pointer_generator=pointer_generator,
        coverage_loss_weight=coverage_loss_weight,
        pad_token_id=pad_token_id,
        start_token_id=start_token_id,
        end_token_id=end_token_id,
        dtype=dtype,
        packed=packed,
        name=name,
    )
