"""The self-attention caches of a decoder's blocks in its decoding state.

One cache per row (`state["self_caches"]`, reordered with the beams), or,
when a beam search gives `rows_per_source=K` beams per source and every
block's self-attention reads beam slots, one cache per source in beam
slots (`state[BEAM_SLOTS]["self_caches"]`, never reordered) with the rows'
`state["ancestry"]` (see `keras_attention.layers.beam_slots`). The models
that decode with `TransformerDecoderBlock`s (`TransformerSeq2Seq`, T5)
keep their caches through these functions, so both layouts read the same.
"""

import math

import keras
from keras import ops

from keras_attention.decoding.search import BEAM_SLOTS, SOURCE_STATE, write_column
from keras_attention.layers.beam_slots import own_slots


def init_self_caches(blocks, sources, max_length, rows_per_source=1):
    """The state entries of the blocks' self-attention caches for `sources
    * rows_per_source` rows: in beam slots where `rows_per_source > 1` and
    every block's self-attention reads them, else one cache per row."""
    if rows_per_source > 1 and all(b.self_attention.supports_beam_slots for b in blocks):
        return {
            BEAM_SLOTS: {"self_caches": [b.init_cache(sources, max_length, rows_per_source)
                                         for b in blocks]},
            "ancestry": ops.zeros((sources * rows_per_source, max_length), "int32"),
        }
    return {"self_caches": [b.init_cache(sources * rows_per_source, max_length)
                            for b in blocks]}


def read_self_caches(state, index, rows):
    """`(caches, ancestry)` for the step writing position `index` of `rows`
    rows: the ancestry (None for caches per row) with each row's own slot
    written at `index`."""
    if BEAM_SLOTS not in state:
        return state["self_caches"], None
    caches = state[BEAM_SLOTS]["self_caches"]
    rows_per_source = rows // caches[0][0].shape[0]
    return caches, write_column(state["ancestry"], index, own_slots(rows, rows_per_source))


def with_self_caches(state, caches, ancestry):
    """`state` with the step's caches (and ancestry, in beam slots)."""
    if ancestry is None:
        return dict(state, self_caches=caches)
    return dict(state, ancestry=ancestry, **{BEAM_SLOTS: {"self_caches": caches}})


def cache_length(state):
    """`L`, the positions each row's self-attention cache holds."""
    if BEAM_SLOTS in state:
        return state["ancestry"].shape[1]
    return state["self_caches"][0][0].shape[2]  # keys (B, K, L, d)


def self_cache_bytes_per_position(blocks):
    """Bytes the blocks' self-attention caches grow by per position and row:
    keys and values of `num_key_value_heads` heads of the attention's own
    head sizes (`key_dim`, which need not be `D / num_heads`), in their dtype."""
    total = 0
    for block in blocks:
        for part in block.init_cache(1, 1):
            dtype = keras.backend.standardize_dtype(part.dtype)
            bits = int("".join(filter(str.isdigit, dtype)) or 32)
            total += math.prod(part.shape) * bits // 8
    return total


def shift_self_caches(state, offset):
    """`state` with every self-attention cache (one per row) moved `offset`
    positions towards 0: position `p + offset` is read at `p` (the last
    `offset` positions hold what was first, to be written over)."""
    length = cache_length(state)
    order = (ops.arange(length, dtype="int32") + offset) % length
    caches = [tuple(ops.take(part, order, axis=2) for part in cache)
              for cache in state["self_caches"]]
    return dict(state, self_caches=caches)


def resize_cross_caches(state, source_length):
    """`state` with every block's cross-attention cache (`{"cross_attention":
    (keys (B, K, S, d), values), "memory_mask": (B, S)}`, see
    `TransformerDecoderBlock.compute_cache`) cut or padded (masked) to
    `source_length` positions."""
    def resize(part, axis):
        width = part.shape[axis]
        if source_length <= width:
            index = [slice(None)] * len(part.shape)
            index[axis] = slice(0, source_length)
            return part[tuple(index)]
        padding = [(0, 0)] * len(part.shape)
        padding[axis] = (0, source_length - width)
        return ops.pad(part, padding)

    source = state[SOURCE_STATE]
    caches = [{"cross_attention": tuple(resize(part, 2) for part in cache["cross_attention"]),
               "memory_mask": resize(cache["memory_mask"], 1)}
              for cache in source["cross_caches"]]
    return dict(state, **{SOURCE_STATE: dict(source, cross_caches=caches)})
