"""Sequence-to-sequence model builders (functional API) with generation."""

from keras_attention.models.seq2seq_model import GenerationResult, Seq2SeqModel
from keras_attention.models.transformer_seq2seq import (
    TransformerSeq2Seq,
    transformer_seq2seq,
)

__all__ = [
    "GenerationResult",
    "Seq2SeqModel",
    "TransformerSeq2Seq",
    "transformer_seq2seq",
]
