"""Deterministic train / validation / test splits, optionally keeping groups together."""

import random

from keras_attention.validation import check_callable, check_rate


def split_examples(
    examples, *, validation_fraction=0.1, test_fraction=0.1, seed=0, group_key=None
):
    """Splits examples into shuffled train, validation and test lists.

    The split is deterministic for a given `seed`. With `group_key`, all
    examples with the same key go to the same split: whole groups are
    shuffled and dealt to test, then validation, until each holds at least
    its fraction of the examples (so sizes can overshoot by up to one group),
    and the rest go to train. For Tatoeba pairs, where one English sentence
    has several translations, use `group_key=lambda pair: pair[0]` (or
    `pair[0].lower()`) so no test source is seen in training.

    Args:
        examples: a sequence (or iterable) of examples of any type.
        validation_fraction: float in [0, 1), the share of validation.
        test_fraction: float in [0, 1), the share of test; the two fractions
            must sum to less than 1.
        seed: int, seeds the shuffle.
        group_key: `None` or a function from an example to a hashable key.

    Returns:
        `(train, validation, test)`, three shuffled lists that together hold
        every example once. Without `group_key`, validation and test hold
        `round(n * fraction)` examples each.

    Raises:
        ValueError: no examples, bad fractions, or no example left for train.

    Example:

    >>> from keras_attention.data import split_examples
    >>> pairs = [("Hi.", "Hallo!"), ("Hi.", "Grüß Gott!"), ("Run!", "Lauf!"),
    ...          ("Wow!", "Potzdonner!"), ("Fire!", "Feuer!")]
    >>> train, validation, test = split_examples(
    ...     pairs, validation_fraction=0.2, test_fraction=0.2,
    ...     group_key=lambda pair: pair[0])
    >>> len(train) + len(validation) + len(test)
    5
    >>> {s for s, _ in train} & {s for s, _ in validation + test}
    set()
    """
    examples = list(examples)
    if not examples:
        raise ValueError(
            "Argument `examples` must hold at least one example. Received: examples=[]"
        )
    validation_fraction = check_rate("validation_fraction", validation_fraction)
    test_fraction = check_rate("test_fraction", test_fraction)
    if validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            "Arguments `validation_fraction` and `test_fraction` must sum to less than 1. "
            f"Received: validation_fraction={validation_fraction}, test_fraction={test_fraction}"
        )
    check_callable("group_key", group_key, allow_none=True)
    rng = random.Random(seed)
    size = len(examples)
    n_test = round(size * test_fraction)
    n_validation = round(size * validation_fraction)
    if group_key is None:
        order = list(range(size))
        rng.shuffle(order)
        shuffled = [examples[i] for i in order]
        test = shuffled[:n_test]
        validation = shuffled[n_test : n_test + n_validation]
        train = shuffled[n_test + n_validation :]
    else:
        groups = {}
        for example in examples:
            groups.setdefault(group_key(example), []).append(example)
        members = list(groups.values())
        rng.shuffle(members)
        test, validation, train = [], [], []
        for group in members:
            if len(test) < n_test:
                test.extend(group)
            elif len(validation) < n_validation:
                validation.extend(group)
            else:
                train.extend(group)
        for split in (train, validation, test):
            rng.shuffle(split)
    if not train:
        raise ValueError(
            "The split left no training examples; lower the fractions or pass more "
            f"examples. Received: {size} examples, validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}"
        )
    return train, validation, test
