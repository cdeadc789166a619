"""The exact, query-blocked and fused attention implementations, side by side.

Every attention layer computes the same function (`attention_core`'s one
rule: float32 softmax, exact zeros where masked, a zero context for a fully
masked query row, no NaN from unused positions); this module holds the three
ways of computing it and `choose_implementation`, the one function that picks
one for a call:

- `exact_attention`: materialises the `(B, H, T, S)` weights (the only path
  that can return them or drop them out);
- `blocked_attention`: `query_block_size` queries at a time, each block's
  scores recomputed in the backward pass (peak memory `b * S`, not `T * S`);
- `fused_attention`: `keras.ops.dot_product_attention` (cuDNN flash attention
  on JAX, SDPA on torch, Splash on TPU), for scaled dot-product scores only.

The layer supplies its score, projection and output functions as an
`AttentionSteps` (see `BaseAttention`); the masks of a call arrive as the
dictionary of `BaseAttention._mask_parts` and are built here, per block, by
`block_mask`.
"""

import dataclasses
import functools
from collections.abc import Callable

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers import attention_core

IMPLEMENTATIONS = ("auto", "exact", "blocked", "fused")

# `query_block_size="auto"` blocks the queries when one (batch, head) score
# matrix would hold at least this many entries (e.g. T = S = 2048).
AUTO_BLOCK_MIN_SCORES = 2048 * 2048
AUTO_BLOCK_SIZE = 512

# Backends whose `keras.ops.dot_product_attention` is a fused kernel on an
# accelerator (TensorFlow's is an einsum, a softmax and an einsum: the exact
# path's work with a `(B, H, T, S)` tensor in between, and no flash kernel).
FUSED_BACKENDS = ("jax", "torch")
ACCELERATORS = ("gpu", "tpu")
# Backends whose fused kernel is also the fastest on a CPU: torch's SDPA
# (its flash kernel for CPUs, with and without masks) trains
# `MultiHeadAttention` faster than the exact path there (bench/RESULTS.md).
FUSED_CPU_BACKENDS = ("torch",)


@functools.cache
def default_device(backend=None):
    """The kind of the backend's default device: "cpu", "gpu" or "tpu"."""
    backend = backend or keras.backend.backend()
    if backend == "torch":
        import torch

        return "gpu" if torch.cuda.is_available() else "cpu"
    try:
        devices = keras.distribution.list_devices()
    except Exception:  # a backend without the distribution API
        return "cpu"
    kind = devices[0].split(":")[0].lower() if devices else "cpu"
    return "gpu" if kind == "cuda" else kind


def choose_implementation(
    requested,
    *,
    backend,
    device,
    dtype,
    query_length,
    key_length,
    scores_requested,
    dropout_active,
    score_is_scaled_dot,
    query_block_size="auto",
    biased=False,
):
    """The implementation a call runs: "exact", "blocked" or "fused".

    Args:
        requested: the layer's `implementation`: "auto", "exact", "blocked"
            or "fused".
        backend: the Keras backend name ("tensorflow", "jax", "torch").
        device: "cpu", "gpu" or "tpu" (`default_device()`).
        dtype: the layer's compute dtype (not used by today's rule; the
            fused kernels are chosen on accelerators in every dtype).
        query_length: static `T`, or None when unknown.
        key_length: static `S`, or None when unknown.
        scores_requested: the call returns the attention weights.
        dropout_active: dropout on the weights is active in this call.
        score_is_scaled_dot: the layer's logits are `(q * scale) . k`
            (`scale` 1 / sqrt(d) unless the layer is given another).
        query_block_size: the layer's `query_block_size` ("auto", None or an
            int): under "auto", whether and when to block.
        biased: the call adds a float `attention_bias` to the logits.

    Rules, in order:

    1. Returned or dropped-out weights need them materialised: "exact", for
       every request ("fused" and "blocked" fall back to it; documented on
       `BaseAttention`).
    2. Empty attention (a static `T` or `S` of 0) is "exact" (zero
       contexts, or an empty output). "exact" and "fused" are taken as
       asked ("fused" needs scaled
       dot-product scores: a ValueError otherwise); "blocked" needs a static
       query length (else "exact").
    3. "auto" with an `attention_bias`: "exact" (the bias is a `(B, H, T,
       S)` tensor already, so materialised weights cost no more memory
       than it does; "blocked" and "fused" take a bias when asked for).
    4. "auto": "fused" for scaled dot-product scores on a GPU or TPU under
       JAX or torch, and on torch's CPU unless `T` exceeds an int
       `query_block_size`; otherwise (JAX's and TensorFlow's CPU, TensorFlow
       anywhere, other scores) "blocked" once a score matrix reaches
       `AUTO_BLOCK_MIN_SCORES` entries (or `T` exceeds an int
       `query_block_size`), else "exact" (which keeps its weights for
       FlashAttention's gradient where the scores are scaled dot products:
       `exact_attention`). The CPU choices are what measured fastest for a
       training step on this project's CPU, where the fused call is no
       faster than the exact path (docs/concepts/performance.md).
    """
    del dtype  # the rule does not depend on it today (see Args)
    if requested == "fused" and not score_is_scaled_dot:
        raise ValueError(
            "`implementation='fused'` needs scaled dot-product scores "
            "(keras.ops.dot_product_attention); this layer's scores are not. "
            "Received: implementation='fused'"
        )
    if scores_requested or dropout_active or requested == "exact":
        return "exact"
    if query_length == 0 or key_length == 0:
        return "exact"  # empty attention: nothing to block or fuse
    if requested == "fused":
        return "fused"
    if biased and requested == "auto":
        return "exact"
    static_query = isinstance(query_length, int)
    if requested == "blocked":
        return "blocked" if static_query else "exact"
    if score_is_scaled_dot and backend in FUSED_BACKENDS and device in ACCELERATORS:
        return "fused"
    blocks = static_query and _auto_blocks(query_block_size, query_length, key_length)
    if blocks and isinstance(query_block_size, int):
        return "blocked"  # blocks of the size asked for
    if score_is_scaled_dot and backend in FUSED_CPU_BACKENDS:
        return "fused"
    return "blocked" if blocks else "exact"


def _auto_blocks(query_block_size, query_length, key_length):
    """Whether "auto" blocks a call of static query length `query_length`."""
    if query_block_size is None:
        return False
    if query_block_size == "auto":
        if not isinstance(key_length, int):
            return False
        return query_length * key_length >= AUTO_BLOCK_MIN_SCORES and (
            query_length > AUTO_BLOCK_SIZE
        )
    return query_length > query_block_size


def block_length(query_block_size):
    """The number of queries per block of the blocked path."""
    return query_block_size if isinstance(query_block_size, int) else AUTO_BLOCK_SIZE


# ------------------------------------------------------------------ masks
def block_mask(parts, start, size):
    """The boolean mask `(B, size, S)` of queries `start .. start+size-1`
    (all of them for `start=0, size=T`), or None: the AND of padding, the
    explicit mask and the causal mask at those positions.

    Args:
        parts: the mask parts of a call (`BaseAttention._mask_parts`):
            `query_mask` `(B, T)` or None, `key_mask` `(B, S)` or None,
            `explicit` `(B or 1, T, S)` or None, `causal` bool, `window`
            (the largest query-key distance allowed, or None) and
            `key_length` (int or scalar tensor).
        start: the first query.
        size: the number of queries.
    """
    query_mask, explicit = parts["query_mask"], parts["explicit"]
    if query_mask is not None:
        query_mask = query_mask[:, start : start + size]
    if explicit is not None:
        explicit = explicit[:, start : start + size]
    causal = None
    if parts["causal"]:
        causal = masks.causal_mask(size, parts["key_length"], offset=start)
    band = None
    if parts.get("window") is not None:
        band = masks.sliding_window_mask(
            size, parts["key_length"], parts["window"], offset=start
        )
    padding = masks.padding_mask(
        query_mask,
        parts["key_mask"],
        query_length=size,
        key_length=parts["key_length"],
    )
    return masks.merge_masks(padding, explicit, causal, band)


def only_causal(parts, query_length, key_length):
    """Whether the call's only mask is causal self-attention of static
    `T == S`: every row then has a key and every position is used."""
    return (
        parts["causal"]
        and parts["query_mask"] is None
        and parts["key_mask"] is None
        and parts["explicit"] is None
        and parts.get("window") is None
        and isinstance(query_length, int)
        and query_length == key_length
    )


def broadcast_mask(mask, rank):
    """Adds axes after the batch to a `(B, T, S)` mask up to rank `rank`."""
    if mask is None:
        return None
    while len(mask.shape) < rank:
        mask = mask[:, None]
    return mask


def zero_unused(query, value, key, mask):
    """Zeroes the queries with no key and the keys and values no query uses
    (`mask` `(B, T, S)`), so that NaN stored there cannot reach the output."""
    if mask is None:
        return query, value, key
    used_keys = ops.any(mask, axis=1)
    return (
        attention_core.zero_unused_positions(query, ops.any(mask, axis=2)),
        attention_core.zero_unused_positions(value, used_keys),
        attention_core.zero_unused_positions(key, used_keys),
    )


# ------------------------------------------------------------------ steps
@dataclasses.dataclass(frozen=True)
class AttentionSteps:
    """What a layer contributes to the implementations (its hooks).

    Exact path: `compute_logits(query, key)` -> float32 logits `(B, T, S)`
    or `(B, ..., T, S)`; `compute_output(weights, value)` -> output;
    `drop(weights)` -> weights (dropout of this call); `public_scores(w)`.

    Blocked path: `prepare_query(query, start)`, `prepare_key(key)`,
    `prepare_value(value)` (projections done once), `prepared_logits`,
    `prepared_context(weights, prepared_value)` and `finish_output(context)`
    (contexts concatenated on `context_query_axis`); `flash_operands(k, v)`
    -> `(key (B, K, S, d), value (B, K, S, dv))` or None (then each block is
    wrapped in `keras.remat`), `flash_query(prepared_query)` -> `(B, K, G,
    t, d)` scaled, `flash_context(output)`. `remat_safe`: False where
    `keras.remat` cannot recompute a block (torch under a mixed policy:
    its recomputation runs outside Keras' autocast scope, so the weights
    come back float32 and torch refuses them); blocks then keep their
    weights for the backward pass (correct, without the memory saving).

    Fused path (scaled dot-product layers): `fused_heads(query, value, key)`
    -> `(query (B, T, H, d) scaled, key (B, S, K, d), value (B, S, K, dv))`
    and `fused_output(context (B, T, H, dv))` -> output.

    Attention bias (layers that take one): `logits_bias(bias)` -> the float32
    bias `(B or 1, H or 1, T or 1, S or 1)` of a call in the layout of the
    layer's logits (and of the flash core's `(B, K, G, t, S)`), with the
    query axis second to last; None where the layer takes no bias.
    """

    compute_logits: Callable
    compute_output: Callable
    drop: Callable
    public_scores: Callable
    prepare_query: Callable
    prepare_key: Callable
    prepare_value: Callable
    prepared_logits: Callable
    prepared_context: Callable
    finish_output: Callable
    flash_operands: Callable
    flash_query: Callable
    flash_context: Callable
    context_query_axis: int
    remat_safe: bool = True
    fused_heads: Callable | None = None
    fused_output: Callable | None = None
    logits_bias: Callable | None = None


def _bias_rows(bias, start, size):
    """Rows `start .. start+size-1` of a bias in the logits layout (the
    whole bias when it broadcasts over the queries)."""
    if bias is None or bias.shape[-2] == 1:
        return bias
    return bias[..., start : start + size, :]


def _bias_keys(bias, key_end):
    """The first `key_end` keys of a bias (all of them when it broadcasts
    over the keys or `key_end` is None)."""
    if bias is None or key_end is None or bias.shape[-1] == 1:
        return bias
    return bias[..., :key_end]


# ------------------------------------------------------------------ exact
def exact_attention(query, value, key, parts, steps, return_scores, bias=None,
                    flash_gradient=False):
    """The materialised-weights path; returns `output` or `(output, weights)`.

    With only a causal mask (static `T == S`), the mask is a constant added
    to the logits (`attention_core.causal_bias`): one add, whose gradient is
    the identity, instead of two `where` over `(B, H, T, S)`; no position
    needs zeroing and no row is fully masked. The weights are the same.
    `bias` (float32, `(B or 1, H or 1, T or 1, S or 1)`) is added to the
    logits before the softmax, after the layer's scale.

    `flash_gradient=True` (the caller's promise: a training call, the
    layer's scores are scaled dot products, the weights are neither
    returned nor dropped out; inference keeps the plain ops, which
    TensorFlow compiles and runs faster than the custom gradient's) runs
    the same forward pass through `attention_core.flash_attention` with
    `keep_weights=True`: the weights are kept as here, and the
    backward pass is FlashAttention's (`dS = P * (dO V^T - rowsum(dO * O))`)
    instead of the softmax's own gradient, two passes over `(B, H, T, S)`
    fewer.
    """
    query_length, key_length = query.shape[1], key.shape[1]
    logits_bias = None if bias is None else steps.logits_bias(bias)
    causal_only = only_causal(parts, query_length, key_length) and (
        query_length * key_length <= attention_core.CAUSAL_BIAS_MAX_ENTRIES
    )
    if flash_gradient and not return_scores and query_length != 0 and key_length != 0:
        return _exact_with_flash_gradient(
            query, value, key, parts, steps, logits_bias, causal_only
        )

    def logits_of(query, key):
        logits = steps.compute_logits(query, key)
        return logits if logits_bias is None else logits + logits_bias

    if causal_only:
        logits = logits_of(query, key)
        weights = attention_core.biased_softmax(
            logits, attention_core.causal_bias(query_length, key_length)
        )
    else:
        mask = block_mask(parts, 0, ops.shape(query)[1])
        query, value, key = zero_unused(query, value, key, mask)
        logits = logits_of(query, key)
        weights = attention_core.masked_softmax(
            logits, broadcast_mask(mask, len(logits.shape))
        )
    output = steps.compute_output(steps.drop(weights), value)
    if return_scores:
        return output, steps.public_scores(weights)
    return output


def _exact_with_flash_gradient(query, value, key, parts, steps, logits_bias,
                               causal_only):
    """`exact_attention`'s output through the flash core, weights kept."""
    mask = constant_bias = None
    if causal_only:
        constant_bias = attention_core.causal_bias(query.shape[1], key.shape[1])
    else:
        mask = block_mask(parts, 0, ops.shape(query)[1])
        query, value, key = zero_unused(query, value, key, mask)
    key_heads, value_heads = steps.flash_operands(
        steps.prepare_key(key), steps.prepare_value(value)
    )
    output = attention_core.flash_attention(
        steps.flash_query(steps.prepare_query(query, 0)),
        key_heads,
        value_heads,
        mask_fn=None if mask is None else lambda: broadcast_mask(mask, 5),
        bias=logits_bias,
        constant_bias=constant_bias,
        keep_weights=True,
    )
    return steps.finish_output(steps.flash_context(output))


# ------------------------------------------------------------------ fused
def fused_attention(query, value, key, parts, steps, bias=None):
    """The `keras.ops.dot_product_attention` path; returns the output.

    The mask goes in explicitly as a boolean `(B, 1, T, S)` (`is_causal`
    only for causal self-attention with no other mask and `T == S`: Keras
    aligns it top-left, wrong for a decode step `T < S`), after the
    queries with no key and the keys and values no query uses are zeroed.
    A fully masked query row is given one visible key (key 0) so that the
    kernel's softmax is defined, and its context is set to exactly 0
    afterwards (Keras' fused path would give it the mean of the values).
    A `bias` `(B or 1, H or 1, T or 1, S or 1)` goes in as the kernel's
    `bias`, with the mask folded into it (see `fused_context`).
    """
    if bias is None and only_causal(parts, query.shape[1], key.shape[1]):
        # T == S: Keras' causal mask is then the usual lower triangle, and
        # `is_causal` lets the kernels skip the masked half.
        query_heads, key_heads, value_heads = steps.fused_heads(query, value, key)
        key_heads, value_heads = _one_head_per_group(
            query_heads, key_heads, value_heads
        )
        query_heads, key_heads, value_heads, value_dim = _same_head_sizes(
            query_heads, key_heads, value_heads
        )
        context = _dot_product_attention(
            query_heads, key_heads, value_heads, scale=1.0, is_causal=True
        )[..., :value_dim]
        return steps.fused_output(context)
    mask = block_mask(parts, 0, ops.shape(query)[1])
    query, value, key = zero_unused(query, value, key, mask)
    query_heads, key_heads, value_heads = steps.fused_heads(query, value, key)
    context = fused_context(query_heads, key_heads, value_heads, mask, bias)
    return steps.fused_output(context)


def fused_context(query_heads, key_heads, value_heads, mask=None, bias=None):
    """`keras.ops.dot_product_attention` with the one rule kept.

    Args:
        query_heads: `(B, T, H, d)`, already scaled (logits are `q . k`).
        key_heads: `(B, S, K, d)`, `K` dividing `H` (grouped-query heads:
            query head `h` meets key head `h // (H / K)`).
        value_heads: `(B, S, K, dv)`.
        mask: boolean `(B or 1, T, S)`, True = may attend, or None.
        bias: float `(B or 1, H or 1, T or 1, S or 1)` added to the logits,
            or None. Given, the mask is folded into it (masked keys get
            `-1e30`; torch takes a bias or a mask, not both), in the
            dtype of the heads; the row rule is kept as without a bias.

    Returns:
        Contexts `(B, T, H, dv)` in the dtype of the heads; exactly 0 in a
        row whose keys are all masked.
    """
    key_heads, value_heads = _one_head_per_group(query_heads, key_heads, value_heads)
    query_heads, key_heads, value_heads, value_dim = _same_head_sizes(
        query_heads, key_heads, value_heads
    )
    if bias is not None:
        bias = ops.cast(bias, "float32")
    if mask is None:
        if bias is not None:
            bias = ops.cast(bias, query_heads.dtype)
        context = _dot_product_attention(
            query_heads, key_heads, value_heads, bias=bias, scale=1.0
        )
        return context[..., :value_dim]
    has_key = ops.any(mask, axis=-1)  # (B, T)
    first_key = ops.equal(ops.arange(ops.shape(mask)[-1]), 0)  # (S,)
    visible = ops.logical_or(
        mask, ops.logical_and(ops.logical_not(has_key)[:, :, None], first_key)
    )
    if bias is None:
        context = _dot_product_attention(
            query_heads, key_heads, value_heads, mask=visible[:, None], scale=1.0
        )
    else:
        bias = ops.where(visible[:, None], bias, _FUSED_MASKED_BIAS)
        context = _dot_product_attention(
            query_heads, key_heads, value_heads,
            bias=ops.cast(bias, query_heads.dtype), scale=1.0,
        )
    context = context[..., :value_dim]
    return ops.where(has_key[:, :, None, None], context, ops.zeros_like(context))


# What a masked key's bias becomes on the fused path (float16: -inf, whose
# exp() is 0 as well; every row has a visible key, so no row is all -inf).
_FUSED_MASKED_BIAS = -1e30


def _dot_product_attention(query_heads, key_heads, value_heads, bias=None, **kwargs):
    """`keras.ops.dot_product_attention` with the heads in a dtype the
    device compiles (`_kernel_dtype`), the context in the heads' dtype."""
    compute_dtype = keras.backend.standardize_dtype(query_heads.dtype)
    kernel_dtype = _kernel_dtype(compute_dtype)
    if kernel_dtype == compute_dtype:
        return ops.dot_product_attention(
            query_heads, key_heads, value_heads, bias=bias, **kwargs
        )
    query_heads, key_heads, value_heads = (
        ops.cast(x, kernel_dtype) for x in (query_heads, key_heads, value_heads)
    )
    if bias is not None:
        bias = ops.cast(bias, kernel_dtype)
    context = ops.dot_product_attention(
        query_heads, key_heads, value_heads, bias=bias, **kwargs
    )
    return ops.cast(context, compute_dtype)


def _kernel_dtype(compute_dtype):
    """The dtype the heads enter `keras.ops.dot_product_attention` in.

    JAX asks float16 heads for float32 logits with the dot algorithm
    `F16_F16_F32`, which XLA's CPU refuses when it compiles ("The precision
    'F16_F16_F32' is not supported by dot_general on CPU"). JAX falls back
    to the default algorithm only when an op runs eagerly, so every `jit`
    failed, `fit` and `predict` under `mixed_float16` among them. On a JAX
    CPU, float16 heads therefore enter as float32 (there is no fused kernel
    on a CPU to lose) and the context returns as float16, as keras-hub does
    for the same failure (keras-team/keras-hub#2354). Anything else:
    `compute_dtype` itself.
    """
    if (compute_dtype == "float16" and keras.backend.backend() == "jax"
            and default_device() == "cpu"):
        return "float32"
    return compute_dtype


def _same_head_sizes(query_heads, key_heads, value_heads):
    """JAX's kernels need value heads of the key heads' size: the smaller
    is padded with zeros (which changes no dot product and no context
    entry; the caller keeps the first `value_dim` entries). Other backends
    take different sizes (nothing done). Returns `(query, key, value,
    value_dim)`."""
    key_dim, value_dim = key_heads.shape[-1], value_heads.shape[-1]
    if keras.backend.backend() != "jax" or key_dim == value_dim:
        return query_heads, key_heads, value_heads, value_dim

    def padded(x, size):
        pad = [(0, 0)] * (len(x.shape) - 1) + [(0, size - x.shape[-1])]
        return ops.pad(x, pad)

    size = max(key_dim, value_dim)
    return (
        padded(query_heads, size),
        padded(key_heads, size),
        padded(value_heads, size),
        value_dim,
    )


def _one_head_per_group(query_heads, key_heads, value_heads):
    """Key and value heads as Keras' TensorFlow path takes them: it repeats
    `K > 1` heads itself but fails on multi-query `K = 1` (its einsum does
    not broadcast the head axis), so that one head is repeated here. JAX
    and torch broadcast it (nothing done)."""
    heads, kv_heads = query_heads.shape[2], key_heads.shape[2]
    if keras.backend.backend() != "tensorflow" or kv_heads != 1 or heads == 1:
        return key_heads, value_heads
    return (
        ops.repeat(key_heads, heads, axis=2),
        ops.repeat(value_heads, heads, axis=2),
    )


# ---------------------------------------------------------------- blocked
def blocked_attention(query, value, key, parts, steps, block_size, bias=None):
    """The output of a call, `block_size` queries at a time.

    Layers with `flash_operands` use `attention_core.flash_attention` per
    block (no recomputation of the output in the backward pass); the others
    wrap each block in `keras.remat`. Under a causal mask, the keys after a
    block's last query are left out (half the work of causal
    self-attention). Blocks are chained by a zero that depends on the
    previous block, so that graph executors hold one block's scores at a
    time. A `bias` (float32, `(B or 1, H or 1, T or 1, S or 1)`) is added
    to each block's logits (its rows of the block), and gets its gradient.
    """
    logits_bias = None if bias is None else steps.logits_bias(bias)
    length = query.shape[1]
    starts = list(range(0, length, block_size))
    sizes = [min(block_size, length - start) for start in starts]
    key, value = _zero_unused_keys(parts, starts, sizes, key, value)
    prepared_key = steps.prepare_key(key)
    prepared_value = steps.prepare_value(value)
    flash = steps.flash_operands(prepared_key, prepared_value)
    static_key_length = key.shape[1] if isinstance(key.shape[1], int) else None

    def masked_query(query_block, start, size):
        mask = block_mask(parts, start, size)
        if mask is not None:
            query_block = attention_core.zero_unused_positions(
                query_block, ops.any(mask, axis=2)
            )
        return query_block, mask

    def flash_attend(query_block, start, size, link=None, bias_block=None):
        query_block, mask = masked_query(query_block, start, size)
        key_end = None
        if parts["causal"] and static_key_length is not None:
            key_end = min(start + size, static_key_length)
        mask_fn = None
        if mask is not None:
            # (B, 1, 1, t, S): rebuilt in the backward pass.
            def mask_fn():
                return block_mask(parts, start, size)[:, None, None, :, :key_end]

        operands = flash
        if key_end is not None and key_end < static_key_length:
            operands = [operand[:, :, :key_end] for operand in flash]
        return steps.flash_context(
            attention_core.flash_attention(
                steps.flash_query(steps.prepare_query(query_block, start)),
                *operands,
                mask_fn=mask_fn,
                link=link,
                bias=_bias_keys(bias_block, key_end),
            )
        )

    def attend(query_block, prepared_key, prepared_value, start, size,
               bias_block=None):
        query_block, mask = masked_query(query_block, start, size)
        logits = steps.prepared_logits(
            steps.prepare_query(query_block, start), prepared_key
        )
        if bias_block is not None:
            logits = logits + bias_block
        weights = attention_core.masked_softmax(
            logits, broadcast_mask(mask, len(logits.shape))
        )
        return steps.prepared_context(weights, prepared_value)

    contexts = []
    for start, size in zip(starts, sizes):
        query_block = query[:, start : start + size]
        link = _chain_link(contexts[-1]) if contexts else None
        bias_block = _bias_rows(logits_bias, start, size)
        if flash is not None:  # the core chains its own backward pass
            contexts.append(flash_attend(query_block, start, size, link, bias_block))
            continue
        if link is not None:
            query_block = query_block + ops.cast(link, query_block.dtype)

        def block(q, k, v, *b, start=start, size=size):
            return attend(q, k, v, start, size, *b)

        if steps.remat_safe:
            block = keras.remat(block)
        extra = () if bias_block is None else (bias_block,)
        contexts.append(block(query_block, prepared_key, prepared_value, *extra))
    context = ops.concatenate(contexts, axis=steps.context_query_axis)
    return steps.finish_output(context)


def _chain_link(previous_context):
    """A float32 zero that depends on the previous block's context (finite
    even when that context holds NaN or inf: they would otherwise leak
    across blocks)."""
    previous = ops.sum(ops.cast(previous_context, "float32"))
    return ops.where(ops.isfinite(previous), 0.0 * previous, 0.0)


def _zero_unused_keys(parts, starts, sizes, key, value):
    """Zeroes the keys and values no query of any block uses. Block masks
    are rebuilt per block rather than kept: all of them together would be a
    full `(B, T, S)` tensor again."""
    used_keys = None
    for start, size in zip(starts, sizes):
        mask = block_mask(parts, start, size)
        if mask is None:
            return key, value
        block_used = ops.any(mask, axis=1)
        used_keys = (
            block_used if used_keys is None else ops.logical_or(used_keys, block_used)
        )
    return (
        attention_core.zero_unused_positions(key, used_keys),
        attention_core.zero_unused_positions(value, used_keys),
    )


# ------------------------------------------------------------------ bias
def check_attention_bias(bias, *, batch_size, num_heads, query_length, key_length):
    """A call's float `attention_bias` as float32 `(B or 1, H or 1, T or 1,
    S or 1)`, or a ValueError naming it.

    Args:
        bias: a float tensor of rank 2 to 4 broadcastable (NumPy rules) to
            `(B, H, T, S)`: `(T, S)`, `(H, T, S)` or `(B, H, T, S)`, any
            axis 1 to broadcast.
        batch_size, num_heads, query_length, key_length: the call's `B`,
            `H`, `T` and `S` (None where not static).
    """
    bias = ops.convert_to_tensor(bias)
    shape = tuple(bias.shape)
    dtype = keras.backend.standardize_dtype(bias.dtype)
    if not keras.backend.is_float_dtype(dtype):
        raise ValueError(
            "`attention_bias` must be a float tensor added to the logits (a "
            "boolean or 0/1 mask goes in `attention_mask`). Received: "
            f"attention_bias.dtype={dtype}"
        )
    expected = (batch_size, num_heads, query_length, key_length)
    if not 2 <= len(shape) <= 4 or not all(
        size is None or size == 1 or want is None or size == want
        for size, want in zip(shape[::-1], expected[::-1])
    ):
        raise ValueError(
            "`attention_bias` must be broadcastable to (batch, num_heads, "
            f"target_len, source_len) = {expected} (None: not static), of "
            f"rank 2 to 4. Received: attention_bias.shape={shape}"
        )
    while len(bias.shape) < 4:
        bias = bias[None]
    return ops.cast(bias, "float32")
