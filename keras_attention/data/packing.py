"""Packing: several short tokenized examples per row, with segment ids.

Sentence pairs such as Tatoeba's are short and of varied lengths: a padded
batch spends much of its compute on padding. Packing puts several examples
one after the other in a row of fixed width and numbers them with *segment
ids* (`1, 2, ...`, 0 on padding), the same numbers on the source and the
target side. A model built with `packed=True` (`transformer_seq2seq`) reads
the segment ids and keeps the examples apart (`masks.segment_mask`,
`masks.segment_positions`), so every example gets the logits it would get
alone.

Pure NumPy (no TensorFlow): `pipeline.make_dataset(..., pack=True)` feeds
the rows to tf.data.
"""

import numpy as np

from keras_attention.validation import check_positive_int

PACKED_KEYS = (
    "encoder_token_ids", "encoder_segment_ids", "decoder_token_ids", "decoder_segment_ids",
)


def _example_arrays(example, index):
    """`(source, decoder input, labels)` int arrays of one `(inputs, labels)`
    example; the decoder input and the labels must be of one length."""
    inputs, labels = example
    source = np.asarray(inputs["encoder_token_ids"]).reshape(-1)
    target = np.asarray(inputs["decoder_token_ids"]).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if len(target) != len(labels):
        raise ValueError(
            "Each example's `decoder_token_ids` and labels must have one length. "
            f"Received: lengths {len(target)} and {len(labels)} at example {index}"
        )
    return source, target, labels


def _first_fit(source_lengths, target_lengths, max_source_length, max_target_length):
    """Row of each example: the first row (in the order rows were opened)
    with room for it on both sides, else a new row. Returns `(row (N,),
    number of rows)`. Rows that can hold no example any more (less room
    than the shortest example) are not searched again."""
    count = len(source_lengths)
    room_source = np.zeros(count, "int64")  # room left in each row
    room_target = np.zeros(count, "int64")
    open_rows = np.zeros(0, "int64")  # ids of the rows still searched, in order
    shortest_source, shortest_target = (
        (int(source_lengths.min()), int(target_lengths.min())) if count else (0, 0)
    )
    rows = np.zeros(count, "int64")
    num_rows = 0
    for i, (source, target) in enumerate(zip(source_lengths, target_lengths)):
        fits = (room_source[open_rows] >= source) & (room_target[open_rows] >= target)
        first = int(fits.argmax()) if len(fits) else 0
        if len(fits) and fits[first]:
            row = int(open_rows[first])
        else:
            row = num_rows
            num_rows += 1
            room_source[row], room_target[row] = max_source_length, max_target_length
            open_rows = np.append(open_rows, row)
        rows[i] = row
        room_source[row] -= source
        room_target[row] -= target
        if room_source[row] < shortest_source or room_target[row] < shortest_target:
            open_rows = open_rows[open_rows != row]
    return rows, num_rows


def pack_examples(examples, *, max_source_length, max_target_length):
    """Packs tokenized examples into rows, greedily, first fit.

    Each example goes to the first row (in the order rows were opened) with
    room for both its source and its target, after the examples already
    there; a new row is opened when none has room. No example is split,
    every token is kept, and the examples of a row keep their input order.
    Pass the examples shuffled: the order decides which examples share rows.

    Args:
        examples: iterable of `(inputs, labels)`, as `tokenize_pairs` yields
            them (`dataset.as_numpy_iterator()`): `inputs` a dict with 1-D
            int `encoder_token_ids` and `decoder_token_ids`, `labels` 1-D int
            of the decoder input's length.
        max_source_length, max_target_length: positive ints, the row widths
            `S` and `T`; every example must fit in one row.

    Returns:
        `(inputs, labels)`: `inputs` a dict of int32 NumPy arrays
        `encoder_token_ids`, `encoder_segment_ids` `(R, S)` and
        `decoder_token_ids`, `decoder_segment_ids` `(R, T)`; `labels`
        int32 `(R, T)`. The `k`-th example of a row has segment id `k`
        (from 1) on both sides; padding has token, label and segment id 0,
        so a loss and metrics that ignore label 0 count each token once.

    Raises:
        ValueError: an example longer than its row, or whose decoder input
            and labels differ in length (naming the example).

    Example:

    >>> import numpy as np
    >>> from keras_attention.data import pack_examples
    >>> def example(source, target):
    ...     return ({"encoder_token_ids": np.array(source),
    ...              "decoder_token_ids": np.array([1] + target)},
    ...             np.array(target + [2]))
    >>> inputs, labels = pack_examples(
    ...     [example([5, 6], [7]), example([8, 9, 10], [11, 12]), example([13], [14])],
    ...     max_source_length=4, max_target_length=5)
    >>> inputs["encoder_token_ids"].tolist()
    [[5, 6, 13, 0], [8, 9, 10, 0]]
    >>> inputs["decoder_segment_ids"].tolist()
    [[1, 1, 2, 2, 0], [1, 1, 1, 0, 0]]
    >>> labels.tolist()
    [[7, 2, 14, 2, 0], [11, 12, 2, 0, 0]]
    """
    max_source_length = check_positive_int("max_source_length", max_source_length)
    max_target_length = check_positive_int("max_target_length", max_target_length)
    arrays = [_example_arrays(example, i) for i, example in enumerate(examples)]
    source_lengths = np.array([len(s) for s, _, _ in arrays], "int64")
    target_lengths = np.array([len(t) for _, t, _ in arrays], "int64")
    for name, lengths, limit in (("max_source_length", source_lengths, max_source_length),
                                 ("max_target_length", target_lengths, max_target_length)):
        too_long = np.flatnonzero(lengths > limit)
        if len(too_long):
            i = int(too_long[0])
            raise ValueError(
                f"Every example must fit in a row of `{name}={limit}` tokens. "
                f"Received: an example of {int(lengths[i])} tokens at example {i}"
            )
    rows, num_rows = _first_fit(source_lengths, target_lengths, max_source_length,
                                max_target_length)
    packed = {
        "encoder_token_ids": np.zeros((num_rows, max_source_length), "int32"),
        "encoder_segment_ids": np.zeros((num_rows, max_source_length), "int32"),
        "decoder_token_ids": np.zeros((num_rows, max_target_length), "int32"),
        "decoder_segment_ids": np.zeros((num_rows, max_target_length), "int32"),
    }
    labels = np.zeros((num_rows, max_target_length), "int32")
    used_source = np.zeros(num_rows, "int64")
    used_target = np.zeros(num_rows, "int64")
    segments = np.zeros(num_rows, "int32")
    for row, (source, target, label) in zip(rows, arrays):
        segments[row] += 1
        s, t = used_source[row], used_target[row]
        packed["encoder_token_ids"][row, s:s + len(source)] = source
        packed["encoder_segment_ids"][row, s:s + len(source)] = segments[row]
        packed["decoder_token_ids"][row, t:t + len(target)] = target
        packed["decoder_segment_ids"][row, t:t + len(target)] = segments[row]
        labels[row, t:t + len(label)] = label
        used_source[row] += len(source)
        used_target[row] += len(target)
    return packed, labels


def unpack_rows(inputs, labels):
    """The examples of packed rows, in row order: the inverse of
    `pack_examples` up to the order of examples (a list of `(inputs,
    labels)` with 1-D int32 arrays). Useful to check a packing.

    Args:
        inputs: dict of `(R, S)` / `(R, T)` arrays as `pack_examples` returns.
        labels: `(R, T)`.

    Returns:
        A list of `(inputs, labels)` examples, row by row, segment by segment.
    """
    examples = []
    for row in range(len(labels)):
        source_ids = inputs["encoder_segment_ids"][row]
        target_ids = inputs["decoder_segment_ids"][row]
        for segment in range(1, int(target_ids.max(initial=0)) + 1):
            source = source_ids == segment
            target = target_ids == segment
            examples.append((
                {
                    "encoder_token_ids": inputs["encoder_token_ids"][row][source],
                    "decoder_token_ids": inputs["decoder_token_ids"][row][target],
                },
                labels[row][target],
            ))
    return examples
