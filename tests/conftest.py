"""Test setup: the TensorFlow backend (unless KERAS_BACKEND says otherwise),
quiet logs, seeded randomness, and the `tf_only` marker.

`@pytest.mark.tf_only("why")` marks a test that needs TensorFlow itself
(tf.data, SavedModel export, tf.distribute, tensorflow-text, a symbolic
`tf.function` signature); under another backend it is skipped with that
reason. `make test-jax` runs the layer and block tests on JAX,
`make test-torch` on torch.

`@pytest.mark.slow_on_torch("why")` marks a test (a training run to an
accuracy target) that torch, which runs eagerly, makes minutes long; under
KERAS_BACKEND=torch it is skipped with that reason. The code it covers is
also covered on torch by faster tests (cached generation == recomputation,
one `fit` step).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tf_only(reason): needs the TensorFlow backend; skipped, with the "
        "reason, under KERAS_BACKEND=jax or torch",
    )
    config.addinivalue_line(
        "markers",
        "slow_on_torch(reason): minutes long on eager torch; skipped, with the "
        "reason, under KERAS_BACKEND=torch",
    )


def _let_numpy_read_torch_tensors_that_require_grad():
    """Under torch, `np.asarray(tensor)` reads a tensor that requires grad.

    On torch a layer's outputs carry autograd history (its weights require
    grad) and `Tensor.__array__` refuses them; the tests read numbers with
    `np.asarray` and `np.testing` as they do on TensorFlow and JAX, so here
    `__array__` reads a detached view, as `keras.ops.convert_to_numpy` does.
    Nothing else changes: gradients still flow in the tensors themselves.
    """
    import torch

    original = torch.Tensor.__array__
    if getattr(original, "_reads_detached", False):
        return

    def __array__(self, *args, **kwargs):
        return original(self.detach(), *args, **kwargs)

    __array__._reads_detached = True
    torch.Tensor.__array__ = __array__


if keras.backend.backend() == "torch":
    _let_numpy_read_torch_tensors_that_require_grad()


def pytest_collection_modifyitems(config, items):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return
    for item in items:
        marker = item.get_closest_marker("tf_only")
        if marker is not None:
            why = marker.args[0] if marker.args else "needs TensorFlow"
            item.add_marker(
                pytest.mark.skip(reason=f"TensorFlow only ({why}); backend={backend}")
            )
        marker = item.get_closest_marker("slow_on_torch")
        if marker is not None and backend == "torch":
            why = marker.args[0] if marker.args else "minutes long on eager torch"
            item.add_marker(pytest.mark.skip(reason=f"slow on torch ({why})"))


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(0)
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
