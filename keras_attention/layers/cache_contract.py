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
warning of the older, deprecated method names and the description of a
cache in error messages.
"""

import warnings

CONTRACT_METHODS = ("compute_cache", "init_cache", "call_cached")


def warn_deprecated(layer, old_name, replacement):
    """Warns (`DeprecationWarning`) that `layer.old_name` is an alias kept
    for older code, naming its `replacement` under the cache contract."""
    warnings.warn(
        f"`{type(layer).__name__}.{old_name}` is deprecated and kept for older "
        f"code; use {replacement} (the contract of every cached layer, returning "
        "`(outputs, cache, scores)`: see docs/concepts/caches.md).",
        DeprecationWarning,
        stacklevel=3,
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
