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
import numpy as np
import pytest

upstream = pytest.importorskip("keras.src.layers.attention.multi_head_attention_test")

from keras_attention.compat.keras import MultiHeadAttention  # noqa: E402
from tests.test_case import compile_function, to_numpy  # noqa: E402

PRIVATE = "reads Keras' private attributes ({})"
SKIPS = {
    "test_causal_only_skipped_for_subclass": PRIVATE.format(
        "`_compute_attention`'s fast-path flags"),
    "test_compute_attention_combines_causal_and_explicit_mask": PRIVATE.format(
        "`_compute_attention`"),
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


def test_keras_weights_give_keras_outputs_with_any_mask_form(rng):
    query = rng.normal(size=(2, 4, 16)).astype("float32")
    value = rng.normal(size=(2, 6, 16)).astype("float32")
    theirs = keras.layers.MultiHeadAttention(2, 8, None, 0.0, True, (12,))
    ours = MultiHeadAttention(2, 8, None, 0.0, True, (12,))  # Keras' positional order
    theirs(query, value), ours(query, value)
    ours.set_weights(theirs.get_weights())
    bool_mask = rng.random((2, 4, 6)) < 0.7
    bool_mask[..., 0] = True  # no fully masked row: there we differ on purpose
    for mask in (None, bool_mask, bool_mask.astype("int32"), bool_mask.astype("float32")):
        ours_out = ours(query, value, attention_mask=mask, return_attention_scores=True)
        theirs_out = theirs(query, value, attention_mask=mask, return_attention_scores=True)
        for a, b in zip(ours_out, theirs_out):
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5)
    causal = dict(use_causal_mask=True)  # Keras' top-left causal mask, T != S
    np.testing.assert_allclose(to_numpy(ours(query, value, **causal)),
                               to_numpy(theirs(query, value, **causal)), atol=1e-5)


def test_an_additive_float_mask_is_refused_not_misread():
    layer = MultiHeadAttention(2, 4)
    x = np.ones((1, 3, 8), "float32")
    additive = np.where(np.tril(np.ones((3, 3))) > 0, 0.0, -1e9).astype("float32")
    with pytest.raises(ValueError, match=r"`attention_mask`: a float mask must hold 0.*"
                                         r"Received: attention_mask with values"):
        layer(x, x, attention_mask=additive)


def test_keras_arguments_and_config_round_trip():
    layer = MultiHeadAttention(4, 8, flash_attention=False, num_key_value_heads=2)
    config = layer.get_config()
    assert config["flash_attention"] is False and "implementation" not in config
    assert layer.implementation == "exact" and layer.num_key_value_heads == 2
    assert MultiHeadAttention.from_config(config).get_config() == config
    with pytest.raises(ValueError, match=r"Received: dropout=0.1, flash_attention=True"):
        MultiHeadAttention(2, 4, dropout=0.1, flash_attention=True)
    with pytest.raises(ValueError, match=r"Received: flash_attention=True, "
                                         r"implementation='exact'"):
        MultiHeadAttention(2, 4, flash_attention=True, implementation="exact")


def test_use_causal_mask_takes_keras_integers_and_refuses_strings(rng):
    """Keras' own tests pass `use_causal_mask=0`: 0 and 1 read as False and
    True; a string is refused naming the argument, never read as True."""
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    np.testing.assert_allclose(to_numpy(layer(x, x, use_causal_mask=0)),
                               to_numpy(layer(x, x, use_causal_mask=False)))
    np.testing.assert_allclose(to_numpy(layer(x, x, use_causal_mask=1)),
                               to_numpy(layer(x, x, use_causal_mask=True)))
    with pytest.raises(TypeError, match=r"use_causal_mask.*Received: use_causal_mask='no'"):
        layer(x, x, use_causal_mask="no")


def _keras_pair(rng, query, value, **kwargs):
    """Keras' layer and ours with Keras' weights, called once on `query, value`."""
    theirs = keras.layers.MultiHeadAttention(2, 4, **kwargs)
    ours = MultiHeadAttention(2, 4, **kwargs)
    theirs(query, value), ours(query, value)
    ours.set_weights(theirs.get_weights())
    return theirs, ours


@pytest.mark.parametrize("query_shape, value_shape, axes, mask_axes", [
    ((2, 3, 5, 8), (2, 3, 4, 8), (2,), (5, 4)),           # one free axis, broadcast mask
    ((2, 3, 5, 8), (2, 3, 4, 8), -2, (3, 5, 4)),          # negative axis, a mask per free position
    ((2, 5, 3, 8), (2, 4, 3, 8), 1, (5, 4)),              # the free axis after the attention one
    ((2, 2, 3, 4, 8), (2, 2, 2, 3, 8), (2, 3), (3, 4, 2, 3)),  # 5-D, two attention axes
    ((2, 3, 4, 8), (2, 2, 5, 8), None, (3, 4, 2, 5)),     # None: every axis but batch and features
])
def test_attention_over_several_axes_gives_keras_outputs_and_scores(
        rng, query_shape, value_shape, axes, mask_axes):
    query = rng.normal(size=query_shape).astype("float32")
    value = rng.normal(size=value_shape).astype("float32")
    theirs, ours = _keras_pair(rng, query, value, attention_axes=axes)
    mask = rng.random((2,) + mask_axes) < 0.8
    for kwargs in ({}, {"attention_mask": mask}):
        ours_out = ours(query, value, return_attention_scores=True, **kwargs)
        theirs_out = theirs(query, value, return_attention_scores=True, **kwargs)
        for a, b in zip(ours_out, theirs_out):
            assert a.shape == b.shape
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5)
    assert ours.compute_output_shape(query_shape, value_shape) == query_shape


def test_a_mask_per_head_gives_keras_outputs(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    theirs, ours = _keras_pair(rng, x, x)
    mask = rng.random((2, 2, 5, 5)) < 0.6
    mask[..., 0] = True  # every row attends somewhere in every head
    np.testing.assert_allclose(to_numpy(ours(x, x, attention_mask=mask)),
                               to_numpy(theirs(x, x, attention_mask=mask)), atol=1e-5)
    with pytest.raises(ValueError, match=r"one per head \(2\).*Received: attention_mask.shape="
                                         r"\(2, 3, 5, 5\)"):
        ours(x, x, attention_mask=np.ones((2, 3, 5, 5), bool))


def test_attention_axes_are_checked_saved_and_reloaded(rng, tmp_path):
    with pytest.raises(ValueError, match=r"`attention_axes`.*Received: attention_axes='rows'"):
        MultiHeadAttention(2, 4, attention_axes="rows")
    x = rng.normal(size=(2, 3, 5, 8)).astype("float32")
    with pytest.raises(ValueError, match=r"within \[1, 3\).*Received: attention_axes=\(3,\)"):
        MultiHeadAttention(2, 4, attention_axes=3)(x, x)
    with pytest.raises(ValueError, match=r"`value` must have the query's rank.*value shape "
                                         r"\(2, 4, 5, 8\)"):
        MultiHeadAttention(2, 4, attention_axes=2)(x, np.ones((2, 4, 5, 8), "float32"))
    video = rng.normal(size=(2, 2, 3, 4, 8)).astype("float32")
    with pytest.raises(ValueError, match=r"`use_causal_mask`.*several.*Received: "
                                         r"use_causal_mask=True, attention_axes=\(2, 3\)"):
        MultiHeadAttention(2, 4, attention_axes=(2, 3))(video, video, use_causal_mask=True)
    layer = MultiHeadAttention(2, 4, attention_axes=(2, 3))
    query = keras.Input((2, 3, 4, 8))
    model = keras.Model(query, layer(query, query))
    assert layer.get_config()["attention_axes"] == (2, 3)
    model.save(tmp_path / "video.keras")
    reloaded = keras.saving.load_model(tmp_path / "video.keras")
    np.testing.assert_allclose(to_numpy(reloaded(video)), to_numpy(model(video)), atol=1e-6)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_attention_over_several_axes_compiles_with_masks(rng, jit_compile):
    video = rng.normal(size=(2, 2, 3, 4, 8)).astype("float32")
    layer = MultiHeadAttention(2, 4, attention_axes=(2, 3))
    mask = rng.random((2, 3, 4, 3, 4)) < 0.7
    eager = layer(video, video, attention_mask=mask)
    compiled = compile_function(
        lambda x, m: layer(x, x, attention_mask=m), jit_compile=jit_compile)
    if compiled is None:
        pytest.skip("this backend compiles nothing (torch: eager)")
    np.testing.assert_allclose(to_numpy(compiled(video, mask)), to_numpy(eager), atol=1e-5)
    assert np.isfinite(to_numpy(eager)).all()
