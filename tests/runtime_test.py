"""`keras_attention.runtime`: the execution defaults and their detection."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

from keras_attention import runtime
from tests.test_case import count_train_step_traces


def test_auto_on_a_cpu_follows_native_bf16_and_never_compiles():
    plain = runtime.fast_defaults(gpu=False, native_bf16=False)
    assert plain["dtype_policy"] == "float32" and plain["jit_compile"] is False
    amx = runtime.fast_defaults(gpu=False, native_bf16=True)
    assert amx["dtype_policy"] == "mixed_bfloat16" and amx["jit_compile"] is False
    assert "graph mode" in amx["reason"]


def test_auto_on_a_gpu_uses_xla_and_bf16():
    gpu = runtime.fast_defaults(gpu=True)
    assert gpu == {"dtype_policy": "mixed_bfloat16", "jit_compile": True, "device": "gpu",
                   "reason": "bf16 is native here; XLA on GPU"}


def test_explicit_settings_override_the_detection():
    chosen = runtime.fast_defaults("float32", False, gpu=True)
    assert chosen["dtype_policy"] == "float32" and chosen["jit_compile"] is False
    assert runtime.fast_defaults("mixed_float16", "true", gpu=False)["jit_compile"] is True


def test_bad_settings_name_the_argument():
    with pytest.raises(ValueError, match=r"precision.*Received: precision='fp8'"):
        runtime.fast_defaults("fp8")
    with pytest.raises(ValueError, match=r"jit_compile.*Received: jit_compile='yes'"):
        runtime.fast_defaults(jit_compile="yes")


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx512f amx_bf16 amx_tile\n\n"
                    "processor : 1\nflags : fpu\n", encoding="utf-8")
    assert runtime.cpu_flags(info) == {"fpu", "avx512f", "amx_bf16", "amx_tile"}
    assert runtime.cpu_has_native_bf16(info)
    info.write_text("flags : fpu avx2\n", encoding="utf-8")
    assert not runtime.cpu_has_native_bf16(info)
    assert runtime.cpu_flags(tmp_path / "missing") == set()


def test_detection_runs_on_this_machine():
    chosen = runtime.fast_defaults()
    assert chosen["device"] in ("cpu", "gpu")
    assert runtime.describe(chosen).startswith("Execution: ")


def test_xla_on_cpu_is_the_callers_choice_and_trains_in_float32():
    small = runtime.fast_defaults(xla_on_cpu=True, gpu=False, native_bf16=True)
    assert small["jit_compile"] is True and small["dtype_policy"] == "float32"
    assert "XLA on CPU" in small["reason"]
    # An explicit precision still wins; settings are case-insensitive strings.
    chosen = runtime.fast_defaults("Mixed_BFloat16", "TRUE", gpu=False, native_bf16=True)
    assert chosen["dtype_policy"] == "mixed_bfloat16" and chosen["jit_compile"] is True
    assert runtime.fast_defaults(jit_compile="False", xla_on_cpu=True,
                                 gpu=False, native_bf16=True)["dtype_policy"] == "mixed_bfloat16"
    small = runtime.fast_defaults(bf16_on_cpu=False, gpu=False, native_bf16=True)
    assert small["dtype_policy"] == "float32" and small["jit_compile"] is False
    assert runtime.fast_defaults(bf16_on_cpu=False, gpu=True)["dtype_policy"] == "mixed_bfloat16"


def test_dtype_policy_scope_sets_and_restores_the_global_policy():
    import keras

    before = keras.config.dtype_policy().name
    with pytest.raises(RuntimeError):
        with runtime.dtype_policy_scope("mixed_bfloat16"):
            assert keras.layers.Dense(2).dtype_policy.name == "mixed_bfloat16"
            raise RuntimeError("restored even after an error")
    assert keras.config.dtype_policy().name == before


@pytest.mark.large
def test_padded_batches_under_xla_train_like_the_exact_path():
    """The fast path (batches padded to fixed shapes, XLA) against the exact
    one (length-bucketed batches, run eagerly): same tokens, same losses,
    same weights after training, same outputs."""
    import keras
    import numpy as np

    from keras_attention import data
    from keras_attention.models import transformer_seq2seq

    keras.utils.set_random_seed(0)
    pairs = data.make_date_pairs(80, seed=0)
    source = data.train_tokenizer([s for s, _ in pairs], 60)
    target = data.train_tokenizer([t for _, t in pairs], 60)
    kwargs = dict(batch_size=32, max_source_length=16, max_target_length=16, shuffle=False)
    exact = data.make_dataset(pairs, source, target, **kwargs)
    padded = data.make_dataset(pairs, source, target, pad_to_multiple=16, **kwargs)
    shapes = {(x["encoder_token_ids"].shape, x["decoder_token_ids"].shape, y.shape)
              for x, y in padded.as_numpy_iterator()}
    assert shapes == {((32, 16), (32, 16), (32, 16))}  # one program to compile
    assert len({x["encoder_token_ids"].shape for x, _ in exact.as_numpy_iterator()}) > 1

    def tokens(dataset):
        return sorted(tuple(row[row != 0]) for _, labels in dataset.as_numpy_iterator()
                      for row in labels if row.any())

    assert tokens(padded) == tokens(exact)

    models = []
    for jit_compile in (False, True):
        model = transformer_seq2seq(60, num_layers=1, hidden_dim=16, num_heads=2,
                                    intermediate_dim=32, dropout=0.0, max_length=18)
        if models:
            model.set_weights(models[0].get_weights())
        model.compile(optimizer=keras.optimizers.Adam(1e-2), jit_compile=jit_compile,
                      run_eagerly=not jit_compile, loss=keras.losses.SparseCategoricalCrossentropy(
                          from_logits=True, ignore_class=0))
        models.append(model)
    # Batch by batch (the same examples in the same order): each step's loss
    # is the mean over the non-pad tokens, so padding leaves it unchanged.
    for (x, y), (x_padded, y_padded) in zip(exact.as_numpy_iterator(),
                                             padded.as_numpy_iterator()):
        loss = models[0].train_on_batch(x, y)
        loss_padded = models[1].train_on_batch(x_padded, y_padded)
        np.testing.assert_allclose(loss_padded, loss, rtol=1e-4)
    for a, b in zip(models[0].get_weights(), models[1].get_weights()):
        np.testing.assert_allclose(b, a, atol=1e-4)
    outputs = [model(x, training=False) for model in models]
    np.testing.assert_allclose(outputs[1], outputs[0], atol=1e-4)


def _dense_model(optimizer="adam"):
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse", jit_compile=False)
    return model


@pytest.mark.tf_only("tf.function traces again a step that created variables")
def test_a_built_optimizer_lets_fit_trace_its_step_once():
    import numpy as np

    x, y = np.ones((8, 3), "float32"), np.zeros((8, 2), "float32")
    keras_default = _dense_model()
    traces = count_train_step_traces(keras_default)
    keras_default.fit(x, y, batch_size=4, verbose=0)
    assert len(traces) == 2  # Keras alone: the optimizer is made inside the first trace

    model = runtime.build_optimizer_before_fit(_dense_model())
    assert model.optimizer.built
    traces = count_train_step_traces(model)
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert len(traces) == 1
    assert history.history["loss"][1] < history.history["loss"][0]  # the built optimizer trains


def test_building_the_optimizer_leaves_what_it_cannot_build_alone():
    import keras

    unbuilt = keras.Sequential([keras.layers.Dense(2)])  # no input shape: no variables yet
    unbuilt.compile(optimizer="adam", loss="mse")
    assert not runtime.build_optimizer_before_fit(unbuilt).optimizer.built
    uncompiled = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    assert runtime.build_optimizer_before_fit(uncompiled) is uncompiled  # no optimizer yet



JAX_CACHE_PROBE = """
import os, sys
os.environ["KERAS_BACKEND"] = "jax"
import keras, numpy as np
from keras_attention import runtime
folder = runtime.cache_compilations()
keras.ops.convert_to_numpy(keras.ops.sin(np.ones((3,), "float32")))
print(folder, len(os.listdir(folder)))
"""


@pytest.mark.backend_independent("starts its own JAX interpreter")
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_jax_keeps_its_compiled_programs_in_the_named_folder(tmp_path):
    env = {**os.environ, "KERAS_ATTENTION_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1])}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    result = subprocess.run([sys.executable, "-c", JAX_CACHE_PROBE], env=env,
                            capture_output=True, text=True, timeout=120)
    folder, entries = result.stdout.split()
    assert folder == str(tmp_path / "cache" / "jax") and int(entries) >= 1, result.stderr


@pytest.mark.tf_only("the other backends' branch, on TensorFlow")
def test_nothing_is_cached_on_tensorflow(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ATTENTION_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    assert runtime.cache_compilations() is None
    assert list(tmp_path.iterdir()) == [] and "TF_XLA_FLAGS" not in os.environ
