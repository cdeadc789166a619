"""The incremental-decoding contract shared by every cached layer.

`MultiHeadAttention`, `TransformerDecoderBlock`, `PointerGenerator` and
`AttentionRNNDecoder` decode one position (or a chunk of positions) at a
time through the same three methods (see `docs/concepts/caches.md`):

```
memory_cache = layer.compute_cache(memory, ...)            # once per source
cache = layer.init_cache(batch_size, max_length, ...)       # the step state
outputs, cache, scores = layer.call_cached(
    inputs, cache, cache_update_index, memory_cache=memory_cache)
```

This module holds what those layers share about it: the method names, the
checks of `call_cached`'s arguments and the description of a cache in error
messages.
"""

from keras import ops

from keras_attention.validation import check_rank

CONTRACT_METHODS = ("compute_cache", "init_cache", "call_cached")


def check_new_positions(inputs, layout):
    """`inputs` of `call_cached` as a tensor: rank 3 (`layout` names the
    axes in the message, e.g. `"(batch, new_len, dim)"`) with a static
    number of new positions (axis 1), else a ValueError."""
    inputs = ops.convert_to_tensor(inputs)
    check_rank("inputs", inputs.shape, 3, layout)
    if not isinstance(inputs.shape[1], int):
        raise ValueError(
            "`inputs` must have a static number of new positions. "
            f"Received: inputs.shape={tuple(inputs.shape)}"
        )
    return inputs


def check_memory_cache_dict(memory_cache, keys, compute_cache_call):
    """A ValueError unless `memory_cache` is a dict with exactly `keys`, as
    `compute_cache_call` (e.g. `"compute_cache(memory, memory_mask)"`)
    returns it."""
    if isinstance(memory_cache, dict) and set(memory_cache) == set(keys):
        return
    received = (
        sorted(memory_cache) if isinstance(memory_cache, dict) else describe_cache(memory_cache)
    )
    raise ValueError(
        f"`memory_cache` must be the dict of `{compute_cache_call}`, with keys "
        f"{list(keys)}. Received: memory_cache={received}"
    )


def describe_cache(cache):
    """A short description of a cache argument for error messages: None, the
    shapes of a tuple of tensors, or the type's name."""
    if cache is None:
        return "None"
    if isinstance(cache, (tuple, list)):
        return str([tuple(getattr(c, "shape", ())) for c in cache])
    if hasattr(cache, "shape"):
        return f"a tensor of shape {tuple(cache.shape)}"
    return f"a {type(cache).__name__}"
