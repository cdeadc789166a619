"""The summarization recipe (`keras-attention train summarization`): see its `train` module."""

from keras_attention.recipes.summarization.train import SPEC, main, train_and_evaluate

__all__ = ["SPEC", "main", "train_and_evaluate"]
