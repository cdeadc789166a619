"""The `keras-attention` command line: train a recipe, evaluate and use a saved run.

```
keras-attention train translation | summarization | question_answering [--key=value ...]
keras-attention generate RUN_DIR [--input FILE] [--output FILE] [--strategy beam] [--truncate]
keras-attention evaluate RUN_DIR --data FILE   # BLEU/chrF, ROUGE or EM/F1, by recipe
keras-attention export RUN_DIR EXPORT_DIR [--strategy beam] [--num_beams N]  # a SavedModel
keras-attention export RUN_DIR OUT_DIR --format huggingface [--overwrite=true]  # transformers
keras-attention convert HF_DIR RUN_DIR [--recipe translation] [--overwrite=true]  # a checkpoint
keras-attention serve RUN_DIR [--port 8501] [--max_batch_size 32]  # TensorFlow Serving's REST API
```

A run directory is what a recipe saves (see `keras_attention.runs`); the
commands read it through `keras_attention.runs.open_run`. `generate` refuses
an input line longer than the run's source length (before writing anything)
unless `--truncate` asks for it to be cut to that length. Every failure a
user can cause (a missing or corrupt run folder, a file that is not UTF-8, a
malformed data file, a bad argument) ends with one line on stderr,
`keras-attention: error: ...`, and a non-zero exit status.
"""

import argparse
import contextlib
import json
import os
import sys
import warnings

from keras_attention import files, recipes, runs, runtime
from keras_attention.runs import registry

# The errors the library raises for what a user gave it: a ValueError naming
# the argument (RunFolderError and UnicodeDecodeError are ValueErrors too) or
# an OSError naming the file.
_USER_ERRORS = (ValueError, OSError)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, as the commands' are."""

    def error(self, message):
        self.exit(2, f"keras-attention: error: {message} (see `{self.prog} --help`)\n")


def _parsed(text, convert, accepted, requirement):
    """`convert(text)` where `accepted` holds for it, else argparse's error
    `must be REQUIREMENT, got 'TEXT'`."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not accepted(value):
        raise argparse.ArgumentTypeError(f"must be {requirement}, got {text!r}")
    return value


def _positive_int(text):
    return _parsed(text, int, lambda value: value > 0, "a positive integer")


def _non_negative_int(text):
    return _parsed(text, int, lambda value: value >= 0, "an integer >= 0")


def _non_negative_float(text):
    return _parsed(text, float, lambda value: value >= 0, "a number >= 0")


def _port(text):
    return _parsed(text, int, lambda value: 0 <= value <= 65535, "an integer in [0, 65535]")


def train(recipe, overrides):
    """Runs a recipe's `main` with `--key=value` overrides; returns its scores."""
    return recipes.recipe_main(recipe)(list(overrides))


def _read_lines(path):
    """The lines of a UTF-8 file (or of stdin, `path=None`), without line ends.

    Raises:
        ValueError: naming the file, the line and the byte that is not UTF-8,
            or a file that cannot be read.
    """
    name = path if path else "<stdin>"
    if path:
        try:
            with open(path, "rb") as file:
                content = file.read()
        except OSError as error:
            raise ValueError(
                f"Argument `--input` must be a readable file ({error.strerror or error}). "
                f"Received: --input={path!r}"
            ) from None
    else:
        stdin = getattr(sys.stdin, "buffer", None)
        content = stdin.read() if stdin is not None else sys.stdin.read().encode("utf-8")
    lines = []
    for number, raw in enumerate(content.splitlines(), 1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
            raw = raw[3:]
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(
                f"Argument `--input` must be UTF-8 text: {name}, line {number}, byte "
                f"{error.start + 1}: {error.reason}. Received: --input={path!r}"
            ) from None
    return lines


def generate(args):
    """Writes one output line per line of `--input` (or stdin) to `--output`
    (or stdout). No input line, no output line (and no model call). A line
    longer than the run's source length is refused, naming it, before any
    output (`--truncate`: cut to it). Typed at a terminal (stdin is one, no
    `--input`), each line is answered as soon as it is entered, its search
    compiled once for lines of its length bucket."""
    if args.output and os.path.isdir(args.output):
        raise ValueError(
            f"Argument `--output` must be a file, not a folder. Received: --output={args.output!r}"
        )
    if args.output and _inside_a_run_folder(args.output, args.run_dir):
        raise ValueError(
            "Argument `--output` must not be inside a run folder: it would replace a file of "
            f"the run. Write the outputs elsewhere. Received: --output={args.output!r}"
        )
    import keras

    lines = _read_lines(args.input) if args.input else None
    runtime.cache_compilations()
    run = runs.open_run(args.run_dir)
    if lines is None and not args.output and _typed_at_a_terminal(sys.stdin):
        return _answer_as_typed(run, args, sys.stdin, sys.stdout)
    if lines is None:
        lines = _read_lines(None)
    if len(lines) == 1 and keras.config.backend() == "tensorflow":
        # One line: TensorFlow's graph answers it sooner than XLA compiles it.
        run.jit_compile = False
    outputs = run.generate(lines, args.strategy, args.num_beams,
                           verbose=1 if args.output else 0, truncate=args.truncate)
    text = "".join(line.replace("\n", " ") + "\n" for line in outputs)
    if args.output:
        files.write_atomically(args.output, lambda file: file.write(text.encode("utf-8")))
    else:
        sys.stdout.write(text)


def _typed_at_a_terminal(stream):
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _answer_as_typed(run, args, stdin, stdout, stderr=None):
    """Answers each line of a terminal when it is entered, until end of input
    (Ctrl-D); an empty line gives an empty line. A line longer than the run's
    source length (without `--truncate`) gets one error line on `stderr`
    (default: `sys.stderr`) and no answer; the next line is read."""
    stderr = sys.stderr if stderr is None else stderr
    for line in stdin:
        line = line.rstrip("\r\n")
        try:
            answer = run.generate([line], args.strategy, args.num_beams,
                                  truncate=args.truncate)[0] if line else ""
        except runs.SourceTooLongError as error:
            print(_error_line(error), file=stderr, flush=True)
            continue
        stdout.write(answer.replace("\n", " ") + "\n")
        stdout.flush()


def _inside_a_run_folder(path, run_dir):
    """Whether `path` (resolved) lies in `run_dir` or in any run folder
    (`runs.is_run_folder`) above it."""
    real = os.path.realpath(path)
    if os.path.commonpath([real, os.path.realpath(run_dir)]) == os.path.realpath(run_dir):
        return True
    folder = os.path.dirname(real)
    while True:
        if runs.is_run_folder(folder):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def evaluate(args):
    """Prints the recipe's scores of a saved run on a file: BLEU and chrF
    (translation, TSV pairs), ROUGE (summarization, JSONL), exact match and
    F1 (question answering, SQuAD-style JSON/JSONL)."""
    if not os.path.isfile(args.data):
        problem = "a folder" if os.path.isdir(args.data) else "no such file"
        raise ValueError(
            f"Argument `--data` must be a file ({problem}). Received: --data={args.data!r}"
        )
    runtime.cache_compilations()
    run = runs.open_run(args.run_dir)
    # Keras writes its progress bar to stdout; stdout is for the scores alone,
    # so that `keras-attention evaluate ... > scores.json` is one JSON line.
    with contextlib.redirect_stdout(sys.stderr):
        scores = run.evaluate(args.data, args.max_examples or None, args.strategy,
                              args.num_beams, verbose=1)
    print(json.dumps(scores))
    return scores


def export(args):
    """Writes a SavedModel serving strings -> generated strings
    (`keras_attention.export.export_run`), or with `--format huggingface` a
    Hugging Face checkpoint folder
    (`keras_attention.export.huggingface.export_huggingface`)."""
    if args.format == "huggingface":
        from keras_attention.export.huggingface import CTranslate2Warning, export_huggingface

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CTranslate2Warning)
            path = export_huggingface(args.run_dir, args.export_dir, strategy=args.strategy,
                                      num_beams=args.num_beams, overwrite=args.overwrite)
        for warning in caught:
            if issubclass(warning.category, CTranslate2Warning):
                print(f"keras-attention: warning: {warning.message}", file=sys.stderr)
            else:
                warnings.showwarning(warning.message, warning.category, warning.filename,
                                     warning.lineno)
        print(f"Exported {args.run_dir} to {path} (a Hugging Face checkpoint folder).")
        return path
    if args.overwrite:
        raise ValueError("Argument `--overwrite` applies to `--format huggingface` only (a "
                         "SavedModel is written to a new or empty folder). Received: "
                         "overwrite=True")
    from keras_attention.export import export_run

    path = export_run(args.run_dir, args.export_dir, strategy=args.strategy,
                      num_beams=args.num_beams)
    print(f"Exported {args.run_dir} to {path} (serving signature: strings -> strings).")
    return path


def convert(args):
    """Writes a run folder of a Hugging Face checkpoint folder
    (`keras_attention.runs.convert.convert_checkpoint`)."""
    from keras_attention.runs.convert import convert_checkpoint

    path = convert_checkpoint(args.checkpoint_dir, args.run_dir, recipe=args.recipe,
                              overwrite=args.overwrite)
    print(f"Converted {args.checkpoint_dir} to the run folder {path}.")
    return path


def serve(args):
    """Serves a run folder over TensorFlow Serving's REST protocol until
    SIGTERM or SIGINT (`keras_attention.server.serve`)."""
    _require_serve_extra()
    from keras_attention import server

    settings = server.ServerSettings(
        host=args.host, port=args.port, model_name=args.model_name,
        max_batch_size=args.max_batch_size, batch_timeout_ms=args.batch_timeout_ms,
        max_queue=args.max_queue, strategy=args.strategy, num_beams=args.num_beams,
        max_body_bytes=args.max_body_bytes, drain_timeout_s=args.drain_timeout_s,
        max_source_tokens=args.max_source_tokens,
        continuous_batching=args.continuous_batching,
        verbose=args.serve_verbose or args.verbose)
    server.serve(args.run_dir, settings)


def _require_serve_extra():
    """Raises a ValueError (one line) where the `serve` extra is missing."""
    import importlib.util

    missing = [name for name in ("aiohttp", "prometheus_client")
               if importlib.util.find_spec(name) is None]
    if missing:
        raise ValueError(
            f"`keras-attention serve` needs the `serve` extra ({', '.join(missing)} missing): "
            f"pip install 'keras-attention-kit[serve]'")


def _add_serve_parser(commands):
    sub = commands.add_parser(
        "serve", help="answer requests over HTTP (TensorFlow Serving's REST protocol)",
        description="Serves RUN_DIR at http://HOST:PORT/v1/models/NAME:predict, TensorFlow "
                    "Serving's REST protocol: {\"instances\": [\"line\", ...]} in, "
                    "{\"predictions\": [...]} out. Requests that arrive together are "
                    "decoded together. Prints `serving NAME at URL` on stderr once every "
                    "batch shape is compiled; SIGTERM or Ctrl-C answers the requests "
                    "received, then exits 0.")
    sub.add_argument("run_dir")
    sub.add_argument("--host", default="127.0.0.1",
                     help="address to listen on (default 127.0.0.1; 0.0.0.0: every interface)")
    sub.add_argument("--port", type=_port, default=8501,
                     help="TCP port (default 8501, TensorFlow Serving's REST port; 0: any free)")
    sub.add_argument("--model_name", default=None,
                     help="the NAME in /v1/models/NAME (default: the run folder's name)")
    sub.add_argument("--max_batch_size", type=_positive_int, default=32,
                     help="the most lines decoded together (default 32; 1: no batching)")
    sub.add_argument("--batch_timeout_ms", type=_non_negative_float, default=5.0,
                     help="how long a batch that is not full waits for one more line; while lines "
                          "keep arriving, up to 4 times as long (default 5)")
    sub.add_argument("--max_queue", type=_positive_int, default=1024,
                     help="the most lines waiting; beyond it 503 with Retry-After (default 1024)")
    sub.add_argument("--max_source_tokens", type=_positive_int, default=None,
                     help="the most tokens an input line may have (default: the run's source "
                          "length; less compiles fewer shapes and starts sooner)")
    sub.add_argument("--strategy", choices=["greedy", "beam"], default=None,
                     help="the search (default: the run's)")
    sub.add_argument("--num_beams", type=_positive_int, default=None,
                     help="beams of a beam search (default: the run's)")
    sub.add_argument("--continuous_batching", type=_bool, default=True, nargs="?", const=True,
                     help="true (default): with greedy decoding, a line that ends leaves "
                          "its batch at once and a waiting line joins at the next step; "
                          "false: batches run until their longest line ends")
    sub.add_argument("--max_body_bytes", type=_positive_int, default=2**20,
                     help="the largest request body, in bytes (default 1 MiB; 413 above)")
    sub.add_argument("--drain_timeout_s", type=_non_negative_float, default=30.0,
                     help="on SIGTERM, how long to keep answering the requests received "
                          "(default 30)")
    sub.add_argument("--verbose", dest="serve_verbose", action="store_true",
                     help="the warm-up's progress and one line per request on stderr")
    sub.set_defaults(function=serve)


def _bool(text):
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"must be true or false, got {text!r}")


def _parser():
    parser = _Parser(prog="keras-attention", description=__doc__.split("\n")[0])
    # Acted on by the command's entry point (keras_attention_launcher.VERBOSE_FLAG),
    # before the package is imported; accepted here so that the parser takes it.
    parser.add_argument("--verbose", action="store_true", help=(
        "show TensorFlow's C++ start-up and log lines on stderr (hidden by default)"))
    commands = parser.add_subparsers(dest="command", required=True)
    # `train RECIPE --help` reaches the recipe's own parser, which lists its
    # presets and every `--key=value` setting; `train --help` shows this one.
    train_parser = commands.add_parser(
        "train", add_help=False,
        help="run a recipe (`keras-attention train RECIPE --help` lists its settings)",
        description="Runs the recipe keras_attention.recipes.RECIPE with any `--preset=...` "
                    "and `--key=value` overrides; `keras-attention train RECIPE --help` lists "
                    "them.")
    train_parser.add_argument("recipe", nargs="?", choices=registry.recipe_names())
    helps = {"generate": "one output line per input line, with the run's decoding settings",
             "evaluate": "the recipe's scores of a run on a file, as one JSON line"}
    for name, function in (("generate", generate), ("evaluate", evaluate)):
        sub = commands.add_parser(name, help=helps[name])
        sub.add_argument("run_dir")
        sub.add_argument("--strategy", choices=["greedy", "beam"], default=None)
        sub.add_argument("--num_beams", type=_positive_int, default=None)
        sub.set_defaults(function=function)
        if name == "generate":
            sub.add_argument("--input", help="a UTF-8 file of source lines (default: stdin)")
            sub.add_argument("--output", help="where to write the outputs (default: stdout)")
            sub.add_argument("--truncate", type=_bool, default=False, nargs="?", const=True,
                             help="cut a line longer than the run's source length to it "
                                  "(default: such a line is refused, with an error naming it)")
        else:
            sub.add_argument("--data", required=True, help=(
                "translation: a TSV file of source<TAB>target; summarization: a JSONL "
                "file of document/summary; question_answering: SQuAD-style JSON/JSONL"))
            sub.add_argument("--max_examples", type=_non_negative_int, default=0,
                             help="the first N examples only (default 0: all)")
    export_parser = commands.add_parser(
        "export", help="a SavedModel (strings in, strings out) or a Hugging Face folder")
    export_parser.add_argument("run_dir")
    export_parser.add_argument("export_dir", help="a new or empty folder")
    export_parser.add_argument("--format", choices=["savedmodel", "huggingface"],
                               default="savedmodel", help="savedmodel (default): TensorFlow "
                               "Serving; huggingface: transformers and CTranslate2")
    export_parser.add_argument("--strategy", choices=["greedy", "beam"], default=None)
    export_parser.add_argument("--num_beams", type=_positive_int, default=None)
    export_parser.add_argument("--overwrite", type=_bool, default=False, nargs="?", const=True,
                               help="replace a Hugging Face folder already there")
    export_parser.set_defaults(function=export)
    convert_parser = commands.add_parser(
        "convert", help="a run folder of a Hugging Face checkpoint (Marian, BART, mBART, "
                        "Pegasus, M2M100/NLLB, T5, mT5)")
    convert_parser.add_argument("checkpoint_dir", help="a local checkpoint folder")
    convert_parser.add_argument("run_dir", help="a new or empty folder (or a run folder, "
                                                "with --overwrite=true)")
    convert_parser.add_argument("--recipe", choices=["translation", "summarization"],
                                default=None, help="the recipe `evaluate` scores it as "
                                "(default: translation for Marian, summarization otherwise)")
    convert_parser.add_argument("--overwrite", type=_bool, default=False, nargs="?", const=True,
                                help="replace a run folder already there")
    convert_parser.set_defaults(function=convert)
    _add_serve_parser(commands)
    return parser, train_parser


def _error_line(error, prog="keras-attention"):
    """`PROG: error: ...` on one line."""
    return f"{prog}: error: " + " ".join(str(error).split())


def report_user_errors(function, *args, prog="keras-attention"):
    """Returns `function(*args)`; a failure the user caused (a `ValueError`
    naming the setting, an `OSError` naming the file) ends as one line,
    `PROG: error: ...`, instead of a traceback, and an interrupt as
    `PROG: error: interrupted` with status 130. The `keras-attention` command
    and the example scripts (`examples/*/train.py`) report through it.

    Raises:
        SystemExit: with the one line (Python prints it to stderr and exits
            with status 1), or status 130 after an interrupt.
    """
    try:
        return function(*args)
    except _USER_ERRORS as error:
        raise SystemExit(_error_line(error, prog)) from None
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted", file=sys.stderr)
        raise SystemExit(130) from None


def run_script(main):
    """What an example script runs: `main()` (which reads `sys.argv`), its
    failures reported as `report_user_errors` does, named after the script
    as it was called (`examples/translation/train.py: error: ...`).

    Example (the last lines of `examples/translation/train.py`):

    ```python
    if __name__ == "__main__":
        cli.run_script(translation.main)
    ```
    """
    return report_user_errors(main, prog=sys.argv[0] or "python")


def main(argv=None):
    """Runs one command. Called from Python with a list `argv`, returns the
    command's result (the scores of `evaluate`, the folder of `export`). As
    the `keras-attention` console script calls it (`script`: `argv=None`, the
    arguments come from `sys.argv`), returns `None`: the script passes the
    result to `sys.exit`, which would print any other value and exit with
    status 1.

    Raises:
        SystemExit: for a failure the user caused, with the one line
            `keras-attention: error: ...` (the console script prints it to
            stderr and exits with status 1); status 2 for a bad argument.
    """
    parser, train_parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "train" and args.recipe is None:
        if {"-h", "--help"} & set(rest):
            train_parser.print_help()
            raise SystemExit(0)
        train_parser.error("the following arguments are required: recipe")
    if args.command != "train" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "train":
        result = report_user_errors(train, args.recipe, rest)
    else:
        result = report_user_errors(args.function, args)
    return result if argv is not None else None


def script():
    """The `keras-attention` command after its start-up
    (`keras_attention_launcher.script`, the console script, which calls
    this): `main()` with the command line;
    once `generate` has written its answer (outputs flushed, files closed), or
    `serve` has answered every request it received, the process ends at once,
    without the interpreter's teardown (TensorFlow's and JAX's, most of a
    second) that would only delay the prompt. A failure
    exits as `main` raises it (one line, status 1 or 2)."""
    main()
    if _command(sys.argv[1:]) in ("generate", "serve"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _command(argv):
    """The command of a command line (its first word not an option)."""
    return next((word for word in argv if not word.startswith("-")), None)


if __name__ == "__main__":
    script()
