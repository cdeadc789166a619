import pytest
from rouge_score import rouge_scorer

from keras_attention.data import (
    gap_sentence_pairs,
    oracle_sentence,
    oracle_sentence_pairs,
    principal_sentences,
    split_sentences,
)

DOCUMENT = (
    "Attention models align words. "
    "We propose sparse attention models that align source words with target words. "
    "The weather was nice. "
    "Sparse models align words faster."
)


def test_split_sentences_cuts_after_end_punctuation_only_before_space():
    assert split_sentences("  A b. C d?  E f!G h. ") == ["A b.", "C d?", "E f!G h."]
    assert split_sentences("No end mark") == ["No end mark"]
    assert split_sentences("   ") == []
    assert split_sentences("Version 2.1 works. Yes.") == ["Version 2.1 works.", "Yes."]


def test_principal_sentences_maximise_rouge1_against_the_rest():
    sentences, chosen = principal_sentences(DOCUMENT, num_sentences=1)
    assert len(sentences) == 4
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    scores = [scorer.score(" ".join(sentences[:i] + sentences[i + 1:]), s)["rouge1"].fmeasure
              for i, s in enumerate(sentences)]
    assert chosen == [max(range(4), key=scores.__getitem__)]
    assert chosen != [2]  # the off-topic sentence is never the principal one
    # Two sentences come back in document order, the off-topic one still left out.
    _, two = principal_sentences(DOCUMENT, num_sentences=2)
    assert two == sorted(two) and len(two) == 2 and 2 not in two and chosen[0] in two


def test_at_least_one_sentence_stays_as_input():
    _, chosen = principal_sentences("One. Two.", num_sentences=5)
    assert len(chosen) == 1
    only = "Only one sentence."
    assert principal_sentences(only, num_sentences=1) == ([only], [])


def test_gap_sentence_pairs_remove_or_keep_the_target():
    (source, target), = gap_sentence_pairs([DOCUMENT])
    sentences, (index,) = principal_sentences(DOCUMENT)
    assert target == sentences[index]
    assert source == " ".join(s for i, s in enumerate(sentences) if i != index)
    (kept_source, kept_target), = gap_sentence_pairs([DOCUMENT], remove=False)
    assert kept_target == target and kept_source == " ".join(sentences)
    # A one-sentence document gives no pair.
    assert gap_sentence_pairs(["Just this.", DOCUMENT]) == [(source, target)]


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match=r"num_sentences.*Received: num_sentences=0"):
        principal_sentences(DOCUMENT, num_sentences=0)
    with pytest.raises(TypeError, match=r"documents.*Received: documents="):
        gap_sentence_pairs(DOCUMENT)


def test_oracle_sentence_is_the_closest_to_the_best_matching_reference():
    references = ["Off-topic words entirely.", "Sparse models align words faster."]
    assert oracle_sentence(DOCUMENT, references) == "Sparse models align words faster."
    assert oracle_sentence(DOCUMENT, ["The weather was nice today."]) == "The weather was nice."
    assert oracle_sentence("", ["anything"]) == ""


def test_oracle_sentence_pairs_keep_the_whole_document_as_source():
    records = [{"document": DOCUMENT, "summaries": ["weather nice"]},
               {"document": "   ", "summaries": ["nothing"]}]
    assert oracle_sentence_pairs(records) == [(DOCUMENT, "The weather was nice.")]


def test_oracle_needs_references():
    for references in ([], "a string"):
        with pytest.raises(ValueError, match=r"references.*Received: references="):
            oracle_sentence(DOCUMENT, references)
