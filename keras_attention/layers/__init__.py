"""Attention layers. Each name has one canonical path: `keras_attention.layers.X`."""

from keras_attention.layers.attention_rnn_decoder import AttentionRNNDecoder
from keras_attention.layers.bahdanau_attention import BahdanauAttention
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.feed_forward import FeedForward
from keras_attention.layers.luong_attention import LuongAttention
from keras_attention.layers.memory_encoding import MemoryEncoding
from keras_attention.layers.memory_hop import MemoryHop
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.pointer_generator import PointerGenerator
from keras_attention.layers.relative_position_bias import RelativePositionBias
from keras_attention.layers.scaled_dot_product_attention import (
    ScaledDotProductAttention,
)
from keras_attention.layers.self_attention import SelfAttention
from keras_attention.layers.token_and_position_embedding import (
    TokenAndPositionEmbedding,
)
from keras_attention.layers.transformer_decoder_block import (
    TransformerDecoderBlock,
)
from keras_attention.layers.transformer_encoder_block import (
    TransformerEncoderBlock,
)
from keras_attention.layers.universal_transformer import UniversalTransformerEncoder

__all__ = [
    "AttentionRNNDecoder",
    "BahdanauAttention",
    "BaseAttention",
    "FeedForward",
    "LuongAttention",
    "MemoryEncoding",
    "MemoryHop",
    "MultiHeadAttention",
    "PointerGenerator",
    "RelativePositionBias",
    "ScaledDotProductAttention",
    "SelfAttention",
    "TokenAndPositionEmbedding",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
    "UniversalTransformerEncoder",
]
