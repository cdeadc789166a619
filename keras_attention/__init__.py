"""keras_attention: correct, serializable attention layers for Keras 3.

Public modules:

- `keras_attention.layers`: the attention layers.
- `keras_attention.masks`: the mask builders every layer uses.
- `keras_attention.models`: seq2seq model builders with `generate`.
- `keras_attention.decoding`: greedy, sampling and beam search loops.
- `keras_attention.data`: loaders, tokenizers, tf.data pipelines and
  built-in synthetic tasks.
- `keras_attention.metrics`: BLEU, chrF, ROUGE, exact match and F1.
- `keras_attention.visualize`: attention heatmaps and training curves.
- `keras_attention.runs`: the run folders recipes save and the CLI loads.
- `keras_attention.runtime`: fast execution defaults for the machine at hand.
- `keras_attention.distribute`: `tf.distribute` strategies by name for training.
- `keras_attention.export`: a run folder as a strings-to-strings SavedModel.
"""

from keras_attention import (
    data,
    decoding,
    distribute,
    export,
    layers,
    masks,
    metrics,
    models,
    runs,
    runtime,
    visualize,
)
from keras_attention.version import __version__

__all__ = [
    "__version__",
    "data",
    "decoding",
    "distribute",
    "export",
    "layers",
    "masks",
    "metrics",
    "models",
    "runs",
    "runtime",
    "visualize",
]
