"""The question-answering recipe (`keras-attention train question_answering`): see its
`train` module."""

from keras_attention.recipes.question_answering.train import main, train_and_evaluate

__all__ = ["main", "train_and_evaluate"]
