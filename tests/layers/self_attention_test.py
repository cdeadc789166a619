import numpy as np
import pytest

from keras_attention import masks
from keras_attention.layers import MultiHeadAttention, SelfAttention
from tests.test_case import OTHER_CONFIGURATIONS_ON_JAX, run_layer_test

pytestmark = pytest.mark.keras_ops_only

# On JAX run_layer_test checks the general score with grouped heads and a window, and
# the additive score, causal, with dropout.
ON_TENSORFLOW = pytest.mark.slow_on("jax", reason=OTHER_CONFIGURATIONS_ON_JAX)


@pytest.mark.parametrize(
    "init_kwargs",
    [
        pytest.param({"num_heads": 2, "score": "scaled_dot"}, id="scaled_dot",
                     marks=ON_TENSORFLOW),
        pytest.param({"num_heads": 2, "score": "dot", "use_causal_mask": True},
                     id="dot_causal", marks=ON_TENSORFLOW),
        pytest.param({"num_heads": 4, "score": "general", "num_key_value_heads": 2,
                      "window": 1}, id="general_gqa_window"),
        pytest.param({"num_heads": 1, "key_dim": 3, "score": "additive",
                      "use_causal_mask": True, "dropout": 0.1, "seed": 4},
                     id="additive_causal"),
    ],
)
def test_layer_behaviors(init_kwargs, rng, tmp_path):
    run_layer_test(
        SelfAttention,
        init_kwargs,
        {"x": rng.normal(size=(2, 5, 8)).astype("float32")},
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=(2, init_kwargs["num_heads"], 5, 5),
        tmp_dir=tmp_path,
    )


def test_scaled_dot_equals_multi_head_attention_on_x_x(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    layer = SelfAttention(num_heads=2)
    mha = MultiHeadAttention(num_heads=2, key_dim=4)
    layer(x), mha(x, x)
    mha.set_weights(layer.get_weights())
    np.testing.assert_allclose(
        layer(x, use_causal_mask=True), mha(x, x, use_causal_mask=True), atol=1e-6
    )


def test_additive_score_matches_numpy(rng):
    x = rng.normal(size=(1, 4, 6)).astype("float32")
    layer = SelfAttention(num_heads=1, score="additive", use_bias=False)
    _, w = layer(x, return_attention_scores=True)
    q = x @ layer.query_kernel.numpy()[:, 0]
    k = x @ layer.key_kernel.numpy()[:, 0]
    logits = np.tanh(q[:, :, None] + k[:, None]) @ layer.score_vector.numpy()[0]
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(w[:, 0], e / e.sum(-1, keepdims=True), atol=1e-6)


def test_general_score_matches_numpy(rng):
    x = rng.normal(size=(1, 4, 6)).astype("float32")
    layer = SelfAttention(num_heads=2, score="general", use_bias=False)
    _, w = layer(x, return_attention_scores=True)
    q = np.einsum("btd,dhk->bthk", x, layer.query_kernel.numpy())
    k = np.einsum("btd,dhk->bthk", x, layer.key_kernel.numpy())
    logits = np.einsum("bthk,hke,bshe->bhts", q, layer.score_kernel.numpy(), k)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(w, e / e.sum(-1, keepdims=True), atol=1e-5)


def test_causal_window_weights_are_zero_outside_the_band(rng):
    x = rng.normal(size=(2, 6, 4)).astype("float32")
    _, w = SelfAttention(2, use_causal_mask=True, window=2)(x, return_attention_scores=True)
    allowed = np.asarray(
        masks.merge_masks(masks.causal_mask(6, 6), masks.sliding_window_mask(6, 6, 2))
    )
    assert (np.asarray(w)[:, :, ~allowed[0]] == 0).all()
    np.testing.assert_allclose(np.asarray(w).sum(-1), 1.0, atol=1e-6)


def test_call_flag_overrides_constructor(rng):
    x = rng.normal(size=(1, 4, 4)).astype("float32")
    layer = SelfAttention(1, use_causal_mask=True)
    _, causal = layer(x, return_attention_scores=True)
    _, full = layer(x, use_causal_mask=False, return_attention_scores=True)
    assert np.asarray(causal)[0, 0, 0, 1] == 0 and np.asarray(full)[0, 0, 0, 1] > 0


def test_implicit_mask_with_explicit_attention_mask(rng):
    """Keras fills `x_mask` when `attention_mask` is a tensor argument too."""
    from tests.test_case import with_keras_mask

    x = rng.normal(size=(1, 4, 4)).astype("float32")
    padding = np.array([[True, True, True, False]])
    layer = SelfAttention(1)
    explicit = np.ones((1, 4, 4), bool)
    _, w = layer(with_keras_mask(x, padding), attention_mask=explicit,
                 return_attention_scores=True)
    assert (np.asarray(w)[0, 0, :, 3] == 0).all()
    assert (np.asarray(w)[0, 0, 3] == 0).all()


def test_invalid_args():
    with pytest.raises(ValueError, match=r"score.*Received: score='cosine'"):
        SelfAttention(score="cosine")
    with pytest.raises(ValueError, match=r"window.*Received: window=-1"):
        SelfAttention(window=-1)
    with pytest.raises(TypeError, match=r"use_causal_mask.*Received: use_causal_mask='yes'"):
        SelfAttention(use_causal_mask="yes")
    with pytest.raises(ValueError, match=r"num_heads.*divide.*Received: x.shape=\(2, 3, 5\)"):
        SelfAttention(num_heads=2)(np.ones((2, 3, 5), "float32"))
    with pytest.raises(ValueError, match=r"rank-3.*Received: x.shape=\(3, 5\)"):
        SelfAttention(num_heads=1)(np.ones((3, 5), "float32"))


def test_cached_decoding_keeps_the_window_at_a_later_start(rng):
    """A prefix of 3 positions then 2 steps: the window is placed at the
    absolute positions `cache_update_index + i`, not at `i`."""
    layer = SelfAttention(num_heads=2, score="general", use_causal_mask=True, window=2)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    full, full_scores = layer(x, return_attention_scores=True)
    cache = layer.init_cache(2, 5)
    prefix, cache, _ = layer.call_cached(x[:, :3], cache, 0)
    outputs, last_scores = [prefix], None
    for index in (3, 4):
        output, cache, last_scores = layer.call_cached(x[:, index:index + 1], cache, index)
        outputs.append(output)
    np.testing.assert_allclose(np.concatenate(outputs, 1), np.asarray(full), atol=2e-5)
    np.testing.assert_allclose(np.asarray(last_scores)[:, :, 0], np.asarray(full_scores)[:, :, 4],
                               atol=2e-5)
    assert not np.asarray(last_scores)[:, :, 0, :2].any()


def test_scale_applies_to_scaled_dot_only():
    assert SelfAttention(num_heads=2, scale=1.0).get_config()["scale"] == 1.0
    with pytest.raises(ValueError, match=r"scale.*Received: scale=1.0, score='dot'"):
        SelfAttention(num_heads=2, score="dot", scale=1.0)


@pytest.mark.parametrize("score", ["scaled_dot", "dot", "general", "additive"])
def test_attention_bias_on_the_blocked_path_equals_the_exact_path(score, rng):
    """Scores other than scaled_dot take `keras.remat` blocks (no flash
    core): the bias is added per block there too."""
    import keras

    x = rng.normal(size=(2, 6, 8)).astype("float32")
    bias = 2 * rng.normal(size=(1, 2, 6, 6)).astype("float32")
    padding = np.arange(6)[None] < np.array([6, 4])[:, None]
    outputs = []
    for implementation in ("exact", "blocked"):
        keras.utils.set_random_seed(0)
        layer = SelfAttention(num_heads=2, score=score, use_causal_mask=True,
                              implementation=implementation, query_block_size=2)
        outputs.append(np.asarray(layer(x, x_mask=padding, attention_bias=bias)))
    np.testing.assert_allclose(outputs[1], outputs[0], atol=1e-5)
    assert not np.allclose(
        outputs[0], np.asarray(layer(x, x_mask=padding)), atol=1e-3
    )
