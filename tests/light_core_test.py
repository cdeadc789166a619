"""A light core: the layers, models and decoding import no TensorFlow and no toolkit library.

Each check runs in a fresh interpreter (the test process has TensorFlow loaded already). Keras
itself imports matplotlib when it is installed (`keras/src/visualization/plot_image_gallery.py`
imports `matplotlib.pyplot` at module level), so what counts is what our imports add to a bare
`import keras`.
"""

import functools
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

# One fresh interpreter per backend (seconds each: Python, Keras, the
# backend) runs the steps in turn and reports after each the heavy modules it
# added. The steps before it must add none, so that is what the step would
# add in an interpreter of its own.
PROBE = """
import json, sys
HEAVY = {heavy!r}
import keras
loaded = {{"keras": sorted(m for m in HEAVY if m in sys.modules)}}
for name, step in {steps!r}:
    before = set(m for m in HEAVY if m in sys.modules)
    exec(step)
    loaded[name] = sorted(m for m in HEAVY if m in sys.modules and m not in before)
print(json.dumps(loaded))
"""

STEPS = [
    ("core", "import keras_attention.layers, keras_attention.models, keras_attention.decoding"),
    ("package", "\n".join([
        "import keras_attention",
        "from keras_attention.models import transformer_seq2seq",
        "transformer_seq2seq(12, num_layers=1, hidden_dim=8, num_heads=2, intermediate_dim=8,",
        "                    position='learned', max_length=8)",
        "assert keras_attention.masks and keras_attention.layers.MultiHeadAttention",
    ])),
    # Run on JAX only: one backend shows the lazy loading.
    ("toolkit", "\n".join([
        "import keras_attention",
        "assert 'keras_attention.metrics' not in sys.modules",
        "assert 'keras_attention.pretrained' not in sys.modules",
        "assert 'keras_attention.compat' not in sys.modules",
        "assert keras_attention.pretrained.load_pretrained",
        "from keras_attention.pretrained import families",
        "assert families.FAMILIES['marian'].tokenizer_layouts",
        "assert 'compat' not in dir(keras_attention)",
        "assert round(keras_attention.metrics.bleu(['a b c d'], ['a b c d'])) == 100",
        "from keras_attention import visualize",
        "assert 'keras_attention.data' not in sys.modules",
    ])),
    # What `keras-attention generate` needs of a run folder's tokenizers.
    ("run_folder_tokenizers", "\n".join([
        "import io, sentencepiece",
        "model = io.BytesIO()",
        "sentencepiece.SentencePieceTrainer.train(  # keras-hub's ids, as the recipes'",
        "    sentence_iterator=iter(['a cat sat', 'a dog']),",
        "    model_writer=model, vocab_size=12, minloglevel=3,",
        "    pad_id=0, unk_id=1, bos_id=2, eos_id=3)",
        "from keras_attention import data, runs",
        "spm = data.SentencePieceModel(model.getvalue())",
        "from keras_attention.tokenizer import encode_lines",
        "ids = encode_lines(spm, ['a cat', 'a dog sat'], 16)",
        "assert spm.detokenize(ids) == ['a cat', 'a dog sat']",
        "assert runs.open_run and runs.TextGenerator",
    ])),
    # What a converted Marian, T5 or M2M100 run's tokenizer needs.
    ("converted_tokenizers", "\n".join([
        "import io, sentencepiece",
        "model = io.BytesIO()",
        "sentencepiece.SentencePieceTrainer.train(",
        "    sentence_iterator=iter(['a cat sat', 'a dog']), model_writer=model,",
        "    vocab_size=12, minloglevel=3, pad_id=0, eos_id=1, unk_id=2, bos_id=-1)",
        "from keras_attention.pretrained import tokenizers",
        "t5 = tokenizers.T5Tokenizer(model.getvalue(), extra_ids=2)",
        "assert t5.detokenize(t5.tokenize(['a cat'])) == ['a cat']",
        "spm = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())",
        "vocabulary = {spm.id_to_piece(i): i for i in range(spm.get_piece_size())}",
        "import tempfile, os",
        "path = os.path.join(tempfile.mkdtemp(), 'source.spm')",
        "open(path, 'wb').write(model.getvalue())",
        "marian = tokenizers.MarianTokenizer(path, path, vocabulary)",
        "assert marian.detokenize(marian.tokenize(['a cat'])) == ['a cat']",
    ])),
]


def probe(backend, steps):
    """`{"keras": heavy modules a bare `import keras` loads, name: those the
    step `name` adds}` for `steps`, `(name, code)` pairs run in turn."""
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    code = PROBE.format(heavy=HEAVY, steps=steps)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@functools.cache
def probed(backend):
    """What each step of `STEPS` adds under `backend` (the last three on JAX only)."""
    return probe(backend, STEPS if backend == "jax" else STEPS[:-3])


@pytest.mark.large
@pytest.mark.parametrize("backend", BACKENDS)
def test_core_imports_no_tensorflow_or_toolkit_library(backend):
    loaded = probed(backend)
    assert loaded["core"] == []
    assert "tensorflow" not in loaded["keras"]  # the check means something on this backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_package_import_is_light_and_builds_a_model(backend):
    assert probed(backend)["package"] == []


def test_toolkit_modules_load_their_libraries_on_first_use():
    loaded = set(probed("jax")["toolkit"])
    assert {"sacrebleu", "rouge_score"} <= loaded
    # The table of checkpoint families names the tokenizers; keras-hub (and
    # TensorFlow Text) load only when a tokenizer is made.
    assert not {"keras_hub", "tensorflow", "tensorflow_text"} & loaded


def test_a_run_folders_tokenizers_load_neither_tensorflow_nor_keras_hub():
    assert probed("jax")["run_folder_tokenizers"] == []


def test_converted_runs_sentencepiece_tokenizers_load_neither_tensorflow_nor_keras_hub():
    """Marian's, T5's (and M2M100's) SentencePiece models are read with the
    `sentencepiece` package: a converted run answers on JAX without
    TensorFlow."""
    assert probed("jax")["converted_tokenizers"] == []


def test_lazy_attributes_are_listed_and_unknown_names_refused():
    import keras_attention

    assert set(keras_attention.__all__) <= set(dir(keras_attention))
    with pytest.raises(AttributeError, match="no attribute 'metrix'"):
        _ = keras_attention.metrix


def test_the_data_modules_names_are_listed_and_unknown_names_refused():
    from keras_attention import data

    assert all(callable(getattr(data, name)) for name in data.__all__)
    assert set(data.__all__) <= set(dir(data))
    with pytest.raises(AttributeError, match="no attribute 'load_tokeniser'"):
        _ = data.load_tokeniser


def test_the_data_modules_three_lists_of_names_agree():
    """`keras_attention.data` names its public names in its `TYPE_CHECKING`
    imports (for readers and the docs' static reader), in the table its lazy
    `__getattr__` reads and in `__all__`: each imported name is in `__all__`
    and resolves to the object of the module it is imported from, and
    `__all__` holds nothing else."""
    import ast

    from keras_attention import data

    tree = ast.parse(pathlib.Path(data.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and ast.unparse(node.test) == "typing.TYPE_CHECKING")
    imported = {alias.name: node.module for node in block.body
                for alias in node.names}
    assert sorted(imported) == sorted(data.__all__)
    for name, module in imported.items():
        assert getattr(data, name) is getattr(importlib.import_module(module), name), name
