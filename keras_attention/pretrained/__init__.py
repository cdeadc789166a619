"""Pretrained Hugging Face checkpoints (Marian, BART, T5) on our blocks.

`generation_settings` reads a checkpoint's `generation_config.json` as
`Seq2SeqModel.generate` arguments; `tokenizers` holds the checkpoints'
tokenizers.
"""

from keras_attention.pretrained.generation_config import generation_settings

__all__ = ["generation_settings"]
