"""Trained things made once per test run, shared by every xdist worker.

`made_once(tmp_path_factory, name, make)` calls `make(folder)` the first
time any worker asks for `name` in this test run and returns the folder and
what `make` returned (JSON) to every later caller, in any worker: a file
lock in the run's shared temporary root serializes the first build, a
`.json` file beside the folder records that it is complete. A build that
raised leaves no record, so the next caller builds again (and fails the
same way, in its own test).

The fixtures of tests/conftest.py (`quick_translation_run`, ...) are built
with it; a test that changes a shared folder copies it first.

With `TESTS_MADE_ONCE_DIR` set (CI sets it for all its test runs), things
are made once across test runs too: in `<that folder>/<backend>/`, so that
`make test` and `make test-large` share what they both read, and, with
`across_backends=True` (for what a TensorFlow subprocess makes whatever the
backend of the run), in `<that folder>/any_backend/`, which the JAX and
torch runs share.
"""

import contextlib
import fcntl
import json
import os
import pathlib


def shared_root(tmp_path_factory):
    """The temporary folder every worker of this test run shares: under
    xdist each worker's base folder is `<root>/popen-gwN`."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _made_once_root(tmp_path_factory, across_backends):
    across_runs = os.environ.get("TESTS_MADE_ONCE_DIR")
    if not across_runs:
        return shared_root(tmp_path_factory) / "made_once"
    import keras

    return pathlib.Path(across_runs) / (
        "any_backend" if across_backends else keras.backend.backend())


@contextlib.contextmanager
def _locked(path):
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def made_once(tmp_path_factory, name, make, across_backends=False):
    """`(folder, result)`: `folder` (a `pathlib.Path` that `make` fills) and
    `make(folder)`'s JSON-serializable result, built once per test run (and
    once per CI run: `TESTS_MADE_ONCE_DIR`). `across_backends=True` says
    that what `make` builds does not depend on the backend of this run."""
    root = _made_once_root(tmp_path_factory, across_backends)
    root.mkdir(parents=True, exist_ok=True)
    folder, record = root / name, root / f"{name}.json"
    with _locked(root / f"{name}.lock"):
        if not record.exists():
            result = make(folder)
            record.write_text(json.dumps(result), encoding="utf-8")
    return folder, json.loads(record.read_text(encoding="utf-8"))
