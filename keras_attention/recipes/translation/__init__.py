"""The translation recipe (`keras-attention train translation`): see its `train` module."""

from keras_attention.recipes.translation.train import main, train_and_evaluate

__all__ = ["main", "train_and_evaluate"]
