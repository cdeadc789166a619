"""`split_examples`: sizes, determinism, coverage, groups kept together, bad arguments."""

import doctest

import pytest

from keras_attention.data import split_examples, splitting


def test_docstring_examples_run():
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(splitting, optionflags=flags)
    assert result.failed == 0
    assert result.attempted >= 1


def test_split_examples_sizes_determinism_and_coverage():
    examples = list(range(100))
    train, validation, test = split_examples(examples, validation_fraction=0.2, test_fraction=0.1)
    assert (len(train), len(validation), len(test)) == (70, 20, 10)
    assert sorted(train + validation + test) == examples
    assert train != sorted(train)  # shuffled
    assert split_examples(examples, validation_fraction=0.2, test_fraction=0.1) == (
        train, validation, test
    )
    assert split_examples(examples, seed=1)[2] != split_examples(examples, seed=0)[2]
    train, validation, test = split_examples(examples, validation_fraction=0.0, test_fraction=0.0)
    assert (len(train), validation, test) == (100, [], [])


def test_split_examples_group_key_keeps_groups_together():
    pairs = [(f"src{i % 30}", f"tgt{i}") for i in range(90)]  # 30 sources, 3 targets each
    train, validation, test = split_examples(
        pairs, validation_fraction=0.2, test_fraction=0.2, seed=3, group_key=lambda p: p[0]
    )
    assert sorted(train + validation + test) == sorted(pairs)
    sources = [{s for s, _ in split} for split in (train, validation, test)]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    assert (len(train), len(validation), len(test)) == (54, 18, 18)
    assert split_examples(
        pairs, validation_fraction=0.2, test_fraction=0.2, seed=3, group_key=lambda p: p[0]
    ) == (train, validation, test)


def test_split_examples_bad_arguments():
    with pytest.raises(ValueError, match="examples.*Received: examples=\\[\\]"):
        split_examples([])
    with pytest.raises(ValueError, match="test_fraction.*Received: test_fraction=1.5"):
        split_examples([1, 2], test_fraction=1.5)
    with pytest.raises(ValueError,
                       match="sum to less than 1.*validation_fraction=0.5, test_fraction=0.5"):
        split_examples([1, 2], validation_fraction=0.5, test_fraction=0.5)
    with pytest.raises(TypeError, match="group_key.*Received: group_key='source'"):
        split_examples([1, 2], group_key="source")
    with pytest.raises(ValueError, match="no training examples"):
        split_examples([("a", "x"), ("a", "y")], test_fraction=0.5, group_key=lambda p: p[0])
