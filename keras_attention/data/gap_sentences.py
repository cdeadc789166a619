"""Gap-sentence pairs: self-supervised summarization pairs made from documents alone.

PEGASUS (Zhang et al. 2020) pretrains a summarizer on "gap sentences": the
sentences of a document that overlap most with the rest of it (ROUGE-1 F1,
each sentence scored on its own, "Ind-Orig") are removed from the input and
become the target. A small summarization set (SciTLDR has 1,992 training
abstracts) gains from first learning, on the same abstracts, to write the
sentence that carries a document's content.
"""

import re

from rouge_score import rouge_scorer

from keras_attention.validation import check_positive_int

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text):
    """The sentences of `text`, cut after `.`, `!` or `?` followed by space.

    Example:

    >>> from keras_attention.data import split_sentences
    >>> split_sentences("We propose X.  It works! Does it?")
    ['We propose X.', 'It works!', 'Does it?']
    """
    return [sentence.strip() for sentence in _SENTENCE_END.split(text.strip()) if sentence.strip()]


def principal_sentences(document, num_sentences=1, scorer=None):
    """Indices of the `num_sentences` sentences of `document` with the highest
    ROUGE-1 F1 against the rest of the document, in document order.

    Args:
        document: str.
        num_sentences: positive int; fewer are returned when the document has
            fewer than `num_sentences + 1` sentences (one must stay as input).
        scorer: a `rouge_score.rouge_scorer.RougeScorer` to reuse (built when None).

    Returns:
        `(sentences, indices)`: the document's sentences and the chosen indices.

    Example:

    >>> from keras_attention.data import principal_sentences
    >>> principal_sentences("Cats sleep. Dogs bark. Cats and dogs sleep.")
    (['Cats sleep.', 'Dogs bark.', 'Cats and dogs sleep.'], [2])
    """
    num_sentences = check_positive_int("num_sentences", num_sentences)
    scorer = scorer or rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    sentences = split_sentences(document)
    count = min(num_sentences, len(sentences) - 1)
    if count < 1:
        return sentences, []
    scores = [
        scorer.score(" ".join(sentences[:i] + sentences[i + 1:]), sentence)["rouge1"].fmeasure
        for i, sentence in enumerate(sentences)
    ]
    best = sorted(range(len(sentences)), key=lambda i: -scores[i])[:count]
    return sentences, sorted(best)


def gap_sentence_pairs(documents, num_sentences=1, remove=True):
    """`(source, target)` pairs for gap-sentence pretraining.

    Each document gives one pair: the target is its principal sentences (see
    `principal_sentences`), joined by spaces; the source is the document
    without them (`remove=True`, PEGASUS' masking) or the whole document.
    Documents of a single sentence give no pair.

    Args:
        documents: sequence of str.
        num_sentences: positive int, the sentences per target.
        remove: bool, whether the target sentences leave the source.

    Returns:
        list of `(source, target)` string pairs.

    Example:

    >>> from keras_attention.data import gap_sentence_pairs
    >>> gap_sentence_pairs(["Cats sleep. Dogs bark. Cats and dogs sleep."])
    [('Cats sleep. Dogs bark.', 'Cats and dogs sleep.')]
    """
    if isinstance(documents, str):
        raise TypeError(f"`documents` must be a sequence of strings, not one string. "
                        f"Received: documents={documents[:40]!r}...")
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    pairs = []
    for document in documents:
        sentences, chosen = principal_sentences(document, num_sentences, scorer)
        if not chosen:
            continue
        target = " ".join(sentences[i] for i in chosen)
        kept = [s for i, s in enumerate(sentences) if not (remove and i in chosen)]
        pairs.append((" ".join(kept), target))
    return pairs
