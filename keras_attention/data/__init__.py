"""Data: file loaders, splits, tokenizers, tf.data pipelines and built-in synthetic tasks.

One module per job:

- `sentence_pairs`: `load_sentence_pairs`, Tatoeba / Anki TSV.
- `summaries`: `load_summaries`, JSONL documents with reference summaries.
- `babi`: `load_babi` / `load_babi_task`, the raw bAbI v1.2 task files.
- `squad`: `load_squad`, SQuAD v1.1 JSON or JSONL.
- `splitting`: `split_examples`, deterministic (optionally grouped) splits.
- `text_files`: the line reader and line-numbered errors the loaders share.
- `sentence_documents`: `encode_sentence_documents`, documents as numbered
  sentences for extractive summarizers, and their oracle labels.
- `sentence_selection`, `tokenizers`, `pipeline`, `synthetic`.
- `packing`: `pack_examples`, several short examples per row with segment ids.

The loaders are pure Python: each reads one local UTF-8 file (nothing is
downloaded or written) and returns plain lists. Malformed input raises a
`ValueError` naming the file and the 1-based line; a missing file raises
`FileNotFoundError` naming the path.
"""

from keras_attention.data.babi import load_babi, load_babi_task
from keras_attention.data.packing import pack_examples, unpack_rows
from keras_attention.data.pipeline import (
    encode_sources,
    encode_stories,
    make_dataset,
    story_from_source,
    story_source,
    story_texts,
    tokenize_pairs,
)
from keras_attention.data.sentence_documents import (
    encode_sentence_documents,
    oracle_sentence_indices,
)
from keras_attention.data.sentence_pairs import load_sentence_pairs
from keras_attention.data.sentence_selection import (
    gap_sentence_pairs,
    oracle_sentence,
    oracle_sentence_index,
    oracle_sentence_pairs,
    principal_sentences,
    split_sentences,
)
from keras_attention.data.splitting import split_examples
from keras_attention.data.squad import load_squad
from keras_attention.data.summaries import load_summaries
from keras_attention.data.synthetic import (
    make_abstracts,
    make_date_pairs,
    make_stories,
    make_task,
    sequence_accuracy,
    strip_special,
)
from keras_attention.data.tokenizers import (
    detokenize,
    load_tokenizer,
    never_generated_ids,
    save_tokenizer,
    special_token_ids,
    train_tokenizer,
)

__all__ = [
    "detokenize",
    "encode_sentence_documents",
    "encode_sources",
    "encode_stories",
    "sequence_accuracy",
    "gap_sentence_pairs",
    "load_babi",
    "load_babi_task",
    "load_sentence_pairs",
    "load_squad",
    "load_summaries",
    "load_tokenizer",
    "make_abstracts",
    "make_dataset",
    "make_date_pairs",
    "make_stories",
    "make_task",
    "never_generated_ids",
    "oracle_sentence",
    "oracle_sentence_index",
    "oracle_sentence_indices",
    "pack_examples",
    "oracle_sentence_pairs",
    "principal_sentences",
    "save_tokenizer",
    "special_token_ids",
    "split_examples",
    "split_sentences",
    "story_from_source",
    "story_source",
    "story_texts",
    "strip_special",
    "tokenize_pairs",
    "train_tokenizer",
    "unpack_rows",
]
