"""A decoder's self-attention caches: one per row, or in beam slots."""

import numpy as np
import pytest

from keras_attention.decoding import BEAM_SLOTS
from keras_attention.layers import TransformerDecoderBlock
from keras_attention.models.decoder_caches import (
    cache_length,
    init_self_caches,
    read_self_caches,
    with_self_caches,
)

pytestmark = pytest.mark.keras_ops_only


@pytest.fixture(scope="module")
def blocks():
    made = [TransformerDecoderBlock(num_heads=2, intermediate_dim=8) for _ in range(2)]
    x = np.zeros((1, 3, 8), "float32")
    for block in made:
        block(x, x)
    return made


def test_beams_get_slots_and_single_rows_caches_per_row(blocks):
    per_row = init_self_caches(blocks, 2, 5)
    assert set(per_row) == {"self_caches"} and cache_length(per_row) == 5
    assert tuple(per_row["self_caches"][0][0].shape) == (2, 2, 5, 4)
    slots = init_self_caches(blocks, 2, 5, rows_per_source=3)
    assert set(slots) == {BEAM_SLOTS, "ancestry"} and cache_length(slots) == 5
    assert tuple(slots[BEAM_SLOTS]["self_caches"][1][1].shape) == (2, 2, 5 * 3, 4)
    assert tuple(slots["ancestry"].shape) == (6, 5)


def test_a_step_writes_each_rows_own_slot_into_the_ancestry(blocks):
    state = init_self_caches(blocks, 2, 5, rows_per_source=3)
    caches, ancestry = read_self_caches(state, 2, 6)
    assert caches is state[BEAM_SLOTS]["self_caches"]
    np.testing.assert_array_equal(np.asarray(ancestry)[:, 2], [0, 1, 2, 0, 1, 2])
    assert not np.delete(np.asarray(ancestry), 2, axis=1).any()
    stepped = with_self_caches(state, caches, ancestry)
    np.testing.assert_array_equal(stepped["ancestry"], ancestry)
    per_row = init_self_caches(blocks, 2, 5)
    caches, ancestry = read_self_caches(per_row, 2, 2)
    assert ancestry is None and with_self_caches(per_row, caches, None).keys() == {"self_caches"}
