"""Documents as numbered sentences, for extractive summarizers.

An extractive summarizer reads a document's tokens and says which sentence
to keep. `encode_sentence_documents` gives each token its sentence's number
(1-based; 0 on padding) next to the token ids, keeping whole sentences only,
and returns the sentences kept so that a chosen index maps back to text.
`oracle_sentence_indices` gives the training labels: the kept sentence
closest to a reference (`sentence_selection.oracle_sentence_index`).
"""

import numpy as np

from keras_attention.data.sentence_selection import oracle_sentence_index, split_sentences
from keras_attention.validation import check_positive_int


def encode_sentence_documents(documents, tokenizer, *, max_length, max_sentences):
    """Token ids and sentence numbers of `documents`, whole sentences only.

    Each document is split into sentences (`split_sentences`), each
    sentence tokenized on its own; sentences are kept in order while the
    document fits in `max_length` tokens and `max_sentences` sentences (a
    first sentence longer than `max_length` is cut, so that no document is
    empty).

    Args:
        documents: sequence of str.
        tokenizer: a tokenizer called on a list of strings (SentencePiece).
        max_length: positive int, tokens per document.
        max_sentences: positive int, sentences per document.

    Returns:
        `(inputs, sentences)`: `inputs` is `{"token_ids": (N, T), "sentence_ids":
        (N, T)}` int32 NumPy arrays (`T` the longest document kept, at most
        `max_length`; `sentence_ids` 1..S for the tokens of sentence s, 0 on
        padding); `sentences` the list of each document's kept sentences.

    Raises:
        ValueError: naming the argument, for a single string, bad lengths or
            a document without a sentence.

    Example:

    >>> from keras_attention.data import encode_sentence_documents
    >>> def tokenizer(texts):  # one id per word
    ...     return [[len(w) + 4 for w in t.split()] for t in texts]
    >>> inputs, kept = encode_sentence_documents(
    ...     ["Cats sleep. Dogs bark loudly. Birds sing."], tokenizer,
    ...     max_length=5, max_sentences=3)
    >>> inputs["sentence_ids"].tolist(), kept
    ([[1, 1, 2, 2, 2]], [['Cats sleep.', 'Dogs bark loudly.']])
    """
    if isinstance(documents, str):
        raise ValueError(f"Argument `documents` must be a sequence of strings, not one string. "
                         f"Received: documents={documents[:40]!r}...")
    max_length = check_positive_int("max_length", max_length)
    max_sentences = check_positive_int("max_sentences", max_sentences)
    rows, kept = [], []
    for index, document in enumerate(documents):
        sentences = split_sentences(document)[:max_sentences]
        if not sentences:
            raise ValueError(f"Argument `documents` must hold documents with at least one "
                             f"sentence. Received: documents[{index}]={document!r}")
        token_ids, sentence_ids = _fit_sentences(tokenizer(sentences), max_length)
        rows.append((token_ids, sentence_ids))
        kept.append(sentences[: sentence_ids[-1]])
    width = max(len(token_ids) for token_ids, _ in rows)
    inputs = {name: np.zeros((len(rows), width), "int32") for name in ("token_ids", "sentence_ids")}
    for i, (token_ids, sentence_ids) in enumerate(rows):
        inputs["token_ids"][i, : len(token_ids)] = token_ids
        inputs["sentence_ids"][i, : len(sentence_ids)] = sentence_ids
    return inputs, kept


def _fit_sentences(tokenized, max_length):
    """Whole sentences while they fit in `max_length` tokens (the first one
    cut if it alone is longer): `(token_ids, sentence_ids)` lists."""
    token_ids, sentence_ids = [], []
    for number, sentence in enumerate(tokenized, start=1):
        sentence = [int(t) for t in sentence]
        if token_ids and len(token_ids) + len(sentence) > max_length:
            break
        sentence = sentence[: max_length - len(token_ids)] or sentence[:1]
        token_ids += sentence
        sentence_ids += [number] * len(sentence)
    if not token_ids:  # a first sentence with no token at all
        raise ValueError("Argument `documents` must hold documents whose first sentence has "
                         "a token. Received: a sentence that tokenizes to nothing")
    return token_ids, sentence_ids


def oracle_sentence_indices(sentences, references):
    """The 0-based index of each document's kept sentence closest to its
    references: the labels of an extractive summarizer.

    Args:
        sentences: list of each document's kept sentences, as
            `encode_sentence_documents` returns them.
        references: list of each document's reference summaries (lists of str).

    Returns:
        int32 NumPy array `(N,)`.

    Example:

    >>> from keras_attention.data import oracle_sentence_indices
    >>> oracle_sentence_indices([["Cats sleep.", "Dogs bark loudly."]], [["Dogs bark."]]).tolist()
    [1]
    """
    if len(sentences) != len(references):
        raise ValueError(f"Arguments `sentences` and `references` must have the same length. "
                         f"Received: {len(sentences)} and {len(references)}")
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    return np.array([oracle_sentence_index(kept, refs, scorer)
                     for kept, refs in zip(sentences, references)], "int32")
