"""Self-attention caches in beam slots read as the rows' reordered caches."""

import numpy as np
import pytest
from keras import ops

from keras_attention.layers import MultiHeadAttention
from keras_attention.layers.beam_slots import own_slots
from tests.test_case import EAGER_AND_XLA, compile_function

pytestmark = pytest.mark.keras_ops_only

SOURCES, BEAMS, LENGTH, DIM = 2, 3, 7, 8


def reordered(cache, rows):
    return tuple(ops.take(c, rows, axis=0) for c in cache)


def parents(rng):
    """Each row's parent among the beams of its source, `(B * R,)`."""
    picks = rng.integers(0, BEAMS, size=(SOURCES, BEAMS))
    return (np.arange(SOURCES)[:, None] * BEAMS + picks).reshape(-1).astype("int32")


def search_both_ways(layer, rng, chunks, compiled=False, bias_fn=None, mask_fn=None):
    """Runs `chunks` (lengths of new positions per call) through a per-row
    cache reordered by random parents after every call, and through beam
    slots whose ancestry is reordered instead; yields both results per
    call."""
    rows = SOURCES * BEAMS
    x = rng.normal(size=(rows, sum(chunks), DIM)).astype("float32")
    layer(x[:, :1], x[:, :1])
    cache = layer.init_cache(rows, LENGTH)
    slots = layer.init_cache(SOURCES, LENGTH, rows_per_source=BEAMS)
    ancestry = np.zeros((rows, LENGTH), "int32")

    def per_row(q, cache, index, bias, mask):
        return layer.call_cached(q, cache, index, attention_bias=bias, attention_mask=mask)

    def in_slots(q, slots, index, ancestry, bias, mask):
        return layer.call_cached(q, slots, index, cache_ancestry=ancestry, attention_bias=bias,
                                 attention_mask=mask)

    if compiled:
        per_row = compile_function(per_row, jit_compile=True) or per_row
        in_slots = compile_function(in_slots, jit_compile=True) or in_slots
    index = 0
    for new in chunks:
        q = x[:, index:index + new]
        bias = None if bias_fn is None else bias_fn(new)
        mask = None if mask_fn is None else mask_fn(new)
        expected, cache, expected_scores = per_row(q, cache, np.int32(index), bias, mask)
        got, slots, scores = in_slots(q, slots, np.int32(index), ancestry, bias, mask)
        yield (expected, expected_scores), (got, scores)
        for position in range(index, index + new):
            ancestry[:, position] = np.asarray(own_slots(rows, BEAMS))
        rows_now = parents(rng)
        cache = reordered(cache, rows_now)
        ancestry = ancestry[rows_now]
        index += new


def assert_same(pairs):
    calls = 0
    for (expected, expected_scores), (got, scores) in pairs:
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), atol=1e-5)
        np.testing.assert_allclose(np.asarray(scores), np.asarray(expected_scores), atol=1e-6)
        calls += 1
    return calls


@pytest.mark.parametrize("compiled", EAGER_AND_XLA)
@pytest.mark.parametrize(
    "config",
    [{"num_heads": 2, "key_dim": 4},
     {"num_heads": 4, "key_dim": 2, "num_key_value_heads": 2, "rotary": True},
     {"num_heads": 2, "key_dim": 4, "sliding_window": 3, "use_gate": True}],
    ids=["mha", "gqa_rotary", "window_gate"],
)
def test_slots_give_the_reordered_caches_outputs_and_scores(config, compiled, rng):
    """A first chunk of two positions (a prompt), then one per step; the
    rows' parents drawn at random after each call, as a beam search does."""
    layer = MultiHeadAttention(**config)
    assert assert_same(search_both_ways(layer, rng, [2, 1, 1, 1, 1], compiled)) == 5


def test_slots_take_a_bias_and_a_mask_per_row(rng):
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    rows = SOURCES * BEAMS
    padding = rng.random((rows, 1, LENGTH)) > 0.3
    padding[:, :, 0] = True

    def bias_fn(new):
        return rng.normal(size=(1, 2, new, LENGTH)).astype("float32")

    def row_bias_fn(new):
        return rng.normal(size=(rows, 2, new, LENGTH)).astype("float32")

    def mask_fn(new):
        return np.repeat(padding, new, axis=1)

    assert assert_same(search_both_ways(layer, rng, [1, 1, 1], bias_fn=bias_fn,
                                        mask_fn=mask_fn)) == 3
    assert assert_same(search_both_ways(layer, rng, [2, 1], bias_fn=row_bias_fn)) == 2


def built_layer_and_slots(rng):
    """A built layer (2 heads of 4), one new position `x` per row and
    empty beam slots."""
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    x = rng.normal(size=(SOURCES * BEAMS, 1, DIM)).astype("float32")
    layer(x, x)
    return layer, x, layer.init_cache(SOURCES, LENGTH, rows_per_source=BEAMS)


def test_slots_are_written_in_place(rng):
    """Row `r` writes only its own slot; the other slots keep their keys."""
    layer, x, slots = built_layer_and_slots(rng)
    rows = SOURCES * BEAMS
    assert tuple(slots[0].shape) == (SOURCES, 2, 4, LENGTH * BEAMS)  # keys transposed
    assert tuple(slots[1].shape) == (SOURCES, 2, LENGTH * BEAMS, 4)
    _, slots, _ = layer.call_cached(x, slots, 3, cache_ancestry=np.zeros((rows, LENGTH), "int32"))
    keys = np.asarray(slots[0]).reshape(SOURCES, 2, 4, LENGTH, BEAMS)
    values = np.asarray(slots[1]).reshape(SOURCES, 2, LENGTH, BEAMS, 4)
    expected_keys, expected_values = (np.asarray(c) for c in layer.compute_cache(x))
    for row in range(rows):  # (rows, K, 1, d) each
        source, slot = divmod(row, BEAMS)
        np.testing.assert_allclose(keys[source, :, :, 3, slot], expected_keys[row, :, 0],
                                   atol=1e-6)
        np.testing.assert_allclose(values[source, :, 3, slot], expected_values[row, :, 0],
                                   atol=1e-6)
    assert not np.delete(keys, 3, axis=3).any() and not np.delete(values, 3, axis=2).any()


def test_slots_refuse_what_they_cannot_read(rng):
    layer, x, slots = built_layer_and_slots(rng)
    rows = SOURCES * BEAMS
    ancestry = np.zeros((rows, LENGTH), "int32")
    with pytest.raises(ValueError, match=r"rows_per_source.*Received: rows_per_source=0"):
        layer.init_cache(SOURCES, LENGTH, rows_per_source=0)
    with pytest.raises(ValueError, match=r"`cache` must be a pair.*Received: cache shapes "
                                         r"\[\(2, 2, 4, 21\)"):
        layer.call_cached(x, slots, 0)  # no cache_ancestry: read as a cache per row
    with pytest.raises(ValueError, match=r"rows_per_source\)`.*Received: cache shapes "
                                         r"\[\(6, 2, 7, 4\)"):
        layer.call_cached(x, layer.init_cache(rows, LENGTH), 0, cache_ancestry=ancestry)
    with pytest.raises(ValueError, match=r"two or more rows per source.*"
                                         r"Received: rows_per_source=1"):
        layer.init_cache(SOURCES, LENGTH, rows_per_source=1)
    with pytest.raises(ValueError, match=r"Received: 5 query rows, cache_ancestry of shape "
                                         r"\(6, 7\)"):
        layer.call_cached(x[:5], slots, 0, cache_ancestry=ancestry)
    with pytest.raises(ValueError, match=r"Received: 6 query rows, cache_ancestry of shape "
                                         r"\(6, 5\)"):
        layer.call_cached(x, slots, 0, cache_ancestry=ancestry[:, :5])
    with pytest.raises(ValueError, match=r"cross-attention has none.*Received: cache=None"):
        layer.call_cached(x, memory_cache=layer.compute_cache(x), cache_ancestry=ancestry)
    with pytest.raises(ValueError, match=r"out of range.*Received: cache_update_index=7"):
        layer.call_cached(x, slots, 7, cache_ancestry=ancestry)


def test_a_cache_per_row_is_never_read_as_slots(rng):
    """With `max_length == key_dim` a cache per row, `(rows, K, L, d)` keys,
    has the shapes of one-row slots, `(sources, K, d, L)`: `cache_ancestry`
    refuses it instead of reading its keys transposed, and slots of one row
    are refused where they would be made."""
    layer, x, _ = built_layer_and_slots(rng)  # key_dim 4
    rows = SOURCES * BEAMS
    per_row = layer.init_cache(rows, 4)
    assert tuple(per_row[0].shape) == (rows, 2, 4, 4)
    with pytest.raises(ValueError, match=r"`cache_ancestry` reads beam slots of two or more "
                                         r"rows.*Received: 6 query rows and a cache of 6 sources"):
        layer.call_cached(x, per_row, 0, cache_ancestry=np.zeros((rows, 4), "int32"))
    output, _, _ = layer.call_cached(x, per_row, 0)  # without ancestry: read per row
    assert np.isfinite(np.asarray(output)).all()
