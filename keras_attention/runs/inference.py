"""How each model kind answers input lines, and which of its sizes a run
folder's tokenizers must match (the functions `keras_attention.runs.registry`
names for the built-in model kinds).

`decoding_settings` and `generate_kwargs` are the one mapping from a run's
decoding settings (`config.json`'s `decoding`, a recipe's
`decoding_settings(...)`) to `Seq2SeqModel.generate`: the recipes' evaluation,
`SavedRun.generate` and `keras_attention.export` all go through them.
"""


def decoding_settings(decoding, strategy=None, num_beams=None):
    """A run's decoding settings with every key set: `strategy` and
    `num_beams` overridden where given, penalties 0 and nothing suppressed
    where the run did not say (folders saved before those keys existed)."""
    settings = dict(decoding)
    settings["strategy"] = strategy or settings.get("strategy", "greedy")
    settings["num_beams"] = num_beams or settings.get("num_beams", 1)
    settings.setdefault("length_penalty", 0.0)
    settings.setdefault("coverage_penalty", 0.0)
    settings.setdefault("suppress_token_ids", [])
    return settings


def generate_kwargs(decoding, strategy=None, num_beams=None):
    """The keyword arguments of `Seq2SeqModel.generate` for a run's decoding
    settings (`max_length` is the `target_length`).

    Example:

    >>> generate_kwargs({"source_length": 32, "target_length": 16, "strategy": "beam",
    ...                  "num_beams": 4}, num_beams=2)["num_beams"]
    2
    """
    settings = decoding_settings(decoding, strategy, num_beams)
    return {"max_length": settings["target_length"], "strategy": settings["strategy"],
            "num_beams": settings["num_beams"], "length_penalty": settings["length_penalty"],
            "coverage_penalty": settings["coverage_penalty"],
            "suppress_token_ids": settings["suppress_token_ids"]}


def decode(model, texts, source_tokenizer, decoding, *, strategy=None, num_beams=None,
           batch_size=64, verbose=0, **kwargs):
    """`model.generate` on `texts` encoded as `decoding` says (cut to its
    `source_length`); returns what `generate` returns (token ids `(N, L)`,
    or a result with `return_scores=True` and the like in `kwargs`)."""
    from keras_attention import data

    token_ids = data.encode_sources(texts, source_tokenizer, decoding["source_length"])
    return model.generate(token_ids, batch_size=batch_size, verbose=verbose,
                          **generate_kwargs(decoding, strategy, num_beams), **kwargs)


## The model kinds: what answers a line


def generate_texts(run, texts, strategy, num_beams, verbose):
    """A seq2seq run's outputs: decoded with its settings, detokenized."""
    from keras_attention import data

    generated = decode(run.model, texts, run.source_tokenizer, run.decoding, strategy=strategy,
                       num_beams=num_beams, verbose=verbose)
    return data.detokenize(run.target_tokenizer, generated)


def answer_from_memory(run, texts, strategy, num_beams, verbose):
    """An answer classifier's answers to `"story | question"` lines."""
    import numpy as np

    from keras_attention import data

    records = [data.story_from_source(text) for text in texts]
    inputs = data.encode_stories(records, run.source_tokenizer,
                                 max_memories=run.config["max_memories"])
    logits = run.model.predict(inputs, batch_size=256, verbose=verbose)
    return [run.answer_classes[i] for i in np.argmax(logits, axis=-1)]


def select_sentences(run, texts, strategy, num_beams, verbose):
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
    from keras_attention.runs.layout import CONFIG_FILE

    return [
        (run.metadata["tokenizers"]["source"], run.source_tokenizer.vocabulary_size(),
         embedding_vocabulary(run.model), "vocabulary"),
        (CONFIG_FILE, len(run.answer_classes), run.model.outputs[0].shape[-1],
         "number of answer classes"),
    ]


def selector_vocabularies(run):
    """`(file, tokenizer size, model size, what)` of an extractive summarizer."""
    return [(run.metadata["tokenizers"]["source"], run.source_tokenizer.vocabulary_size(),
             embedding_vocabulary(run.model), "vocabulary")]


__all__ = ["decode", "decoding_settings", "generate_kwargs"]


def sentencepiece_tokenizers(run):
    """`(source, target)`: the SentencePiece models `config.json`'s
    `tokenizers` names (the recipes' runs; `registry.ModelKind.tokenizers`' default).

    Raises:
        RunFolderError: naming a missing, corrupt or truncated file.
    """
    from keras_attention import data

    def load(name):
        path = run.path(name)
        try:
            tokenizer = data.load_tokenizer(path)
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
