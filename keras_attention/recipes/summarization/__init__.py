"""The summarization recipe (`keras-attention train summarization`): see its `train` module."""

from keras_attention.recipes.summarization.train import main, train_and_evaluate

__all__ = ["main", "train_and_evaluate"]
