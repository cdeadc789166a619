"""mT5 checkpoints as a `T5Seq2Seq`.

mT5 is T5 v1.1 trained on many languages (`model_type: "mt5"`,
`MT5ForConditionalGeneration`): the same layers and weight names (gated GELU,
its own `lm_head`, relative position buckets), a 250k-piece SentencePiece
vocabulary with T5's 100 sentinels after it, read by `tokenizers.T5Tokenizer`
(`spiece.model` or `tokenizer.json`). `t5.py` holds the mapping.

>>> from keras_attention.pretrained.t5 import t5_options
>>> options = t5_options({
...     "model_type": "mt5", "feed_forward_proj": "gated-gelu", "vocab_size": 250112,
...     "num_layers": 8, "num_decoder_layers": 8, "d_model": 512, "d_kv": 64,
...     "num_heads": 6, "d_ff": 1024, "tie_word_embeddings": False,
...     "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0}, "mt5")
>>> options["gated_feed_forward"], options["scale_outputs"]
(True, False)
"""

from keras_attention.pretrained.t5 import t5_checkpoint, t5_style_model


def mt5_model(config, weights):
    """A `T5Seq2Seq` with the weights of an mT5 checkpoint (`config`: its
    `config.json` as a dict, `weights`: its arrays by name), checked as a T5
    checkpoint is (`t5.t5_model`)."""
    return t5_style_model(config, weights, "mt5")


def mt5_checkpoint(model, config):
    """`(config, tensors)` of an mT5 checkpoint of `model`, as T5's
    (`t5.t5_checkpoint`)."""
    return t5_checkpoint(model, config)
