"""Every cached layer follows one incremental-decoding contract.

```
memory_cache = layer.compute_cache(memory, ...)
cache = layer.init_cache(batch_size, max_length, ...)
outputs, cache, scores = layer.call_cached(inputs, cache, cache_update_index,
                                           memory_cache=memory_cache)
```

Each case builds a layer, runs it once over the whole target (the reference)
and says how to make its caches; the tests then decode it position by
position (and in chunks, and compiled) and compare.
"""

import inspect

import keras
import numpy as np
import pytest

from keras_attention import layers, masks
from keras_attention.layers.cache_contract import CONTRACT_METHODS
from tests.test_case import compile_function, dtype_of

B, T, S, D = 2, 4, 5, 8
MEMORY_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
SOURCE_IDS = np.array([[3, 7, 7, 1, 4], [2, 5, 9, 0, 0]])

# Every public layer with any cache method (SelfAttention inherits them).
CACHED_LAYERS = [
    getattr(layers, name) for name in layers.__all__
    if any(hasattr(getattr(layers, name), method) for method in CONTRACT_METHODS)
]


class Case:
    """A layer, its inputs `(B, T, .)`, the reference `(outputs, scores)` of
    a full call, and how to make its caches.

    `scores_axis` is the target axis of the scores (2 for `(B, H, T, S)`,
    1 for `(B, T, S)`); `step_kwargs(start, stop)` gives the call-specific
    keywords of the positions `start:stop`.
    """

    def __init__(self, layer, inputs, full, memory_cache, cache, scores_axis,
                 step_kwargs=None):
        self.layer = layer
        self.inputs = inputs
        self.full_outputs, self.full_scores = (np.asarray(x) if x is not None else None
                                               for x in full)
        self.memory_cache = memory_cache
        self.cache = cache
        self.scores_axis = scores_axis
        self.step_kwargs = step_kwargs or (lambda start, stop: {})


def normal(rng, *shape):
    return rng.normal(size=shape).astype("float32")


def mha_self(rng):
    layer = layers.MultiHeadAttention(4, 2, num_key_value_heads=2, rotary=True,
                                      bias_initializer="random_normal")
    x = normal(rng, B, T, D)
    full = layer(x, x, use_causal_mask=True, return_attention_scores=True)
    return Case(layer, x, full, None, layer.init_cache(B, T), 2)


def self_attention_additive(rng):
    layer = layers.SelfAttention(num_heads=2, score="additive", use_causal_mask=True)
    x = normal(rng, B, T, D)
    full = layer(x, return_attention_scores=True)
    return Case(layer, x, full, None, layer.init_cache(B, T), 2)


def self_attention_window(rng):
    # window=1 with T=4: the last positions must not see the first ones.
    layer = layers.SelfAttention(num_heads=2, use_causal_mask=True, window=1)
    x = normal(rng, B, T, D)
    full = layer(x, return_attention_scores=True)
    assert not np.asarray(full[1])[:, :, 3, :2].any(), "the window hides keys 0 and 1"
    return Case(layer, x, full, None, layer.init_cache(B, T), 2)


def mha_cross(rng):
    layer = layers.MultiHeadAttention(2, 4)
    x, memory = normal(rng, B, T, D), normal(rng, B, S, 6)
    mask = masks.padding_mask(key_mask=MEMORY_MASK, query_length=T)
    full = layer(x, memory, attention_mask=mask, return_attention_scores=True)
    return Case(layer, x, full, layer.compute_cache(memory), None, 2,
                lambda start, stop: {"attention_mask": mask[:, start:stop]})


def block_with_memory(rng):
    layer = layers.TransformerDecoderBlock(16, 2, norm_first=False, num_key_value_heads=1,
                                           rotary=True)
    x, memory = normal(rng, B, T, D), normal(rng, B, S, 6)
    y, _, cross_scores = layer(x, memory, memory_mask=MEMORY_MASK,
                               return_attention_scores=True)
    return Case(layer, x, (y, cross_scores), layer.compute_cache(memory, MEMORY_MASK),
                layer.init_cache(B, T), 2)


def block_without_memory(rng):
    layer = layers.TransformerDecoderBlock(16, 2)
    x = normal(rng, B, T, D)
    return Case(layer, x, (layer(x), None), None, layer.init_cache(B, T), 2)


def pointer_generator(rng):
    layer = layers.PointerGenerator(vocabulary_size=10, units=6)
    states, memory = normal(rng, B, T, D), normal(rng, B, S, 6)
    log_probs, attention, _ = layer(states, memory, SOURCE_IDS, memory_mask=MEMORY_MASK,
                                    return_attention_scores=True)
    memory_cache = layer.compute_cache(memory, SOURCE_IDS, MEMORY_MASK)
    return Case(layer, states, (log_probs, attention), memory_cache,
                layer.init_cache(B, T, memory_cache), 1)


def rnn_decoder_gru(rng):
    layer = layers.AttentionRNNDecoder(8, layers.BahdanauAttention(4))
    inputs, memory = normal(rng, B, T, 3), normal(rng, B, S, 6)
    full = layer(inputs, memory, memory_mask=MEMORY_MASK, return_attention_scores=True)
    return Case(layer, inputs, full, layer.compute_cache(memory, MEMORY_MASK),
                layer.init_cache(B, T), 1)


def rnn_decoder_lstm(rng):
    layer = layers.AttentionRNNDecoder(8, layers.LuongAttention("general"), cell="lstm")
    inputs, memory = normal(rng, B, T, 3), normal(rng, B, S, 6)
    initial_state = [normal(rng, B, 8), normal(rng, B, 8)]
    full = layer(inputs, memory, memory_mask=MEMORY_MASK, initial_state=initial_state,
                 return_attention_scores=True)
    return Case(layer, inputs, full, layer.compute_cache(memory, MEMORY_MASK),
                layer.init_cache(B, T, initial_state=initial_state), 1)


CASES = {
    "mha_self": mha_self,
    "mha_cross": mha_cross,
    "self_attention_additive": self_attention_additive,
    "self_attention_window": self_attention_window,
    "block_with_memory": block_with_memory,
    "block_without_memory": block_without_memory,
    "pointer_generator": pointer_generator,
    "rnn_decoder_gru": rnn_decoder_gru,
    "rnn_decoder_lstm": rnn_decoder_lstm,
}


def shapes(structure):
    if structure is None:
        return None
    return keras.tree.map_structure(lambda x: tuple(x.shape), structure)


def decode(case, chunk, step=None):
    """Runs `call_cached` over the target `chunk` positions at a time;
    returns the concatenated outputs and scores and the last cache."""
    layer, cache = case.layer, case.cache
    if step is None:
        def step(inputs, cache, index, memory_cache, **kwargs):
            return layer.call_cached(inputs, cache, index, memory_cache=memory_cache,
                                     **kwargs)
    outputs, scores = [], []
    for start in range(0, T, chunk):
        stop = min(T, start + chunk)
        result = step(case.inputs[:, start:stop], cache, np.int32(start), case.memory_cache,
                      **case.step_kwargs(start, stop))
        assert isinstance(result, tuple) and len(result) == 3
        output, new_cache, score = result
        assert shapes(new_cache) == shapes(cache), "the cache keeps its structure and shapes"
        cache = new_cache
        outputs.append(np.asarray(output))
        scores.append(None if score is None else np.asarray(score))
    if scores[0] is None:
        assert all(s is None for s in scores)
        return np.concatenate(outputs, 1), None, cache
    return np.concatenate(outputs, 1), np.concatenate(scores, case.scores_axis), cache


def test_the_cached_layers_are_found():
    assert {c.__name__ for c in CACHED_LAYERS} == {
        "MultiHeadAttention", "SelfAttention", "TransformerDecoderBlock", "PointerGenerator",
        "AttentionRNNDecoder",
    }


@pytest.mark.parametrize("layer_class", CACHED_LAYERS, ids=lambda c: c.__name__)
def test_every_cached_layer_has_the_contract_methods(layer_class):
    for name in CONTRACT_METHODS:
        assert callable(getattr(layer_class, name, None)), name
    call = inspect.signature(layer_class.call_cached).parameters
    positional = [p.name for p in call.values()
                  if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert positional == ["self", "inputs", "cache", "cache_update_index"]
    assert call["memory_cache"].kind == inspect.Parameter.KEYWORD_ONLY
    assert call["training"].kind == inspect.Parameter.KEYWORD_ONLY
    init = list(inspect.signature(layer_class.init_cache).parameters)
    assert init[:3] == ["self", "batch_size", "max_length"]
    assert list(inspect.signature(layer_class.compute_cache).parameters)[0] == "self"


@pytest.mark.slow_on("jax", reason=(
    "JAX runs eager ops one compile per op and shape; "
    "test_compiled_cached_decoding_equals_the_full_call decodes one and two positions per step "
    "compiled there, as JAX users run it, and TensorFlow and torch eagerly"))
@pytest.mark.parametrize("chunk", [1, 2], ids=["one_position", "two_positions"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_cached_decoding_equals_the_full_call(name, chunk, rng):
    case = CASES[name](rng)
    outputs, scores, _ = decode(case, chunk)
    np.testing.assert_allclose(outputs, case.full_outputs, atol=2e-5)
    if case.full_scores is None:
        assert scores is None
    else:
        np.testing.assert_allclose(scores, case.full_scores, atol=2e-5)


@pytest.mark.parametrize("chunk", [
    1, pytest.param(2, marks=pytest.mark.same_path_on("tensorflow", reason=(
        "test_cached_decoding_equals_the_full_call decodes two positions per step on "
        "TensorFlow (eagerly), and the one_position case compiles the step"))),
], ids=["one_position", "two_positions"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_cached_decoding_equals_the_full_call(name, chunk, rng):
    """One compiled step (XLA on TensorFlow, `jax.jit` on JAX) for every
    `chunk` positions: the index is a tensor, the caches are arguments."""
    case = CASES[name](rng)
    layer = case.layer

    def step(inputs, cache, index, memory_cache, kwargs):
        return layer.call_cached(inputs, cache, index, memory_cache=memory_cache, **kwargs)

    compiled = compile_function(step, jit_compile=True)
    if compiled is None:
        pytest.skip("torch runs the steps eagerly (tests/test_case.compile_function)")

    def compiled_step(inputs, cache, index, memory_cache, **kwargs):
        return tuple(compiled(inputs, cache, index, memory_cache, kwargs))

    outputs, scores, _ = decode(case, chunk, compiled_step)
    np.testing.assert_allclose(outputs, case.full_outputs, atol=2e-5)
    if case.full_scores is not None:
        np.testing.assert_allclose(scores, case.full_scores, atol=2e-5)


@pytest.mark.same_path_on("jax", reason=(
    "test_compiled_cached_decoding_equals_the_full_call takes each layer's outputs, cache and "
    "scores in this order from its compiled steps on JAX and checks them"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_return_order_is_outputs_cache_scores(name, rng):
    case = CASES[name](rng)
    output, cache, scores = case.layer.call_cached(
        case.inputs[:, :1], case.cache, 0, memory_cache=case.memory_cache,
        **case.step_kwargs(0, 1),
    )
    assert tuple(output.shape) == case.full_outputs[:, :1].shape
    if case.cache is None:
        assert cache is None
    else:
        assert shapes(cache) == shapes(case.cache)
    if case.full_scores is None:
        assert scores is None
    else:
        expected = list(case.full_scores.shape)
        expected[case.scores_axis] = 1
        assert tuple(scores.shape) == tuple(expected)
        assert dtype_of(scores) == "float32"


def test_the_memory_cache_does_not_change_and_a_cache_is_written_in_place(rng):
    case = block_with_memory(rng)
    before = keras.tree.map_structure(np.asarray, case.memory_cache)
    _, _, cache = decode(case, 1)
    after = keras.tree.map_structure(np.asarray, case.memory_cache)
    keras.tree.map_structure(np.testing.assert_array_equal, before, after)
    assert shapes(cache) == shapes(case.layer.init_cache(B, T))


# ------------------------------------------------------------ bad inputs
def test_bad_caches_raise_clear_errors(rng):
    mha = mha_self(rng).layer
    x = normal(rng, B, 1, D)
    with pytest.raises(ValueError, match=r"exactly one of `cache`.*Received: cache=None, "
                                         r"memory_cache=None"):
        mha.call_cached(x, None, 0)
    with pytest.raises(ValueError, match=r"needs the position.*cache_update_index=None"):
        mha.call_cached(x, mha.init_cache(B, T), None)
    with pytest.raises(ValueError, match=r"`memory_cache` must be a pair.*Received"):
        layers.MultiHeadAttention(2, 4).call_cached(
            x, memory_cache=mha.init_cache(B, T)[:1]
        )
    block = block_with_memory(rng).layer
    with pytest.raises(ValueError, match=r"`memory_cache`.*cross-attention \(True\).*"
                                         r"Received: memory_cache=None"):
        block.call_cached(x, block.init_cache(B, T), 0)
    pointer = pointer_generator(rng)
    with pytest.raises(ValueError, match=r"`memory_cache` must be the dict.*Received"):
        pointer.layer.call_cached(x, pointer.cache, 0, memory_cache={"memory": x})
    with pytest.raises(ValueError, match=r"`cache` must have the shape.*Received"):
        pointer.layer.call_cached(x, pointer.cache[:, :2], 0,
                                  memory_cache=pointer.memory_cache)
    with pytest.raises(ValueError, match=r"`inputs` must be a rank-3.*Received"):
        pointer.layer.call_cached(x[:, 0], pointer.cache, 0,
                                  memory_cache=pointer.memory_cache)
    with pytest.raises(ValueError, match=r"`batch_size`.*Received: batch_size=3"):
        pointer.layer.init_cache(3, T, pointer.memory_cache)
    decoder = rnn_decoder_gru(rng)
    with pytest.raises(ValueError, match=r"`memory_cache` must be the dict.*Received"):
        decoder.layer.call_cached(decoder.inputs[:, :1], decoder.cache, 0,
                                  memory_cache=decoder.memory_cache["memory"])


def test_memory_cache_dict_errors_name_the_keys_and_what_was_received(rng):
    pointer = pointer_generator(rng)
    with pytest.raises(ValueError, match=r"keys \['memory', 'projected_memory', 'token_ids', "
                                         r"'memory_mask'\]\. Received: memory_cache=None"):
        pointer.layer.call_cached(pointer.inputs[:, :1], pointer.cache, 0, memory_cache=None)
    decoder = rnn_decoder_gru(rng)
    with pytest.raises(ValueError, match=r"compute_cache\(memory, memory_mask\)`, with keys "
                                         r"\['memory', 'memory_mask'\]\. Received: "
                                         r"memory_cache=\['memory'\]"):
        decoder.layer.call_cached(decoder.inputs[:, :1], decoder.cache, 0,
                                  memory_cache={"memory": decoder.memory_cache["memory"]})
