"""`compute_output_shape` and `compute_output_spec` of every public layer.

Keras' and keras-hub's harnesses ask a layer for its output shape unbuilt,
and for its output spec on float32 inputs under a mixed policy: both must
describe what a real call returns (shapes, and the compute dtype).
"""

import keras
import numpy as np
import pytest

from keras_attention import layers
from keras_attention.layers.output_specs import traced_output_spec
from tests.layers.factories import FACTORIES
from tests.test_case import dtype_of

X, MEMORY = (2, 5, 8), (2, 7, 8)

# name: (factory, input shapes, extra call kwargs that change the outputs)
CASES = {
    **{name: (factory, (X, MEMORY), {"return_attention_scores": True})
       for name, factory in FACTORIES.items()},
    "multi_head_output_shape": (
        lambda **kw: layers.MultiHeadAttention(2, 4, output_shape=(3, 2), **kw),
        (X, MEMORY), {"return_attention_scores": True},
    ),
    "self_attention": (lambda **kw: layers.SelfAttention(2, **kw), (X,),
                       {"return_attention_scores": True}),
    "feed_forward": (lambda **kw: layers.FeedForward(16, **kw), (X,), {}),
    "encoder_block": (lambda **kw: layers.TransformerEncoderBlock(16, 2, **kw), (X,),
                      {"return_attention_scores": True}),
    "decoder_block": (lambda **kw: layers.TransformerDecoderBlock(16, 2, **kw),
                      (X, MEMORY), {"return_attention_scores": True}),
    "decoder_only_block": (lambda **kw: layers.TransformerDecoderBlock(16, 2, **kw), (X,),
                           {"return_attention_scores": True}),
    "attention_rnn_decoder": (
        lambda **kw: layers.AttentionRNNDecoder(6, layers.BahdanauAttention(4), **kw),
        (X, MEMORY), {"return_attention_scores": True},
    ),
    "memory_hop": (lambda **kw: layers.MemoryHop(**kw), ((2, 8), MEMORY, MEMORY),
                   {"return_attention_scores": True}),
    "universal_transformer": (
        lambda **kw: layers.UniversalTransformerEncoder(16, 2, max_steps=2, **kw), (X,),
        {"return_attention_scores": True},
    ),
}


def shapes_of(structure):
    return keras.tree.map_structure(lambda x: None if x is None else tuple(x.shape), structure)


def dtypes_of(structure):
    return [dtype_of(x) for x in keras.tree.flatten(structure) if x is not None]


@pytest.mark.parametrize("name", sorted(CASES))
def test_compute_output_shape_is_the_output_shape_unbuilt(name, rng):
    factory, shapes, _ = CASES[name]
    inputs = [rng.normal(size=s).astype("float32") for s in shapes]
    expected = factory().compute_output_shape(*shapes)
    assert tuple(factory()(*inputs).shape) == expected
    assert factory().compute_output_shape(*[list(s) for s in shapes]) == expected


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_output_spec_on_float32_inputs_is_the_output_of_a_call(name, policy, rng):
    factory, shapes, extra = CASES[name]
    layer = factory(dtype=policy)
    inputs = [rng.normal(size=s).astype("float32") for s in shapes]
    specs = [keras.KerasTensor(s, dtype="float32") for s in shapes]
    for kwargs in ({}, extra):
        outputs = layer(*inputs, **kwargs)
        spec = layer.compute_output_spec(*specs, **kwargs)
        assert shapes_of(spec) == shapes_of(outputs)
        assert dtypes_of(spec) == dtypes_of(outputs)
        assert dtypes_of(outputs)[0] == layer.compute_dtype


def test_token_and_position_embedding_shape_and_spec():
    layer = layers.TokenAndPositionEmbedding(10, 4, dtype="mixed_float16")
    assert layer.compute_output_shape((2, 3)) == (2, 3, 4)
    outputs = layer(np.array([[1, 2, 0], [3, 0, 0]]))
    spec = layer.compute_output_spec(keras.KerasTensor((2, 3), dtype="int32"))
    assert (spec.shape, spec.dtype) == (tuple(outputs.shape), "float16") == ((2, 3, 4), "float16")


def test_memory_encoding_shape_and_spec():
    layer = layers.MemoryEncoding(10, 4, dtype="mixed_float16")
    assert layer.compute_output_shape((2, 3, 5)) == (2, 3, 4)
    assert layer.compute_output_shape((2, 5)) == (2, 4)
    outputs = layer(np.ones((2, 3, 5), "int32"))
    spec = layer.compute_output_spec(keras.KerasTensor((2, 3, 5), dtype="int32"))
    assert (spec.shape, spec.dtype) == (tuple(outputs.shape), dtype_of(outputs))
    assert spec.dtype == "float16"


def test_traced_output_spec_casts_only_floating_inputs():
    layer = layers.TokenAndPositionEmbedding(10, 4, dtype="mixed_bfloat16")
    layer.build((2, 3))
    spec = traced_output_spec(layer, keras.KerasTensor((2, 3), dtype="int32"))
    assert spec.dtype == "bfloat16"
    block = layers.TransformerEncoderBlock(8, 2, dtype="mixed_float16")
    block.build(X)
    y, w = traced_output_spec(block, keras.KerasTensor(X, dtype="float32"),
                              return_attention_scores=True)
    assert (y.dtype, y.shape, w.shape) == ("float16", X, (2, 2, 5, 5))


def test_attention_output_shape_checks_the_shapes():
    with pytest.raises(ValueError, match=r"same length"):
        layers.MultiHeadAttention(2, 4).compute_output_shape((2, 5, 8), (2, 7, 8), (2, 6, 8))
