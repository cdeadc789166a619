"""Pegasus checkpoints as `TransformerSeq2Seq`.

Pegasus's layers are BART's (`bart.py`), pre-norm with a final norm closing
each stack (`model.encoder.layer_norm`, `model.decoder.layer_norm`), as
mBART's, but with Marian's positions: sinusoidal, sines in the first half of
each row and cosines in the second, offset 0 (a saved table must be the one
we compute), and no embedding norm. Its tokenizer (SentencePiece with 103
reserved ids before the pieces) is not read here: `load_pretrained` builds
the model, and `keras-attention convert` refuses Pegasus naming it.

>>> options = pegasus_options({
...     "model_type": "pegasus", "encoder_layers": 16, "decoder_layers": 16,
...     "encoder_attention_heads": 16, "decoder_attention_heads": 16,
...     "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "activation_function": "relu",
...     "vocab_size": 96103, "d_model": 1024, "max_position_embeddings": 1024,
...     "scale_embedding": True, "pad_token_id": 0, "eos_token_id": 1,
...     "decoder_start_token_id": 0})
>>> options["position"], options["norm_first"], options["final_norm"], options["embedding_norm"]
('sinusoidal_halves', True, True, False)
"""

from keras_attention.pretrained.bart import (
    BartLayout,
    bart_options,
    bart_style_checkpoint,
    convert_bart_style,
)

#: Pegasus's layout of BART's layers.
PEGASUS = BartLayout("pegasus", position="sinusoidal_halves", norm_first=True,
                     embedding_norm=False, saves_positions=True)


def pegasus_options(config):
    """The `transformer_seq2seq` arguments of a Pegasus `config` (a dict)."""
    return bart_options(config, PEGASUS)


def pegasus_model(config, weights):
    """A `TransformerSeq2Seq` with the weights of a Pegasus checkpoint
    (`config`: its `config.json` as a dict, `weights`: its arrays by name).
    The config is checked against the weights' shapes before anything is
    built; every weight is found, its shape checked, a saved position table
    compared with ours and every weight of the checkpoint used before any is
    copied."""
    return convert_bart_style(config, weights, PEGASUS)


def pegasus_checkpoint(model, config):
    """`(config, tensors)`: the `config.json` dict and the tensors of a
    pegasus checkpoint of `model`, converted from one whose config is `config`
    (`bart.bart_style_checkpoint`)."""
    return bart_style_checkpoint(model, config, PEGASUS)
