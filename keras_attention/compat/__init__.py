"""Drop-in classes with other libraries' signatures, on keras_attention's layers.

`keras_attention.compat.keras_hub`: keras-hub's modeling layers
(`TransformerEncoder`, `TransformerDecoder`, `TokenAndPositionEmbedding`,
`PositionEmbedding`, `SinePositionEncoding`, `CachedMultiHeadAttention`).
`keras_attention.compat.keras`: Keras' `MultiHeadAttention`. See
docs/guides/migration.md. Imported by its path, not with the package.
"""

# No `__all__`: its two names are submodules, and an `__all__` naming
# `keras` makes the API pages' reader (griffe) fail to resolve `import keras`
# in `compat/keras.py` (AliasResolutionError).
from keras_attention.compat import keras, keras_hub  # noqa: F401
