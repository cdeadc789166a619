"""The translation recipe on JAX, end to end, and its run on other backends:
trained by `KERAS_BACKEND=jax` in a subprocess with
`--distribution=data_parallel` on two JAX CPU devices (keras.distribution;
tf.data input, `fit` under XLA, compiled generation, scores, run folder),
the run generates the same greedy outputs under TensorFlow (this process)
as under JAX (in that subprocess, during the recipe and after it), and
exports under TensorFlow to a SavedModel that serves them. The question
answering recipe's memory network, trained on JAX, answers the same on
both backends too, and the extractive summarizer trains on two JAX devices
on a split whose size does not divide between them. One JAX subprocess
trains all three runs and reports what they generate there (one JAX start
for the module)."""

import ast
import json
import os
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_attention import distribute, runs, runtime
from keras_attention.export import export_run

pytestmark = [pytest.mark.tf_only("exports and generates in this (TensorFlow) process"),
              pytest.mark.large]  # every test reads a recipe trained on JAX

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXTS = ["March 3, 2021", "the 1st of may, 1999", "Thu 22 Apr 2049", "12/25/1990", ""]
# Data parallel over two CPU devices, and enough training for the greedy
# outputs to differ between inputs.
RECIPE_ARGS = ["--preset=quick", "--distribution=data_parallel", "--num_examples=600",
               "--epochs=4", "--max_test_examples=8"]

QUESTIONS = ["Mary went to the kitchen. John went to the hallway. | Where is Mary?",
             "Sandra went back to the garden. | Where is Sandra?",
             "Daniel moved to the office. Mary went to the bedroom. | Where is Daniel?"]
QA_ARGS = ["--preset=quick", "--num_examples=300"]
# `(name, recipe, arguments)` of the runs trained on JAX, in this order.
JAX_RUNS = [
    ("translation", "translation", RECIPE_ARGS),
    ("question_answering", "question_answering", QA_ARGS),
    # 203 abstracts: 183 training documents, an odd count, so the last batch
    # of 23 would not split between two devices without trimming.
    ("extractive", "summarization", ["--preset=quick", "--summarizer=extractive",
                                     "--distribution=data_parallel", "--num_examples=203"]),
]
# Read when JAX starts: the host's CPU split into two devices, after the XLA
# flags the caller set (kept, not replaced).
TWO_CPU_DEVICES = {"XLA_FLAGS": (f"{os.environ.get('XLA_FLAGS', '')} "
                                 "--xla_force_host_platform_device_count=2").strip(),
                   "JAX_PLATFORMS": "cpu"}

# One JAX process trains every run (its log in `<run folder>.out`), then
# reports what the runs generate there and how `distribute`/`runtime` answer.
_ON_JAX = """
import contextlib, importlib, json, pathlib, sys
from keras_attention import distribute, runs, runtime
folder = pathlib.Path(sys.argv[1])
for name, recipe, args in json.loads(sys.argv[2]):
    with open(folder / f"{name}.out", "w") as out, contextlib.redirect_stdout(out):
        importlib.import_module("keras_attention.recipes." + recipe).main(
            [*args, f"--output_dir={folder / name}"])
single = distribute.get_strategy("default")
try:
    distribute.get_strategy("mirrored")
    refusal = None
except ValueError as error:
    refusal = str(error)
print(json.dumps({
    "generated": runs.open_run(folder / "translation").generate(json.loads(sys.argv[3]),
                                                                "greedy"),
    "answers": runs.open_run(folder / "question_answering").generate(json.loads(sys.argv[4])),
    "strategy": [type(single).__name__, single.num_replicas_in_sync, distribute.is_chief(single)],
    "refusal": refusal,
    "auto_jit": runtime.fast_defaults(gpu=False)["jit_compile"],
    "quick_jit": runtime.quick_jit_compile(),
}))
"""


def _run_on(backend, *args, timeout=600, env=None):
    """A Python subprocess under `KERAS_BACKEND=backend`, from the repository
    root, with the environment variables `env` added."""
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3", **(env or {}),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def jax_runs(tmp_path_factory):
    """`(folder, report)`: the runs of `JAX_RUNS` trained in one JAX
    subprocess on two CPU devices (one JAX start for the module), in
    `folder`, and that process's report: what the translation and question
    answering runs generate there, and how `distribute`/`runtime` answer."""
    folder = tmp_path_factory.mktemp("backends")
    process = _run_on("jax", "-c", _ON_JAX, str(folder), json.dumps(JAX_RUNS),
                      json.dumps(TEXTS), json.dumps(QUESTIONS), env=TWO_CPU_DEVICES)
    assert process.returncode == 0, process.stderr[-3000:]
    return folder, json.loads(process.stdout.strip().splitlines()[-1])


def _jax_run(jax_runs, name):
    """`(run_dir, stdout)` of the run `name` of `JAX_RUNS`: its folder and its log."""
    folder, _ = jax_runs
    return folder / name, (folder / f"{name}.out").read_text()


@pytest.fixture(scope="module")
def on_jax(jax_runs):
    """What the runs generate, and how `distribute`/`runtime` answer, on JAX."""
    return jax_runs[1]


@pytest.fixture(scope="module")
def jax_run(jax_runs):
    """`(run_dir, stdout)` of the quick translation recipe trained on JAX with
    `--distribution=data_parallel` on two CPU devices."""
    return _jax_run(jax_runs, "translation")


@pytest.fixture(scope="module")
def jax_qa_run(jax_runs):
    """`(run_dir, stdout)` of the quick question answering recipe (a memory
    network) trained on JAX, on one device."""
    return _jax_run(jax_runs, "question_answering")


def _recipe_samples(stdout):
    """`{source: hypothesis}` of the samples the recipe prints after scoring."""
    samples = {}
    for line in stdout.splitlines():
        if line.startswith("  '") and " -> " in line and "(reference" in line:
            source, rest = line.strip().split(" -> ", 1)
            samples[ast.literal_eval(source)] = ast.literal_eval(rest.rsplit(" (reference", 1)[0])
    return samples


def test_jax_trains_and_saves_the_translation_run(jax_run):
    run_dir, stdout = jax_run
    assert "KERAS_BACKEND=jax" in stdout
    assert "jit_compile=True" in stdout  # the quick preset compiles on JAX
    metadata = json.loads((run_dir / "config.json").read_text())
    assert metadata["recipe"] == "translation"
    assert metadata["config"]["jit_compile"] == "true"
    scores = metadata["scores"]
    assert 0 <= scores["bleu"] <= 100 and 0 < scores["chrf"] <= 100
    assert scores["test_examples"] == 8 and scores["parameters"] > 0
    for name in ("model.keras", "source.spm", "target.spm", "attention.png", "training.png"):
        assert (run_dir / name).stat().st_size > 0, name


def test_a_jax_run_generates_the_same_on_tensorflow_and_jax(jax_run, on_jax):
    run_dir, stdout = jax_run
    saved = runs.open_run(run_dir)
    on_tensorflow = saved.generate(TEXTS, "greedy")
    assert on_tensorflow == on_jax["generated"]
    assert len(set(on_tensorflow)) > 1  # trained enough for the check to mean something
    samples = _recipe_samples(stdout)  # generated on JAX during the recipe
    assert len(samples) == 5
    assert saved.generate(list(samples), "greedy") == list(samples.values())


def test_a_jax_run_exports_and_serves_under_tensorflow(jax_run, tmp_path):
    import tensorflow_text  # noqa: F401 (registers the SentencePiece ops the export uses)

    run_dir, _ = jax_run
    export_dir = export_run(run_dir, tmp_path / "export")
    loaded = tf.saved_model.load(export_dir)  # kept: its functions use its variables
    served = loaded.serve(tf.constant(TEXTS))
    expected = runs.open_run(run_dir).generate(TEXTS)  # the run's decoding: greedy
    assert [t.decode("utf-8") for t in served.numpy()] == expected


def test_a_jax_memory_network_answers_the_same_on_tensorflow_and_jax(jax_qa_run, on_jax):
    run_dir, stdout = jax_qa_run
    assert "jit_compile=True" in stdout
    metadata = json.loads((run_dir / "config.json").read_text())
    assert metadata["recipe"] == "question_answering"
    assert 0 <= metadata["scores"]["mean_accuracy"] <= 100
    answers = runs.open_run(run_dir).generate(QUESTIONS)
    assert answers == on_jax["answers"]
    assert all(answer.strip() for answer in answers)


def test_jax_uses_one_device_and_refuses_tf_distribute(on_jax):
    assert on_jax["strategy"] == ["SingleDevice", 1, True]
    refusal = on_jax["refusal"]
    assert refusal.startswith("Argument `distribution`")
    assert "keras.distribution" in refusal and "Received: distribution='mirrored'" in refusal


def test_jax_data_parallel_trains_the_translation_recipe_on_two_devices(jax_run):
    run_dir, stdout = jax_run
    assert "on 2 replica(s)" in stdout and "jit_compile=True" in stdout
    metadata = json.loads((run_dir / "config.json").read_text())
    assert metadata["config"]["distribution"] == "data_parallel"
    assert metadata["scores"]["test_examples"] == 8 and metadata["scores"]["parameters"] > 0
    for name in ("model.keras", "source.spm", "target.spm", "attention.png", "training.png"):
        assert (run_dir / name).stat().st_size > 0, name
    # The run generates here (TensorFlow, one device) what it generated on JAX after training.
    samples = _recipe_samples(stdout)
    assert len(samples) == 5
    assert runs.open_run(run_dir).generate(list(samples), "greedy") == list(samples.values())


def test_jax_data_parallel_trains_the_extractive_summarizer_on_uneven_splits(jax_runs):
    run_dir, stdout = _jax_run(jax_runs, "extractive")
    assert "extractive summarizer" in stdout and "on 2 replica(s)" in stdout
    metadata = json.loads((run_dir / "config.json").read_text())
    assert metadata["config"]["distribution"] == "data_parallel"
    # Scored on every test document, not a trimmed split.
    assert metadata["scores"]["test_examples"] == 10, metadata["scores"]
    document = "We study attention. We propose a new layer. It is fast."
    [summary] = runs.open_run(run_dir).generate([document])
    assert summary in {"We study attention.", "We propose a new layer.", "It is fast."}


def test_jit_compile_defaults_by_backend(on_jax):
    assert on_jax["auto_jit"] is True and on_jax["quick_jit"] == "true"
    # TensorFlow (this process): graph mode on a CPU, as before.
    assert runtime.quick_jit_compile() == "false"
    assert runtime.fast_defaults(gpu=False)["jit_compile"] is False
    assert distribute.get_strategy("default") is tf.distribute.get_strategy()
