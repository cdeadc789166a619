"""A light core: the layers, models and decoding import no TensorFlow and no toolkit library.

Each check runs in a fresh interpreter (the test process has TensorFlow loaded already). Keras
itself imports matplotlib when it is installed (`keras/src/visualization/plot_image_gallery.py`
imports `matplotlib.pyplot` at module level), so what counts is what our imports add to a bare
`import keras`.
"""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = ("tensorflow", "tensorflow_text", "keras_hub", "matplotlib", "sacrebleu", "rouge_score")
BACKENDS = [
    "jax",
    pytest.param(
        "torch",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("torch") is None, reason="torch is not installed"
        ),
    ),
]

PROBE = """
import json, sys
HEAVY = {heavy!r}
import keras
with_keras = sorted(m for m in HEAVY if m in sys.modules)
{imports}
added = sorted(m for m in HEAVY if m in sys.modules and m not in with_keras)
print(json.dumps({{"keras": with_keras, "added": added}}))
"""

def probe(backend, imports):
    """`{"keras": heavy modules a bare `import keras` loads, "added": those `imports` add}`."""
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    code = PROBE.format(heavy=HEAVY, imports=imports)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_core_imports_no_tensorflow_or_toolkit_library(backend):
    loaded = probe(
        backend, "import keras_attention.layers, keras_attention.models, keras_attention.decoding"
    )
    assert loaded["added"] == []
    assert "tensorflow" not in loaded["keras"]  # the check means something on this backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_package_import_is_light_and_builds_a_model(backend):
    loaded = probe(backend, "\n".join([
        "import keras_attention",
        "from keras_attention.models import transformer_seq2seq",
        "transformer_seq2seq(12, num_layers=1, hidden_dim=8, num_heads=2, intermediate_dim=8,",
        "                    position='learned', max_length=8)",
        "assert keras_attention.masks and keras_attention.layers.MultiHeadAttention",
    ]))
    assert loaded["added"] == []


def test_toolkit_modules_load_their_libraries_on_first_use():
    loaded = probe("jax", "\n".join([
        "import keras_attention",
        "assert 'keras_attention.metrics' not in sys.modules",
        "assert round(keras_attention.metrics.bleu(['a b c d'], ['a b c d'])) == 100",
        "from keras_attention import visualize",
        "assert 'keras_attention.data' not in sys.modules",
    ]))
    assert {"sacrebleu", "rouge_score"} <= set(loaded["added"])


def test_lazy_attributes_are_listed_and_unknown_names_refused():
    import keras_attention

    assert set(keras_attention.__all__) <= set(dir(keras_attention))
    with pytest.raises(AttributeError, match="no attribute 'metrix'"):
        _ = keras_attention.metrix
