import keras
import numpy as np
import pytest

from keras_attention.layers import (
    AttentionRNNDecoder,
    BahdanauAttention,
    LuongAttention,
)
from tests.test_case import (
    GRAPH_AND_XLA,
    OTHER_CONFIGURATIONS_ON_JAX,
    compile_function,
    dtype_of,
    run_layer_test,
)

pytestmark = pytest.mark.keras_ops_only

UNITS = 8


def serialized(attention):
    """The config dict of an attention layer: each decoder gets its own."""
    return keras.saving.serialize_keras_object(attention)


@pytest.mark.parametrize(
    "init_kwargs, memory_dim",
    [
        pytest.param({"attention": serialized(BahdanauAttention(4)), "dropout": 0.1}, 7,
                     id="bahdanau_gru_feeding"),
        pytest.param({"attention": serialized(LuongAttention("general")), "cell": "lstm"}, 7,
                     id="luong_general_lstm", marks=pytest.mark.slow_on(
                         "jax", reason="compiles for minutes; the other variants cover it")),
        pytest.param({"attention": LuongAttention("dot"), "input_feeding": False}, UNITS,
                     id="luong_dot_no_feeding", marks=pytest.mark.slow_on(
                         "jax", reason=OTHER_CONFIGURATIONS_ON_JAX)),
    ],
)
def test_layer_behaviors(init_kwargs, memory_dim, rng, tmp_path):
    run_layer_test(
        AttentionRNNDecoder,
        {"units": UNITS, **init_kwargs},
        {
            "inputs": rng.normal(size=(2, 4, 5)).astype("float32"),
            "memory": rng.normal(size=(2, 6, memory_dim)).astype("float32"),
        },
        expected_output_shape=(2, 4, UNITS),
        expected_scores_shape=(2, 4, 6),
        tmp_dir=tmp_path,
        position_wise=True,
    )


def decode_with_steps(layer, inputs, memory, memory_mask=None, state=None):
    """The Python loop of `call_cached` steps that `call` must equal."""
    memory_cache = layer.compute_cache(memory, memory_mask)
    if state is None:
        state = layer.init_cache(inputs.shape[0], inputs.shape[1])
    outputs, alignments = [], []
    for t in range(inputs.shape[1]):
        output, state, alignment = layer.call_cached(
            inputs[:, t : t + 1], state, t, memory_cache=memory_cache
        )
        outputs.append(np.asarray(output))
        alignments.append(np.asarray(alignment))
    return np.concatenate(outputs, 1), np.concatenate(alignments, 1)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_call_is_a_loop_of_steps_and_alignments_respect_memory_padding(cell, rng):
    layer = AttentionRNNDecoder(UNITS, BahdanauAttention(4), cell=cell)
    inputs = rng.normal(size=(2, 5, 3)).astype("float32")
    memory = rng.normal(size=(2, 6, 7)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], bool)
    outputs, alignments = layer(
        inputs, memory, memory_mask=memory_mask, return_attention_scores=True
    )
    stepped, stepped_alignments = decode_with_steps(
        layer, inputs, memory, memory_mask
    )
    np.testing.assert_allclose(outputs, stepped, atol=1e-6)
    np.testing.assert_allclose(alignments, stepped_alignments, atol=1e-6)
    alignments = np.asarray(alignments)
    np.testing.assert_allclose(alignments.sum(-1), 1.0, atol=1e-5)
    assert (alignments[1, :, 3:] == 0).all()
    assert (alignments[1, :, :3] > 0).all()


@pytest.mark.parametrize("jit_compile", GRAPH_AND_XLA)
def test_symbolic_loop_over_a_dynamic_length_equals_the_unrolled_call(
    jit_compile, rng
):
    layer = AttentionRNNDecoder(UNITS, LuongAttention("general"), cell="lstm")
    inputs = rng.normal(size=(2, 5, 3)).astype("float32")
    memory = rng.normal(size=(2, 6, 7)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]], bool)
    expected = layer(
        inputs, memory, memory_mask=memory_mask, return_attention_scores=True
    )
    # Lengths unknown at trace time on TensorFlow; on JAX (static shapes)
    # this checks the loop under jax.jit.
    dynamic = compile_function(
        lambda x, m, mask: layer(
            x, m, memory_mask=mask, return_attention_scores=True
        ),
        jit_compile,
        input_signature=[
            ((None, None, 3), "float32"),
            ((None, None, 7), "float32"),
            ((None, None), "bool"),
        ],
    )
    if dynamic is None:
        pytest.skip(f"no compiler for backend {keras.backend.backend()}")
    for got, want in zip(dynamic(inputs, memory, memory_mask), expected):
        assert got.shape[1] is None or got.shape[1] == want.shape[1]
        np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("input_feeding", [True, False])
def test_input_feeding_feeds_the_previous_attentional_state(input_feeding, rng):
    layer = AttentionRNNDecoder(
        UNITS, LuongAttention("general"), input_feeding=input_feeding
    )
    inputs = rng.normal(size=(2, 3, 5)).astype("float32")
    memory = rng.normal(size=(2, 4, 6)).astype("float32")
    layer(inputs, memory)
    expected_rows = 5 + UNITS if input_feeding else 5
    assert tuple(layer.cell.kernel.shape) == (expected_rows, 3 * UNITS)
    # Same cell state, different a_{t-1}: only input feeding sees it.
    h, a = layer.init_cache(2, 3)
    other_a = rng.normal(size=a.shape).astype("float32")
    memory_cache = layer.compute_cache(memory)
    output, *_ = layer.call_cached(inputs[:, :1], (h, a), 0, memory_cache=memory_cache)
    other_output, *_ = layer.call_cached(
        inputs[:, :1], (h, other_a), 0, memory_cache=memory_cache
    )
    differs = not np.allclose(output, other_output)
    assert differs == input_feeding


@pytest.mark.parametrize(
    "attention",
    [BahdanauAttention(4), LuongAttention("general"), LuongAttention("concat")],
    ids=["bahdanau", "luong_general", "luong_concat"],
)
@pytest.mark.parametrize("garbage", [1e4, np.nan])
def test_appended_masked_memory_changes_nothing(attention, garbage, rng):
    layer = AttentionRNNDecoder(UNITS, attention)
    inputs = rng.normal(size=(2, 3, 5)).astype("float32")
    memory = rng.normal(size=(2, 4, 6)).astype("float32")
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool)
    outputs, alignments = layer(
        inputs, memory, memory_mask=mask, return_attention_scores=True
    )
    padded_memory = np.concatenate(
        [memory, np.full((2, 3, 6), garbage, "float32")], axis=1
    )
    padded_mask = np.concatenate([mask, np.zeros((2, 3), bool)], axis=1)
    padded_outputs, padded_alignments = layer(
        inputs, padded_memory, memory_mask=padded_mask,
        return_attention_scores=True,
    )
    np.testing.assert_allclose(padded_outputs, outputs, atol=1e-6)
    padded_alignments = np.asarray(padded_alignments)
    np.testing.assert_allclose(padded_alignments[..., :4], alignments, atol=1e-6)
    assert (padded_alignments[..., 4:] == 0).all()


def test_initial_state_seeds_the_cell_and_a0_is_zero(rng):
    inputs = rng.normal(size=(2, 3, 5)).astype("float32")
    memory = rng.normal(size=(2, 4, 6)).astype("float32")
    h0 = rng.normal(size=(2, UNITS)).astype("float32")
    c0 = rng.normal(size=(2, UNITS)).astype("float32")
    zeros = np.zeros((2, UNITS), "float32")
    for cell, initial_state in (("gru", h0), ("lstm", [h0, c0])):
        layer = AttentionRNNDecoder(UNITS, BahdanauAttention(4), cell=cell)
        outputs = layer(inputs, memory, initial_state=initial_state)
        state = (h0, c0) if cell == "lstm" else (h0,)
        stepped, _ = decode_with_steps(
            layer, inputs, memory, state=state + (zeros,)
        )
        np.testing.assert_allclose(outputs, stepped, atol=1e-6)
        seeded, _ = decode_with_steps(
            layer, inputs, memory, state=layer.init_cache(2, 3, initial_state)
        )
        np.testing.assert_allclose(outputs, seeded, atol=1e-6)
        assert not np.allclose(outputs, layer(inputs, memory))
        assert len(layer.init_cache(2, 3)) == (3 if cell == "lstm" else 2)
    with pytest.raises(ValueError, match="Received: initial_state with 1"):
        layer(inputs, memory, initial_state=h0)


def test_attention_runs_in_the_layer_dtype_policy():
    attention = LuongAttention("general")
    layer = AttentionRNNDecoder(UNITS, attention, dtype="mixed_bfloat16")
    assert layer.attention is not attention
    assert layer.attention.dtype_policy.name == "mixed_bfloat16"
    assert layer.cell.dtype_policy.name == "mixed_bfloat16"
    same = AttentionRNNDecoder(UNITS, attention)
    assert same.attention is attention
    state = layer.init_cache(2, 1)
    assert all(dtype_of(s) == "bfloat16" for s in state)


def test_bad_arguments_and_inputs_raise_clear_errors(rng):
    with pytest.raises(TypeError, match="Received: attention='bahdanau'"):
        AttentionRNNDecoder(UNITS, "bahdanau")
    with pytest.raises(ValueError, match="Received: cell='rnn'"):
        AttentionRNNDecoder(UNITS, BahdanauAttention(4), cell="rnn")
    with pytest.raises(ValueError, match="Received: units=0"):
        AttentionRNNDecoder(0, BahdanauAttention(4))
    with pytest.raises(ValueError, match="Received: dropout=1.0"):
        AttentionRNNDecoder(UNITS, BahdanauAttention(4), dropout=1.0)
    with pytest.raises(TypeError, match="Received: input_feeding=1"):
        AttentionRNNDecoder(UNITS, BahdanauAttention(4), input_feeding=1)
    inputs = rng.normal(size=(2, 3, 5)).astype("float32")
    layer = AttentionRNNDecoder(UNITS, BahdanauAttention(4))
    with pytest.raises(ValueError, match=r"memory.*Received: memory.shape=\(2, 6\)"):
        layer(inputs, np.ones((2, 6), "float32"))
    with pytest.raises(ValueError, match=r"inputs.*Received: inputs.shape=\(2, 5\)"):
        layer(inputs[:, 0], np.ones((2, 4, 6), "float32"))
    with pytest.raises(ValueError, match="same batch size. Received:"):
        layer(inputs, np.ones((3, 4, 6), "float32"))
    with pytest.raises(ValueError, match="Received: query.shape"):
        AttentionRNNDecoder(UNITS, LuongAttention("dot"))(
            inputs, np.ones((2, 4, UNITS + 1), "float32")
        )
