"""Every public layer called and saved under TensorFlow, for
tests/layers/cross_backend_test.py, which loads them under JAX and torch.

It is a pytest plugin: `command(FOLDER)` runs the tests of
`RUN_LAYER_TEST_MODULES` that call `run_layer_test` under TensorFlow with it,
in one process. Each case is a functional model of one layer
(`FOLDER/<case>.keras`) and the model's inputs and TensorFlow's outputs
(`FOLDER/<case>.npz`: `input_0`, ..., `output_0`, ...); `FOLDER/index.json`
lists the cases, by test module.

Two sets of cases:

- "layers/<name>": the cases of tests/layers/output_specs_test.py (every
  public layer of `keras_attention.layers` and `keras_attention.compat`,
  with the attention scores where a layer returns them) and `SelfAttention`'s
  other scores, each also with its float sequence inputs behind
  `keras.layers.Masking` ("-implicit_mask": the last two positions of example
  0 are padding, zeros); and, for the attention layers of
  tests/layers/factories.py, "-attention_mask", an explicit `(B, T, S)` mask
  that hides keys holding NaN and leaves one query row with no key at all, and
  "-causal", self-attention with `use_causal_mask=True`.
- "<test module>/<test>": every configuration that a test of
  `RUN_LAYER_TEST_MODULES` checks with `tests/test_case.py::run_layer_test`,
  on that test's inputs, with the scores when it asks for them, and behind
  `Masking` when it checks implicit masks: this plugin replaces
  `run_layer_test` by `record_layer_test`.
"""

import json
import os
import pathlib
import re
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
BATCH = 2
# Call keywords that replace a case's: a decoder block without memory returns
# None for its cross-attention scores, which no functional model can output.
KEYWORDS = {"decoder_only_block": {}}
FOLDER_VARIABLE = "KERAS_ATTENTION_SAVE_ON_TENSORFLOW"


def run_layer_test_modules():
    """The test modules (paths from the repository root) that call
    `run_layer_test`."""
    return sorted(
        str(path.relative_to(ROOT))
        for folder in ("tests/layers", "tests/models")
        for path in (ROOT / folder).glob("*_test.py")
        if "run_layer_test(" in path.read_text()
    )


RUN_LAYER_TEST_MODULES = run_layer_test_modules()


class Case:
    """`build(inputs)` -> the symbolic outputs of the layer on the
    `keras.Input`s `inputs`; `inputs`: a list of `(shape, dtype, values)`
    with `shape` the batch shape."""

    def __init__(self, build, inputs):
        self.build, self.inputs = build, inputs


def _array(shape, dtype, rng):
    if dtype == "float32":
        return rng.normal(size=shape).astype("float32")
    return rng.integers(0, 5, size=shape).astype(dtype)


def _spec(spec):
    """`(shape, dtype)` of one input spec of output_specs_test's cases."""
    return (tuple(spec[0]), spec[1]) if isinstance(spec[1], str) else (tuple(spec), "float32")


def _plain(name, case, rng):
    extra = KEYWORDS.get(name, case.extra)
    inputs = [(shape, dtype, _array(shape, dtype, rng))
              for shape, dtype in map(_spec, case.inputs)]

    def build(symbolic):
        return case.factory()(*symbolic, **extra)

    return Case(build, inputs)


def _behind_masking(build, inputs, padding):
    """`Case` of `build` on `inputs` (float `(B, L, D)` ones) behind
    `Masking(0.0)`, the positions `padding` of each set to zeros; None when
    an input is of another kind."""
    if any(dtype != "float32" or len(shape) != 3 for shape, dtype, _ in inputs):
        return None
    padded = []
    for shape, dtype, values in inputs:
        values = np.array(values)
        values[padding] = 0.0
        padded.append((shape, dtype, values))

    def masked_build(symbolic):
        import keras

        return build([keras.layers.Masking(0.0)(x) for x in symbolic])

    return Case(masked_build, padded)


def _implicit_mask(name, case, rng):
    """The last two positions of example 0 padded; None for a layer with
    another kind of input or without masking."""
    if not case.factory().supports_masking:
        return None
    plain = _plain(name, case, rng)
    return _behind_masking(plain.build, plain.inputs, (0, slice(-2, None)))


def _attention_mask(factory, rng):
    """`query (2, 5, 8)`, `value (2, 7, 8)` holding NaN where the mask hides
    it, and the mask: keys 5 and 6 hidden from every query of example 1,
    query row 2 of example 0 with no key."""
    query = rng.normal(size=(BATCH, 5, 8)).astype("float32")
    value = rng.normal(size=(BATCH, 7, 8)).astype("float32")
    mask = np.ones((BATCH, 5, 7), bool)
    mask[1, :, 5:] = False
    mask[0, 2] = False
    value[1, 5:] = np.nan

    def build(symbolic):
        query, value, mask = symbolic
        return factory()(query, value, attention_mask=mask, return_attention_scores=True)

    return Case(build, [((BATCH, 5, 8), "float32", query), ((BATCH, 7, 8), "float32", value),
                        ((BATCH, 5, 7), "bool", mask)])


def _causal(factory, rng):
    """Self-attention of `x (2, 5, 8)` with `use_causal_mask=True`."""
    x = rng.normal(size=(BATCH, 5, 8)).astype("float32")

    def build(symbolic):
        (x,) = symbolic
        return factory()(x, x, use_causal_mask=True, return_attention_scores=True)

    return Case(build, [((BATCH, 5, 8), "float32", x)])


def layer_cases():
    """"layers/<name>" -> `Case`, in a fixed order, with fixed inputs."""
    from keras_attention import layers
    from tests.layers import output_specs_test as specs
    from tests.layers.factories import FACTORIES

    rng = np.random.default_rng(0)
    every = dict(specs.CASES)
    for score in ("dot", "general", "additive"):  # the other scores of SelfAttention
        every[f"self_attention_{score}"] = specs.Case(
            lambda score=score, **kw: layers.SelfAttention(2, score=score, **kw), (specs.X,),
            specs.SCORES)
    result = {}
    for name in sorted(every):
        result[name] = _plain(name, every[name], rng)
        masked = _implicit_mask(name, every[name], rng)
        if masked is not None:
            result[f"{name}-implicit_mask"] = masked
    for name in sorted(FACTORIES):
        result[f"{name}-attention_mask"] = _attention_mask(FACTORIES[name], rng)
        result[f"{name}-causal"] = _causal(FACTORIES[name], rng)
    return {f"layers/{name}": case for name, case in result.items()}


def save_case(folder, name, case):
    """Saves `case` as `folder/<name>.keras` and `folder/<name>.npz`."""
    import keras

    keras.utils.set_random_seed(0)
    symbolic = [keras.Input(batch_shape=shape, dtype=dtype) for shape, dtype, _ in case.inputs]
    model = keras.Model(symbolic, case.build(symbolic))
    values = [values for _, _, values in case.inputs]
    outputs = keras.tree.flatten(model(values))
    path = pathlib.Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(f"{path}.keras")
    np.savez(f"{path}.npz",
             **{f"input_{i}": x for i, x in enumerate(values)},
             **{f"output_{i}": keras.ops.convert_to_numpy(y) for i, y in enumerate(outputs)})


# The plugin's hooks --------------------------------------------------------


def record_layer_test(layer_cls, init_kwargs, inputs, call_kwargs=None,
                      expected_output_shape=None, expected_scores_shape=None,
                      mask_inputs=True, tmp_dir=None, position_wise=False):
    """In place of `run_layer_test`: saves the layer of this configuration
    (the weights of `keras.utils.set_random_seed(1234)`, as there) on
    `inputs`, with the scores when `expected_scores_shape` is given, and,
    with `mask_inputs`, again behind `Masking` (the last position of example
    0 padded, as `run_layer_test` pads it)."""
    import keras

    call_kwargs = dict(call_kwargs or {})
    if expected_scores_shape is not None:
        call_kwargs["return_attention_scores"] = True
    test = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
    module, function = test.split("::", 1)
    function = function.replace("[", "-").removesuffix("]")  # test_layer_behaviors-gqa
    name = f"{module.removesuffix('.py')}/{re.sub(r'[^A-Za-z0-9_.-]+', '_', function)}"

    def build(symbolic):
        keras.utils.set_random_seed(1234)
        return layer_cls(**init_kwargs)(*symbolic, **call_kwargs)

    values = [(tuple(x.shape), str(x.dtype), np.asarray(x)) for x in inputs.values()]
    folder = os.environ[FOLDER_VARIABLE]
    save_case(folder, name, Case(build, values))
    names = [name]
    masked = _behind_masking(build, values, (0, -1)) if mask_inputs else None
    if masked is not None:
        save_case(folder, f"{name}-implicit_mask", masked)
        names.append(f"{name}-implicit_mask")
    with open(pathlib.Path(folder) / "recorded.txt", "a") as recorded:
        recorded.write("".join(f"{n}\n" for n in names))


def pytest_configure(config):
    from tests import test_case

    test_case.run_layer_test = record_layer_test


def pytest_collection_modifyitems(config, items):
    """Only the tests that call `run_layer_test` run."""
    import inspect

    def calls_run_layer_test(item):
        function = getattr(item, "function", None)
        return function is not None and "run_layer_test(" in inspect.getsource(function)

    selected = [item for item in items if calls_run_layer_test(item)]
    config.hook.pytest_deselected(items=[item for item in items if item not in selected])
    items[:] = selected


def pytest_sessionfinish(session, exitstatus):
    """Saves the "layers/" cases and writes `index.json`, after the tests."""
    if exitstatus != 0:
        return
    folder = pathlib.Path(os.environ[FOLDER_VARIABLE])
    cases = layer_cases()
    for name, case in cases.items():
        save_case(folder, name, case)
    recorded = (folder / "recorded.txt").read_text().split()
    index = {"layers": sorted(cases)}
    for module in RUN_LAYER_TEST_MODULES:
        prefix = module.removesuffix(".py") + "/"
        index[module] = sorted(name for name in recorded if name.startswith(prefix))
    (folder / "index.json").write_text(json.dumps(index, indent=1))


def command(folder):
    """The command line and environment that save every case into
    `folder` (a new folder): pytest under TensorFlow, this module a plugin."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("PYTEST_")}  # this run's xdist worker, its options
    env.update(KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
               **{FOLDER_VARIABLE: str(folder)},
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", __name__,
            "-W", "ignore", f"--basetemp={pathlib.Path(folder) / 'pytest'}",
            *RUN_LAYER_TEST_MODULES], env
