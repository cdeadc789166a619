"""M2M100 and NLLB checkpoints as `TransformerSeq2Seq`.

M2M100's layers are BART's (`bart.py`), pre-norm with a final norm closing
each stack (`model.encoder.layer_norm`, `model.decoder.layer_norm`), as
mBART's and Pegasus's, with fairseq's sinusoidal positions (sines in the first
half of each row, cosines in the second, frequencies of `d_model // 2 - 1`
steps), counted from `pad_token_id + 1`, and neither an embedding norm nor
`final_logits_bias`. NLLB's dense checkpoints are M2M100's
(`model_type: m2m_100`). The position table is computed, never saved. Their
tokenizers (SentencePiece with language codes) are not read here:
`load_pretrained` builds the model, whose `generate` takes the target
language as `forced_bos_token_id` (the checkpoint's generation config, or an
argument), and `keras-attention convert` refuses them naming it.

>>> options = m2m100_options({
...     "model_type": "m2m_100", "encoder_layers": 12, "decoder_layers": 12,
...     "encoder_attention_heads": 16, "decoder_attention_heads": 16,
...     "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "activation_function": "relu",
...     "vocab_size": 128112, "d_model": 1024, "max_position_embeddings": 1024,
...     "scale_embedding": True, "pad_token_id": 1, "eos_token_id": 2, "bos_token_id": 0,
...     "decoder_start_token_id": 2})
>>> options["position"], options["position_offset"], options["output_bias"]
('sinusoidal_fairseq', 2, False)
"""

from keras_attention.pretrained.bart import (
    ACTIVATIONS,
    BartLayout,
    bart_options,
    bart_style_checkpoint,
    convert_bart_style,
)

#: M2M100's layout of BART's layers.
M2M100 = BartLayout("m2m_100", position="sinusoidal_fairseq", norm_first=True,
                    embedding_norm=False, positions_after_pad=True, output_bias=False)


def m2m100_options(config):
    """The `transformer_seq2seq` arguments of an M2M100 `config` (a dict)."""
    return bart_options(config, M2M100)


def m2m100_model(config, weights):
    """A `TransformerSeq2Seq` with the weights of an M2M100 (or NLLB)
    checkpoint (`config`: its `config.json` as a dict, `weights`: its arrays
    by name). The config is checked against the weights' shapes before
    anything is built; every weight is found, its shape checked and every
    weight of the checkpoint used before any is copied."""
    return convert_bart_style(config, weights, M2M100)


def m2m100_checkpoint(model, config):
    """`(config, tensors)`: the `config.json` dict and the tensors of a
    m2m_100 checkpoint of `model`, converted from one whose config is `config`
    (`bart.bart_style_checkpoint`)."""
    return bart_style_checkpoint(model, config, M2M100)


def m2m100_config(model):
    """The `config.json` dict of the M2M100 checkpoint that computes `model`,
    a `TransformerSeq2Seq` trained here (pre-norm blocks with final norms,
    fairseq's sinusoidal positions after the pad id, one token table): the
    inverse of `m2m100_options`. Whether the model is one M2M100 computes is
    checked by converting the checkpoint back (`saving.check_converts_back`
    names the first setting that differs)."""
    c = model.config
    activation = next((name for name, ours in ACTIVATIONS.items() if ours == c.activation),
                      c.activation)
    return {
        "model_type": M2M100.model_type, "is_encoder_decoder": True,
        "vocab_size": c.vocabulary_size, "d_model": c.hidden_dim,
        "encoder_layers": c.num_layers, "decoder_layers": c.num_decoder_layers,
        "encoder_attention_heads": c.num_heads, "decoder_attention_heads": c.decoder_num_heads,
        "encoder_ffn_dim": c.intermediate_dim, "decoder_ffn_dim": c.decoder_intermediate_dim,
        "activation_function": activation, "max_position_embeddings": c.max_length,
        "scale_embedding": c.scale_embeddings, "tie_word_embeddings": c.tie_embeddings,
        "pad_token_id": c.pad_token_id, "bos_token_id": c.start_token_id,
        "eos_token_id": c.end_token_id, "decoder_start_token_id": c.start_token_id,
        "dropout": c.dropout, "attention_dropout": 0.0, "activation_dropout": 0.0,
        "encoder_layerdrop": 0.0, "decoder_layerdrop": 0.0, "use_cache": True,
    }
