"""`SentenceSelector`: the model kind that keeps one sentence of a document
(the summarization recipe's extractive summarizer)."""

from keras_attention.runs import registry
from keras_attention.runs.text_to_text import TextToText, embedding_vocabulary, input_names


class SentenceSelector(TextToText):
    """An extractive summarizer with its tokenizer: documents in, the
    sentence of the highest logit of each out.

    Args:
        model: a functional Keras model of inputs `token_ids` and
            `sentence_ids` giving one logit per sentence.
        tokenizer: the documents' tokenizer (a `data.SentencePieceModel`).
        selection: dict `{"max_length": T, "max_sentences": S}` of positive
            ints: how a document is read (`data.encode_sentence_documents`).
        recipe: `"summarization"` (the only one this kind serves).
        source_format: how one input line is made; `"text"`.
        config: dict, the recipe's settings.
        jit_compile: bool, kept for the kinds' common signature.

    Example:

    >>> SentenceSelector.name, SentenceSelector.marker
    ('sentence_selector', 'selection')
    """

    name = "sentence_selector"
    marker = "selection"
    description = "an extractive summarizer (it picks a sentence)"
    recipes = ("summarization",)
    decodes = False
    exports = False

    def __init__(self, model, tokenizer, selection, *, recipe=None, source_format="text",
                 config=None, jit_compile=True):
        super().__init__(model, tokenizer, recipe=recipe, source_format=source_format,
                         config=config, jit_compile=jit_compile)
        if not (isinstance(selection, dict) and set(selection) == {"max_length", "max_sentences"}
                and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                        for v in selection.values())):
            raise ValueError(f"Argument `selection` must be a dict of positive ints "
                             f"`max_length` and `max_sentences`. Received: selection={selection!r}")
        self.selection = dict(selection)

    @classmethod
    def matches(cls, model):
        return input_names(model) == {"token_ids", "sentence_ids"}

    @classmethod
    def from_run_parts(cls, model, source_tokenizer, target_tokenizer, generation, *, recipe,
                       source_format, config, metadata):
        return cls(model, source_tokenizer, metadata["selection"], recipe=recipe,
                   source_format=source_format, config=config)

    def vocabulary_sizes(self):
        return [("source", self.source_tokenizer.vocabulary_size(),
                 embedding_vocabulary(self.model), "vocabulary")]

    def answer(self, texts, generation, *, verbose=0, truncate=False):
        from keras_attention import data
        from keras_attention.models import chosen_sentences

        inputs, kept = data.encode_sentence_documents(texts, self.source_tokenizer,
                                                      **self.selection)
        return chosen_sentences(self.model.predict(inputs, batch_size=64, verbose=verbose), kept)


registry.register_model_kind(SentenceSelector)

__all__ = ["SentenceSelector"]
