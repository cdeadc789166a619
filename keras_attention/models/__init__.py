"""Sequence-to-sequence model builders (functional API) with generation."""

from keras_attention.models.continuous_decoder import ContinuousDecoder
from keras_attention.models.extractive_summarizer import (
    chosen_sentences,
    extractive_summarizer,
)
from keras_attention.models.memory_network import (
    LinearStart,
    hop_attention,
    memory_network,
)
from keras_attention.models.rnn_seq2seq import RNNSeq2Seq, rnn_seq2seq
from keras_attention.models.seq2seq_model import GenerationResult, Seq2SeqModel
from keras_attention.models.transformer_config import TransformerConfig
from keras_attention.models.transformer_seq2seq import (
    TransformerSeq2Seq,
    transformer_seq2seq,
)
from keras_attention.models.universal_transformer_qa import (
    FactEncoding,
    halting_steps,
    universal_transformer_qa,
)

__all__ = [
    "ContinuousDecoder",
    "FactEncoding",
    "GenerationResult",
    "LinearStart",
    "RNNSeq2Seq",
    "Seq2SeqModel",
    "TransformerConfig",
    "TransformerSeq2Seq",
    "chosen_sentences",
    "extractive_summarizer",
    "halting_steps",
    "hop_attention",
    "memory_network",
    "rnn_seq2seq",
    "transformer_seq2seq",
    "universal_transformer_qa",
]
