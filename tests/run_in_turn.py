"""Command lines run one after the other in one fresh Python process, each as
a user's shell would run it, so that TensorFlow is imported once for all.

`run_in_turn(commands)` returns `[(status, stdout, stderr)]`, one per
command: `["keras-attention", *args]` is the installed console script
(`sys.exit(keras_attention.cli.main())`, `sys.argv` as `python -c` sets
it; without the script's immediate exit after `generate`, which would end
the process); `[script, *args]` is `python script args` (`script` run as `__main__`,
`sys.path[0]` its folder). Each exit is what the interpreter makes of it: a
`SystemExit` message printed to stderr with status 1, an uncaught
exception's traceback on stderr with status 1.
"""

import contextlib
import io
import json
import os
import pathlib
import runpy
import subprocess
import sys
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONSOLE_SCRIPT = "keras-attention"


def run_in_turn(commands, timeout=300):
    """`[(status, stdout, stderr)]` of `commands` (lists of strings), run in
    one fresh process from the repository root."""
    process = subprocess.run(
        [sys.executable, __file__, json.dumps(commands)], capture_output=True, text=True,
        cwd=ROOT, timeout=timeout,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore",
                 PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                          os.environ.get("PYTHONPATH")]))))
    assert process.returncode == 0, process.stderr[-2000:]
    return [tuple(result) for result in json.loads(process.stdout.strip().splitlines()[-1])]


def _run(command):
    program, *args = command
    if program == CONSOLE_SCRIPT:
        from keras_attention import cli

        sys.argv, sys.path[0] = ["-c", *args], ""
        sys.exit(cli.main())
    sys.argv = [program, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(program))
    runpy.run_path(program, run_name="__main__")


def _status(command):
    try:
        _run(command)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def main(commands):
    results = []
    for command in commands:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = _status(command)
        results.append([status, out.getvalue(), err.getvalue()])
    print(json.dumps(results))


if __name__ == "__main__":
    sys.path[0] = ""  # as `python -c` from the repository root, not tests/ (its packages)
    main(json.loads(sys.argv[1]))
