"""Drop-in classes with other libraries' signatures, on keras_attention's layers.

`keras_attention.compat.keras_hub`: keras-hub's modeling layers
(`TransformerEncoder`, `TransformerDecoder`, `TokenAndPositionEmbedding`,
`PositionEmbedding`, `SinePositionEncoding`, `CachedMultiHeadAttention`).
`keras_attention.compat.keras`: Keras' `MultiHeadAttention`. See
docs/guides/migration.md. Imported by its path, not with the package.
"""

from keras_attention.compat import keras, keras_hub

__all__ = ["keras", "keras_hub"]
