"""keras_attention: correct, serializable attention layers for Keras 3.

Public modules:

- `keras_attention.layers`: the attention layers.
- `keras_attention.masks`: the mask builders every layer uses.
- `keras_attention.models`: seq2seq model builders with `generate`.
- `keras_attention.decoding`: greedy, sampling and beam search loops.
- `keras_attention.data`: built-in synthetic tasks.
"""

from keras_attention import data, decoding, layers, masks, models
from keras_attention.version import __version__

__all__ = ["__version__", "data", "decoding", "layers", "masks", "models"]
