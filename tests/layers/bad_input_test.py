"""Bad call inputs get a ValueError naming the argument, for every layer,
in eager calls and in the functional API, never a TensorFlow error; a
boolean call argument that is not a bool gets a TypeError."""

import re

import keras
import numpy as np
import pytest

from keras_attention import layers
from tests.layers.factories import DIM, FACTORIES


def ones(*shape):
    return np.ones(shape, "float32")


BAD_CALLS = {
    "query_rank_2": (lambda: ((ones(2, DIM), ones(2, 4, DIM)), {}),
                     r"`query` must be a rank-3 tensor.*Received: query.shape=\(2, 8\)"),
    "value_rank_4": (lambda: ((ones(2, 3, DIM), ones(2, 4, 1, DIM)), {}),
                     r"`value` must be a rank-3 tensor.*Received: value.shape=\(2, 4, 1, 8\)"),
    "batch_mismatch": (lambda: ((ones(2, 3, DIM), ones(1, 4, DIM)), {}),
                       r"same batch size.*Received: query.shape\[0\]=2, value.shape\[0\]=1"),
    "key_value_length_mismatch": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM), ones(2, 5, DIM)), {}),
                                  r"`key` and `value` must have the same length"
                                  r".*Received: key.shape=\(2, 5, 8\)"),
    "mask_shape": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                            {"attention_mask": np.ones((2, 3, 5), bool)}),
                   r"attention_mask.*Received: attention_mask.shape=\(2, 3, 5\)"),
    "padding_mask_as_attention_mask": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                                                {"attention_mask": np.ones((2, 4), bool)}),
                                       r"padding_mask.*Received: attention_mask.shape=\(2, 4\)"),
    "float_mask": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                            {"attention_mask": np.zeros((2, 3, 4), "float32")}),
                   r"float mask is refused.*Received: attention_mask with dtype float32"),
    "value_mask_length": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                                   {"value_mask": np.ones((2, 5), bool)}),
                          r"`value_mask` must have the sequence length of `value` \(4\)"
                          r".*Received: value_mask.shape=\(2, 5\), value.shape=\(2, 4, 8\)"),
    "query_mask_length": (lambda: ((ones(2, 3, DIM), ones(2, 4, DIM)),
                                   {"query_mask": np.ones((2, 4), bool)}),
                          r"`query_mask` must have the sequence length of `query` \(3\)"
                          r".*Received: query_mask.shape=\(2, 4\)"),
    "causal_without_offset": (lambda: ((ones(2, 1, DIM), ones(2, 4, DIM)),
                                       {"use_causal_mask": True}),
                              r"use_causal_mask=True.*offset.*Received: query.shape=\(2, 1, 8\)"),
}


@pytest.mark.parametrize("bad", list(BAD_CALLS))
@pytest.mark.parametrize("name", list(FACTORIES))
def test_bad_call_raises_value_error(name, bad):
    make, pattern = BAD_CALLS[bad]
    args, kwargs = make()
    with pytest.raises(ValueError, match=pattern):
        FACTORIES[name]()(*args, **kwargs)


@pytest.mark.parametrize("bad", ["query_rank_2", "batch_mismatch", "key_value_length_mismatch",
                                 "causal_without_offset"])
@pytest.mark.parametrize("name", ["bahdanau", "multi_head", "luong_dot"])
def test_bad_call_raises_value_error_in_functional_api(name, bad):
    make, pattern = BAD_CALLS[bad]
    args, kwargs = make()
    symbolic = [keras.Input(batch_shape=a.shape) for a in args]
    with pytest.raises(ValueError, match=pattern):
        FACTORIES[name]()(*symbolic, **kwargs)


@pytest.mark.parametrize("name", ["scaled_dot_product", "luong_dot"])
def test_feature_size_mismatch_without_projection(name):
    with pytest.raises(ValueError, match=r"same last dimension.*Received: query.shape=\(2, 3, 8\)"):
        FACTORIES[name]()(ones(2, 3, DIM), ones(2, 4, 5))


@pytest.mark.parametrize("name", ["luong_general", "luong_concat", "bahdanau", "multi_head"])
def test_projections_absorb_feature_size_differences(name):
    out = FACTORIES[name]()(ones(2, 3, DIM), ones(2, 4, 5), ones(2, 4, 6))
    assert out.shape[:2] == (2, 3)


def test_integer_and_variable_inputs_are_accepted():
    layer = FACTORIES["multi_head"]()
    ints = np.ones((2, 3, DIM), "int32")
    assert keras.backend.standardize_dtype(layer(ints, ints).dtype) == "float32"
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        variable = tf.Variable(ones(2, 3, DIM))
    else:
        variable = keras.Variable(ones(2, 3, DIM))
    np.testing.assert_array_equal(
        layer(variable, variable), layer(ones(2, 3, DIM), ones(2, 3, DIM))
    )


@pytest.mark.parametrize("name", list(FACTORIES))
def test_empty_memory_follows_the_fully_masked_rule_and_empty_queries_work(name):
    """S = 0: every row is fully masked, so the context is zero (the output is
    the output bias where there is one). T = 0: an empty output."""
    from tests.layers.factories import empty_row_output

    layer = FACTORIES[name]()
    no_keys = np.asarray(layer(ones(2, 3, DIM), ones(2, 0, DIM)))
    assert no_keys.shape[:2] == (2, 3)
    np.testing.assert_array_equal(no_keys, np.broadcast_to(empty_row_output(layer), no_keys.shape))
    assert layer(ones(2, 0, DIM), ones(2, 4, DIM)).shape[:2] == (2, 0)


def _x(*shape):
    return np.random.default_rng(0).normal(size=shape).astype("float32")


# Every public layer with a boolean call argument: `(make the layer, positional
# inputs, its boolean call arguments)`.
_FLAGS = ("use_causal_mask", "return_attention_scores", "training")
FLAG_CALLS = {
    **{name: (make, lambda: (ones(2, 3, DIM), ones(2, 3, DIM)), _FLAGS)
       for name, make in FACTORIES.items()},
    "self_attention": (lambda: layers.SelfAttention(num_heads=2),
                       lambda: (ones(2, 3, DIM),), _FLAGS),
    "encoder_block": (lambda: layers.TransformerEncoderBlock(DIM, 2),
                      lambda: (ones(2, 3, DIM),), ("return_attention_scores", "training")),
    "decoder_block": (lambda: layers.TransformerDecoderBlock(DIM, 2),
                      lambda: (ones(2, 3, DIM), ones(2, 4, DIM)), _FLAGS),
    "universal_transformer": (lambda: layers.UniversalTransformerEncoder(DIM, 2, max_steps=2),
                              lambda: (ones(2, 3, DIM),),
                              ("return_attention_scores", "return_halting", "training")),
    "pointer_generator": (lambda: layers.PointerGenerator(11, 6),
                          lambda: (_x(2, 3, DIM), _x(2, 4, DIM), np.ones((2, 4), "int32")),
                          ("return_attention_scores", "training")),
    "attention_rnn_decoder": (lambda: layers.AttentionRNNDecoder(6, layers.BahdanauAttention(4)),
                              lambda: (_x(2, 3, 5), _x(2, 4, 7)),
                              ("return_attention_scores", "training")),
    "memory_hop": (lambda: layers.MemoryHop(), lambda: (_x(2, DIM), _x(2, 5, DIM), _x(2, 5, DIM)),
                   ("return_attention_scores",)),
    "feed_forward": (lambda: layers.FeedForward(16), lambda: (ones(2, 3, DIM),), ("training",)),
    "memory_encoding": (lambda: layers.MemoryEncoding(12, 4, max_memories=5),
                        lambda: (np.ones((2, 5, 3), "int32"),), ("training",)),
}
# `bool(value)` of each is True: before the check, each was read as True.
NOT_BOOLS = ["no", "False", "0", 0, 1, 2.0, [False], np.array([False, False])]


@pytest.mark.parametrize("name, flag", [(name, flag) for name, (_, _, flags) in FLAG_CALLS.items()
                                        for flag in flags])
def test_a_boolean_call_argument_refuses_what_is_not_a_bool(name, flag):
    make, inputs, _ = FLAG_CALLS[name]
    layer = make()
    for bad in NOT_BOOLS:
        # Keras makes an array argument a tensor before `call` sees it.
        shown = (r".*\[False,\s*False\]" if isinstance(bad, np.ndarray)
                 else f"{re.escape(repr(bad))}(\x1b|$)")
        with pytest.raises(TypeError, match=rf"Argument `{flag}` must be True(,| or) False.*"
                                            rf"Received: {flag}={shown}"):
            layer(*inputs(), **{flag: bad})


@pytest.mark.parametrize("name", list(FLAG_CALLS))
def test_a_boolean_call_argument_takes_numpy_bools_and_known_boolean_tensors(name):
    make, inputs, flags = FLAG_CALLS[name]
    layer = make()
    plain = layer(*inputs(), **{flag: False for flag in flags})
    for value in (np.False_, keras.ops.convert_to_tensor(False)):
        same = layer(*inputs(), **{flag: value for flag in flags})
        np.testing.assert_allclose(keras.ops.convert_to_numpy(same),
                                   keras.ops.convert_to_numpy(plain), atol=1e-6)
    if "return_attention_scores" in flags:  # read as its value: a tuple comes back
        assert isinstance(layer(*inputs(), return_attention_scores=np.True_), tuple)


def test_the_cached_calls_check_training_too():
    block = layers.TransformerDecoderBlock(DIM, 2)
    x, memory = ones(2, 3, DIM), ones(2, 4, DIM)
    block(x, memory)
    memory_cache = block.compute_cache(memory)
    for bad in ("no", 1):
        with pytest.raises(TypeError, match=rf"Argument `training` must be True, False or None\. "
                                            rf"Received: training={bad!r}$"):
            block.call_cached(x[:, :1], block.init_cache(2, 3), 0, memory_cache=memory_cache,
                              training=bad)
        with pytest.raises(TypeError, match=rf"Received: training={bad!r}$"):
            block.self_attention.call_cached(x[:, :1], block.self_attention.init_cache(2, 3), 0,
                                             training=bad)


MASK_OF_WRONG_LENGTH = {
    "value_mask": (np.ones((2, 5), bool), (None, None)),
    "query_mask": (np.ones((2, 4), bool), (None, None)),
    "attention_mask": (np.ones((2, 3, 5), bool), (None, None, None)),
}


@pytest.mark.parametrize("argument", list(MASK_OF_WRONG_LENGTH))
@pytest.mark.parametrize("name", ["multi_head", "bahdanau"])
def test_a_mask_of_the_wrong_length_is_named_where_lengths_are_known_only_at_run_time(
        name, argument):
    """Issue 22: in a graph of unknown lengths (TensorFlow: a `tf.function`
    with `None` lengths) a wrong mask used to fail deep in a broadcast
    ("condition [2,4,1], then [2,5,8] ... must be broadcastable"); now an
    assertion names the mask and both lengths. JAX's jit knows the lengths
    when it traces: a ValueError."""
    mask, mask_shape = MASK_OF_WRONG_LENGTH[argument]
    layer = FACTORIES[name]()
    query, value = ones(2, 3, DIM), ones(2, 4, DIM)
    layer(query, value)
    backend = keras.config.backend()
    # (JAX: an `attention_mask` gets the shape check of BAD_CALLS["mask_shape"].)
    pattern = f"`{argument}` must have (the sequence length of|shape)"
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function(input_signature=[tf.TensorSpec((None, None, DIM)),
                                      tf.TensorSpec((None, None, DIM)),
                                      tf.TensorSpec(mask_shape, tf.bool)])
        def call(q, v, m):
            return layer(q, v, **{argument: m})

        assert call(query, value, mask[:, :3, :4] if mask.ndim == 3 else mask[:, :(
            3 if argument == "query_mask" else 4)]).shape[:2] == (2, 3)
        with pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
            call(query, value, mask)
    elif backend == "jax":
        import jax

        call = jax.jit(lambda q, v, m: layer(q, v, **{argument: m}))
        with pytest.raises(ValueError, match=pattern):
            call(query, value, mask)
    else:
        pytest.skip("torch runs eagerly: the lengths are always known (see BAD_CALLS)")
