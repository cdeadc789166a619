import os
import warnings

import keras
import numpy as np
import pytest

from keras_attention.layers import PointerGenerator
from tests import test_case
from tests.test_case import (
    GRAPH_AND_XLA,
    compile_function,
    dtype_of,
    gradients,
    keras_mask,
    mixed_precision_calls,
    run_layer_test,
    to_numpy,
    to_tensor,
    with_keras_mask,
)

pytestmark = pytest.mark.keras_ops_only

B, T, S, D, DM, V, UNITS = 2, 4, 5, 6, 6, 9, 8


def make_inputs(rng, ids=None, t=T, s=S):
    states = rng.normal(size=(B, t, D)).astype("float32")
    memory = rng.normal(size=(B, s, DM)).astype("float32")
    if ids is None:
        ids = rng.integers(0, V, size=(B, s)).astype("int32")
    return states, memory, np.asarray(ids, "int32")


# Token 3 appears twice in example 0: its copy probabilities must add up.
REPEATED_IDS = np.array([[3, 5, 3, 1, 0], [2, 8, 7, 4, 6]], "int32")
MEMORY_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)


def softmax(x, mask=None):
    e = np.exp(x - x.max(-1, keepdims=True))
    if mask is not None:
        e = np.where(mask, e, 0.0)
    return e / e.sum(-1, keepdims=True)


def reference(layer, states, memory, ids, memory_mask=None, coverage=True):
    """The equations of See et al. in NumPy, step by step (float64)."""
    w = {v.name: to_numpy(v).astype("float64") for v in layer.weights}
    for name in ("hidden_kernel", "hidden_bias", "output_kernel", "output_bias"):
        w[name] = to_numpy(getattr(layer, name)).astype("float64")  # Dense sublayers
    mask = np.ones(ids.shape, bool) if memory_mask is None else memory_mask
    memory = np.where(mask[..., None], memory, 0.0)
    c = np.zeros(ids.shape)
    out = {"probs": [], "vocab": [], "copy": [], "attention": [], "p_gen": [],
           "coverage": [], "covloss": []}
    for t in range(states.shape[1]):
        s_t = states[:, t].astype("float64")
        hidden = memory @ w["memory_kernel"] + w["attention_bias"]
        if coverage:
            hidden = hidden + c[..., None] * w["coverage_kernel"]
        hidden = hidden + (s_t @ w["state_kernel"])[:, None]
        a = softmax(np.tanh(hidden) @ w["score_vector"], mask)
        context = np.einsum("bs,bsd->bd", a, memory)
        features = np.concatenate([s_t, context], -1)
        vocab = softmax(
            (features @ w["hidden_kernel"] + w["hidden_bias"])
            @ w["output_kernel"] + w["output_bias"]
        )
        z = (context @ w["pointer_context_kernel"]
             + s_t @ w["pointer_state_kernel"])[:, 0] + w["pointer_bias"]
        p_gen = 1.0 / (1.0 + np.exp(-z))
        copy = np.zeros((ids.shape[0], layer.vocabulary_size))
        for b in range(ids.shape[0]):
            for i in range(ids.shape[1]):
                if mask[b, i]:
                    copy[b, ids[b, i]] += a[b, i]
        out["probs"].append(p_gen[:, None] * vocab + (1 - p_gen[:, None]) * copy)
        out["covloss"].append(np.minimum(a, c).sum(-1))
        out["coverage"].append(c.copy())
        c = c + a
        for name, value in (("vocab", vocab), ("copy", copy),
                            ("attention", a), ("p_gen", p_gen)):
            out[name].append(value)
    return {k: np.stack(v, 1) for k, v in out.items()}


def built_layer(rng, **kwargs):
    layer = PointerGenerator(V, UNITS, **kwargs)
    layer(*make_inputs(rng))
    # Non-trivial biases and coverage weights, so every term is exercised.
    for variable in layer.weights:
        if "bias" in variable.name or "coverage" in variable.name:
            variable.assign(
                rng.normal(size=variable.shape).astype("float32")
                * (0.3 if variable.name == "pointer_bias" else 1.0)
            )
    return layer


# ------------------------------------------------------------ the harness
def _check_float32_output_under_mixed_precision(reference_layer, inputs, call_kwargs):
    """The harness's mixed precision check (`mixed_precision_calls`: the
    copies' outputs, finite gradients), for a layer whose log-probs (like its
    weights) are float32 under every policy by design."""
    tensors = [to_tensor(x) for x in inputs.values()]
    expected = reference_layer(*tensors, **call_kwargs)
    for policy, atol, layer, (outputs, scored) in mixed_precision_calls(
        reference_layer, inputs, call_kwargs
    ):
        assert layer.compute_dtype != "float32"
        for variable in layer.weights:
            assert variable.dtype == "float32", variable.path
        assert scored
        output, attention, p_gen = outputs
        for x in (output, attention, p_gen):
            assert dtype_of(x) == "float32", policy
            assert np.isfinite(to_numpy(x)).all(), policy
        np.testing.assert_allclose(
            to_numpy(output), to_numpy(expected), atol=atol, err_msg=policy
        )
        np.testing.assert_allclose(
            np.exp(to_numpy(output)).sum(-1), 1.0, atol=1e-5, err_msg=policy
        )


def test_layer_behaviors(rng, tmp_path, monkeypatch):
    """Everything `run_layer_test` checks (config round trip, eager,
    functional, graph and XLA agreement, `.keras` save/load, `fit` with
    `jit_compile`, finite gradients), except two checks that do not apply
    to an integer input and a float32 output: mixed precision expects the
    output in the compute dtype (replaced by the float32 version above) and
    the implicit-mask check writes NaN into every input, the integer ids
    included (see `test_implicit_masks_...` below)."""
    monkeypatch.setattr(
        test_case,
        "_check_mixed_precision",
        _check_float32_output_under_mixed_precision,
    )
    states, memory, ids = make_inputs(rng)
    run_layer_test(
        PointerGenerator,
        {"vocabulary_size": V, "units": UNITS, "coverage_loss_weight": 0.5},
        {"decoder_states": states, "memory": memory, "source_token_ids": ids},
        expected_output_shape=(B, T, V),
        expected_scores_shape=[(B, T, S), (B, T)],
        mask_inputs=False,
        tmp_dir=tmp_path,
    )


def test_implicit_masks_are_honoured_propagated_and_kept(rng):
    layer = PointerGenerator(V, UNITS)
    states, memory, ids = make_inputs(rng)
    state_mask = np.ones((B, T), bool)
    state_mask[0, -1] = False
    memory_mask = MEMORY_MASK
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        masked = [with_keras_mask(states, state_mask),
                  with_keras_mask(memory, memory_mask)]
        output = layer(*masked, ids)
        symbolic = [keras.Input((T, D)), keras.Input((S, DM)),
                    keras.Input((S,), dtype="int32")]
        model = keras.Model(symbolic, layer(
            keras.layers.Masking(0.0)(symbolic[0]),
            keras.layers.Masking(0.0)(symbolic[1]),
            symbolic[2],
        ))
        symbolic_output = model([
            np.where(state_mask[..., None], states, 0.0),
            np.where(memory_mask[..., None], memory, 0.0),
            ids,
        ])
    assert not [w for w in caught if "mask" in str(w.message).lower()]
    assert all(keras_mask(x) is not None for x in masked)
    np.testing.assert_array_equal(to_numpy(keras_mask(output)), state_mask)
    np.testing.assert_array_equal(to_numpy(keras_mask(symbolic_output)), state_mask)
    explicit = layer(states, memory, ids, decoder_states_mask=state_mask,
                     memory_mask=memory_mask)
    np.testing.assert_allclose(output, explicit, atol=1e-6)
    np.testing.assert_allclose(symbolic_output, explicit, atol=1e-5)
    # NaN stored in padding (and out-of-vocabulary ids there) change nothing.
    noisy_states, noisy_memory, noisy_ids = states.copy(), memory.copy(), ids.copy()
    noisy_states[~state_mask] = np.nan
    noisy_memory[~memory_mask] = np.nan
    noisy_ids[~memory_mask] = 10 * V
    noisy = to_numpy(layer(with_keras_mask(noisy_states, state_mask),
                           with_keras_mask(noisy_memory, memory_mask), noisy_ids))
    assert np.isfinite(noisy).all()
    np.testing.assert_allclose(noisy, to_numpy(output), atol=1e-6)


# -------------------------------------------------------------- equations
@pytest.mark.parametrize("use_coverage", [True, False])
def test_matches_the_equations_of_see_et_al(use_coverage, rng):
    layer = built_layer(rng, use_coverage=use_coverage)
    states, memory, ids = make_inputs(rng, REPEATED_IDS)
    log_probs, attention, p_gen = layer(
        states, memory, ids, memory_mask=MEMORY_MASK, return_attention_scores=True
    )
    ref = reference(layer, states, memory, ids, MEMORY_MASK, use_coverage)
    assert dtype_of(log_probs) == "float32"
    np.testing.assert_allclose(attention, ref["attention"], atol=1e-5)
    np.testing.assert_allclose(p_gen, ref["p_gen"], atol=1e-5)
    log_probs = to_numpy(log_probs)
    np.testing.assert_allclose(np.exp(log_probs), ref["probs"], atol=1e-5)
    np.testing.assert_allclose(log_probs, np.log(ref["probs"]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, atol=1e-5)
    assert use_coverage == hasattr(layer, "coverage_kernel")


def test_probabilities_sum_to_one_and_are_finite(rng):
    layer = built_layer(rng)
    states, memory, ids = make_inputs(rng, REPEATED_IDS)
    states_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    log_probs = to_numpy(layer(10 * states, 10 * memory, ids,
                               decoder_states_mask=states_mask,
                               memory_mask=MEMORY_MASK))
    assert np.isfinite(log_probs).all() and (log_probs <= 1e-6).all()
    np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, atol=1e-5)
    # Finite gradients on every path: masked steps (nothing to copy), words
    # absent from the source (log 0 on the copy side), a saturated switch.
    for bias in (0.0, 40.0, -40.0):
        layer.pointer_bias.assign(bias)
        tensors = [to_tensor(10 * x) for x in (states, memory)]

        def loss_terms(states, memory):
            out = layer(states, memory, ids, decoder_states_mask=states_mask,
                        memory_mask=MEMORY_MASK)
            return [out * to_tensor(np.linspace(-1, 1, V).astype("float32")),
                    *layer.losses]

        for grad in gradients(loss_terms, tensors, layer.trainable_variables):
            assert np.isfinite(to_numpy(grad)).all(), bias


@pytest.mark.parametrize("bias, expected", [(30.0, "vocab"), (-30.0, "copy")])
def test_switch_forced_to_generate_or_to_copy(bias, expected, rng):
    layer = built_layer(rng)
    layer.pointer_bias.assign(bias)
    states, memory, ids = make_inputs(rng, REPEATED_IDS)
    log_probs, attention, p_gen = layer(
        states, memory, ids, memory_mask=MEMORY_MASK, return_attention_scores=True
    )
    probs, attention = np.exp(to_numpy(log_probs)), to_numpy(attention)
    ref = reference(layer, states, memory, ids, MEMORY_MASK)
    np.testing.assert_allclose(p_gen, 1.0 if bias > 0 else 0.0, atol=1e-6)
    np.testing.assert_allclose(probs, ref[expected], atol=1e-6)
    if expected == "copy":
        # Scattered by hand: token 3 sits at positions 0 and 2 of example 0.
        np.testing.assert_allclose(
            probs[0, :, 3], attention[0, :, 0] + attention[0, :, 2], atol=1e-6
        )
        for i, token in enumerate(REPEATED_IDS[1, :3]):
            np.testing.assert_allclose(probs[1, :, token], attention[1, :, i], atol=1e-6)
        # Tokens 4 and 6 sit only at masked positions of example 1.
        np.testing.assert_allclose(probs[1, :, [4, 6]], 0.0, atol=1e-6)
        assert probs[0, :, [2, 4, 6, 7, 8]].max() < 1e-6


def test_masked_source_positions_get_zero_attention_and_copy_nothing(rng):
    layer = built_layer(rng)
    layer.pointer_bias.assign(-30.0)  # copy only
    states, memory, ids = make_inputs(rng, REPEATED_IDS)
    log_probs, attention, _ = layer(
        states, memory, ids, memory_mask=MEMORY_MASK, return_attention_scores=True
    )
    attention = to_numpy(attention)
    assert (attention[1, :, 3:] == 0).all() and (attention[1, :, :3] > 0).all()
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-6)
    # Truncating the source to its real part gives the same example 1.
    short = layer(states[1:], memory[1:, :3], ids[1:, :3])
    np.testing.assert_allclose(log_probs[1:], short, atol=1e-5)


def test_masked_target_steps_generate_and_are_left_out_of_coverage(rng):
    layer = built_layer(rng)
    states, memory, ids = make_inputs(rng)
    states_mask = np.array([[1, 0, 1, 1], [1, 1, 1, 1]], bool)
    log_probs, attention, p_gen = layer(
        states, memory, ids, decoder_states_mask=states_mask,
        return_attention_scores=True,
    )
    log_probs, attention, p_gen = map(to_numpy, (log_probs, attention, p_gen))
    assert (attention[0, 1] == 0).all()
    assert p_gen[0, 1] == 1.0
    np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, atol=1e-5)
    # Step 2 of example 0 sees the coverage of step 0 only.
    kept = np.array([0, 2, 3])
    dropped = layer(states[:, kept], memory, ids, return_attention_scores=True)
    np.testing.assert_allclose(attention[0, kept], dropped[1][0], atol=1e-6)
    np.testing.assert_allclose(log_probs[0, kept], dropped[0][0], atol=1e-5)


# --------------------------------------------------------------- coverage
def test_step_loop_equals_call_and_coverage_is_the_exclusive_cumsum(rng):
    layer = built_layer(rng)
    states, memory, ids = make_inputs(rng, REPEATED_IDS)
    log_probs, attention, _ = layer(
        states, memory, ids, memory_mask=MEMORY_MASK, return_attention_scores=True
    )
    attention = to_numpy(attention)
    exclusive_cumsum = np.cumsum(attention, axis=1) - attention
    memory_cache = layer.compute_cache(memory, ids, MEMORY_MASK)
    coverage = layer.init_cache(B, T, memory_cache)
    for t in range(T):
        np.testing.assert_allclose(coverage, exclusive_cumsum[:, t], atol=1e-6)
        log_probs_t, coverage, attention_t = layer.call_cached(
            states[:, t : t + 1], coverage, t, memory_cache=memory_cache
        )
        np.testing.assert_allclose(log_probs_t[:, 0], log_probs[:, t], atol=1e-6)
        np.testing.assert_allclose(attention_t[:, 0], attention[:, t], atol=1e-6)
    np.testing.assert_allclose(coverage, attention.sum(1), atol=1e-6)


def test_coverage_changes_the_attention(rng):
    layer = built_layer(rng)
    states, memory, ids = make_inputs(rng)
    zero = np.zeros((B, S), "float32")
    some = rng.uniform(size=(B, S)).astype("float32")

    def first_step(layer, coverage):
        """`(attention (B, 1, S), new coverage)` of the first position."""
        memory_cache = layer.compute_cache(memory, ids)
        _, coverage, attention = layer.call_cached(
            states[:, :1], coverage, 0, memory_cache=memory_cache
        )
        return attention, coverage

    a0, c0 = first_step(layer, zero)
    a1, c1 = first_step(layer, some)
    assert not np.allclose(a0, a1)
    np.testing.assert_allclose(c1, some + to_numpy(a1)[:, 0], atol=1e-6)
    no_coverage = built_layer(rng, use_coverage=False)
    b0, _ = first_step(no_coverage, zero)
    b1, _ = first_step(no_coverage, some)
    np.testing.assert_allclose(b0, b1, atol=1e-7)


def test_coverage_loss_is_the_mean_sum_of_mins_over_real_steps(rng):
    layer = built_layer(rng, coverage_loss_weight=0.7)
    states, memory, ids = make_inputs(rng)
    states_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    _, attention, _ = layer(states, memory, ids, memory_mask=MEMORY_MASK,
                            decoder_states_mask=states_mask,
                            return_attention_scores=True)
    a = to_numpy(attention).astype("float64")
    c = np.cumsum(a, axis=1) - a
    covloss = np.minimum(a, c).sum(-1)  # (B, T)
    expected = 0.7 * covloss[states_mask].mean()
    assert len(layer.losses) == 1
    np.testing.assert_allclose(to_numpy(layer.losses[0]), expected, rtol=1e-5)
    assert expected > 0
    # One loss per call, not accumulated.
    layer(states, memory, ids)
    assert len(layer.losses) == 1
    unmasked = reference(layer, states, memory, ids)["covloss"].mean()
    np.testing.assert_allclose(to_numpy(layer.losses[0]), 0.7 * unmasked, rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{"use_coverage": False},
                                    {"coverage_loss_weight": 0.0}])
def test_no_coverage_loss_when_disabled(kwargs, rng):
    layer = PointerGenerator(V, UNITS, **kwargs)
    layer(*make_inputs(rng))
    assert layer.losses == []


def test_coverage_loss_reaches_fit(rng):
    states, memory, ids = make_inputs(rng)
    inputs = [keras.Input((T, D)), keras.Input((S, DM)),
              keras.Input((S,), dtype="int32")]
    model = keras.Model(inputs, PointerGenerator(V, UNITS)(*inputs))
    model(list(make_inputs(rng)))
    assert len(model.losses) == 1
    model.compile("sgd", loss=lambda y, log_probs: 0.0 * keras.ops.sum(log_probs))
    history = model.fit(list(make_inputs(rng)), np.zeros((B, T, V)), verbose=0)
    assert history.history["loss"][0] > 0  # only the coverage loss


# ------------------------------------------------------- symbolic shapes
@pytest.mark.parametrize("jit_compile", GRAPH_AND_XLA)
def test_dynamic_target_length_loop_equals_the_unrolled_call(jit_compile, rng):
    layer = built_layer(rng)
    states, memory, ids = make_inputs(rng, REPEATED_IDS)
    states_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    expected = layer(states, memory, ids, decoder_states_mask=states_mask,
                     memory_mask=MEMORY_MASK, return_attention_scores=True)
    expected_loss = to_numpy(layer.losses[0])
    # Lengths unknown at trace time on TensorFlow; on JAX (static shapes)
    # this checks the loop under jax.jit.
    dynamic = compile_function(
        lambda x, m, i, xm, mm: layer(
            x, m, i, decoder_states_mask=xm, memory_mask=mm,
            return_attention_scores=True,
        ) + (layer.losses[0],),
        jit_compile,
        input_signature=[
            ((None, None, D), "float32"), ((None, None, DM), "float32"),
            ((None, None), "int32"), ((None, None), "bool"), ((None, None), "bool"),
        ],
    )
    if dynamic is None:
        pytest.skip(f"no compiler for backend {keras.backend.backend()}")
    *got, loss = dynamic(states, memory, ids, states_mask, MEMORY_MASK)
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, atol=1e-5)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)


def test_int_input_model_save_load_round_trip(rng, tmp_path):
    states, memory, ids = make_inputs(rng, REPEATED_IDS)
    inputs = [keras.Input((T, D)), keras.Input((S, DM)),
              keras.Input((S,), dtype="int32")]
    outputs = PointerGenerator(V, UNITS, use_coverage=False, name="head")(
        *inputs, return_attention_scores=True
    )
    model = keras.Model(inputs, outputs)
    expected = model([states, memory, ids])
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    for got, want in zip(reloaded([states, memory, ids]), expected):
        np.testing.assert_array_equal(got, want)
    assert reloaded.get_layer("head").get_config() == model.get_layer("head").get_config()


# ------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"vocabulary_size": 0}, r"`vocabulary_size`.*Received: vocabulary_size=0"),
        ({"vocabulary_size": 2.5}, r"`vocabulary_size`.*Received: vocabulary_size=2.5"),
        ({"units": -1}, r"`units`.*Received: units=-1"),
        ({"units": True}, r"`units`.*Received: units=True"),
        ({"coverage_loss_weight": -0.1},
         r"`coverage_loss_weight`.*Received: coverage_loss_weight=-0.1"),
        ({"coverage_loss_weight": float("nan")},
         r"`coverage_loss_weight`.*Received: coverage_loss_weight=nan"),
        ({"coverage_loss_weight": "1"},
         r"`coverage_loss_weight`.*Received: coverage_loss_weight='1'"),
    ],
)
def test_bad_constructor_arguments(kwargs, pattern):
    kwargs = {"vocabulary_size": V, "units": UNITS, **kwargs}
    with pytest.raises(ValueError, match=pattern):
        PointerGenerator(**kwargs)


def test_bad_use_coverage():
    # The project's `check_bool` convention: a TypeError (a wrong type).
    with pytest.raises(TypeError, match=r"`use_coverage`.*Received: use_coverage='yes'"):
        PointerGenerator(V, UNITS, use_coverage="yes")


def f32(*shape):
    return np.ones(shape, "float32")


def i32(*shape):
    return np.ones(shape, "int32")


BAD_CALLS = {
    "states_rank": ((f32(B, D), f32(B, S, DM), i32(B, S)),
                    r"`decoder_states` must be a rank-3.*Received: decoder_states.shape=\(2, 6\)"),
    "memory_rank": ((f32(B, T, D), f32(B, DM), i32(B, S)),
                    r"`memory` must be a rank-3.*Received: memory.shape=\(2, 6\)"),
    "ids_rank": ((f32(B, T, D), f32(B, S, DM), i32(B, S, 1)),
                 r"`source_token_ids` must be a rank-2"
                 r".*Received: source_token_ids.shape=\(2, 5, 1\)"),
    "batch": ((f32(B, T, D), f32(3, S, DM), i32(B, S)),
              r"same batch size.*Received: .*memory.shape\[0\]=3"),
    "ids_length": ((f32(B, T, D), f32(B, S, DM), i32(B, S + 1)),
                   r"one id per `memory` position"
                   r".*Received: memory.shape\[1\]=5, source_token_ids.shape\[1\]=6"),
    "id_too_large": ((f32(B, T, D), f32(B, S, DM), np.full((B, S), V, "int32")),
                     r"\[0, vocabulary_size=9\).*Received: source_token_ids with min=9, max=9"),
    "negative_id": ((f32(B, T, D), f32(B, S, DM), -i32(B, S)),
                    r"\[0, vocabulary_size=9\).*Received: source_token_ids with min=-1"),
    "fractional_id": ((f32(B, T, D), f32(B, S, DM), np.full((B, S), 1.5, "float32")),
                      r"integer token ids.*Received: .*non-integer values"),
    "bool_ids": ((f32(B, T, D), f32(B, S, DM), np.ones((B, S), bool)),
                 r"integer tensor.*Received: source_token_ids with dtype bool"),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_call_raises_value_error(name):
    args, pattern = BAD_CALLS[name]
    with pytest.raises(ValueError, match=pattern):
        PointerGenerator(V, UNITS)(*args)


def test_bad_step_inputs_raise_value_error(rng):
    layer = built_layer(rng)
    states, memory, ids = make_inputs(rng)
    memory_cache = layer.compute_cache(memory, ids)
    with pytest.raises(ValueError, match=r"`inputs` must be a rank-3"
                                         r".*Received: inputs.shape=\(2, 6\)"):
        layer.call_cached(states[:, 0], f32(B, S), 0, memory_cache=memory_cache)
    with pytest.raises(ValueError, match=r"`cache`.*Received: cache.shape\[1\]=4"):
        layer.call_cached(states[:, :1], f32(B, S - 1), 0, memory_cache=memory_cache)
    with pytest.raises(ValueError, match=r"vocabulary_size=9.*max=11"):
        layer.compute_cache(memory, np.full((B, S), 11))
    # An out-of-vocabulary id at a masked position is allowed.
    ids = ids.copy()
    ids[~MEMORY_MASK] = 11
    layer.compute_cache(memory, ids, memory_mask=MEMORY_MASK)
