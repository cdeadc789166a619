import numpy as np
import pytest

from keras_attention.layers import TransformerEncoderBlock
from keras_attention.layers.transformer_block import check_scale, make_norm
from tests.layers.hf_reference import run_torch, set_norm
from tests.test_case import to_numpy

pytestmark = pytest.mark.keras_ops_only


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_rms_norm_matches_transformers_t5_layer_norm(dtype, rng):
    from transformers.models.t5.modeling_t5 import T5LayerNorm

    torch_norm = T5LayerNorm(8, eps=1e-6)
    torch_norm.weight.data.normal_()
    norm = make_norm("rms_norm", 1e-6, dtype, "norm")
    x = rng.normal(scale=5.0, size=(2, 3, 8)).astype("float32")
    norm.build(x.shape)
    set_norm(norm, torch_norm)
    expected = run_torch(torch_norm, x)
    y = to_numpy(norm(x)).astype("float32")
    np.testing.assert_allclose(y, expected, atol=1e-5 if dtype == "float32" else 5e-2)
    assert [w.path for w in norm.weights] == ["norm/scale"]  # no bias


def test_layer_norm_is_keras_layer_normalization():
    norm = make_norm("layer_norm", 1e-5, "float32", "norm")
    assert type(norm).__name__ == "LayerNormalization" and norm.epsilon == 1e-5


def test_check_scale():
    assert check_scale("attention_scale", None) is None
    assert check_scale("attention_scale", 1) == 1.0
    assert check_scale("attention_scale", np.float32(0.5)) == 0.5
    for bad in (0, -1.0, float("inf"), True, "1"):
        with pytest.raises(ValueError, match=r"Received: attention_scale="):
            check_scale("attention_scale", bad)


def test_new_options_are_validated_at_construction():
    with pytest.raises(ValueError, match=r"Received: normalization='batch_norm'"):
        TransformerEncoderBlock(8, 2, normalization="batch_norm")
    with pytest.raises(TypeError, match=r"Received: use_bias=1"):
        TransformerEncoderBlock(8, 2, use_bias=1)
    with pytest.raises(ValueError, match=r"Received: attention_scale=-1"):
        TransformerEncoderBlock(8, 2, attention_scale=-1)
    with pytest.raises(TypeError, match=r"Received: gated_feed_forward='yes'"):
        TransformerEncoderBlock(8, 2, gated_feed_forward="yes")
    with pytest.raises(ValueError, match=r"Received: activation='gelu_fast'"):
        TransformerEncoderBlock(8, 2, activation="gelu_fast")


def test_options_reach_the_sublayers_and_the_config():
    block = TransformerEncoderBlock(
        16, 2, activation="gelu_approximate", normalization="rms_norm",
        use_bias=False, gated_feed_forward=True, layer_norm_epsilon=1e-6,
    )
    block.build((None, 3, 8))
    assert not any(w.path.endswith(("bias", "beta")) for w in block.weights)
    assert block.feed_forward.gated and block.feed_forward_norm.epsilon == 1e-6
    assert type(block.self_attention_norm).__name__ == "RMSNormalization"
    config = block.get_config()
    assert (config["activation"], config["normalization"], config["use_bias"],
            config["gated_feed_forward"], config["attention_scale"]) == (
        "gelu_approximate", "rms_norm", False, True, None)
    again = TransformerEncoderBlock.from_config(config)
    assert again.get_config() == config


def test_key_dim_sets_the_head_size_apart_from_the_model_size(rng):
    """3 heads of 4 on D = 8 (inner size 12, and 3 does not divide 8): the
    query, key and value kernels are `(D, H, key_dim)`, the output kernel
    maps `H * key_dim` back to `D`; the config round trips."""
    block = TransformerEncoderBlock(16, 3, key_dim=4, normalization="rms_norm",
                                    use_bias=False)
    y = block(rng.normal(size=(2, 5, 8)).astype("float32"))
    attention = block.self_attention
    assert tuple(y.shape) == (2, 5, 8) and attention.key_dim == 4
    assert tuple(attention.query_dense.kernel.shape) == (8, 3, 4)
    assert tuple(attention.value_dense.kernel.shape) == (8, 3, 4)
    assert tuple(attention.output_dense.kernel.shape) == (3, 4, 8)
    config = block.get_config()
    assert config["key_dim"] == 4
    assert TransformerEncoderBlock.from_config(config).get_config() == config


def test_key_dim_defaults_to_the_model_size_over_the_heads():
    """None (the default, and what configs saved before `key_dim` load as)
    builds `D // num_heads` heads, as before."""
    block = TransformerEncoderBlock(16, 2)
    block.build((None, 3, 8))
    assert block.key_dim is None and block.get_config()["key_dim"] is None
    assert block.self_attention.key_dim == 4
    config = block.get_config()
    del config["key_dim"]
    old = TransformerEncoderBlock.from_config(config)
    old.build((None, 3, 8))
    assert old.self_attention.key_dim == 4


def test_bad_key_dim_is_refused_at_construction():
    for bad in (0, -4, 2.5, True, "8"):
        with pytest.raises(ValueError, match=rf"`key_dim` must be a positive integer\. "
                                             rf"Received: key_dim={bad!r}$"):
            TransformerEncoderBlock(8, 2, key_dim=bad)
    assert TransformerEncoderBlock(8, 2, key_dim=np.int64(3)).key_dim == 3
    with pytest.raises(ValueError, match=r"divisible by `num_heads` \(or pass `key_dim`\)"):
        TransformerEncoderBlock(8, 3)(np.ones((1, 3, 8), "float32"))
