"""The version of keras_attention."""

__version__ = "0.2.0"
