"""Sentences chosen by ROUGE: extra summarization pairs for small data sets.

Two selections, each giving `(source, target)` pairs that a summarizer can
train on next to the reference summaries:

- *Gap sentences* (`gap_sentence_pairs`), from documents alone. PEGASUS
(Zhang et al. 2020) pretrains a summarizer on "gap sentences": the
sentences of a document that overlap most with the rest of it (ROUGE-1 F1,
each sentence scored on its own, "Ind-Orig") are removed from the input and
become the target. A small summarization set (SciTLDR has 1,992 training
abstracts) gains from first learning, on the same abstracts, to write the
sentence that carries a document's content.
- *Oracle sentences* (`oracle_sentence_pairs`), from training documents and
  their references: the document sentence closest to a reference (the
  greedy extractive oracle of SummaRuNNer, Nallapati et al. 2017, with one
  sentence) becomes a second target for that document, which teaches a
  copying model which sentence to copy from.
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


def oracle_sentence(document, references, scorer=None):
    """The sentence of `document` with the highest mean ROUGE-1/2/L F1
    against its best-matching reference.

    Args:
        document: str.
        references: non-empty sequence of reference summaries (str).
        scorer: a `rouge_score.rouge_scorer.RougeScorer` with `rouge1`,
            `rouge2` and `rougeL` to reuse (built when None).

    Returns:
        str, a sentence of `document` (`""` for an empty document).

    Example:

    >>> from keras_attention.data import oracle_sentence
    >>> oracle_sentence("Deep nets are popular. We propose sparse attention for speed.",
    ...                 ["Sparse attention makes models fast."])
    'We propose sparse attention for speed.'
    """
    sentences = split_sentences(document)
    index = oracle_sentence_index(sentences, references, scorer)
    return sentences[index] if sentences else ""


def oracle_sentence_index(sentences, references, scorer=None):
    """The index of the sentence with the highest sum of ROUGE-1/2/L F1
    against its best-matching reference (the first such on ties).

    Args:
        sentences: sequence of str, a document's sentences.
        references: non-empty sequence of reference summaries (str).
        scorer: a `rouge_score.rouge_scorer.RougeScorer` with `rouge1`,
            `rouge2` and `rougeL` to reuse (built when None).

    Returns:
        int, 0 for an empty `sentences`.

    Example:

    >>> from keras_attention.data import oracle_sentence_index
    >>> oracle_sentence_index(["Deep nets are popular.", "We propose sparse attention."],
    ...                       ["Sparse attention makes models fast."])
    1
    """
    if isinstance(references, str) or not references:
        raise ValueError(f"`references` must be a non-empty sequence of strings. "
                         f"Received: references={references!r}")
    scorer = scorer or rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)

    def closeness(index):
        return max(
            sum(score.fmeasure for score in scorer.score(reference, sentences[index]).values())
            for reference in references
        )

    return max(range(len(sentences)), key=closeness) if sentences else 0


def oracle_sentence_pairs(records):
    """`(document, oracle sentence)` pairs, one per record (see `oracle_sentence`).

    Args:
        records: dicts with `"document"` and `"summaries"` (a list of
            references), as `load_summaries` returns; records whose document
            has no sentence give no pair.

    Returns:
        list of `(document, sentence)` string pairs.

    Example:

    >>> from keras_attention.data import oracle_sentence_pairs
    >>> oracle_sentence_pairs([{"document": "Cats sleep. Dogs bark loudly.",
    ...                         "summaries": ["Dogs bark."]}])
    [('Cats sleep. Dogs bark loudly.', 'Dogs bark loudly.')]
    """
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    pairs = []
    for record in records:
        sentence = oracle_sentence(record["document"], record["summaries"], scorer)
        if sentence:
            pairs.append((record["document"], sentence))
    return pairs
