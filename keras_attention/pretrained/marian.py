"""Marian (OPUS-MT) checkpoints as `TransformerSeq2Seq`.

Marian's layers are BART's (`bart.py`): post-norm blocks, but positions
that are sinusoidal (sines in the first half of each row, cosines in the
second, offset 0), no embedding norm, and a decoder that may have a
vocabulary of its own (`share_encoder_decoder_embeddings: false`,
`decoder_vocab_size`). Its tokenizer is `tokenizers.MarianTokenizer`.

>>> options = marian_options({
...     "model_type": "marian", "encoder_layers": 6, "decoder_layers": 6,
...     "encoder_attention_heads": 8, "decoder_attention_heads": 8,
...     "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "activation_function": "swish",
...     "vocab_size": 58101, "d_model": 512, "max_position_embeddings": 512,
...     "scale_embedding": True, "pad_token_id": 58100, "eos_token_id": 0,
...     "decoder_start_token_id": 58100})
>>> options["position"], options["norm_first"], options["start_token_id"]
('sinusoidal_halves', False, 1)
"""

from keras_attention.pretrained.bart import (
    BartLayout,
    bart_options,
    bart_style_checkpoint,
    convert_bart_style,
)

#: Marian's layout of BART's layers.
MARIAN = BartLayout("marian", position="sinusoidal_halves", embedding_norm=False,
                    target_vocabulary=True)


def marian_options(config):
    """The `transformer_seq2seq` arguments of a Marian `config` (a dict)."""
    return bart_options(config, MARIAN)


def marian_model(config, weights):
    """A `TransformerSeq2Seq` with the weights of a Marian checkpoint
    (`config`: its `config.json` as a dict, `weights`: its arrays by name).
    The config is checked against the weights' shapes before anything is
    built; every weight is found, its shape checked, a saved position table
    compared with ours and every weight of the checkpoint used before any is
    copied."""
    return convert_bart_style(config, weights, MARIAN)


def marian_checkpoint(model, config):
    """`(config, tensors)`: the `config.json` dict and the tensors of a
    marian checkpoint of `model`, converted from one whose config is `config`
    (`bart.bart_style_checkpoint`)."""
    return bart_style_checkpoint(model, config, MARIAN)
