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
- `sentence_selection`, `subwords` (SentencePiece tokenizers), `pipeline`, `synthetic`.
- `packing`: `pack_examples`, several short examples per row with segment ids.

The loaders are pure Python: each reads one local UTF-8 file (nothing is
downloaded or written) and returns plain lists. Malformed input raises a
`ValueError` naming the file and the 1-based line; a missing file raises
`FileNotFoundError` naming the path.

Each module is imported when one of its names is first used (`data.make_dataset`
loads TensorFlow, `data.SentencePieceModel` only the `sentencepiece` package):
reading a run folder's tokenizers and encoding lines need neither TensorFlow
nor keras-hub.
"""

import importlib
import typing

if typing.TYPE_CHECKING:  # what the names are, for readers and tools; imported lazily below
    from keras_attention.data.babi import load_babi, load_babi_task
    from keras_attention.data.packing import pack_examples, unpack_rows
    from keras_attention.data.pipeline import (
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
    from keras_attention.data.subwords import (
        SentencePieceModel,
        as_tokenizer,
        load_tokenizer,
        never_generated_ids,
        save_tokenizer,
        special_token_ids,
        train_tokenizer,
    )
    from keras_attention.data.summaries import load_summaries
    from keras_attention.data.synthetic import (
        make_abstracts,
        make_date_pairs,
        make_stories,
        make_task,
        sequence_accuracy,
        strip_special,
    )

#: `{public name: the module of this package that defines it}`.
_MODULE_OF = {
    "SentencePieceModel": "subwords",
    "as_tokenizer": "subwords",
    "encode_sentence_documents": "sentence_documents",
    "encode_stories": "pipeline",
    "gap_sentence_pairs": "sentence_selection",
    "load_babi": "babi",
    "load_babi_task": "babi",
    "load_sentence_pairs": "sentence_pairs",
    "load_squad": "squad",
    "load_summaries": "summaries",
    "load_tokenizer": "subwords",
    "make_abstracts": "synthetic",
    "make_dataset": "pipeline",
    "make_date_pairs": "synthetic",
    "make_stories": "synthetic",
    "make_task": "synthetic",
    "never_generated_ids": "subwords",
    "oracle_sentence": "sentence_selection",
    "oracle_sentence_index": "sentence_selection",
    "oracle_sentence_indices": "sentence_documents",
    "oracle_sentence_pairs": "sentence_selection",
    "pack_examples": "packing",
    "principal_sentences": "sentence_selection",
    "save_tokenizer": "subwords",
    "sequence_accuracy": "synthetic",
    "special_token_ids": "subwords",
    "split_examples": "splitting",
    "split_sentences": "sentence_selection",
    "story_from_source": "pipeline",
    "story_source": "pipeline",
    "story_texts": "pipeline",
    "strip_special": "synthetic",
    "tokenize_pairs": "pipeline",
    "train_tokenizer": "subwords",
    "unpack_rows": "packing",
}
_MODULES = frozenset(_MODULE_OF.values()) | {"text_files"}

__all__ = [
    "SentencePieceModel",
    "as_tokenizer",
    "encode_sentence_documents",
    "encode_stories",
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
    "oracle_sentence_pairs",
    "pack_examples",
    "principal_sentences",
    "save_tokenizer",
    "sequence_accuracy",
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


def __getattr__(name):
    """Imports the module of a public name (or a module by its name) on first
    use (PEP 562)."""
    if name in _MODULES:
        return importlib.import_module(f"keras_attention.data.{name}")
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'keras_attention.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"keras_attention.data.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))
