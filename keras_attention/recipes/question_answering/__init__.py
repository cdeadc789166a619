"""The question-answering recipe (`keras-attention train question_answering`): see its
`train` module."""

from keras_attention.recipes.question_answering.train import SPEC, main, train_and_evaluate

__all__ = ["SPEC", "main", "train_and_evaluate"]
