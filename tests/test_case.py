"""`run_layer_test`: the checks every public layer of keras_attention passes.

Written for this project (it does not import `keras.src`), after the harnesses
of Keras core and keras-hub, plus what they leave out: numeric `.keras` round
trips, finiteness, mixed precision closeness, XLA == eager, mask warnings and
input masks left untouched.

Backend-neutral: the graph and XLA checks and the gradients use the running
backend's own machinery (`tf.function` and `GradientTape` on TensorFlow,
`jax.jit` and `jax.grad` on JAX, `torch.autograd` on torch, which has no
compiler here: see `compile_function`). TensorFlow runs every check; JAX
leaves the checks of plain Python to it (`LEFT_TO_TENSORFLOW`).
"""

import inspect
import json
import os
import tempfile
import warnings

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()

# Parametrizations of a `jit_compile` (or `compiled`) flag, False then True,
# whose case that would run the other's code again is skipped (the
# `same_path_on` marker, tests/conftest.py). EAGER_AND_XLA: eager and
# compiled generation or decoding; on torch nothing compiles (`jit_compile` is
# ignored, `compile_function` is None), so "xla" is "eager" again; on JAX the
# eager case is left to TensorFlow (`slow_on`).
# GRAPH_AND_XLA: `compile_function` cases; on JAX both are `jax.jit`, so
# "graph" is "xla" again (on torch both skip themselves: no compiler).
EAGER_AND_XLA = [
    pytest.param(False, id="eager", marks=pytest.mark.slow_on(
        "jax", reason="JAX runs eager ops one compile per op and shape; the xla case checks "
                      "the same loop compiled, as JAX users run it, and TensorFlow the eager one")),
    pytest.param(True, id="xla", marks=pytest.mark.same_path_on(
        "torch", reason="nothing compiles on torch: the eager case")),
]
GRAPH_AND_XLA = [
    pytest.param(False, id="graph", marks=pytest.mark.same_path_on(
        "jax", reason="compile_function is jax.jit for both: the xla case")),
    pytest.param(True, id="xla"),
]

# The reason of `slow_on("jax", "torch", reason=LEARNS_ON_TENSORFLOW)`: tests
# that train a model to an accuracy target run on TensorFlow; on JAX, `fit`
# is what tests/recipes/backends_test.py's recipes trained on JAX exercise,
# and on both, every layer's `run_layer_test` fits it one step.
LEARNS_ON_TENSORFLOW = ("trains to an accuracy target: on this backend `fit` is checked by "
                        "run_layer_test and, on JAX, by tests/recipes/backends_test.py")

# The reason of `slow_on("jax", reason=OTHER_CONFIGURATIONS_ON_JAX)`: a
# configuration of a `run_layer_test` test whose code paths the test's other
# configurations take through run_layer_test's checks on JAX. Its own numbers
# on JAX, with and without masks, are compared with TensorFlow's: every
# configuration run_layer_test checks is saved under TensorFlow and run on JAX
# by tests/layers/cross_backend_test.py.
OTHER_CONFIGURATIONS_ON_JAX = (
    "run_layer_test runs this configuration on TensorFlow; on JAX its outputs and scores, "
    "with and without masks, equal TensorFlow's (tests/layers/cross_backend_test.py) and "
    "the test's other configurations run run_layer_test's checks")

# The checks of `run_layer_test` that a backend leaves to TensorFlow, which
# runs them all, each with where that backend still covers its subject: the
# config round trip ("config"), the functional model of each call variant
# ("functional") and the copy under one mixed policy (the policy's name). The
# other checks run everywhere: the eager call (shapes, dtypes, finiteness,
# with and without scores), compiled calls against it, the `.keras` round
# trip, one `fit` step, finite gradients, mixed precision and implicit masks.
# JAX and torch also run every layer saved under TensorFlow
# (tests/layers/cross_backend_test.py).
LEFT_TO_TENSORFLOW = {
    "jax": {
        "config": "get_config, from_config and Keras serialization are plain Python",
        "functional": "the symbolic call of each variant in a functional model: on JAX "
                      "the saving and `fit` checks build and run the layer's functional "
                      "model, and tests/layers/output_specs_test.py checks every layer's "
                      "symbolic outputs, with the scores, against a call",
        "mixed_bfloat16": "each layer's compiled call and gradients under mixed_bfloat16: "
                          "on JAX every layer runs them under mixed_float16 (whose float16 "
                          "heads XLA's CPU refused in the fused path), and mixed_bfloat16 "
                          "runs in the fused path's tests (attention_implementations_test.py), "
                          "the models' (transformer_seq2seq_test.py, "
                          "extractive_summarizer_test.py) and the output specs'",
    },
}


def runs_check(name):
    """Whether `run_layer_test` runs its check `name` on this backend
    (`LEFT_TO_TENSORFLOW`)."""
    return name not in LEFT_TO_TENSORFLOW.get(BACKEND, {})


# Absolute tolerances of mixed precision against float32 for |x| <= 3
# (reliability.md D3; measured on Keras MHA: 1.3e-3 and 1.3e-2).
PRECISION_TOLERANCE = {"mixed_float16": 1e-2, "mixed_bfloat16": 5e-2}
# Beyond |x| = 3, a relative term: bfloat16 keeps 8 significant bits, so a
# value of 3.2 after a few bfloat16 ops is a few units of 2**-6 relative off.
PRECISION_RTOL = {"mixed_float16": 0.0, "mixed_bfloat16": 2**-6}
XLA_TOLERANCE = 1e-5


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def dtype_of(x):
    """The dtype of tensor `x` as Keras names it ("float32"): torch dtypes do
    not compare equal to those names, TensorFlow and JAX dtypes do."""
    return keras.backend.standardize_dtype(x.dtype)


def to_tensor(x):
    """`x` as an eager tensor of the running backend."""
    return keras.ops.convert_to_tensor(x)


def compile_function(fn, jit_compile, input_signature=None):
    """`fn` compiled by the running backend, or None where it cannot be.

    TensorFlow: `tf.function` (a graph), with XLA when `jit_compile`, without
    AutoGraph (the layers have no Python control flow on tensors: they run
    under `jax.jit` too; converting their code took a tenth of a layer
    test; tests/regressions_test.py traces with AutoGraph);
    `input_signature` (a list of `(shape, dtype)`, `None` for unknown sizes)
    makes the traced shapes symbolic. JAX: `jax.jit` (always XLA, shapes always
    concrete), for both `jit_compile` values, so the "graph" variant checks
    tracing. Other backends: None (callers then check eager only); on torch
    that is a choice, `torch.compile` would build C++ kernels at test time.
    """
    if BACKEND == "tensorflow":
        import tensorflow as tf

        signature = None
        if input_signature is not None:
            signature = [tf.TensorSpec(shape, dtype) for shape, dtype in input_signature]
        return tf.function(fn, input_signature=signature, jit_compile=jit_compile,
                           autograph=False)
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    return None


def gradients(fn, tensors, variables, jit_on_jax=False):
    """Gradients of `sum(fn(*tensors))` w.r.t. `tensors + variables`.

    `fn` calls layers whose weights include `variables` (Keras variables);
    the result has one entry per tensor and variable, None where it has no
    gradient (integer inputs). `jit_on_jax`: on JAX, differentiate in one
    `jax.jit` program, as `fit` does (XLA then compiles the whole backward
    pass, and refuses what it cannot compile; a layer's check took 1-2 s
    instead of 4-5 s op by op). Without it, JAX runs op by op, which reuses
    each op's kernel across the many small calls of a comparison test
    (there, one program per call was slower: 141 s against 99 s).
    TensorFlow (an eager tape) and torch: no difference.
    """
    def loss_of(outputs):
        return sum(
            keras.ops.sum(keras.ops.cast(o, "float32")) for o in flatten(outputs)
        )

    differentiable = [
        keras.backend.is_float_dtype(keras.backend.standardize_dtype(t.dtype))
        for t in tensors
    ]
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch(tensors)
            loss = loss_of(fn(*tensors))
        return tape.gradient(loss, list(tensors) + list(variables))
    if BACKEND == "jax":
        import jax

        def pure(float_tensors, values):
            it = iter(float_tensors)
            args = [next(it) if d else t for t, d in zip(tensors, differentiable)]
            with keras.StatelessScope(
                state_mapping=list(zip(variables, values)), collect_losses=True
            ):
                return loss_of(fn(*args))

        float_tensors = [t for t, d in zip(tensors, differentiable) if d]
        values = [v.value for v in variables]
        differentiate = jax.grad(pure, argnums=(0, 1))
        if jit_on_jax:
            differentiate = jax.jit(differentiate)
        grad_tensors, grad_values = differentiate(float_tensors, values)
        it = iter(grad_tensors)
        return [next(it) if d else None for d in differentiable] + list(grad_values)
    if BACKEND == "torch":
        import torch

        # Fresh leaves, so the caller's tensors stay untouched; integer
        # inputs cannot require gradients.
        args = [
            t.detach().clone().requires_grad_(True) if d else t
            for t, d in zip(tensors, differentiable)
        ]
        values = [v.value for v in variables]
        loss = loss_of(fn(*args))
        wrt = [a for a, d in zip(args, differentiable) if d] + values
        grads = torch.autograd.grad(loss, wrt, allow_unused=True)
        it = iter(grads)
        return [next(it) if d else None for d in differentiable] + list(it)
    raise NotImplementedError(f"No gradients for backend {BACKEND!r}")


def flatten(outputs):
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


def keras_mask(x):
    """The Keras implicit mask attached to an eager tensor, or None."""
    return getattr(x, "_keras_mask", None)


def with_keras_mask(x, mask):
    """`x` as an eager tensor carrying the Keras mask `mask` `(B, L)`."""
    tensor = to_tensor(np.asarray(x, "float32"))
    tensor._keras_mask = to_tensor(np.asarray(mask, bool))
    return tensor


def zero_padding(x, mask):
    """`x` with padded rows zeroed and real rows non-zero, for `Masking`."""
    return np.where(mask[..., None], np.where(x == 0, 1e-3, x), 0.0).astype(
        "float32"
    )


def assert_config_round_trip(layer_cls, init_kwargs):
    """get_config/from_config and serialize/deserialize are lossless."""
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    signature = inspect.signature(layer_cls.__init__)
    for name, param in signature.parameters.items():
        if name == "self" or param.kind is param.VAR_KEYWORD:
            continue
        assert name in config, f"get_config() lacks constructor arg {name!r}"
    revived = layer_cls.from_config(config)

    def as_json(c):
        return json.dumps(c, sort_keys=True)

    assert as_json(revived.get_config()) == as_json(config)
    serialized = json.loads(json.dumps(keras.saving.serialize_keras_object(layer)))
    assert serialized["module"].startswith("keras_attention") or (
        serialized.get("registered_name", "").startswith("keras_attention>")
    )
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is layer_cls
    assert as_json(restored.get_config()) == as_json(config)


def copy_layer(layer, tensors, call_kwargs=None, dtype=None, symbolic=False):
    """A new layer of the same config and the same weights as `layer`.

    It is built by a call on `tensors`, or with `symbolic` on `keras.Input`s
    of their shapes and dtypes (no eager op runs: on JAX each would compile
    for the new dtype policy)."""
    config = layer.get_config()
    if dtype is not None:
        config["dtype"] = dtype
    twin = type(layer).from_config(config)
    if symbolic:
        tensors = [keras.Input(batch_shape=tuple(t.shape), dtype=dtype_of(t)) for t in tensors]
    twin(*tensors, **(call_kwargs or {}))
    twin.set_weights(layer.get_weights())
    return twin


def functional_model(layer, inputs, call_kwargs):
    """A functional model applying `layer` to named `keras.Input`s."""
    symbolic = [
        keras.Input(shape=x.shape[1:], name=name) for name, x in inputs.items()
    ]
    outputs = layer(*symbolic, **call_kwargs)
    return keras.Model(symbolic, outputs)


def assert_outputs_close(actual, expected, atol, rtol=0.0, what=""):
    for a, e in zip(flatten(actual), flatten(expected)):
        np.testing.assert_allclose(
            to_numpy(a), to_numpy(e), atol=atol, rtol=rtol, err_msg=what
        )


def assert_finite(outputs, what=""):
    for out in flatten(outputs):
        assert np.isfinite(to_numpy(out)).all(), f"non-finite output {what}"


def finite_gradients(layer, inputs, call_kwargs):
    """Gradients of sum(outputs) w.r.t. inputs and weights are finite."""
    tensors = [to_tensor(x) for x in inputs.values()]
    grads = gradients(
        lambda *t: layer(*t, **call_kwargs), tensors, layer.trainable_variables,
        jit_on_jax=True,
    )
    for grad in grads:
        if grad is not None:
            assert np.isfinite(to_numpy(grad)).all(), "non-finite gradient"


# Outputs of the exact, blocked and fused implementations agree within this.
IMPLEMENTATION_TOLERANCE = 1e-5


def runs_one_path(layer):
    """Whether every call of `layer` (and of its attention sublayers) on
    these short test inputs runs the exact path: `implementation` "exact",
    or "auto" on a TensorFlow or JAX CPU (where "auto" picks exact below
    2048 x 2048 scores; on torch's CPU it fuses scaled dot products)."""
    from keras_attention.layers.attention_implementations import default_device

    auto_is_exact = default_device() == "cpu" and BACKEND != "torch"
    return all(
        sublayer.implementation == "exact"
        or (sublayer.implementation == "auto" and auto_is_exact)
        for sublayer in layer._flatten_layers()  # the layer and its sublayers
        if hasattr(sublayer, "implementation")
    )


def run_layer_test(
    layer_cls,
    init_kwargs,
    inputs,
    call_kwargs=None,
    expected_output_shape=None,
    expected_scores_shape=None,
    mask_inputs=True,
    tmp_dir=None,
    position_wise=False,
):
    """Runs every structural and numerical check on one layer configuration.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        inputs: dict name -> NumPy array, the positional call inputs in
            order (e.g. `{"query": q, "value": v}`).
        call_kwargs: extra non-tensor call arguments (e.g.
            `{"use_causal_mask": True}`).
        expected_output_shape: shape of the output.
        expected_scores_shape: shape of the weights; when given, the calls
            with `return_attention_scores=True` are checked too.
        mask_inputs: also run with Keras implicit masks on the inputs.
        position_wise: the layer has position-wise parts (residuals,
            feed-forward) that keep garbage in padded rows within those
            rows: NaN in padding must then stay in the padded rows.
        tmp_dir: folder for the `.keras` file (a temporary one if None).
    """
    call_kwargs = dict(call_kwargs or {})
    keras.utils.set_random_seed(1234)
    if runs_check("config"):
        assert_config_round_trip(layer_cls, init_kwargs)

    layer = layer_cls(**init_kwargs)
    tensors = [to_tensor(x) for x in inputs.values()]

    # Eager call: shapes and finiteness.
    output = layer(*tensors, **call_kwargs)
    assert tuple(output.shape) == tuple(expected_output_shape)
    assert_finite(output, "(eager)")
    assert dtype_of(output) == layer.compute_dtype
    variants = [dict(call_kwargs)]
    if expected_scores_shape is not None:
        scored = dict(call_kwargs, return_attention_scores=True)
        out, *scores = layer(*tensors, **scored)
        if not isinstance(expected_scores_shape, list):
            expected_scores_shape = [expected_scores_shape]
        assert [tuple(s.shape) for s in scores] == [
            tuple(e) for e in expected_scores_shape
        ]
        assert all(dtype_of(s) == "float32" for s in scores)
        # The same output with and without scores: exactly when both calls
        # run the exact path (on JAX within float32 rounding: each call is
        # its own XLA program, and with one XLA thread, as the Makefile runs
        # JAX's tests, XLA may order a sum differently in each), within
        # float32 rounding when the call without scores may take the
        # blocked or fused one.
        if runs_one_path(layer) and BACKEND != "jax":
            np.testing.assert_array_equal(to_numpy(out), to_numpy(output))
        elif runs_one_path(layer):
            np.testing.assert_allclose(to_numpy(out), to_numpy(output), atol=1e-6, rtol=0)
        else:
            np.testing.assert_allclose(
                to_numpy(out), to_numpy(output), atol=IMPLEMENTATION_TOLERANCE
            )
        variants.append(scored)

    for kwargs in variants:
        eager = layer(*tensors, **kwargs)
        if runs_check("functional"):
            # Symbolic call (functional API): same shapes, same numbers. A copy
            # of the layer per variant: Keras checks a functional graph against
            # the output structure of a layer's *first* call.
            model = functional_model(copy_layer(layer, tensors), inputs, kwargs)
            for spec, value in zip(flatten(model.outputs), flatten(eager)):
                assert len(spec.shape) == len(value.shape)
                for s, v in zip(spec.shape, value.shape):
                    assert s is None or s == v
            assert_outputs_close(model(tensors), eager, atol=1e-6, what="functional")
        # Graph and XLA agree with eager (eager only without a compiler).
        # On JAX, jit is both the graph and XLA: it runs once.
        xla = compile_function(lambda *a, kw=kwargs: layer(*a, **kw), True)
        if BACKEND == "tensorflow":
            graph = compile_function(lambda *a, kw=kwargs: layer(*a, **kw), False)
            assert_outputs_close(graph(*tensors), eager, atol=1e-6, what="graph")
        if xla is not None:
            assert_outputs_close(
                xla(*tensors), eager, atol=XLA_TOLERANCE, what="xla"
            )

    _check_saving(layer, inputs, call_kwargs, tmp_dir)
    _check_training(layer_cls, init_kwargs, inputs, call_kwargs)
    finite_gradients(layer, inputs, call_kwargs)
    _check_mixed_precision(layer, inputs, call_kwargs)
    if mask_inputs:
        _check_implicit_masks(
            layer_cls, init_kwargs, inputs, call_kwargs, position_wise
        )


def _check_saving(layer, inputs, call_kwargs, tmp_dir):
    """`.keras` save/load without custom_objects gives identical outputs."""
    model = functional_model(layer, inputs, call_kwargs)
    tensors = [to_tensor(x) for x in inputs.values()]
    expected = model(tensors)
    with tempfile.TemporaryDirectory(dir=tmp_dir) as folder:
        path = os.path.join(folder, "layer.keras")
        model.save(path)
        reloaded = keras.saving.load_model(path)
    assert_outputs_close(reloaded(tensors), expected, atol=0.0, what="reload")
    reloaded_layer = reloaded.layers[-1]
    assert type(reloaded_layer) is type(layer)
    assert reloaded_layer.get_config() == layer.get_config()


# `fit` compiles its step on TensorFlow (XLA) and JAX (jit). On torch
# `jit_compile=True` means `torch.compile` (Inductor, C++ kernels built at
# test time: minutes per layer on CPU) and Keras' own default there, "auto",
# is eager: the torch check fits eagerly, as `compile_function` has no torch
# compiler either.
FIT_JIT_COMPILE = BACKEND != "torch"
# The `jit_compile` of the cheapest compiled `fit`, for tests whose subject is
# not XLA: a TensorFlow graph (False; XLA compiles for longer than these
# tests train), JAX's jit (True; False runs every op of every step one by one,
# e.g. 47 s against 14 s for one epoch of mixed precision) and torch's
# eager steps (False).
GRAPH_FIT_JIT_COMPILE = BACKEND == "jax"


def _check_training(layer_cls, init_kwargs, inputs, call_kwargs):
    """One `fit` step (with `jit_compile=True` but on torch) runs and changes
    the weights."""
    layer = layer_cls(**init_kwargs)
    model = functional_model(layer, inputs, call_kwargs)
    model.compile(optimizer="sgd", loss="mse", jit_compile=FIT_JIT_COMPILE)
    x = [np.asarray(v) for v in inputs.values()]
    y = np.random.default_rng(0).normal(size=model.outputs[0].shape[1:])
    y = np.broadcast_to(y, (x[0].shape[0],) + y.shape).astype("float32")
    before = [to_numpy(w).copy() for w in layer.trainable_weights]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The model does not have any trainable")
        history = model.fit(x, y, batch_size=x[0].shape[0], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = [to_numpy(w) for w in layer.trainable_weights]
    if before:
        assert any(not np.array_equal(b, a) for b, a in zip(before, after))


def _check_mixed_precision(reference, inputs, call_kwargs):
    """Finite, close to float32, float32 variables and float32 weights."""
    tensors = [to_tensor(x) for x in inputs.values()]
    expected = reference(*tensors, **call_kwargs)
    for policy, atol, layer, (outputs, scored) in mixed_precision_calls(
        reference, inputs, call_kwargs
    ):
        for variable in layer.weights:
            assert variable.dtype == "float32", variable.path
        output, scores = (outputs[0], outputs[1]) if scored else (outputs, None)
        assert dtype_of(output) == layer.compute_dtype
        assert_finite(output, policy)
        np.testing.assert_allclose(
            to_numpy(output).astype("float32"),
            to_numpy(expected),
            atol=atol,
            rtol=PRECISION_RTOL[policy],
            err_msg=policy,
        )
        if scores is not None:
            assert dtype_of(scores) == "float32"


def mixed_precision_calls(reference, inputs, call_kwargs):
    """For each mixed policy this backend runs (`runs_check`),
    `(policy, atol, layer, (outputs, scored))`:
    `layer` is a copy of `reference` under the policy (the same weights),
    `outputs` those of its call with `return_attention_scores=True`
    (`scored`), or of a plain call for a layer without scores. The gradients
    of its plain call are checked finite as well (`finite_gradients`).

    On JAX the call and the gradients are one `jax.jit` program, as `fit`
    and compiled generation run mixed precision there (JAX's CPU refused
    float16 heads of the fused path only when compiling), and the copy is
    built symbolically: eager calls under each policy would compile every
    op again for its dtypes. TensorFlow and torch call the copy eagerly."""
    tensors = [to_tensor(x) for x in inputs.values()]
    for policy, atol in PRECISION_TOLERANCE.items():
        if not runs_check(policy):
            continue
        if BACKEND == "jax":
            layer = copy_layer(reference, tensors, call_kwargs, dtype=policy, symbolic=True)
            result = _compiled_scored_call_and_finite_gradients(layer, tensors, call_kwargs)
        else:
            layer = copy_layer(reference, tensors, call_kwargs, dtype=policy)
            result = _scored_call(layer, tensors, call_kwargs)
            finite_gradients(layer, inputs, call_kwargs)
        yield policy, atol, layer, result


def _scored_call(layer, tensors, call_kwargs):
    """`(outputs, True)` of a call returning the attention scores, or
    `(outputs, False)` of a plain call where the layer has no scores."""
    try:
        return layer(*tensors, **call_kwargs, return_attention_scores=True), True
    except TypeError:
        return layer(*tensors, **call_kwargs), False


def _compiled_scored_call_and_finite_gradients(layer, tensors, call_kwargs):
    """JAX: `_scored_call` of `layer` in one `jax.jit` program with the
    gradients of `sum(layer(*tensors, **call_kwargs))` w.r.t. the float
    inputs and the trainable weights (`gradients`), which must be finite."""
    import jax

    variables = layer.trainable_variables
    differentiable = [keras.backend.is_float_dtype(dtype_of(t)) for t in tensors]
    scored = []

    def pure(float_tensors, values):
        it = iter(float_tensors)
        args = [next(it) if d else t for t, d in zip(tensors, differentiable)]
        with keras.StatelessScope(
            state_mapping=list(zip(variables, values)), collect_losses=True
        ):
            plain = layer(*args, **call_kwargs)
            outputs, was_scored = _scored_call(layer, args, call_kwargs)
        scored.append(was_scored)
        loss = sum(keras.ops.sum(keras.ops.cast(o, "float32")) for o in flatten(plain))
        return loss, outputs

    program = jax.jit(jax.value_and_grad(pure, argnums=(0, 1), has_aux=True))
    (_, outputs), (grad_tensors, grad_values) = program(
        [t for t, d in zip(tensors, differentiable) if d], [v.value for v in variables]
    )
    for grad in list(grad_tensors) + list(grad_values):
        assert np.isfinite(to_numpy(grad).astype("float32")).all(), "non-finite gradient"
    return outputs, scored[0]


def _padding_masks(inputs):
    """A `(B, L)` mask per input: the last position of example 0 is padding."""
    result = {}
    for name, x in inputs.items():
        mask = np.ones(x.shape[:2], bool)
        mask[0, -1] = False
        result[name] = mask
    return result


def _check_implicit_masks(
    layer_cls, init_kwargs, inputs, call_kwargs, position_wise
):
    """Implicit masks: honoured, propagated, never stripped, no warnings."""
    layer = layer_cls(**init_kwargs)
    padding = _padding_masks(inputs)
    masked = [with_keras_mask(x, padding[name]) for name, x in inputs.items()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        output = layer(*masked, **call_kwargs)
        model = functional_model_with_masking(layer, inputs, call_kwargs)
        symbolic_output = model(
            [zero_padding(x, padding[name]) for name, x in inputs.items()]
        )
    mask_warnings = [w for w in caught if "mask" in str(w.message).lower()]
    assert not mask_warnings, [str(w.message) for w in mask_warnings]
    # Inputs keep their masks (keras MHA strips them: reliability R1).
    for tensor in masked:
        assert keras_mask(tensor) is not None, "an input lost its Keras mask"
    # The output carries the query's mask.
    first = list(padding)[0]
    np.testing.assert_array_equal(to_numpy(keras_mask(output)), padding[first])
    np.testing.assert_array_equal(
        to_numpy(keras_mask(symbolic_output)), padding[first]
    )
    # Padded rows of the first input are ignored: changing them changes
    # nothing in the other rows.
    changed = []
    for name, x in inputs.items():
        noisy = np.array(x)
        noisy[~padding[name]] = np.nan
        changed.append(with_keras_mask(noisy, padding[name]))
    noisy_output = to_numpy(layer(*changed, **call_kwargs))
    real_rows = noisy_output if not position_wise else noisy_output[padding[first]]
    assert np.isfinite(real_rows).all(), "NaN in padding reached the output"
    np.testing.assert_allclose(
        noisy_output[padding[first]], to_numpy(output)[padding[first]], atol=1e-6
    )


def functional_model_with_masking(layer, inputs, call_kwargs):
    """A functional model whose inputs go through `keras.layers.Masking`."""
    symbolic = [
        keras.Input(shape=x.shape[1:], name=name) for name, x in inputs.items()
    ]
    masked = [keras.layers.Masking(0.0)(s) for s in symbolic]
    return keras.Model(symbolic, layer(*masked, **call_kwargs))


def numpy_softmax(x):
    """Reference softmax over the last axis."""
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def count_train_step_traces(model):
    """A list that grows by one at each trace of `model`'s train step.

    Wraps `model.train_step` (an instance attribute, which `fit` reads): its
    Python body runs once per trace of the compiled step."""
    traces = []
    train_step = model.train_step

    def counted(data):
        traces.append(1)
        return train_step(data)

    model.train_step = counted
    return traces
