"""The files of ours that one `keras-attention generate RUN` runs outside the
model core (`layers/`, `models/`, `decoding/`, `masks`, `validation`, and
`keras_internals`, the two private Keras names the core reads, imported by
`models/` and `validation` only): the functions called while the command
answers a line of a recipe run, traced in a fresh interpreter (imports done
first, so module bodies do not count). Issue 55 set the bar at 8 (16 before
the model kinds became classes, 11 since); docs/contributing.md lists them
("What one `generate` runs") with what each does, and this test keeps the
list and the docs true."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORE = ("keras_attention/layers/", "keras_attention/models/", "keras_attention/decoding/",
        "keras_attention/masks", "keras_attention/validation", "keras_attention/keras_internals")
#: What `generate` runs today, outside the core (the docs list the same).
GENERATE_FILES = (
    "keras_attention/cli.py",
    "keras_attention/data/subwords.py",
    "keras_attention/files.py",
    "keras_attention/runs/generation.py",
    "keras_attention/runs/reader.py",
    "keras_attention/runs/registry.py",
    "keras_attention/runs/source_formats.py",
    "keras_attention/runs/text_generator.py",
    "keras_attention/runs/text_to_text.py",
    "keras_attention/runtime.py",
    "keras_attention/tokenizer.py",
)

TRACER = """
import json, os, sys, threading
run_dir, source, output, root = sys.argv[1:5]
from keras_attention import cli
called = set()
package = os.path.join(root, "keras_attention") + os.sep
def trace(frame, event, arg):
    name = frame.f_code.co_filename
    if event == "call" and name.startswith(package) and frame.f_code.co_name != "<module>":
        called.add(os.path.relpath(name, root))
sys.settrace(trace)
threading.settrace(trace)
cli.main(["generate", run_dir, "--input", source, "--output", output])
sys.settrace(None)
print(json.dumps(sorted(called)))
"""

pytestmark = pytest.mark.backend_independent("counts our own Python files, the same on every "
                                             "backend's path up to the model core")


def traced_files(run_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("March 3, 2021\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT), KERAS_BACKEND="tensorflow",
               TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", TRACER, str(run_dir), str(source),
                           str(tmp_path / "out.txt"), str(ROOT)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").strip()  # it answered
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_generate_runs_the_files_the_docs_list(quick_translation_run, tmp_path):
    called = traced_files(quick_translation_run[0], tmp_path)
    assert any(name.startswith(CORE) for name in called)  # the tracer sees the core too
    outside = tuple(sorted(name for name in called if not name.startswith(CORE)))
    assert outside == GENERATE_FILES
    docs = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    section = docs.split("### What one `generate` runs", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{name}`" in section for name in GENERATE_FILES)


def test_keras_internals_is_the_cores_own():
    """`keras_internals` counts as core because only the core imports it."""
    importers = sorted(
        str(path.relative_to(ROOT)) for path in (ROOT / "keras_attention").rglob("*.py")
        if "keras_internals" in path.read_text(encoding="utf-8")
        and path.name != "keras_internals.py")
    assert importers and all(name.startswith(CORE) for name in importers), importers
