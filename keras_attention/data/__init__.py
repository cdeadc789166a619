"""Data: built-in synthetic tasks (loaders for real files come later)."""

from keras_attention.data.synthetic import exact_match, make_task, strip_special

__all__ = ["exact_match", "make_task", "strip_special"]
