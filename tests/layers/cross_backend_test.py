"""Every public layer saved under TensorFlow computes TensorFlow's numbers here.

One pytest process under TensorFlow (tests/layers/save_on_tensorflow.py)
saves a functional model of each layer, with its inputs and TensorFlow's
outputs: every public layer of `keras_attention.layers` and
`keras_attention.compat` (with masks, and NaN behind an explicit mask), and
every configuration that a test checks with `run_layer_test`, on that test's
inputs. Here, under JAX or torch, each model loads without `custom_objects`
and runs compiled (`predict`: `jax.jit` on JAX; torch runs eagerly) on the
same inputs: its outputs and attention scores equal TensorFlow's. This is
where `make test-jax` checks every layer's numbers and `.keras` files moving
between backends; under TensorFlow, which made the numbers, it skips.
"""

import json
import subprocess

import keras
import numpy as np
import pytest

from tests.layers import save_on_tensorflow
from tests.made_once import made_once

BACKEND = keras.backend.backend()
# float32 rounding: the backends' kernels sum in other orders.
TOLERANCE = 1e-5

pytestmark = [
    pytest.mark.large,  # starts a TensorFlow process
    pytest.mark.skipif(BACKEND == "tensorflow", reason=(
        "compares this backend's numbers with TensorFlow's: runs under JAX and torch")),
]


@pytest.fixture(scope="module")
def saved_on_tensorflow(tmp_path_factory):
    """The folder of the models, inputs and outputs saved under TensorFlow,
    and its index: test module (or "layers") -> case names."""
    folder, _ = made_once(tmp_path_factory, "saved_on_tensorflow", _save_on_tensorflow,
                          across_backends=True)  # CI's JAX and torch runs share it
    return folder, json.loads((folder / "index.json").read_text())


def _save_on_tensorflow(folder):
    folder.mkdir(exist_ok=True)  # an earlier build may have failed half-way
    command, env = save_on_tensorflow.command(folder)
    done = subprocess.run(command, cwd=save_on_tensorflow.ROOT, env=env, capture_output=True,
                          stdin=subprocess.DEVNULL, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    return None


def assert_outputs_here_equal_tensorflows(folder, name):
    model = keras.saving.load_model(folder / f"{name}.keras")
    saved = np.load(folder / f"{name}.npz")
    inputs = [saved[f"input_{i}"] for i in range(len(model.inputs))]
    expected = [saved[f"output_{i}"] for i in range(len(model.outputs))]
    outputs = keras.tree.flatten(model.predict(inputs, batch_size=len(inputs[0]), verbose=0))
    assert len(outputs) == len(expected), name
    for i, (output, want) in enumerate(zip(outputs, expected)):
        output = np.asarray(output)
        assert output.dtype == want.dtype, f"{name}: output {i}"
        assert np.isfinite(output).all(), f"{name}: output {i} is not finite"
        np.testing.assert_allclose(output, want, atol=TOLERANCE, rtol=TOLERANCE,
                                   err_msg=f"{name}: output {i}")


@pytest.mark.parametrize("name", list(save_on_tensorflow.layer_cases()))
def test_a_layer_saved_under_tensorflow_gives_its_outputs_here(saved_on_tensorflow, name):
    folder, _ = saved_on_tensorflow
    assert_outputs_here_equal_tensorflows(folder, name)


@pytest.mark.parametrize("module", save_on_tensorflow.RUN_LAYER_TEST_MODULES)
def test_the_configurations_of_run_layer_test_give_their_outputs_here(saved_on_tensorflow,
                                                                     module):
    """Every configuration the tests of `module` check with `run_layer_test`
    under TensorFlow (on this backend some of them run only here)."""
    folder, index = saved_on_tensorflow
    assert index[module], f"no run_layer_test call recorded in {module}"
    for name in index[module]:
        assert_outputs_here_equal_tensorflows(folder, name)
