"""keras_attention: correct, serializable attention layers for Keras 3.

Public modules:

- `keras_attention.layers`: the attention layers.
- `keras_attention.masks`: the mask builders every layer uses.
"""

from keras_attention import layers, masks
from keras_attention.version import __version__

__all__ = ["__version__", "layers", "masks"]
