
import numpy as np
import pytest

from keras_attention.layers import TransformerDecoderBlock
from tests.layers.hf_reference import (
    additive_mask,
    bart_style_config,
    randomize,
    run_torch,
    set_bart_layer,
    torch_tensor,
)
from tests.test_case import (
    EAGER_AND_XLA,
    OTHER_CONFIGURATIONS_ON_JAX,
    compile_function,
    run_layer_test,
    to_numpy,
)

pytestmark = pytest.mark.keras_ops_only

# Left out of `make test-jax` (time): the other variants cover the same code on JAX.
SLOW_ON_JAX = pytest.mark.slow_on(
    "jax", reason="compiles for minutes; other variants cover the path"
)


@pytest.mark.parametrize(
    "init_kwargs",
    [
        pytest.param({"norm_first": True}, id="pre_norm", marks=SLOW_ON_JAX),
        pytest.param({"norm_first": False, "dropout": 0.1}, id="post_norm"),
        pytest.param({"num_key_value_heads": 1, "rotary": True}, id="mqa_rotary",
                     marks=pytest.mark.slow_on("jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
        pytest.param(
            {"normalization": "rms_norm", "use_bias": False, "gated_feed_forward": True,
             "activation": "silu"},
            id="rms_swiglu", marks=SLOW_ON_JAX,
        ),
        # 2 heads of 6: the inner size 12 is not D = 8 (T5's `d_kv`).
        pytest.param({"key_dim": 6, "use_bias": False}, id="key_dim", marks=SLOW_ON_JAX),
    ],
)
def test_layer_behaviors(init_kwargs, rng, tmp_path):
    run_layer_test(
        TransformerDecoderBlock,
        {"num_heads": 2, "intermediate_dim": 16, **init_kwargs},
        {"x": rng.normal(size=(2, 5, 8)).astype("float32"),
         "memory": rng.normal(size=(2, 6, 4)).astype("float32")},
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=[(2, 2, 5, 5), (2, 2, 5, 6)],
        tmp_dir=tmp_path,
        position_wise=True,
    )


def test_decoder_only_block(rng, tmp_path):
    run_layer_test(
        TransformerDecoderBlock,
        {"num_heads": 2, "intermediate_dim": 16},
        {"x": rng.normal(size=(2, 5, 8)).astype("float32")},
        expected_output_shape=(2, 5, 8),
        tmp_dir=tmp_path,
        position_wise=True,
    )


def cached_decode(block, x, memory, memory_mask, compiled):
    cache = block.init_cache(x.shape[0], x.shape[1])
    cross = block.compute_cache(memory, memory_mask)

    def step(x, cache, index, cross):
        return block.call_cached(x, cache, index, memory_cache=cross)

    if compiled:
        step = compile_function(step, jit_compile=True) or step
    outs, scores = [], []
    for i in range(x.shape[1]):
        y, cache, cross_scores = step(x[:, i : i + 1], cache, np.int32(i), cross)
        outs.append(np.asarray(y))
        scores.append(np.asarray(cross_scores))
    return np.concatenate(outs, 1), np.concatenate(scores, 2)


@pytest.mark.parametrize("compiled", EAGER_AND_XLA)
@pytest.mark.parametrize("norm_first", [True, False])
def test_cache_call_is_correct(norm_first, compiled, rng):
    """Token-by-token with self- and cross-attention caches == full pass."""
    block = TransformerDecoderBlock(16, 2, norm_first=norm_first, num_key_value_heads=1,
                                    rotary=True)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    memory = rng.normal(size=(2, 5, 4)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
    full, _, full_cross = block(x, memory, memory_mask=memory_mask, return_attention_scores=True)
    stepped, stepped_cross = cached_decode(block, x, memory, memory_mask, compiled)
    np.testing.assert_allclose(stepped, full, atol=1e-5)
    np.testing.assert_allclose(stepped_cross, full_cross, atol=1e-5)
    assert (stepped_cross[1, :, :, 2:] == 0).all()


@pytest.mark.parametrize("compiled", EAGER_AND_XLA)
def test_cache_call_is_correct_with_key_dim_apart_from_the_model_size(compiled, rng):
    """3 heads of 4 on D = 8 (T5's `d_kv`, as in flan-t5-small): caches of
    `key_dim`-wide heads, token by token == the full pass."""
    block = TransformerDecoderBlock(16, 3, key_dim=4, normalization="rms_norm",
                                    use_bias=False, attention_scale=1.0)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    memory = rng.normal(size=(2, 5, 4)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
    full, _, full_cross = block(x, memory, memory_mask=memory_mask, return_attention_scores=True)
    keys, values = block.init_cache(2, 6)
    assert tuple(keys.shape) == tuple(values.shape) == (2, 3, 6, 4)
    assert [tuple(a.shape) for a in block.compute_cache(memory)["cross_attention"]] == [
        (2, 3, 5, 4), (2, 3, 5, 4)]
    assert tuple(block.cross_attention.output_dense.kernel.shape) == (3, 4, 8)
    stepped, stepped_cross = cached_decode(block, x, memory, memory_mask, compiled)
    assert stepped.shape == (2, 6, 8)
    np.testing.assert_allclose(stepped, full, atol=1e-5)
    np.testing.assert_allclose(stepped_cross, full_cross, atol=1e-5)


def test_key_dim_is_in_the_config_and_refused_when_bad(rng):
    block = TransformerDecoderBlock(16, 3, key_dim=4)
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    block(x, x)
    config = block.get_config()
    assert config["key_dim"] == 4
    again = TransformerDecoderBlock.from_config(config)
    again(x, x)
    assert again.get_config() == config and again.self_attention.key_dim == 4
    with pytest.raises(ValueError, match=r"Received: key_dim=0$"):
        TransformerDecoderBlock(16, 3, key_dim=0)
    with pytest.raises(ValueError, match=r"Received: key_dim=4\.0$"):
        TransformerDecoderBlock(16, 3, key_dim=4.0)


def test_returns_cross_attention_weights_that_respect_memory_padding(rng):
    block = TransformerDecoderBlock(16, 2)
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    memory = rng.normal(size=(1, 4, 8)).astype("float32")
    _, self_w, cross_w = block(x, memory, memory_mask=np.array([[1, 1, 0, 0]], bool),
                               return_attention_scores=True)
    assert (np.asarray(cross_w)[..., 2:] == 0).all()
    assert (np.asarray(self_w)[..., np.triu(np.ones((3, 3), bool), 1)] == 0).all()


def test_memory_must_match_how_the_block_was_built(rng):
    block = TransformerDecoderBlock(16, 2)
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    block(x, x)
    with pytest.raises(ValueError, match=r"memory.*Received: memory=None"):
        block(x)
    with pytest.raises(ValueError, match=r"memory_cache.*Received: memory_cache=None"):
        block.call_cached(x[:, :1], block.init_cache(1, 3), 0)


@pytest.mark.parametrize("compiled", EAGER_AND_XLA)
def test_cache_call_is_correct_with_t5_style_options(compiled, rng):
    block = TransformerDecoderBlock(
        16, 2, normalization="rms_norm", use_bias=False, gated_feed_forward=True,
        activation="gelu_approximate", layer_norm_epsilon=1e-6,
    )
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    memory = rng.normal(size=(2, 5, 4)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
    full = block(x, memory, memory_mask=memory_mask)
    stepped, _ = cached_decode(block, x, memory, memory_mask, compiled)
    np.testing.assert_allclose(stepped, full, atol=1e-5)


def test_attention_scale_reaches_both_attentions(rng):
    block = TransformerDecoderBlock(16, 2, attention_scale=1.0, use_bias=False)
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    block(x, x)
    assert block.self_attention.scale == 1.0 and block.cross_attention.scale == 1.0
    assert block.get_config()["attention_scale"] == 1.0
    assert not block.self_attention.use_bias


# family -> (the `transformers` layer, our options), as in the encoder tests.
HF_DECODER_LAYERS = {
    "bart": ("transformers.models.bart.modeling_bart.BartDecoderLayer",
             {"norm_first": False, "activation": "gelu"}),
    "mbart": ("transformers.models.mbart.modeling_mbart.MBartDecoderLayer",
              {"norm_first": True, "activation": "gelu"}),
    "marian": ("transformers.models.marian.modeling_marian.MarianDecoderLayer",
               {"norm_first": False, "activation": "swish"}),
}


@pytest.mark.parametrize("family", sorted(HF_DECODER_LAYERS))
def test_matches_transformers_decoder_layers(family, rng):
    """With copied weights and padding on both sides, the full call and the
    cached steps give the outputs of the `transformers` decoder layer on
    every real target position."""
    import importlib

    path, options = HF_DECODER_LAYERS[family]
    module, name = path.rsplit(".", 1)
    config = bart_style_config(family, activation_function=options["activation"])
    layer = randomize(getattr(importlib.import_module(module), name)(config, layer_idx=0))
    block = TransformerDecoderBlock(32, 2, **options)
    x = rng.normal(size=(2, 4, 16)).astype("float32")
    memory = rng.normal(size=(2, 5, 16)).astype("float32")
    x_mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], bool)
    memory_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
    block.build(x.shape, memory.shape)
    set_bart_layer(block, layer)
    causal = np.tril(np.ones((4, 4), bool))[None] & x_mask[:, None, :]
    expected = run_torch(
        layer, x, attention_mask=additive_mask(causal),
        encoder_hidden_states=torch_tensor(memory),
        encoder_attention_mask=additive_mask(np.repeat(memory_mask[:, None], 4, axis=1)),
        use_cache=False,
    )
    y = to_numpy(block(x, memory, x_mask=x_mask, memory_mask=memory_mask))
    np.testing.assert_allclose(y[x_mask], expected[x_mask], atol=1e-5)
    stepped, _ = cached_decode(block, x, memory, memory_mask, compiled=False)
    np.testing.assert_allclose(stepped[x_mask], expected[x_mask], atol=1e-5)


@pytest.mark.parametrize("compiled", EAGER_AND_XLA)
def test_cached_steps_with_bias_rows_equal_the_full_call_with_bias(compiled, rng):
    """T5's decoder: a causal relative bias in self-attention, a bias in
    cross-attention too; each cached step gets the rows of its position."""
    from keras_attention.layers import RelativePositionBias

    block = TransformerDecoderBlock(16, 2)
    length, source = 6, 5
    x = rng.normal(size=(2, length, 8)).astype("float32")
    memory = rng.normal(size=(2, source, 4)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
    relative = RelativePositionBias(2, num_buckets=4, max_distance=6, bidirectional=False,
                                    embeddings_initializer="random_normal")
    self_bias = 2 * np.asarray(relative(query_length=length, key_length=length))
    cross_bias = rng.normal(size=(2, 2, length, source)).astype("float32")
    full = np.asarray(block(x, memory, memory_mask=memory_mask,
                            self_attention_bias=self_bias, cross_attention_bias=cross_bias))
    assert not np.allclose(full, np.asarray(block(x, memory, memory_mask=memory_mask)),
                           atol=1e-3)
    cache = block.init_cache(2, length)
    cross = block.compute_cache(memory, memory_mask)

    def step(token, cache, index, cross, self_rows, cross_rows):
        return block.call_cached(token, cache, index, memory_cache=cross,
                                 self_attention_bias=self_rows,
                                 cross_attention_bias=cross_rows)

    if compiled:
        step = compile_function(step, jit_compile=True) or step
    outputs = []
    for i in range(length):
        y, cache, _ = step(x[:, i : i + 1], cache, np.int32(i), cross,
                           self_bias[:, :, i : i + 1], cross_bias[:, :, i : i + 1])
        outputs.append(np.asarray(y))
    np.testing.assert_allclose(np.concatenate(outputs, 1), full, atol=1e-5)


@pytest.mark.large
def test_bias_arguments_pass_every_layer_check(rng, tmp_path):
    run_layer_test(
        TransformerDecoderBlock,
        {"num_heads": 2, "intermediate_dim": 16},
        {"x": rng.normal(size=(2, 5, 8)).astype("float32"),
         "memory": rng.normal(size=(2, 6, 4)).astype("float32")},
        call_kwargs={
            "self_attention_bias": rng.normal(size=(1, 2, 5, 5)).astype("float32"),
            "cross_attention_bias": rng.normal(size=(1, 1, 5, 6)).astype("float32"),
        },
        expected_output_shape=(2, 5, 8),
        expected_scores_shape=[(2, 2, 5, 5), (2, 2, 5, 6)],
        tmp_dir=tmp_path,
        position_wise=True,
    )


def test_padding_masks_of_the_wrong_length_are_named():
    """Issue 22: `x_mask` and `memory_mask` were only checked deep in the
    attention (a TensorFlow broadcast error naming neither argument)."""
    block = TransformerDecoderBlock(num_heads=2, intermediate_dim=8)
    x, memory = np.ones((2, 3, 4), "float32"), np.ones((2, 5, 4), "float32")
    with pytest.raises(ValueError, match=r"`x_mask` must have the sequence length of `x` "
                                         r"\(3\)\. Received: x_mask.shape=\(2, 5\)"):
        block(x, memory, x_mask=np.ones((2, 5), bool))
    with pytest.raises(ValueError, match=r"`memory_mask` must have the sequence length of "
                                         r"`memory` \(5\)\. Received: memory_mask.shape=\(2, 3\)"):
        block(x, memory, memory_mask=np.ones((2, 3), bool))
