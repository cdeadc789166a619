"""Test setup: the TensorFlow backend (unless KERAS_BACKEND says otherwise),
quiet logs (`keras_attention_launcher.silence_tensorflow_start`), seeded
randomness, and the `tf_only` marker.

`@pytest.mark.tf_only("why")` marks a test that needs TensorFlow itself
(tf.data, SavedModel export, tf.distribute, tensorflow-text, a symbolic
`tf.function` signature); under another backend it is skipped with that
reason. `make test-jax` runs the layer and block tests on JAX,
`make test-torch` on torch.

`@pytest.mark.slow_on("torch", reason="why")` marks a test that takes
minutes on the named backends (torch runs eagerly, so training to an
accuracy target is slow there; a few JAX variants spend minutes compiling)
while faster tests cover the same code there; under those backends it is
skipped with that reason. This is how `make test-jax` and `make test-torch`
leave tests out: by marker, never by test ids.

Under JAX, identical XLA programs compile once per test process
(`_cache_jax_compilations`); under every backend the imports are frozen out
of the garbage collector (`pytest_collection_finish`).

`@pytest.mark.backend_independent("why")` marks a test whose subject does
not touch the backend (pure Python, file handling, tokenizers, argument
parsing): it runs under TensorFlow (`make test`) only, and under another
backend it is skipped with that reason, so that `make test-jax` and
`make test-torch` spend their time on what differs between backends.

`@pytest.mark.same_path_on("torch", reason="why")` marks a parametrized case
that runs exactly the code of a sibling case on the named backends (on torch
nothing compiles, so an "xla" case is the eager one again; on JAX
`compile_function` is `jax.jit` for the "graph" and "xla" cases), or a test
whose work another test does there with more checks (the reason names it):
it is skipped there with that reason. `tests/test_case.py` has the usual
pairs.

`pytestmark = pytest.mark.keras_ops_only` marks a module
whose subject is our `keras.ops` code, with no branch of its own per
backend (layers, blocks, models' shapes and options): under JAX, where
every eager op compiles, its tests are skipped, but those that call
`run_layer_test` (its checks on that backend: compiled call, `.keras`
round trip, one `fit` step, finite gradients, mixed precision), since
there every public layer and every configuration `run_layer_test` checks
computes TensorFlow's numbers, with and without masks
(tests/layers/cross_backend_test.py). torch, eager and cheap, runs them
all. What has code of its own per backend (attention implementations,
query blocking, caches, quantization, compiled generation and decoding)
runs whole on every backend.

`@pytest.mark.large` marks a test that trains to a quality bar, starts
processes, or compiles, exports or converts whole programs end to end (each
took 4 s or more on 2 cores). `make test` (the README's command) leaves the
large tier out; `make test-large` runs it alone and `make test-all` (CI)
runs both tiers on every backend, as keras-hub's `--run_large` does.

The modules of `LONG_MODULES` are collected first, so that xdist starts them
first (the Makefile's `--no-loadscope-reorder`).
"""

import collections
import gc
import os

import keras_attention_launcher

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# Quiet logs: TensorFlow's C++ start-up lines off stderr, as the command keeps
# them (the package itself changes nothing on import).
keras_attention_launcher.silence_tensorflow_start()


def _load_triton_before_tensorflow():
    """The tests comparing our layers with `transformers`' torch modules
    import torch models, which load triton's native library; loaded after
    TensorFlow's or JAX's, it crashes the process (a segmentation fault),
    loaded before, all work. So it is loaded here, before Keras loads its
    backend (0.7 s), where it is installed."""
    try:
        import triton._C.libtriton  # noqa: F401
    except ImportError:
        pass


_load_triton_before_tensorflow()

import keras  # noqa: E402 (after KERAS_BACKEND is set)
import numpy as np  # noqa: E402 (after KERAS_BACKEND is set)
import pytest  # noqa: E402 (after KERAS_BACKEND is set)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tf_only(reason): needs the TensorFlow backend; skipped, with the "
        "reason, under KERAS_BACKEND=jax or torch",
    )
    config.addinivalue_line(
        "markers",
        "slow_on(*backends, reason): minutes long on those backends, covered there by "
        "faster tests; skipped, with the reason, under those KERAS_BACKENDs",
    )
    config.addinivalue_line(
        "markers",
        "backend_independent(reason): touches no backend (pure Python, files); runs "
        "under TensorFlow only, skipped, with the reason, under KERAS_BACKEND=jax or torch",
    )
    config.addinivalue_line(
        "markers",
        "large: trains, starts processes, or compiles, exports or converts whole programs; "
        "left out of `make test`, run by `make test-large` and `make test-all`",
    )
    config.addinivalue_line(
        "markers",
        "keras_ops_only: a module of keras.ops code with no branch per backend; under JAX "
        "only its run_layer_test tests run, the others skipped with `KERAS_OPS_ONLY`",
    )
    config.addinivalue_line(
        "markers",
        "same_path_on(*backends, reason): on those backends this case runs the code of a "
        "sibling case (or another test) again; skipped, with the reason, under those "
        "KERAS_BACKENDs",
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


@pytest.fixture(scope="session", autouse=True)
def _cache_jax_compilations(tmp_path_factory):
    """Under JAX, XLA programs are cached by their contents in a folder of
    this test session (pytest's temporary folder, which pytest prunes), so
    that a test building a model another test built compiles its identical
    programs once: a second identical `generate` took 5 s instead of
    25-30 s. Each test still traces its own function; only identical
    programs are reused, and what runs is what XLA compiled. A cache folder
    of the user's (`JAX_COMPILATION_CACHE_DIR`) is used as it is.

    Each xdist worker keeps its own folder. One folder for both was
    measured: JAX writes its entries without a lock unless a size limit is
    set, and with one, every write lists the whole folder to evict, so the
    JAX run took longer than 1,100 s instead of ~780 s."""
    if keras.backend.backend() == "jax":
        import jax
        from jax.experimental.compilation_cache import compilation_cache

        if not jax.config.jax_compilation_cache_dir:
            jax.config.update("jax_compilation_cache_dir",
                              str(tmp_path_factory.mktemp("jax_compilation_cache")))
            # Every program, however fast it compiled: 2 layer modules took 184 s
            # against 197 s when only those over 0.2 s were written.
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            compilation_cache.reset_cache()  # JAX decided on no cache at its first compile
    yield


@pytest.fixture(scope="session", autouse=True)
def _compiled_programs_of_the_cli_in_a_test_folder(tmp_path_factory):
    """`keras-attention generate` and `evaluate` keep compiled programs in a
    folder of the user's (`runtime.cache_compilations`); called in the tests,
    they keep them in a folder of the test session, and the commands the
    tests start as processes inherit it. A folder the caller set is kept."""
    if not os.environ.get("KERAS_ATTENTION_CACHE_DIR"):
        os.environ["KERAS_ATTENTION_CACHE_DIR"] = str(
            tmp_path_factory.mktemp("compiled_programs"))
    yield


# The test modules that take longest on 2 cores (they train recipes, start
# processes, compile generation), longest first. They come first in the
# collection, then the others, most tests first, as xdist would order them
# itself; xdist hands modules out in this order (`--dist loadfile
# --no-loadscope-reorder`, Makefile). In xdist's own order, most tests first,
# these few-test modules started last, while the other worker idled.
LONG_MODULES = (  # over 25 s in one run of CI (junit: setup + call), longest first
    "tests/models/transformer_seq2seq_test.py",
    "tests/models/seq2seq_model_test.py",
    "tests/layers/cross_backend_test.py",
    "tests/layers/quantization_test.py",
    "tests/distribute_test.py",
    "tests/layers/attention_implementations_test.py",
    "tests/docs_test.py",
    "tests/examples_question_answering_test.py",
    "tests/runs/convert_test.py",
    "tests/server/running_test.py",
    "tests/recipes/backends_test.py",
    "tests/export_test.py",
    "tests/export_converted_test.py",
    "tests/examples_summarization_test.py",
    "tests/recipes/fine_tuning_test.py",
    "tests/layers/relative_position_bias_test.py",
    "tests/pretrained/bart_test.py",
    "tests/compat/keras_hub_test.py",
    "tests/examples_test.py",
    "tests/layers/multi_head_attention_test.py",
    "tests/layers/transformer_decoder_block_test.py",
    "tests/layers/universal_transformer_test.py",
    "tests/layers/output_specs_test.py",
    "tests/compat/keras_test.py",
    "tests/pretrained/t5_test.py",
    "tests/layers/cache_contract_test.py",
    "tests/models/packed_sequences_test.py",
    "tests/layers/pointer_generator_test.py",
    "tests/decoding/hf_beam_search_test.py",
    "tests/layers/attention_properties_test.py",
)


def _long_modules_first(items):
    """Sorts `items` (stable) by module: those of `LONG_MODULES` in its
    order, then the others by their number of tests, most first."""
    module = {id(item): item.nodeid.split("::", 1)[0] for item in items}
    count = collections.Counter(module.values())
    rank = {path: i for i, path in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: (rank.get(module[id(item)], len(rank)),
                                 -count[module[id(item)]], module[id(item)]))


def pytest_collection_finish(session):
    """Freezes what the imports made (TensorFlow, JAX, torch, transformers:
    ~400,000 objects) out of the garbage collector's reach. A full
    collection scanned them all, about 2 s on this machine, and Keras runs
    one for every variable a layer deletes (`Layer.__delattr__`: 31 in one
    `model.quantize`, a minute), and Python on its own every so often; after
    the freeze, milliseconds. What the tests create is collected as
    before."""
    gc.collect()
    gc.freeze()


# The reason of a `keras_ops_only` skip under JAX.
KERAS_OPS_ONLY = (
    "on JAX its run_layer_test tests run, and every public layer and every configuration "
    "run_layer_test checks computes TensorFlow's outputs and scores, with and without masks "
    "(tests/layers/cross_backend_test.py); the rest runs under TensorFlow and torch")


def _calls_run_layer_test(item):
    """Whether the test function of `item` calls `run_layer_test` itself."""
    code = getattr(getattr(item, "function", None), "__code__", None)
    return code is not None and "run_layer_test" in code.co_names


def pytest_collection_modifyitems(config, items):
    _long_modules_first(items)
    backend = keras.backend.backend()
    for item in items:
        marker = item.get_closest_marker("tf_only")
        if marker is not None and backend != "tensorflow":
            why = marker.args[0] if marker.args else "needs TensorFlow"
            item.add_marker(
                pytest.mark.skip(reason=f"TensorFlow only ({why}); backend={backend}")
            )
        marker = item.get_closest_marker("backend_independent")
        if marker is not None and backend != "tensorflow":
            why = marker.args[0] if marker.args else "touches no backend"
            item.add_marker(pytest.mark.skip(
                reason=f"backend-independent ({why}): runs under TensorFlow; backend={backend}"))
        if (item.get_closest_marker("keras_ops_only") is not None and backend == "jax"
                and not _calls_run_layer_test(item)):
            item.add_marker(pytest.mark.skip(reason=f"keras.ops only ({KERAS_OPS_ONLY})"))
        for marker in item.iter_markers("slow_on"):
            if backend in marker.args:
                why = marker.kwargs.get("reason", "minutes long here")
                item.add_marker(pytest.mark.skip(reason=f"slow on {backend} ({why})"))
        for marker in item.iter_markers("same_path_on"):
            if backend in marker.args:
                why = marker.kwargs.get("reason", "another case runs the same code")
                item.add_marker(pytest.mark.skip(reason=f"same code on {backend} ({why})"))


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(0)
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# Trained runs made once per test run (tests/made_once.py), for the tests that
# only read them ---------------------------------------------------------------


@pytest.fixture(scope="session")
def quick_translation_run(tmp_path_factory):
    """`(run_dir, scores, calls)` of the translation recipe's quick config,
    trained once per test run: `calls` is what the recipe asked of
    `data.never_generated_ids` (a count) and `Seq2SeqModel.generate` (each
    call's `suppress_token_ids`) meanwhile. Tests that change the folder copy
    it first."""
    from tests.made_once import made_once

    folder, (scores, calls) = made_once(tmp_path_factory, "quick_translation",
                                        _train_quick_translation)
    return folder / "translation", scores, calls


def _train_quick_translation(folder):
    from keras_attention import data
    from keras_attention.models import Seq2SeqModel
    from tests.recipes import load_recipe

    recipe = load_recipe("translation")
    config = dict(recipe.recipe_config.get_quick_config(),
                  output_dir=str(folder / "translation"))
    calls = {"never_generated_ids": 0, "suppressed": []}
    never_generated_ids, generate = data.never_generated_ids, Seq2SeqModel.generate

    def counted(*args, **kwargs):
        calls["never_generated_ids"] += 1
        return never_generated_ids(*args, **kwargs)

    def recorded(self, *args, **kwargs):
        suppressed = kwargs.get("suppress_token_ids")
        calls["suppressed"].append(None if suppressed is None else list(suppressed))
        return generate(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(data, "never_generated_ids", counted)
        patch.setattr(Seq2SeqModel, "generate", recorded)
        scores = recipe.train_and_evaluate(config)
    assert 0.0 <= scores["bleu"] <= 100.0 and 0.0 <= scores["chrf"] <= 100.0
    return scores, calls
