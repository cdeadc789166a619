"""`AnswerClassifier`: the model kind that picks an answer class over a story
(a memory network or a Universal Transformer of the question-answering
recipe's bAbI runs)."""

from keras_attention.runs import registry
from keras_attention.runs.text_to_text import TextToText, embedding_vocabulary, input_names


class AnswerClassifier(TextToText):
    """An answer classifier with its tokenizer: `"story | question"` lines
    in, one of `answer_classes` out.

    Args:
        model: a functional Keras model of inputs `story` and `question`
            whose output is one logit per answer class.
        tokenizer: the tokenizer of stories and questions (a
            `data.SentencePieceModel`).
        answer_classes: list of str, the answers, in the order of the
            model's outputs.
        max_memories: positive int, the story sentences the model reads.
        recipe: `"question_answering"` (the only one this kind serves).
        source_format: how one input line is made; `"{story} | {question}"`.
        config: dict, the recipe's settings.
        jit_compile: bool, kept for the kinds' common signature.

    Example:

    >>> AnswerClassifier.name, AnswerClassifier.decodes
    ('answer_classifier', False)
    """

    name = "answer_classifier"
    marker = "answer_classes"
    description = "an answer classifier over stories (a memory network or Universal Transformer)"
    recipes = ("question_answering",)
    decodes = False
    exports = False

    def __init__(self, model, tokenizer, answer_classes, max_memories, *, recipe=None,
                 source_format="{story} | {question}", config=None, jit_compile=True):
        super().__init__(model, tokenizer, recipe=recipe, source_format=source_format,
                         config=config, jit_compile=jit_compile)
        if not (isinstance(answer_classes, (list, tuple)) and answer_classes
                and all(isinstance(answer, str) for answer in answer_classes)):
            raise ValueError(f"Argument `answer_classes` must be a non-empty list of str. "
                             f"Received: answer_classes={answer_classes!r}")
        if isinstance(max_memories, bool) or not isinstance(max_memories, int) or (
                max_memories < 1):
            raise ValueError(f"Argument `max_memories` must be a positive int. "
                             f"Received: max_memories={max_memories!r}")
        self.answer_classes = list(answer_classes)
        self.max_memories = max_memories

    @classmethod
    def matches(cls, model):
        return input_names(model) == {"story", "question"}

    @classmethod
    def from_run_parts(cls, model, source_tokenizer, target_tokenizer, generation, *, recipe,
                       source_format, config, metadata):
        return cls(model, source_tokenizer, metadata["answer_classes"], config["max_memories"],
                   recipe=recipe, source_format=source_format, config=config)

    def vocabulary_sizes(self):
        return [("source", self.source_tokenizer.vocabulary_size(),
                 embedding_vocabulary(self.model), "vocabulary"),
                (None, len(self.answer_classes), self.model.outputs[0].shape[-1],
                 "number of answer classes")]

    def answer(self, texts, generation, *, verbose=0, truncate=False):
        import numpy as np

        from keras_attention import data

        records = [data.story_from_source(text) for text in texts]
        inputs = data.encode_stories(records, self.source_tokenizer,
                                     max_memories=self.max_memories)
        logits = self.model.predict(inputs, batch_size=256, verbose=verbose)
        return [self.answer_classes[i] for i in np.argmax(logits, axis=-1)]


registry.register_model_kind(AnswerClassifier)

__all__ = ["AnswerClassifier"]
