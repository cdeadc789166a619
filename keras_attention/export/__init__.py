"""Exports a saved run as a TensorFlow SavedModel that maps strings to strings.

The SavedModel holds the whole pipeline as one graph: SentencePiece
tokenization (TensorFlow Text ops), the model's cached generation loop
(greedy or beam search, compiled with XLA) and detokenization. Serving it
needs `tensorflow` and `tensorflow_text`, and none of our Python:

```python
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)

translator = tf.saved_model.load("exported/translation")
translator.serve(tf.constant(["March 3, 2021"]))  # tf.string (B,)
```

This package uses TensorFlow directly: it is serving code, like the data
pipelines, not a layer. `export_run` and how each model kind is exported
(the table `ARCHIVES`; `register_archive` adds a kind) are in
`export.savedmodel` (a `TextGenerator`'s, recipe run or converted checkpoint:
`text_generator_archive`, with its tokenizers' graph forms); the serving
graph in `export.serving_graph`; the Hugging Face folder in
`export.huggingface`.
"""

from keras_attention.export.savedmodel import (
    ARCHIVES,
    export_run,
    register_archive,
    text_generator_archive,
)
from keras_attention.export.serving_graph import SIGNATURE_INPUT, SIGNATURE_OUTPUT, serving_archive

__all__ = ["ARCHIVES", "SIGNATURE_INPUT", "SIGNATURE_OUTPUT", "export_run", "register_archive",
           "serving_archive", "text_generator_archive"]
