"""Keras' own `MultiHeadAttention` tests, run against
`keras_attention.compat.keras.MultiHeadAttention`.

The tests are Keras' installed test module
(`keras/src/layers/attention/multi_head_attention_test.py`, Keras 3.15,
Apache-2.0), run unchanged: their `layers.MultiHeadAttention` is switched to
ours for each test, nothing else. A test that reads Keras' private
attributes, or that tests a difference we keep on purpose, is skipped,
naming its reason (`SKIPS`).
"""

import types

import keras
import pytest

upstream = pytest.importorskip("keras.src.layers.attention.multi_head_attention_test")

from keras_attention.compat.keras import MultiHeadAttention  # noqa: E402

PRIVATE = "reads Keras' private attributes ({})"
AXES = ("a difference kept: attention over the sequence axis of (batch, seq, dim) "
        "inputs only (`attention_axes` beyond it, higher-rank inputs)")
PER_HEAD = ("a difference kept: one attention mask for every head, (B, T, S) or "
            "(B, 1, T, S); a (B, H, T, S) mask is refused")
SKIPS = {
    "test_attention_axes_negative_indexing": AXES,
    "test_causal_only_masks_non_4d_inputs": AXES,
    "test_compute_output_shape_different_qv_last_dims": AXES + ": its inputs are rank 5",
    "test_compute_output_shape_high_dim": AXES,
    "test_high_dim_attention": AXES,
    "test_shape_mismatch_error_key_value_dim_mismatch_high_dim": AXES,
    "test_causal_only_skipped_for_subclass": PRIVATE.format(
        "`_compute_attention`'s fast-path flags"),
    "test_compute_attention_combines_causal_and_explicit_mask": PRIVATE.format(
        "`_compute_attention`"),
    "test_masking_with_different_shapes": PER_HEAD,
}


KERAS_LAYERS = upstream.layers


class _SwitchedLayers(types.ModuleType):
    """`keras.src.layers` with `MultiHeadAttention` switched to ours."""

    MultiHeadAttention = MultiHeadAttention

    def __getattr__(self, name):
        return getattr(KERAS_LAYERS, name)


SWITCHED = _SwitchedLayers("layers")


class KerasMultiHeadAttentionTest(upstream.MultiHeadAttentionTest):
    def setUp(self):
        super().setUp()
        upstream.layers = SWITCHED
        self.addCleanup(setattr, upstream, "layers", KERAS_LAYERS)
        reason = next((r for name, r in SKIPS.items()
                       if self._testMethodName.startswith(name)), None)
        if reason:
            pytest.skip(reason)


def test_the_switch_reaches_the_upstream_tests():
    test = KerasMultiHeadAttentionTest("test_basics")
    test.setUp()
    try:
        assert upstream.layers.MultiHeadAttention is MultiHeadAttention
        assert upstream.layers.Dense is keras.layers.Dense
    finally:
        test.doCleanups()
    assert upstream.layers is KERAS_LAYERS
