"""Pretrained Hugging Face checkpoints on our blocks, in and out (the families of
`families.FAMILIES`: Marian, BART, mBART, Pegasus, M2M100/NLLB, T5, mT5).

`load_pretrained(folder)` reads a local checkpoint folder (`config.json`,
`model.safetensors`, `generation_config.json`) and returns a
`TransformerSeq2Seq` with its weights and the settings to generate with;
`save_pretrained(model, folder, family=..., config=...)` writes such a model
(fine-tuned or not) back as a checkpoint folder `transformers` loads;
`generation_settings` reads a checkpoint's `generation_config.json` as
`Seq2SeqModel.generate` arguments; `tokenizers` holds the checkpoints'
tokenizers.
"""

from keras_attention.pretrained.generation_json import generation_settings
from keras_attention.pretrained.loading import load_pretrained
from keras_attention.pretrained.saving import save_pretrained

__all__ = ["generation_settings", "load_pretrained", "save_pretrained"]
