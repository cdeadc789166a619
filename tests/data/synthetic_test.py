import datetime

import numpy as np
import pytest

from keras_attention.data import make_date_pairs, make_task, sequence_accuracy, strip_special


@pytest.mark.parametrize("task", ["reverse", "sort", "copy"])
def test_tasks_are_consistent(task):
    inputs, labels = make_task(task, 50, vocab_size=10, min_length=2, max_length=5, seed=3)
    sources = strip_special(inputs["encoder_token_ids"])
    targets = strip_special(labels)
    expected = {"reverse": lambda s: s[::-1], "sort": sorted, "copy": list}[task]
    assert all(t == expected(s) for s, t in zip(sources, targets))
    # The decoder input is the label shifted right behind the start token.
    shifted = np.where(labels[:, :-1] == 2, 0, labels[:, :-1])  # END is not fed back
    np.testing.assert_array_equal(inputs["decoder_token_ids"][:, 1:], shifted)
    assert (inputs["decoder_token_ids"][:, 0] == 1).all()
    assert sequence_accuracy(labels, labels) == 1.0


def test_invalid_task_args():
    with pytest.raises(ValueError, match=r"task.*Received: task='rot13'"):
        make_task("rot13", 3)
    with pytest.raises(ValueError, match=r"min_length <= max_length.*Received"):
        make_task("copy", 3, min_length=5, max_length=2)


def test_date_pairs_are_correct_and_varied():
    pairs = make_date_pairs(500, seed=1)
    for human, iso in pairs:
        date = datetime.date.fromisoformat(iso)
        assert str(date.year) in human
    assert len({h.split()[0].isdigit() for h, _ in pairs}) == 2  # several formats
    assert make_date_pairs(5, seed=2) == make_date_pairs(5, seed=2)


def test_stories_answer_the_last_move_of_the_asked_person():
    from keras_attention.data import make_stories

    examples = make_stories(200, seed=4)
    for example in examples:
        person = example["question"][len("Where is "):-1]
        (fact,) = example["supporting_facts"]
        supporting = example["story"][fact - 1]
        assert supporting.startswith(person + " ") and supporting.endswith(f" {example['answer']}.")
        later = [s for s in example["story"][fact:] if s.startswith(person + " ")]
        assert not later
    assert len({e["answer"] for e in examples}) > 3
    with pytest.raises(ValueError, match=r"min_sentences <= max_sentences.*Received"):
        make_stories(2, min_sentences=5, max_sentences=3)


def test_abstracts_put_the_contribution_after_the_lead_and_copy_name_and_number():
    from keras_attention.data import make_abstracts

    examples = make_abstracts(50, seed=4)
    assert make_abstracts(50, seed=4) == examples
    for example in examples:
        document, (tldr, restated) = example["document"], example["summaries"]
        name = tldr.split()[0]
        assert not document.startswith("We propose")  # lead-1 is background
        assert f"We propose {name}," in document and name in restated
        gain = tldr.rsplit(" by ", 1)[1].split()[0]
        assert f"by {gain} points." in document
