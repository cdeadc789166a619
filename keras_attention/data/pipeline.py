"""tf.data pipelines from text pairs to `(inputs, labels)` batches."""

import tensorflow as tf

from keras_attention.data.tokenizers import special_token_ids
from keras_attention.validation import check_positive_int


def tokenize_pairs(pairs, source_tokenizer, target_tokenizer, max_source_length,
                   max_target_length):
    """Tokenizes `(source, target)` pairs into `(inputs, labels)` tensors.

    The decoder input is `[start] + target`, the label `target + [end]`,
    both cut to `max_target_length`; the source is cut to
    `max_source_length`.

    Returns:
        A `tf.data.Dataset` of `({"encoder_token_ids", "decoder_token_ids"},
        labels)` with ragged-free 1-D int32 tensors (unbatched).

    Note: call `keras.utils.set_random_seed` *before* making the tokenizers;
    it resets TensorFlow's seed state, which invalidates the SentencePiece
    resources of tokenizers created earlier (a TensorFlow Text behaviour).
    """
    ids = special_token_ids(target_tokenizer)
    sources = [s for s, _ in pairs]
    targets = [t for _, t in pairs]
    dataset = tf.data.Dataset.from_tensor_slices((sources, targets))

    def encode(source, target):
        source_ids = tf.cast(source_tokenizer(source)[:max_source_length], "int32")
        target_ids = tf.cast(target_tokenizer(target)[: max_target_length - 1], "int32")
        start = tf.constant([ids["start_token_id"]], "int32")
        end = tf.constant([ids["end_token_id"]], "int32")
        inputs = {
            "encoder_token_ids": source_ids,
            "decoder_token_ids": tf.concat([start, target_ids], 0),
        }
        return inputs, tf.concat([target_ids, end], 0)

    return dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE)


def make_dataset(
    pairs,
    source_tokenizer,
    target_tokenizer,
    *,
    batch_size=64,
    max_source_length=64,
    max_target_length=64,
    shuffle=True,
    seed=0,
    bucket_boundaries=(8, 16, 24, 32, 48),
):
    """A shuffled, length-bucketed, padded and prefetched training dataset.

    Examples of similar source length are batched together (less padding);
    padding uses the pad id 0, which the models mask.

    Args:
        pairs: list of `(source, target)` strings.
        source_tokenizer, target_tokenizer: SentencePiece tokenizers.
        batch_size: positive int.
        max_source_length, max_target_length: truncation lengths.
        shuffle: bool.
        seed: shuffle seed.
        bucket_boundaries: source-length bucket limits.

    Returns:
        A `tf.data.Dataset` of `(inputs, labels)` batches.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    dataset = tokenize_pairs(
        pairs, source_tokenizer, target_tokenizer, max_source_length, max_target_length
    )
    if shuffle:
        dataset = dataset.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    boundaries = [b for b in bucket_boundaries if b < max_source_length]
    dataset = dataset.bucket_by_sequence_length(
        lambda inputs, labels: tf.shape(inputs["encoder_token_ids"])[0],
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        pad_to_bucket_boundary=False,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def encode_sources(texts, tokenizer, max_length):
    """Source texts -> a padded int32 NumPy array `(N, L)` for `generate`."""
    import numpy as np

    rows = [list(map(int, tokenizer(t)[:max_length])) for t in texts]
    width = max(1, max(len(r) for r in rows))
    out = np.zeros((len(rows), width), "int32")
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out
