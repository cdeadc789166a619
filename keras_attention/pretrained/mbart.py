"""mBART checkpoints as `TransformerSeq2Seq`.

mBART's layers are BART's (`bart.py`), pre-norm, with a final norm closing
each stack (`model.encoder.layer_norm`, `model.decoder.layer_norm`) after
BART's learned positions and embedding norm. Conversion into run folders
(`keras-attention convert`) needs a tokenizer, which mBART has none of here:
`load_pretrained` builds the model.

>>> options = mbart_options({
...     "model_type": "mbart", "encoder_layers": 1, "decoder_layers": 1,
...     "encoder_attention_heads": 2, "decoder_attention_heads": 2,
...     "encoder_ffn_dim": 8, "decoder_ffn_dim": 8, "activation_function": "gelu",
...     "vocab_size": 10, "d_model": 4, "max_position_embeddings": 8,
...     "pad_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 2,
...     "bos_token_id": 0})
>>> options["norm_first"], options["final_norm"], options["position_offset"]
(True, True, 2)
"""

from keras_attention.pretrained.bart import (
    BartLayout,
    bart_options,
    bart_style_checkpoint,
    convert_bart_style,
)

#: mBART's layout of BART's layers.
MBART = BartLayout("mbart", norm_first=True)


def mbart_options(config):
    """The `transformer_seq2seq` arguments of an mBART `config` (a dict)."""
    return bart_options(config, MBART)


def mbart_model(config, weights):
    """A `TransformerSeq2Seq` with the weights of an mBART checkpoint
    (`config`: its `config.json` as a dict, `weights`: its arrays by name).
    The config is checked against the weights' shapes before anything is
    built; every weight is found, its shape checked and every weight of the
    checkpoint used before any is copied."""
    return convert_bart_style(config, weights, MBART)


def mbart_checkpoint(model, config):
    """`(config, tensors)`: the `config.json` dict and the tensors of a
    mbart checkpoint of `model`, converted from one whose config is `config`
    (`bart.bart_style_checkpoint`)."""
    return bart_style_checkpoint(model, config, MBART)
