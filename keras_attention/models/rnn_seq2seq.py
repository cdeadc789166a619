"""`rnn_seq2seq`: a recurrent encoder-decoder with Bahdanau or Luong attention."""

import keras
from keras import ops

from keras_attention.decoding.search import SOURCE_STATE
from keras_attention.layers import (
    AttentionRNNDecoder,
    BahdanauAttention,
    LuongAttention,
    TokenAndPositionEmbedding,
)
from keras_attention.models.seq2seq_model import Seq2SeqModel, token_inputs
from keras_attention.validation import check_choice, check_positive_int, check_rate

ATTENTIONS = ("bahdanau", "luong_dot", "luong_general", "luong_concat")
CELLS = ("gru", "lstm")


def make_attention(name, units, dtype=None):
    """The attention layer named by `rnn_seq2seq(attention=...)`."""
    if name == "bahdanau":
        return BahdanauAttention(units, dtype=dtype, name="attention")
    score = name.split("_", 1)[1]
    return LuongAttention(
        score, units=units if score == "concat" else None, dtype=dtype, name="attention"
    )


@keras.saving.register_keras_serializable(package="keras_attention")
class RNNSeq2Seq(Seq2SeqModel):
    """A bidirectional RNN encoder and an attentional RNN decoder.

    ```
    memory, (h_fwd, h_bwd) = BiRNN(Embed(encoder_token_ids))   (B, S, units)
    s_0   = tanh(W_init [h_fwd; h_bwd])                        (B, units)
    a_t   = AttentionRNNDecoder(Embed(decoder_token_ids), memory, s_0)
    logits = a_t W_out + b                                     (B, T, V)
    ```

    The decoder is keras_attention's `AttentionRNNDecoder` (input feeding,
    `tanh(W_c [c_t; h_t])` attentional states) with a `BahdanauAttention` or
    a `LuongAttention` (dot, general or concat). Build it with
    `rnn_seq2seq(...)`.

    Args: see `rnn_seq2seq`.
    """

    def __init__(
        self,
        vocabulary_size,
        target_vocabulary_size=None,
        embedding_dim=128,
        units=256,
        attention="bahdanau",
        cell="gru",
        input_feeding=True,
        dropout=0.0,
        pad_token_id=0,
        start_token_id=1,
        end_token_id=2,
        dtype=None,
        **kwargs,
    ):
        vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        target_vocabulary_size = check_positive_int(
            "target_vocabulary_size", target_vocabulary_size or vocabulary_size
        )
        embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        units = check_positive_int("units", units)
        if units % 2:
            raise ValueError(
                "Argument `units` must be even (the bidirectional encoder has "
                f"units / 2 per direction). Received: units={units}"
            )
        attention = check_choice("attention", attention, ATTENTIONS)
        cell = check_choice("cell", cell, CELLS)
        dropout = check_rate("dropout", dropout)
        rnn = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
        num_states = 1 if cell == "gru" else 2

        # Embeddings without position encodings; their Keras masks (token !=
        # pad) reach the encoder, the decoder, the logits and the loss.
        source_embedding, target_embedding = (
            TokenAndPositionEmbedding(
                size, embedding_dim, position="none", pad_token_id=pad_token_id,
                dtype=dtype, name=name,
            )
            for size, name in (
                (vocabulary_size, "source_embedding"),
                (target_vocabulary_size, "target_embedding"),
            )
        )
        encoder = keras.layers.Bidirectional(
            rnn(units // 2, return_sequences=True, return_state=True, dropout=dropout,
                dtype=dtype),
            dtype=dtype,
            name="encoder",
        )
        bridges = [
            keras.layers.Dense(units, activation="tanh", dtype=dtype, name=f"bridge_{i}")
            for i in range(num_states)
        ]
        decoder = AttentionRNNDecoder(
            units, make_attention(attention, units, dtype), cell=cell,
            input_feeding=input_feeding, dropout=dropout, dtype=dtype, name="decoder",
        )
        output_projection = keras.layers.Dense(
            target_vocabulary_size, dtype=dtype, name="logits"
        )

        inputs = token_inputs()
        encoder_token_ids = inputs["encoder_token_ids"]
        decoder_token_ids = inputs["decoder_token_ids"]
        embedded_source = source_embedding(encoder_token_ids)
        memory, *final_states = encoder(embedded_source)
        initial_state = self._bridge(bridges, final_states, num_states)
        outputs = decoder(
            target_embedding(decoder_token_ids), memory,
            memory_mask=ops.not_equal(encoder_token_ids, pad_token_id),
            initial_state=initial_state,
        )
        logits = output_projection(outputs)
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
        self.encoder = encoder
        self.bridges = bridges
        self.decoder = decoder
        self.output_projection = output_projection
        self._num_states = num_states
        self._arguments = dict(
            vocabulary_size=vocabulary_size,
            target_vocabulary_size=target_vocabulary_size,
            embedding_dim=embedding_dim,
            units=units,
            attention=attention,
            cell=cell,
            input_feeding=input_feeding,
            dropout=dropout,
            dtype=dtype,
        )

    @staticmethod
    def _bridge(bridges, final_states, num_states):
        """Decoder start states from the encoder's final states: forward and
        backward states concatenated, then `tanh(W [fwd; bwd])`."""
        forward, backward = final_states[:num_states], final_states[num_states:]
        return [
            bridge(ops.concatenate([f, b], axis=-1))
            for bridge, f, b in zip(bridges, forward, backward)
        ]

    @property
    def source_vocabulary_size(self):
        return self._arguments["vocabulary_size"]

    @property
    def target_vocabulary_size(self):
        return self._arguments["target_vocabulary_size"]

    # Generation hooks ----------------------------------------------------
    def encode(self, encoder_token_ids):
        memory_mask = ops.not_equal(encoder_token_ids, self.pad_token_id)
        memory, *final_states = self.encoder(
            self.source_embedding(encoder_token_ids), mask=memory_mask
        )
        initial_state = self._bridge(self.bridges, final_states, self._num_states)
        return {"memory": memory, "initial_state": initial_state}, memory_mask

    def init_decoder_state(self, memory, memory_mask, max_length):
        batch_size = ops.shape(memory["memory"])[0]
        return {
            SOURCE_STATE: self.decoder.compute_cache(memory["memory"], memory_mask),
            "rnn_state": self.decoder.init_cache(
                batch_size, max_length, initial_state=memory["initial_state"]
            ),
        }

    def decode_step(self, token_ids, index, state):
        inputs = self.target_embedding(token_ids[:, None])  # (N, 1, E)
        outputs, rnn_state, alignments = self.decoder.call_cached(
            inputs, state["rnn_state"], index, memory_cache=state[SOURCE_STATE]
        )
        logits = ops.cast(self.output_projection(outputs[:, 0]), "float32")
        return logits, dict(state, rnn_state=tuple(rnn_state)), alignments[:, 0]

    def get_config(self):
        return {**super().get_config(), **self._arguments}


def rnn_seq2seq(
    vocabulary_size,
    *,
    target_vocabulary_size=None,
    embedding_dim=128,
    units=256,
    attention="bahdanau",
    cell="gru",
    input_feeding=True,
    dropout=0.0,
    pad_token_id=0,
    start_token_id=1,
    end_token_id=2,
    dtype=None,
    name=None,
):
    """Builds an `RNNSeq2Seq` (a `Seq2SeqModel`).

    Args:
        vocabulary_size: positive int, the source vocabulary size (and the
            target's, by default).
        target_vocabulary_size: positive int or `None` (the same as
            `vocabulary_size`), the target vocabulary size `V`.
        embedding_dim: positive int, the token embedding size.
        units: positive even int, the decoder size; the bidirectional
            encoder has `units / 2` per direction, so the memory has `units`
            features.
        attention: `"bahdanau"`, `"luong_dot"`, `"luong_general"` or
            `"luong_concat"`.
        cell: `"gru"` or `"lstm"`.
        input_feeding: bool, feed the previous attentional state to the cell.
        dropout: float in [0, 1), the dropout rate.
        pad_token_id, start_token_id, end_token_id: int, the special tokens,
            kept in the config so that `generate` needs none.
        dtype: `None`, a dtype or a `keras.DTypePolicy` name such as
            `"mixed_bfloat16"`, for every layer.
        name: str or `None`, the model's name.

    Returns:
        An `RNNSeq2Seq` with inputs `encoder_token_ids (B, S)` and
        `decoder_token_ids (B, T)` and logits `(B, T, V)`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import rnn_seq2seq
    >>> model = rnn_seq2seq(20, embedding_dim=8, units=16, attention="luong_general")
    >>> logits = model({"encoder_token_ids": np.array([[5, 6, 0]]),
    ...                 "decoder_token_ids": np.array([[1, 7]])})
    >>> tuple(logits.shape)
    (1, 2, 20)
    >>> model.generate(np.array([[5, 6, 0]]), max_length=3).shape
    (1, 3)
    """
    return RNNSeq2Seq(
        vocabulary_size,
        target_vocabulary_size=target_vocabulary_size,
        embedding_dim=embedding_dim,
        units=units,
        attention=attention,
        cell=cell,
        input_feeding=input_feeding,
        dropout=dropout,
        pad_token_id=pad_token_id,
        start_token_id=start_token_id,
        end_token_id=end_token_id,
        dtype=dtype,
        name=name,
    )
