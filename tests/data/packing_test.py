import numpy as np
import pytest

from keras_attention.data import pack_examples, unpack_rows


def example(source, target):
    """An `(inputs, labels)` example as `tokenize_pairs` makes it (start 1, end 2)."""
    return (
        {"encoder_token_ids": np.array(source, "int32"),
         "decoder_token_ids": np.array([1] + target, "int32")},
        np.array(target + [2], "int32"),
    )


def random_examples(count, seed=0, max_source=7, max_target=6):
    rng = np.random.default_rng(seed)
    return [
        example(list(rng.integers(3, 50, rng.integers(1, max_source + 1))),
                list(rng.integers(3, 50, rng.integers(0, max_target + 1))))
        for _ in range(count)
    ]


def as_lists(examples):
    return [(e["encoder_token_ids"].tolist(), e["decoder_token_ids"].tolist(), y.tolist())
            for e, y in examples]


def test_literal_first_fit():
    examples = [example([5, 6], [7]), example([8, 9, 10], [11, 12]), example([13], [14]),
                example([15], [16, 17, 18])]
    inputs, labels = pack_examples(examples, max_source_length=4, max_target_length=5)
    # Row 0 takes examples 0 and 2 (example 1 does not fit after 0); example 3 fits nowhere.
    assert inputs["encoder_token_ids"].tolist() == [[5, 6, 13, 0], [8, 9, 10, 0], [15, 0, 0, 0]]
    assert inputs["encoder_segment_ids"].tolist() == [[1, 1, 2, 0], [1, 1, 1, 0], [1, 0, 0, 0]]
    assert inputs["decoder_token_ids"].tolist() == [
        [1, 7, 1, 14, 0], [1, 11, 12, 0, 0], [1, 16, 17, 18, 0]]
    assert inputs["decoder_segment_ids"].tolist() == [
        [1, 1, 2, 2, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]
    assert labels.tolist() == [[7, 2, 14, 2, 0], [11, 12, 2, 0, 0], [16, 17, 18, 2, 0]]
    assert all(v.dtype == np.int32 for v in inputs.values()) and labels.dtype == np.int32


def test_every_token_kept_no_example_split_order_kept():
    examples = random_examples(300)
    inputs, labels = pack_examples(examples, max_source_length=16, max_target_length=12)
    unpacked = unpack_rows(inputs, labels)
    # Nothing lost, nothing added, nothing split: the same multiset of examples.
    assert sorted(as_lists(unpacked)) == sorted(as_lists(examples))
    # Within a row, examples keep their input order.
    index = {}
    for i, e in enumerate(as_lists(examples)):
        index.setdefault(repr(e), []).append(i)
    position = 0
    for row in range(len(labels)):
        count = int(inputs["decoder_segment_ids"][row].max())
        order = [index[repr(e)][0] for e in as_lists(unpacked[position:position + count])]
        assert order == sorted(order)
        position += count
    # Fewer rows than examples, padding only at the end of a row.
    assert len(labels) < len(examples) / 2
    for key in ("encoder_segment_ids", "decoder_segment_ids"):
        ids = inputs[key]
        assert (np.diff(ids, axis=1)[ids[:, 1:] != 0] >= 0).all()  # segments ascend
        assert ((ids == 0) == (np.cumsum(ids == 0, axis=1) > 0)).all()  # zeros trail
    assert ((labels != 0) == (inputs["decoder_segment_ids"] != 0)).all()
    assert ((inputs["encoder_token_ids"] != 0) == (inputs["encoder_segment_ids"] != 0)).all()


def test_segments_are_numbered_alike_on_both_sides():
    inputs, _ = pack_examples(random_examples(100, seed=3), max_source_length=12,
                              max_target_length=10)
    for source, target in zip(inputs["encoder_segment_ids"], inputs["decoder_segment_ids"]):
        assert set(source[source > 0]) == set(target[target > 0])
        assert set(target[target > 0]) == set(range(1, target.max() + 1))


def test_first_fit_uses_an_earlier_row_when_it_fits():
    examples = [example([3] * 6, [4] * 5), example([5] * 6, [6] * 5), example([7], [8])]
    inputs, _ = pack_examples(examples, max_source_length=7, max_target_length=8)
    assert inputs["encoder_token_ids"][0].tolist() == [3] * 6 + [7]
    assert len(inputs["encoder_token_ids"]) == 2


def test_refuses_an_example_longer_than_a_row():
    with pytest.raises(ValueError, match=r"max_source_length=3.*Received: an example of 4 "
                                         r"tokens at example 1"):
        pack_examples([example([3], [4]), example([3] * 4, [4])], max_source_length=3,
                      max_target_length=8)
    with pytest.raises(ValueError, match=r"max_target_length=2.*3 tokens at example 0"):
        pack_examples([example([3], [4, 5])], max_source_length=3, max_target_length=2)
    with pytest.raises(ValueError, match="max_source_length"):
        pack_examples([], max_source_length=0, max_target_length=2)


def test_refuses_labels_of_another_length():
    inputs, _ = example([3], [4])
    with pytest.raises(ValueError, match=r"one length.*lengths 2 and 3 at example 0"):
        pack_examples([(inputs, np.array([4, 2, 2]))], max_source_length=3, max_target_length=4)


def test_no_examples_no_rows():
    inputs, labels = pack_examples([], max_source_length=3, max_target_length=4)
    assert labels.shape == (0, 4) and inputs["encoder_token_ids"].shape == (0, 3)
