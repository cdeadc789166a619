import numpy as np
import pytest

from keras_attention import masks


def as_int(mask):
    return np.asarray(mask).astype(int).tolist()


def test_sequence_mask_ragged_lengths():
    assert as_int(masks.sequence_mask([3, 0, 1], 3)) == [[1, 1, 1], [0, 0, 0], [1, 0, 0]]


def test_padding_mask_from_query_and_key_masks():
    query = [[True, True, False]]
    key = [[True, False]]
    assert as_int(masks.padding_mask(query, key)) == [[[1, 0], [1, 0], [0, 0]]]
    assert as_int(masks.padding_mask(query, key_length=2)) == [[[1, 1], [1, 1], [0, 0]]]
    assert as_int(masks.padding_mask(key_mask=key, query_length=3)) == [[[1, 0]] * 3]
    assert masks.padding_mask() is None


def test_padding_mask_needs_lengths_without_masks():
    with pytest.raises(ValueError, match="query_length.*Received: query_length=None"):
        masks.padding_mask(key_mask=[[True]])
    with pytest.raises(ValueError, match="key_length.*Received: key_length=None"):
        masks.padding_mask(query_mask=[[True]])


def test_padding_mask_from_lengths_ragged():
    mask = masks.padding_mask_from_lengths([2, 1], key_length=3, query_length=2,
                                           query_lengths=[2, 1])
    assert as_int(mask) == [
        [[1, 1, 0], [1, 1, 0]],
        [[1, 0, 0], [0, 0, 0]],
    ]


def test_causal_mask_square_is_lower_triangular():
    assert as_int(masks.causal_mask(4, 4))[0] == np.tril(np.ones((4, 4), int)).tolist()


def test_causal_mask_decode_step_is_bottom_right_aligned():
    # One query at position 5 against 6 cached keys: it sees all of them.
    assert as_int(masks.causal_mask(1, 6, offset=5)) == [[[1, 1, 1, 1, 1, 1]]]
    # Three queries at positions 3, 4, 5 (a chunk appended to a prefix of 3).
    assert as_int(masks.causal_mask(3, 6, offset=3))[0] == [
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 1, 0],
        [1, 1, 1, 1, 1, 1],
    ]


def test_causal_mask_per_example_offsets():
    mask = masks.causal_mask(1, 4, offset=np.array([0, 2], "int32"))
    assert as_int(mask) == [[[1, 0, 0, 0]], [[1, 1, 1, 0]]]


def test_causal_mask_refuses_top_left_alignment():
    with pytest.raises(ValueError, match=r"offset.*Received: query_length=1, key_length=6"):
        masks.causal_mask(1, 6)


def test_sliding_window_mask():
    assert as_int(masks.sliding_window_mask(5, 5, 1))[0] == [
        [1, 1, 0, 0, 0],
        [1, 1, 1, 0, 0],
        [0, 1, 1, 1, 0],
        [0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1],
    ]
    assert as_int(masks.sliding_window_mask(1, 5, 1, offset=4)) == [[[0, 0, 0, 1, 1]]]
    local_causal = masks.merge_masks(masks.causal_mask(4, 4), masks.sliding_window_mask(4, 4, 1))
    assert as_int(local_causal)[0] == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    with pytest.raises(ValueError, match="window.*Received: window=-2"):
        masks.sliding_window_mask(3, 3, -2)


def test_merge_masks_broadcasts_and_ignores_none():
    padding = masks.padding_mask(key_mask=[[True, True, False], [True, False, False]],
                                 query_length=3)
    merged = masks.merge_masks(None, padding, masks.causal_mask(3, 3))
    assert as_int(merged) == [
        [[1, 0, 0], [1, 1, 0], [1, 1, 0]],
        [[1, 0, 0], [1, 0, 0], [1, 0, 0]],
    ]
    assert masks.merge_masks(None, None) is None


def test_attention_mask_accepts_bool_and_01_ints():
    tril = np.tril(np.ones((3, 3), "int32"))
    checked = masks.attention_mask(tril, batch_size=2, query_length=3, key_length=3)
    assert checked.dtype == "bool" and tuple(checked.shape) == (1, 3, 3)
    full = masks.attention_mask(np.ones((2, 3, 3), bool), batch_size=2, query_length=3,
                                key_length=3)
    assert tuple(full.shape) == (2, 3, 3)


def test_attention_mask_refuses_additive_float_masks():
    additive = np.where(np.tril(np.ones((3, 3))) > 0, 0.0, -1e9).astype("float32")
    with pytest.raises(ValueError, match=r"additive.*Received: attention_mask with dtype float32"):
        masks.attention_mask(additive, batch_size=1, query_length=3, key_length=3)


def test_attention_mask_refuses_additive_integer_masks():
    additive = np.where(np.tril(np.ones((3, 3))) > 0, 0, -10000).astype("int32")
    with pytest.raises(ValueError, match=r"only 0 and 1.*Received: attention_mask with values"):
        masks.attention_mask(additive, batch_size=1, query_length=3, key_length=3)


@pytest.mark.parametrize("shape", [(2, 2, 3), (3, 3), (3, 2, 4), (3, 1, 2, 3), (3,)])
def test_attention_mask_refuses_wrong_shapes(shape):
    with pytest.raises(ValueError, match=r"attention_mask.*\(batch, target_len, source_len\)"
                                         r".*Received: attention_mask.shape"):
        masks.attention_mask(np.ones(shape, bool), batch_size=3, query_length=2, key_length=3)


def test_segment_mask_is_block_diagonal_literal():
    ids = [[1, 1, 2, 2, 2, 0], [1, 2, 3, 0, 0, 0]]
    mask = masks.segment_mask(ids)
    assert tuple(mask.shape) == (2, 6, 6)
    assert as_int(mask[0]) == [
        [1, 1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [0, 0, 1, 1, 1, 0],
        [0, 0, 1, 1, 1, 0],
        [0, 0, 1, 1, 1, 0],
        [0, 0, 0, 0, 0, 0],
    ]
    assert as_int(mask[1])[:3] == [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0]]


def test_segment_mask_merged_with_causal():
    mask = masks.merge_masks(masks.segment_mask([[1, 1, 2, 2]]), masks.causal_mask(4, 4))
    assert as_int(mask) == [[[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]]


def test_segment_mask_cross_attention_sees_its_own_source():
    target = [[1, 1, 1, 2, 2, 0]]
    source = [[1, 2, 2, 0]]
    assert as_int(masks.segment_mask(target, source)) == [[
        [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0],
    ]]


def test_segment_mask_fully_padded_row_is_fully_masked():
    mask = masks.segment_mask([[1, 1, 0], [0, 0, 0]])
    assert not np.asarray(mask[1]).any()
    assert as_int(mask[0])[2] == [0, 0, 0]


def test_segment_mask_refuses_wrong_rank():
    with pytest.raises(ValueError, match=r"key_segment_ids.*Received: key_segment_ids.shape"):
        masks.segment_mask([[1, 1]], [1, 1])


def test_segment_positions_restart_per_segment():
    ids = [[1, 1, 1, 2, 2, 0, 0], [1, 2, 2, 2, 3, 3, 3], [0, 0, 0, 0, 0, 0, 0]]
    assert np.asarray(masks.segment_positions(ids)).tolist() == [
        [0, 1, 2, 0, 1, 0, 0], [0, 0, 1, 2, 0, 1, 2], [0] * 7,
    ]


def test_decoder_token_mask_keeps_a_start_token_with_the_pad_id():
    ids = np.array([[0, 5, 6, 0], [0, 0, 0, 0], [1, 5, 0, 0]])
    assert as_int(masks.decoder_token_mask(ids, 0)) == [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]]
    with pytest.raises(ValueError, match="pad_token_id"):
        masks.decoder_token_mask(ids, -1)
