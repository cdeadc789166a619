"""`compute_output_shape` and `compute_output_spec` of every public layer.

Keras' and keras-hub's harnesses ask a layer for its output shape unbuilt,
and for its output spec on float32 inputs under a mixed policy: both must
describe what a real call returns (shapes, and the compute dtype).
"""

import keras
import numpy as np
import pytest

from keras_attention import layers
from keras_attention.compat import keras as compat_keras
from keras_attention.compat import keras_hub as compat_hub
from keras_attention.layers.output_specs import traced_output_spec
from tests.layers.factories import FACTORIES
from tests.test_case import dtype_of

pytestmark = pytest.mark.keras_ops_only

X, MEMORY = (2, 5, 8), (2, 7, 8)
IDS, MEMORY_IDS = ((2, 5), "int32"), ((2, 7), "int32")


class Case:
    """A layer factory, the call's inputs (a shape: float32, or `(shape,
    dtype)`), the call keywords that change the outputs, and the dtype of the
    first output when it is not the compute dtype."""

    def __init__(self, factory, inputs, extra=None, output_dtype=None):
        self.factory, self.inputs = factory, inputs
        self.extra, self.output_dtype = extra or {}, output_dtype


SCORES = {"return_attention_scores": True}

CASES = {
    **{name: Case(factory, (X, MEMORY), SCORES) for name, factory in FACTORIES.items()},
    "multi_head_output_shape": Case(
        lambda **kw: layers.MultiHeadAttention(2, 4, output_shape=(3, 2), **kw),
        (X, MEMORY), SCORES,
    ),
    "self_attention": Case(lambda **kw: layers.SelfAttention(2, **kw), (X,), SCORES),
    "feed_forward": Case(lambda **kw: layers.FeedForward(16, **kw), (X,)),
    "encoder_block": Case(lambda **kw: layers.TransformerEncoderBlock(16, 2, **kw), (X,),
                          SCORES),
    "decoder_block": Case(lambda **kw: layers.TransformerDecoderBlock(16, 2, **kw),
                          (X, MEMORY), SCORES),
    "decoder_only_block": Case(lambda **kw: layers.TransformerDecoderBlock(16, 2, **kw), (X,),
                               SCORES),
    "attention_rnn_decoder": Case(
        lambda **kw: layers.AttentionRNNDecoder(6, layers.BahdanauAttention(4), **kw),
        (X, MEMORY), SCORES,
    ),
    "memory_hop": Case(lambda **kw: layers.MemoryHop(**kw), ((2, 8), MEMORY, MEMORY), SCORES),
    "universal_transformer": Case(
        lambda **kw: layers.UniversalTransformerEncoder(16, 2, max_steps=2, **kw), (X,), SCORES,
    ),
    "pointer_generator": Case(
        lambda **kw: layers.PointerGenerator(12, 6, **kw), (X, MEMORY, MEMORY_IDS), SCORES,
        output_dtype="float32",
    ),
    "token_and_position_embedding": Case(
        lambda **kw: layers.TokenAndPositionEmbedding(10, 8, **kw), (IDS,)),
    "memory_encoding": Case(lambda **kw: layers.MemoryEncoding(10, 4, **kw),
                            (((2, 3, 5), "int32"),)),
    "memory_encoding_query": Case(lambda **kw: layers.MemoryEncoding(10, 4, **kw), (IDS,)),
    "relative_position_bias": Case(lambda **kw: layers.RelativePositionBias(2, **kw),
                                   (X, MEMORY)),
    # The drop-in classes (keras_attention.compat).
    "keras_multi_head": Case(lambda **kw: compat_keras.MultiHeadAttention(2, 4, **kw),
                             (X, MEMORY), SCORES),
    "hub_encoder": Case(lambda **kw: compat_hub.TransformerEncoder(16, 2, **kw), (X,)),
    "hub_decoder": Case(lambda **kw: compat_hub.TransformerDecoder(16, 2, **kw), (X, MEMORY)),
    "hub_decoder_only": Case(lambda **kw: compat_hub.TransformerDecoder(16, 2, **kw), (X,)),
    "hub_cached_multi_head": Case(
        lambda **kw: compat_hub.CachedMultiHeadAttention(2, 4, **kw), (X, MEMORY)),
    "hub_token_and_position_embedding": Case(
        lambda **kw: compat_hub.TokenAndPositionEmbedding(10, 5, 8, **kw), (IDS,)),
    "hub_position_embedding": Case(lambda **kw: compat_hub.PositionEmbedding(5, **kw), (X,)),
    "hub_sine_position_encoding": Case(lambda **kw: compat_hub.SinePositionEncoding(**kw),
                                       (X,)),
}

# Public classes no case builds, each with its reason.
NOT_LAYERS = {
    "BaseAttention": "abstract: `_compute_logits` is its subclasses' (they are cases)",
}


def shape_of(spec):
    """The shape argument `compute_output_shape` takes for one input."""
    return spec[0] if isinstance(spec[1], str) else spec


def array_of(spec, rng):
    if isinstance(spec[1], str):
        return rng.integers(0, 5, size=spec[0]).astype(spec[1])
    return rng.normal(size=spec).astype("float32")


def symbolic(spec):
    """The input `compute_output_spec` is asked about: float32 for floats."""
    if isinstance(spec[1], str):
        return keras.KerasTensor(spec[0], dtype=spec[1])
    return keras.KerasTensor(spec, dtype="float32")


def shapes_of(structure):
    return keras.tree.map_structure(lambda x: None if x is None else tuple(x.shape), structure)


def dtypes_of(structure):
    return [dtype_of(x) for x in keras.tree.flatten(structure) if x is not None]


def public_layer_classes():
    modules = (layers, compat_keras, compat_hub)
    return {
        f"{module.__name__}.{name}": getattr(module, name)
        for module in modules for name in module.__all__
        if isinstance(getattr(module, name), type)
        and issubclass(getattr(module, name), keras.layers.Layer)
    }


def test_every_public_layer_has_a_case_and_both_methods():
    built = {type(case.factory()) for case in CASES.values()}
    classes = public_layer_classes()
    assert len(classes) > len(layers.__all__)  # the compat classes are walked too
    for path, cls in classes.items():
        if cls.__name__ in NOT_LAYERS and cls.__module__.startswith("keras_attention.layers"):
            continue
        assert cls in built, f"no case in CASES builds {path}: add one"
        assert cls.compute_output_shape is not keras.layers.Layer.compute_output_shape, (
            f"{path} has no `compute_output_shape`"
        )


@pytest.mark.backend_independent(
    "compute_output_shape is shape arithmetic in Python; on JAX the shapes of every case's "
    "outputs are TensorFlow's (tests/layers/cross_backend_test.py)")
@pytest.mark.parametrize("name", sorted(CASES))
def test_compute_output_shape_is_the_output_shape_unbuilt(name, rng):
    case = CASES[name]
    shapes = [shape_of(spec) for spec in case.inputs]
    expected = case.factory().compute_output_shape(*shapes)
    assert tuple(case.factory()(*[array_of(s, rng) for s in case.inputs]).shape) == expected
    assert case.factory().compute_output_shape(*[list(s) for s in shapes]) == expected


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_output_spec_on_float32_inputs_is_the_output_of_a_call(name, policy, rng):
    case = CASES[name]
    layer = case.factory(dtype=policy)
    inputs = [array_of(spec, rng) for spec in case.inputs]
    specs = [symbolic(spec) for spec in case.inputs]
    for kwargs in ({}, case.extra):
        outputs = layer(*inputs, **kwargs)
        spec = layer.compute_output_spec(*specs, **kwargs)
        assert shapes_of(spec) == shapes_of(outputs)
        assert dtypes_of(spec) == dtypes_of(outputs)
        assert dtypes_of(outputs)[0] == (case.output_dtype or layer.compute_dtype)


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
