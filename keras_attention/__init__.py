"""keras_attention: correct, serializable attention layers for Keras 3.

Public modules:

- `keras_attention.layers`: the attention layers.
- `keras_attention.masks`: the mask builders every layer uses.
- `keras_attention.models`: seq2seq model builders with `generate`.
- `keras_attention.decoding`: greedy, sampling and beam search loops.
- `keras_attention.losses`, `keras_attention.schedules`,
  `keras_attention.callbacks`: label-smoothed cross-entropy, a warmup
  learning-rate schedule (both imported with the package, so that a saved
  model compiled with them loads) and checkpoint averaging.
- `keras_attention.data`: loaders, tokenizers, tf.data pipelines and
  built-in synthetic tasks.
- `keras_attention.metrics`: BLEU, chrF, ROUGE, exact match and F1.
- `keras_attention.visualize`: attention heatmaps and training curves.
- `keras_attention.runs`: the run folders recipes save and the CLI loads.
- `keras_attention.runtime`: fast execution defaults for the machine at hand.
- `keras_attention.distribute`: `tf.distribute` strategies by name for training.
- `keras_attention.export`: a run folder as a strings-to-strings SavedModel,
  or as a Hugging Face folder (`export.huggingface`).
- `keras_attention.pretrained`: Hugging Face checkpoints (Marian, BART, mBART,
  Pegasus, M2M100/NLLB, T5, mT5) as models of our blocks, and back out.
- `keras_attention.server`: `keras-attention serve`, a run folder behind
  TensorFlow Serving's REST protocol (the `serve` extra).

`keras_attention.compat` (keras-hub's and Keras' signatures on our layers) is
imported by its path only: `from keras_attention.compat import keras_hub`.

The core (`layers`, `masks`, `models`, `decoding`, `losses`, `schedules`,
`callbacks`) is imported with the package and needs only Keras and NumPy,
on every backend. The toolkit modules (`data`, `metrics`, `visualize`,
`runs`, `runtime`, `distribute`, `export`, `pretrained`) are imported on
first use (`keras_attention.metrics`, or `from keras_attention import
metrics`), so TensorFlow, tensorflow-text, keras-hub, matplotlib, sacrebleu
and rouge-score load only when they are used.

Importing the package changes nothing in the process beyond importing: no
environment variable, no import hook. The `keras-attention` command's own
start-up (JAX for `generate`, `evaluate` and `serve` where it is installed and
no backend is chosen; TensorFlow's C++ start-up lines kept off stderr) is
`keras_attention_launcher`, its entry point, outside the package.
"""

import importlib

from keras_attention import callbacks, decoding, layers, losses, masks, models, schedules
from keras_attention.version import __version__

_TOOLKIT_MODULES = (
    "data", "distribute", "export", "metrics", "pretrained", "runs", "runtime", "server",
    "visualize",
)

__all__ = [
    "__version__",
    "callbacks",
    "data",
    "decoding",
    "distribute",
    "export",
    "layers",
    "losses",
    "masks",
    "metrics",
    "models",
    "pretrained",
    "runs",
    "runtime",
    "schedules",
    "server",
    "visualize",
]


def __getattr__(name):
    """Imports a toolkit module on first access (PEP 562)."""
    if name in _TOOLKIT_MODULES:
        return importlib.import_module(f"keras_attention.{name}")
    raise AttributeError(f"module 'keras_attention' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_TOOLKIT_MODULES))
