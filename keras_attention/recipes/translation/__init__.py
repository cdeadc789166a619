"""The translation recipe (`keras-attention train translation`): see its `train` module."""

from keras_attention.recipes.translation.train import SPEC, main, train_and_evaluate

__all__ = ["SPEC", "main", "train_and_evaluate"]
