"""tf.data pipelines from text pairs to `(inputs, labels)` batches."""

import re

import numpy as np
import tensorflow as tf

from keras_attention.data.packing import PACKED_KEYS, pack_examples
from keras_attention.data.sentence_selection import split_sentences
from keras_attention.data.subwords import special_token_ids
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
    pad_to_multiple=None,
    cache=True,
    pack=False,
):
    """A shuffled, length-bucketed, padded and prefetched training dataset.

    Examples of similar source length are batched together (less padding);
    padding uses the pad id 0, which the models mask.

    With `pack=True` the examples are packed instead (`pack_examples`): once,
    after a shuffle with `seed`, several examples per row of
    `max_source_length` / `max_target_length` tokens, with
    `encoder_segment_ids` and `decoder_segment_ids` among the inputs, for a
    model built with `packed=True`. `batch_size` keeps its meaning, examples
    per batch: rows are batched `round(batch_size * rows / examples)` at a
    time, so a batch holds about `batch_size` examples and an epoch has about
    as many steps as unpacked (the same optimisation, less padding). The rows
    are shuffled every epoch (the examples of a row stay together), and
    `bucket_boundaries` is not used. Packed batches have one shape already;
    `pad_to_multiple` then only fills the last batch with rows of padding
    (segment id 0: fully masked rows, which add nothing to the loss).
    Padding labels are 0, so a loss and metrics that ignore label 0 count
    each token once, and the mean loss of a batch is the mean over its
    tokens whatever the packing.

    With `pad_to_multiple=k`, every batch's source and target lengths are
    rounded up to a multiple of `k`, and a last, smaller batch of a bucket
    is filled up to `batch_size` with rows of pad ids (the models, the loss
    and the metrics ignore pad ids, so the loss is the same). The batches
    then come in a handful of shapes, so that an XLA-compiled training step
    (`jit_compile=True`) compiles a few programs once instead of one per
    batch shape.

    Args:
        pairs: list of `(source, target)` strings.
        source_tokenizer, target_tokenizer: SentencePiece tokenizers.
        batch_size: positive int.
        max_source_length, max_target_length: truncation lengths.
        shuffle: bool.
        seed: shuffle seed.
        bucket_boundaries: source-length bucket limits.
        pad_to_multiple: optional positive int (see above).
        cache: keep the tokenized examples in memory after the first epoch
            (tokenization then runs once, not once per epoch); packed rows
            are always held in memory.
        pack: bool, pack several examples per row (see above).

    Returns:
        A `tf.data.Dataset` of `(inputs, labels)` batches.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    pad_to_multiple = check_positive_int("pad_to_multiple", pad_to_multiple, allow_none=True)
    dataset = tokenize_pairs(
        pairs, source_tokenizer, target_tokenizer, max_source_length, max_target_length
    )
    if pack:
        return _packed_dataset(dataset, batch_size, max_source_length, max_target_length,
                               shuffle, seed, pad_to_multiple)
    if cache:
        dataset = dataset.cache()
    boundaries = [b for b in bucket_boundaries if b < max_source_length]
    num_batches = _bucketed_batch_count(dataset, boundaries, batch_size)
    if shuffle:
        dataset = dataset.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.bucket_by_sequence_length(
        lambda inputs, labels: tf.shape(inputs["encoder_token_ids"])[0],
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        pad_to_bucket_boundary=False,
    )
    if pad_to_multiple:
        dataset = dataset.map(
            lambda inputs, labels: _pad_batch(inputs, labels, batch_size, pad_to_multiple),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    # A known length: progress bars count steps from the first epoch on.
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(num_batches))
    return dataset.prefetch(tf.data.AUTOTUNE)


def _bucketed_batch_count(dataset, boundaries, batch_size):
    """How many batches `bucket_by_sequence_length` makes of `dataset`: each
    bucket (`boundaries[i-1] <= source length < boundaries[i]`) gives
    `ceil(examples / batch_size)`, whatever the order. Reads the dataset once
    (which fills its cache, if it has one)."""
    lengths = dataset.map(lambda inputs, labels: tf.shape(inputs["encoder_token_ids"])[0])
    lengths = [batch.numpy() for batch in lengths.batch(8192)]
    if not lengths:
        return 0
    buckets = np.searchsorted(boundaries, np.concatenate(lengths), side="right")
    counts = np.bincount(buckets, minlength=len(boundaries) + 1)
    return int(np.sum(-(-counts // batch_size)))


def _packed_dataset(dataset, batch_size, max_source_length, max_target_length, shuffle,
                    seed, pad_to_multiple):
    """Batches of packed rows (`make_dataset(..., pack=True)`)."""
    examples = list(dataset.as_numpy_iterator())
    if shuffle:  # which examples share a row
        examples = [examples[i] for i in np.random.default_rng(seed).permutation(len(examples))]
    inputs, labels = pack_examples(examples, max_source_length=max_source_length,
                                   max_target_length=max_target_length)
    # About `batch_size` examples per batch.
    rows_per_batch = max(1, round(batch_size * len(labels) / max(1, len(examples))))
    rows = tf.data.Dataset.from_tensor_slices((inputs, labels))
    if shuffle:
        rows = rows.shuffle(len(labels), seed=seed, reshuffle_each_iteration=True)
    rows = rows.batch(rows_per_batch)
    if pad_to_multiple:  # rows have one width already: fill the last batch only
        rows = rows.map(
            lambda inputs, labels: _pad_batch(inputs, labels, rows_per_batch, 1),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    return rows.prefetch(tf.data.AUTOTUNE)


def _pad_batch(inputs, labels, batch_size, multiple):
    """Pads every `(B, L)` tensor with 0 to `(batch_size, a multiple of
    multiple)` (the decoder inputs and labels to the same length; segment
    ids, when packed, as their tokens)."""

    def pad(tensor):
        shape = tf.shape(tensor)
        extra = (multiple - shape[1] % multiple) % multiple
        return tf.pad(tensor, [[0, batch_size - shape[0]], [0, extra]])

    inputs = dict(inputs)
    for key in PACKED_KEYS:
        if key in inputs:
            inputs[key] = pad(inputs[key])
    return inputs, pad(labels)


def encode_stories(examples, tokenizer, *, max_memories=50, max_words=None):
    """Stories and questions -> padded int32 arrays for `memory_network`.

    Each sentence is tokenized on its own, after `story_texts`' spacing of
    punctuation; only the last `max_memories` sentences of a story are kept
    (in reading order, padded at the end).

    Args:
        examples: list of dicts with `"story"` (list of sentences) and
            `"question"` (str), as `load_babi` returns them.
        tokenizer: a tokenizer called on a list of strings.
        max_memories: positive int.
        max_words: optional positive int, the longest sentence kept (words
            beyond it are dropped); default: the longest one.

    Returns:
        `{"story": (N, M, J), "question": (N, J')}` NumPy int32 arrays,
        `M <= max_memories`.
    """
    max_memories = check_positive_int("max_memories", max_memories)
    max_words = check_positive_int("max_words", max_words, allow_none=True)
    stories = [list(e["story"])[-max_memories:] or [""] for e in examples]
    sentences = [_spaced(s) for story in stories for s in story]
    ids = [list(map(int, row))[:max_words] for row in _token_rows(tokenizer, sentences)]
    questions = [list(map(int, row))[:max_words]
                 for row in _token_rows(tokenizer, [_spaced(e["question"]) for e in examples])]
    width = max(1, max(len(r) for r in ids + questions))
    story_ids = np.zeros((len(stories), max(len(s) for s in stories), width), "int32")
    position = 0
    for i, story in enumerate(stories):
        for j in range(len(story)):
            row = ids[position]
            story_ids[i, j, : len(row)] = row
            position += 1
    question_ids = np.zeros((len(questions), width), "int32")
    for i, row in enumerate(questions):
        question_ids[i, : len(row)] = row
    return {"story": story_ids, "question": question_ids}


def story_source(example):
    """A story record as one line of text: `"sentence sentence | question"`,
    the input format of `keras-attention generate` for question answering."""
    return f"{' '.join(example['story'])} | {example['question']}"


def story_from_source(text):
    """Inverse of `story_source`: `"Mary went home. | Where is Mary?"` ->
    `{"story": ["Mary went home."], "question": "Where is Mary?"}`.

    The text after the last `|` is the question; the text before it is cut
    into sentences after `.`, `!` or `?`. Without `|`, the last sentence is
    the question.

    Example:

    >>> from keras_attention.data import story_from_source
    >>> story_from_source("Mary went home. John left. | Where is Mary?")
    {'story': ['Mary went home.', 'John left.'], 'question': 'Where is Mary?'}
    """
    story, bar, question = text.rpartition("|")
    sentences = split_sentences(story)
    if not bar:
        sentences = split_sentences(text)
        sentences, question = sentences[:-1], (sentences[-1] if sentences else "")
    return {"story": sentences, "question": question.strip()}


def story_texts(examples):
    """Every sentence and question of `examples`, punctuation spaced off:
    the texts to train a word-level tokenizer for `encode_stories` on.

    Example:

    >>> from keras_attention.data import story_texts
    >>> story_texts([{"story": ["Mary went home."], "question": "Where is Mary?"}])
    ['Mary went home .', 'Where is Mary ?']
    """
    return [_spaced(s) for e in examples for s in list(e["story"]) + [e["question"]]]


def _spaced(text):
    """`"Mary went home."` -> `"Mary went home ."`."""
    return re.sub(r"\s+", " ", re.sub(r"([.,!?;:])", r" \1 ", text)).strip()


def _token_rows(tokenizer, texts, batch_size=4096):
    """Token id lists of `texts`, tokenized in batches."""
    rows = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(texts[start:start + batch_size])
        rows.extend(row.numpy().tolist() if hasattr(row, "numpy") else list(row) for row in batch)
    return rows
