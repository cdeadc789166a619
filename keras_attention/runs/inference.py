"""How each model kind answers input lines, and which of its sizes a run
folder's tokenizers must match (the functions `keras_attention.runs.registry`
names for the built-in model kinds). Each answer hook is called by
`TextToText.generate` with the `TextToText` itself.
"""


## The model kinds: what answers a line


def generate_texts(text_to_text, texts, generation, verbose, *, truncate=False):
    """A decoding kind's outputs: encoded (a line longer than the model
    accepts refused, or cut with `truncate`), searched with `generation`'s
    search and detokenized (`TextToText.search`, `TextToText.detokenize`)."""
    generated = text_to_text.search(texts, generation.strategy, generation.num_beams,
                                    truncate=truncate, verbose=verbose)
    return text_to_text.detokenize(generated)


def answer_from_memory(run, texts, generation, verbose):
    """An answer classifier's answers to `"story | question"` lines."""
    import numpy as np

    from keras_attention import data

    records = [data.story_from_source(text) for text in texts]
    inputs = data.encode_stories(records, run.source_tokenizer,
                                 max_memories=run.config["max_memories"])
    logits = run.model.predict(inputs, batch_size=256, verbose=verbose)
    return [run.answer_classes[i] for i in np.argmax(logits, axis=-1)]


def select_sentences(run, texts, generation, verbose):
    """The sentence an extractive summarizer keeps of each document."""
    from keras_attention import data
    from keras_attention.models import chosen_sentences

    inputs, kept = data.encode_sentence_documents(texts, run.source_tokenizer, **run.selection)
    return chosen_sentences(run.model.predict(inputs, batch_size=64, verbose=verbose), kept)


## The model kinds: what a model is, and the sizes its tokenizers must match


def is_seq2seq(model):
    from keras_attention.models import Seq2SeqModel

    return isinstance(model, Seq2SeqModel)


def _input_names(model):
    if is_seq2seq(model):
        return set()
    try:
        return {tensor.name.split(":")[0] for tensor in model.inputs}
    except (AttributeError, TypeError, ValueError):  # a subclassed model: no symbolic inputs
        return set()


def is_story_classifier(model):
    return _input_names(model) == {"story", "question"}


def is_sentence_selector(model):
    return _input_names(model) == {"token_ids", "sentence_ids"}


def embedding_vocabulary(model):
    """The vocabulary size of a functional model's first token embedding (the
    `vocab_size` or `input_dim` of its layers' configs), or `None`."""
    for layer in model.layers:
        config = layer.get_config()
        for key in ("vocab_size", "vocabulary_size", "input_dim"):
            if isinstance(config.get(key), int):
                return config[key]
    return None


def seq2seq_vocabularies(run):
    """`(file, tokenizer size, model size, what)` of a seq2seq run."""
    names = run.metadata["tokenizers"]
    return [
        (names["source"], run.source_tokenizer.vocabulary_size(),
         run.model.source_vocabulary_size, "source vocabulary"),
        (names["target"], run.target_tokenizer.vocabulary_size(),
         run.model.target_vocabulary_size, "target vocabulary"),
    ]


def classifier_vocabularies(run):
    """`(file, size, model size, what)` of an answer-classifier run: its
    tokenizer and its answer classes against the model's output."""
    from keras_attention.runs.layout import RUN_CONFIG_FILE

    return [
        (run.metadata["tokenizers"]["source"], run.source_tokenizer.vocabulary_size(),
         embedding_vocabulary(run.model), "vocabulary"),
        (RUN_CONFIG_FILE, len(run.answer_classes), run.model.outputs[0].shape[-1],
         "number of answer classes"),
    ]


def selector_vocabularies(run):
    """`(file, tokenizer size, model size, what)` of an extractive summarizer."""
    return [(run.metadata["tokenizers"]["source"], run.source_tokenizer.vocabulary_size(),
             embedding_vocabulary(run.model), "vocabulary")]


__all__ = []


def sentencepiece_tokenizers(run):
    """`(source, target)`: the SentencePiece models `config.json`'s
    `tokenizers` names (the recipes' runs; `registry.ModelKind.tokenizers`' default),
    as `data.SentencePieceModel`s: plain Python, no TensorFlow.

    Raises:
        RunFolderError: naming a missing, corrupt or truncated file.
    """
    from keras_attention import data

    def load(name):
        path = run.path(name)
        try:
            tokenizer = data.SentencePieceModel(path)
            tokenizer.vocabulary_size()
        except Exception as error:  # the backends raise different errors for a bad proto
            message = str(error).strip().splitlines()[-1:] or [type(error).__name__]
            raise run.folder_error(path, f"not a SentencePiece model, corrupt or truncated "
                                         f"({message[0][:200]})") from None
        return tokenizer

    names = run.metadata["tokenizers"]
    run.path(names["source"])
    run.path(names["target"])
    return load(names["source"]), load(names["target"])
