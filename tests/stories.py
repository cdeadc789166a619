"""Toy bAbI-like stories shared by the question-answering tests."""

import keras
import numpy as np

from keras_attention import data

# Two stories of word ids (B=2, M=3 sentences, J=3 words), padded with 0.
STORY = np.array([
    [[4, 5, 6], [7, 8, 0], [0, 0, 0]],  # two sentences, one padding slot
    [[9, 0, 0], [4, 4, 4], [5, 6, 0]],
], "int32")


def encoded_stories(num_train, num_test, max_sentences, max_memories):
    """Seeded `data.make_stories` train and test sets, encoded for the
    question-answering models.

    Returns:
        `((x, y), (x_test, y_test), tokenizer, answers)`: inputs `{"story":
        (N, max_memories, J), "question": (N, J')}`, answer indices into the
        sorted `answers`, and the word tokenizer of the training texts.
    """
    keras.utils.set_random_seed(0)
    train = data.make_stories(num_train, seed=0, max_sentences=max_sentences)
    test = data.make_stories(num_test, seed=1, max_sentences=max_sentences)
    tokenizer = data.train_tokenizer(data.story_texts(train), 100, lowercase=True,
                                     model_type="word")
    answers = sorted({e["answer"] for e in train})

    def encode(records):
        return (data.encode_stories(records, tokenizer, max_memories=max_memories),
                np.array([answers.index(e["answer"]) for e in records]))

    return encode(train), encode(test), tokenizer, answers
