"""`load_pretrained`: a local Hugging Face checkpoint folder as a model.

```python
model, info = load_pretrained("opus-mt-en-de")   # a folder you have
token_ids = model.generate(source_ids, **info["generation"])
```

Supported: the families of `families.FAMILIES`: `MarianMTModel` (OPUS-MT),
`BartForConditionalGeneration`, `MBartForConditionalGeneration`,
`T5ForConditionalGeneration` (v1.0, v1.1, flan-T5). Another architecture, a config value our
blocks cannot express, a missing weight or one of another shape is an error
naming it, raised before any weight is copied. Nothing is downloaded.
"""

import os

from keras_attention.pretrained.checkpoint import (
    GENERATION_CONFIG_FILE,
    read_config,
    read_weights,
)
from keras_attention.pretrained.families import family_of
from keras_attention.pretrained.generation_json import generation_settings


def load_pretrained(folder):
    """Builds the `TransformerSeq2Seq` of a local Hugging Face checkpoint.

    Args:
        folder: a folder written by `transformers`' `save_pretrained` (or
            downloaded by you): `config.json`, `model.safetensors` (or
            its shards; `pytorch_model.bin` only with torch installed) and
            optionally `generation_config.json`.

    Returns:
        `(model, info)`: the model (float32, dropout 0) and a dict with
        `family` (the `model_type`: `"marian"`, `"bart"`, `"mbart"` or `"t5"`), `config` (the
        `config.json` dict) and `generation` (the `generate` keyword
        arguments of the checkpoint's generation config, always with its
        `decoder_start_token_id`: Marian starts the decoder with its pad id,
        BART with its end id, neither of which can be the model's own
        `start_token_id`).

    Raises:
        ValueError: naming the architecture, config value or weight that
            is not supported, missing or of another shape (before any
            weight is copied).

    Example (docs/guides/pretrained.md converts a checkpoint end to end):

    >>> load_pretrained("no-such-folder")
    Traceback (most recent call last):
    ...
    ValueError: Argument `folder` must be a local ... Received: folder='no-such-folder'
    """
    config = read_config(folder)
    family = family_of(config)
    weights = read_weights(folder)
    model = family.build_model(config, weights)
    generation = {}
    if os.path.isfile(os.path.join(os.fspath(folder), GENERATION_CONFIG_FILE)):
        generation = generation_settings(folder, end_token_id=model.end_token_id,
                                         pad_token_id=model.pad_token_id)
    if "decoder_start_token_id" not in generation:
        start = config.get("decoder_start_token_id")
        generation["decoder_start_token_id"] = (
            config.get("bos_token_id") if start is None else start
        )
    return model, {"family": family.model_type, "config": config, "generation": generation}
