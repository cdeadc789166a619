import numpy as np
import pytest

from keras_attention.layers import TransformerEncoderBlock
from tests.layers.hf_reference import (
    additive_mask,
    bart_style_config,
    randomize,
    run_torch,
    set_bart_layer,
)
from tests.test_case import (
    OTHER_CONFIGURATIONS_ON_JAX,
    run_layer_test,
    to_numpy,
    with_keras_mask,
)

pytestmark = pytest.mark.keras_ops_only

# Left out of `make test-jax` (time): the other variants cover the same code on JAX.
SLOW_ON_JAX = pytest.mark.slow_on(
    "jax", reason="compiles for minutes; other variants cover the path"
)


@pytest.mark.parametrize(
    "init_kwargs",
    [
        pytest.param({"norm_first": True}, id="pre_norm", marks=pytest.mark.slow_on(
            "jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
        pytest.param({"norm_first": False, "dropout": 0.1}, id="post_norm"),
        pytest.param(
            {"num_key_value_heads": 1, "rotary": True}, id="mqa_rotary", marks=SLOW_ON_JAX
        ),
        pytest.param(
            {"normalization": "rms_norm", "use_bias": False, "gated_feed_forward": True,
             "activation": "gelu_approximate", "layer_norm_epsilon": 1e-6},
            id="t5_style",
        ),
    ],
)
def test_layer_behaviors(init_kwargs, rng, tmp_path):
    run_layer_test(
        TransformerEncoderBlock,
        {"num_heads": 2, "intermediate_dim": 16, **init_kwargs},
        {"x": rng.normal(size=(2, 5, 8)).astype("float32")},
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=(2, 2, 5, 5),
        tmp_dir=tmp_path,
        position_wise=True,
    )


def test_pre_and_post_norm_follow_their_equations(rng):
    x = rng.normal(size=(1, 3, 4)).astype("float32")
    for norm_first in (True, False):
        block = TransformerEncoderBlock(8, 1, norm_first=norm_first)
        y = np.asarray(block(x))

        def attn(h, block=block):
            return np.asarray(block.self_attention(h, h))

        def ffn(h, block=block):
            return np.asarray(block.feed_forward(h))

        def ln1(h, block=block):
            return np.asarray(block.self_attention_norm(h))

        def ln2(h, block=block):
            return np.asarray(block.feed_forward_norm(h))

        if norm_first:
            h = x + attn(ln1(x))
            expected = h + ffn(ln2(h))
        else:
            h = ln1(x + attn(x))
            expected = ln2(h + ffn(h))
        np.testing.assert_allclose(y, expected, atol=1e-5)


def test_padding_is_ignored(rng):
    block = TransformerEncoderBlock(16, 2)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    padding = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
    y = np.asarray(block(with_keras_mask(x, padding)))
    x2 = np.concatenate([x, rng.normal(size=(2, 3, 8)).astype("float32")], 1)
    y2 = np.asarray(block(with_keras_mask(x2, np.pad(padding, ((0, 0), (0, 3))))))
    np.testing.assert_allclose(y2[:, :4][padding], y[padding], atol=1e-5)


def test_invalid_args():
    with pytest.raises(ValueError, match=r"num_heads.*Received: num_heads=0"):
        TransformerEncoderBlock(8, 0)
    with pytest.raises(ValueError, match=r"intermediate_dim.*Received: intermediate_dim=-3"):
        TransformerEncoderBlock(-3, 2)
    with pytest.raises(ValueError, match=r"num_key_value_heads.*divide.*Received"):
        TransformerEncoderBlock(8, 4, num_key_value_heads=3)
    with pytest.raises(ValueError, match=r"divisible by `num_heads`.*Received: dim=7, num_heads=2"):
        TransformerEncoderBlock(8, 2)(np.ones((1, 3, 7), "float32"))


# family -> (the `transformers` layer, our options): BART and Marian are
# post-norm, mBART pre-norm; BART and mBART use exact GELU, Marian swish.
HF_ENCODER_LAYERS = {
    "bart": ("transformers.models.bart.modeling_bart.BartEncoderLayer",
             {"norm_first": False, "activation": "gelu"}),
    "mbart": ("transformers.models.mbart.modeling_mbart.MBartEncoderLayer",
              {"norm_first": True, "activation": "gelu"}),
    "marian": ("transformers.models.marian.modeling_marian.MarianEncoderLayer",
               {"norm_first": False, "activation": "swish"}),
}


def hf_class(path):
    import importlib

    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("family", sorted(HF_ENCODER_LAYERS))
def test_matches_transformers_encoder_layers(family, rng):
    """With copied weights and padding, the block gives the outputs of the
    `transformers` encoder layer on every real position."""
    path, options = HF_ENCODER_LAYERS[family]
    config = bart_style_config(family, activation_function=options["activation"])
    layer = randomize(hf_class(path)(config))
    block = TransformerEncoderBlock(32, 2, **options)
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    padding = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
    block.build(x.shape)
    set_bart_layer(block, layer)
    expected = run_torch(layer, x, attention_mask=additive_mask(
        np.repeat(padding[:, None, :], 5, axis=1)))
    y = to_numpy(block(x, x_mask=padding))
    np.testing.assert_allclose(y[padding], expected[padding], atol=1e-5)


@pytest.mark.large
def test_self_attention_bias_reaches_the_attention(rng, tmp_path):
    """`self_attention_bias` is the attention's `attention_bias`: the block
    follows the pre-norm equation with the biased attention, a zero bias
    changes nothing, and the option passes every layer check."""
    block = TransformerEncoderBlock(16, 2)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    bias = 2 * rng.normal(size=(1, 2, 5, 5)).astype("float32")
    y = np.asarray(block(x, self_attention_bias=bias))
    normed = np.asarray(block.self_attention_norm(x))
    h = x + np.asarray(block.self_attention(normed, normed, attention_bias=bias))
    expected = h + np.asarray(block.feed_forward(np.asarray(block.feed_forward_norm(h))))
    np.testing.assert_allclose(y, expected, atol=1e-5)
    assert not np.allclose(y, np.asarray(block(x)), atol=1e-3)
    np.testing.assert_allclose(
        np.asarray(block(x, self_attention_bias=np.zeros((5, 5), "float32"))),
        np.asarray(block(x)), atol=1e-6,
    )
    run_layer_test(
        TransformerEncoderBlock,
        {"num_heads": 2, "intermediate_dim": 16},
        {"x": x},
        call_kwargs={"self_attention_bias": bias},
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=(2, 2, 5, 5),
        tmp_dir=tmp_path,
        position_wise=True,
    )


def test_a_padding_mask_of_the_wrong_length_is_named():
    """Issue 22: `x_mask` was only checked deep in the attention (a
    TensorFlow broadcast error naming neither argument)."""
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=8)
    with pytest.raises(ValueError, match=r"`x_mask` must have the sequence length of `x` "
                                         r"\(5\)\. Received: x_mask.shape=\(2, 4\)"):
        block(np.ones((2, 5, 4), "float32"), x_mask=np.ones((2, 4), bool))
