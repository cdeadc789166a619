"""The `keras-attention` console script as a shell sees it: exit status, stdout, and
one line on stderr for every failure a user can cause. The commands run on a tiny
real run folder here; on trained runs in examples_*_test.py and export_test.py."""

import io
import json
import os
import subprocess
import sys
import types

import keras
import pytest

from keras_attention import cli, data, recipes, runs
from keras_attention.models import Seq2SeqModel, transformer_seq2seq
from tests.package_layers_test import TOOLKIT
from tests.run_in_turn import CONSOLE_SCRIPT, run_in_turn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_console_script(monkeypatch, *args):
    """What the installed `keras-attention` script does: `sys.exit(script())`
    (its immediate exit once `generate` has answered is a `SystemExit` here)."""
    monkeypatch.setattr(sys, "argv", ["keras-attention", *args])
    monkeypatch.setattr(cli.os, "_exit", sys.exit)
    with pytest.raises(SystemExit) as exit_info:
        sys.exit(cli.script())
    return exit_info.value.code


def _one_error_line(code, capsys):
    """The one line a failure prints: SystemExit's message (printed by Python
    on exit, status 1) or argparse's (printed to stderr, status 2)."""
    err = capsys.readouterr().err
    if isinstance(code, str):
        assert err == ""
        lines = [code]
    else:
        assert code == 2
        lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("keras-attention: error: ")
    assert "Traceback" not in lines[0]
    return lines[0]


#: A line of more tokens than `run_dir`'s source length (24); one of exactly 24.
TOO_LONG = "March 3, 2021, March 3, 2021"
AT_THE_LIMIT = "March 3, 2021 March 3, 2021"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny untrained translation run (greedy, 8 target tokens, sources of
    at most 24 tokens: `TOO_LONG` has 25)."""
    pairs = data.make_date_pairs(200)
    tokenizer = data.train_tokenizer([s for p in pairs for s in p], 80)
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(tokenizer.vocabulary_size(), num_layers=1, hidden_dim=16,
                                num_heads=2, intermediate_dim=16, max_length=32,
                                **data.special_token_ids(tokenizer))
    path = tmp_path_factory.mktemp("cli") / "run"
    runs.save_run(path, model, tokenizer, tokenizer, recipe="translation", config={},
                  scores={}, decoding={"source_length": 24, "target_length": 8,
                                       "strategy": "greedy", "num_beams": 1})
    return path


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("March 3, 2021\t2021-03-03\nMay 1, 1999\t1999-05-01\n", encoding="utf-8")
    return path


## What works


def _toolkit_files_run_by(function):
    """The files of the toolkit's parts (`tests/package_layers_test.TOOLKIT`:
    pretrained, runs, recipes, export, cli) whose code runs during
    `function()`, relative to the package."""
    package = os.path.join(ROOT, "keras_attention") + os.sep
    ran = set()

    def record(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(package):
            ran.add(os.path.relpath(name, package))

    sys.setprofile(record)
    try:
        function()
    finally:
        sys.setprofile(None)
    return sorted(name for name in ran if name.split(os.sep)[0].removesuffix(".py") in TOOLKIT)


@pytest.mark.large
def test_generate_writes_one_line_per_input_line(run_dir, tmp_path, capsys):
    """Also: one generate call runs the code of at most 10 toolkit files
    (the CLI, the run folder's reader and its text-to-text path); the layers,
    models, decoding and data it reaches are the library's core."""
    (tmp_path / "in.txt").write_bytes("\ufeffMarch 3, 2021\r\nmai 1er, 2003 ünïcode\n".encode())
    toolkit_files = _toolkit_files_run_by(lambda: cli.main([
        "generate", str(run_dir), "--input", str(tmp_path / "in.txt"),
        "--output", str(tmp_path / "out.txt")]))
    assert "cli.py" in toolkit_files and len(toolkit_files) <= 10, toolkit_files
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    assert lines == runs.open_run(run_dir).generate(["March 3, 2021", "mai 1er, 2003 ünïcode"])
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.txt"]  # no temporary file left


class _Terminal(io.StringIO):
    """Lines typed at a terminal: before handing out a line, it checks that
    every earlier line was answered on `stdout`, or refused with an error
    line on `stderr` (and flushed)."""

    def __init__(self, lines, stdout, stderr=None):
        super().__init__()
        self.lines, self.stdout, self.stderr, self.read = lines, stdout, stderr, 0

    def isatty(self):
        return True

    def _answered(self):
        refused = self.stderr.getvalue().splitlines() if self.stderr else []
        return self.stdout.getvalue().count("\n") + sum(
            line.startswith("keras-attention: error: ") for line in refused)

    def __iter__(self):
        for line in self.lines:
            assert self._answered() == self.read, "an earlier line unanswered"
            self.read += 1
            yield line + "\n"


def test_lines_typed_at_a_terminal_are_answered_one_by_one(run_dir, monkeypatch):
    stdout = io.StringIO()
    typed = ["March 3, 2021", "", "the 1st of may, 1999"]
    monkeypatch.setattr(sys, "stdin", _Terminal(typed, stdout))
    monkeypatch.setattr(sys, "stdout", stdout)
    cli.main(["generate", str(run_dir)])
    expected = runs.open_run(run_dir).generate([typed[0], typed[2]])
    assert stdout.getvalue().splitlines() == [expected[0], "", expected[1]]


def test_a_line_too_long_typed_at_a_terminal_is_one_error_line_and_the_next_is_read(
        run_dir, monkeypatch):
    stdout, stderr = io.StringIO(), io.StringIO()
    typed = ["March 3, 2021", TOO_LONG, "May 1, 1999"]
    monkeypatch.setattr(sys, "stdin", _Terminal(typed, stdout, stderr))
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    cli.main(["generate", str(run_dir)])
    assert stdout.getvalue().splitlines() == runs.open_run(run_dir).generate(typed[::2])
    [line] = stderr.getvalue().splitlines()
    assert line.startswith("keras-attention: error: Argument `texts` holds a line longer ")
    assert "line 1 has 25 tokens, more than the run's source length of 24" in line
    assert "--truncate" in line and line.endswith("Received: texts[0] of 25 tokens")
    stdout, stderr = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdin", _Terminal(typed, stdout, stderr))
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    cli.main(["generate", str(run_dir), "--truncate"])
    assert stdout.getvalue().splitlines() == runs.open_run(run_dir).generate(typed,
                                                                            truncate=True)
    assert "keras-attention: error" not in stderr.getvalue()


def test_the_console_script_ends_once_generate_has_answered(run_dir, monkeypatch, capsys):
    """No interpreter teardown after the answer (`os._exit(0)`, outputs
    flushed first); `--verbose` before the command changes nothing."""
    ended = []
    monkeypatch.setattr(cli.os, "_exit", ended.append)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"March 3, 2021\n")))
    monkeypatch.setattr(sys, "argv", ["keras-attention", "generate", str(run_dir)])
    cli.script()
    expected = runs.open_run(run_dir).generate(["March 3, 2021"])[0] + "\n"
    assert ended == [0] and capsys.readouterr().out == expected
    assert cli._command(["--verbose", "generate", "run"]) == "generate"
    assert cli._command(["--verbose"]) is None


def test_one_line_on_tensorflow_is_searched_without_xla(run_dir, tmp_path, monkeypatch):
    """XLA's compilation costs one line more than it saves: a single line
    runs TensorFlow's graph (same answer); two lines are compiled."""
    compiled, generate = [], Seq2SeqModel.generate

    def recording(self, *args, **kwargs):
        compiled.append(kwargs["jit_compile"])
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(Seq2SeqModel, "generate", recording)
    texts = ["March 3, 2021", "May 1, 1999"]
    for lines in (texts[:1], texts):
        (tmp_path / "in.txt").write_text("".join(line + "\n" for line in lines))
        cli.main(["generate", str(run_dir), "--input", str(tmp_path / "in.txt"),
                  "--output", str(tmp_path / "out.txt")])
        assert (tmp_path / "out.txt").read_text().splitlines() == (
            runs.open_run(run_dir).generate(lines))
    one_line_compiled = keras.config.backend() != "tensorflow"
    assert compiled == [one_line_compiled, True, True, True]
    with pytest.raises(ValueError, match=r"`jit_compile` must be a bool. Received: "
                                         r"jit_compile='no'"):
        runs.TextGenerator(None, None, generation={}, jit_compile="no")


@pytest.mark.parametrize("source", ["stdin", "file"])
def test_empty_input_is_an_empty_output_without_a_model_call(run_dir, tmp_path, capsys,
                                                             monkeypatch, source):
    monkeypatch.setattr(Seq2SeqModel, "generate", lambda *a, **k: pytest.fail("called"))
    (tmp_path / "empty.txt").write_bytes(b"")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    argv = ["generate", str(run_dir)] + (
        ["--input", str(tmp_path / "empty.txt")] if source == "file" else [])
    assert _run_console_script(monkeypatch, *argv) == 0
    assert capsys.readouterr() == ("", "")
    cli.main(argv + ["--output", str(tmp_path / "out.txt")])
    assert (tmp_path / "out.txt").read_bytes() == b""


def test_evaluate_exits_0_and_prints_only_the_scores_on_stdout(run_dir, monkeypatch, capsys,
                                                               pairs_file):
    code = _run_console_script(monkeypatch, "evaluate", str(run_dir), f"--data={pairs_file}")
    assert code is None  # exit status 0
    out, err = capsys.readouterr()
    scores = json.loads(out)  # one JSON line and nothing else
    assert set(scores) == {"bleu", "chrf", "examples"} and scores["examples"] == 2
    assert "'bleu'" not in err  # no repr of the returned dict


def test_evaluate_sends_the_progress_bar_to_stderr(run_dir, monkeypatch, capsys, pairs_file):
    def generate_with_a_bar(self, texts, strategy=None, num_beams=None, verbose=0, *,
                            truncate=False):
        assert truncate  # evaluate cuts long sources, as training does
        sys.stdout.write("1/1 ━━━━━━━━━━━━━━━━━━━━ 0s 4ms/batch\n")
        return list(texts)

    monkeypatch.setattr(runs.TextGenerator, "generate", generate_with_a_bar)
    scores = cli.main(["evaluate", str(run_dir), "--data", str(pairs_file),
                       "--max_examples=1"])
    out, err = capsys.readouterr()
    assert json.loads(out) == scores and scores["examples"] == 1
    assert "1/1" in err and "1/1" not in out


def test_export_exits_0_and_prints_one_line(monkeypatch, capsys):
    calls = []

    def fake_export_run(run_dir, export_dir, strategy=None, num_beams=None):
        calls.append((run_dir, export_dir, strategy, num_beams))
        return export_dir

    import keras_attention.export

    monkeypatch.setattr(keras_attention.export, "export_run", fake_export_run)
    code = _run_console_script(monkeypatch, "export", "runs/x", "exported/x",
                               "--strategy=greedy")
    assert code is None  # exit status 0
    assert calls == [("runs/x", "exported/x", "greedy", None)]
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "Exported runs/x to exported/x (serving signature: strings -> strings)."]
    assert "exported/x" not in err
    assert cli.main(["export", "runs/x", "exported/y"]) == "exported/y"


def test_every_command_has_a_help_line(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for command in ("train", "generate", "evaluate", "export"):
        assert any(line.split()[:1] == [command] and len(line.split()) > 1
                   for line in out.splitlines()), command


def test_train_calls_the_packaged_recipes_main(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(recipes, "recipe_module", lambda name: types.SimpleNamespace(
        main=lambda argv: ran.append((name, argv)) or {"bleu": 1.0}))
    assert cli.main(["train", "translation", "--epochs=1", "--preset=quick"]) == {"bleu": 1.0}
    cli.main(["train", "question_answering", "--help"])  # the recipe's parser lists settings
    assert ran == [("translation", ["--epochs=1", "--preset=quick"]),
                   ("question_answering", ["--help"])]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--help"])
    assert exit_info.value.code == 0
    assert "question_answering" in capsys.readouterr().out


def test_train_imports_the_recipe_from_the_package(monkeypatch):
    imported = []
    monkeypatch.setattr(recipes.importlib, "import_module", lambda name: imported.append(name) or
                        types.SimpleNamespace(main=lambda argv: argv))
    assert cli.main(["train", "summarization", "--epochs=2"]) == ["--epochs=2"]
    assert imported == ["keras_attention.recipes.summarization"]


## Each failure: one line, a non-zero status, no traceback


def test_a_bad_recipe_setting_is_one_line(monkeypatch, capsys):
    def refuse(argv):
        raise ValueError("Argument `epochs` must be a positive integer. Received: epochs=-1")

    monkeypatch.setattr(recipes, "recipe_module", lambda name: types.SimpleNamespace(main=refuse))
    code = _run_console_script(monkeypatch, "train", "translation", "--epochs=-1")
    assert _one_error_line(code, capsys) == (
        "keras-attention: error: Argument `epochs` must be a positive integer. "
        "Received: epochs=-1")


@pytest.mark.parametrize("argv, message", [
    (["train"], "required: recipe"),
    (["train", "poetry"], "invalid choice: 'poetry'"),
    (["generate", "run", "--num_beams", "0"], "--num_beams: must be a positive integer, got '0'"),
    (["generate", "run", "--num_beams=-2"], "must be a positive integer, got '-2'"),
    (["evaluate", "run", "--data=x", "--num_beams=two"], "positive integer, got 'two'"),
    (["evaluate", "run", "--data=x", "--max_examples=-1"], "--max_examples: must be an integer"),
    (["export", "run", "out", "--num_beams=0"], "--num_beams: must be a positive integer"),
    (["export", "run", "out", "--strategy=top_k"], "invalid choice: 'top_k'"),
    (["generate", "run", "--beams=2"], "unrecognized arguments: --beams=2"),
    (["generate", "run", "--truncate=maybe"], "--truncate: must be true or false, got 'maybe'"),
    (["evaluate", "run"], "required: --data"),
])
def test_bad_arguments_are_one_line(monkeypatch, capsys, argv, message):
    code = _run_console_script(monkeypatch, *argv)
    assert message in _one_error_line(code, capsys)


def _broken_copy(run_dir, tmp_path, name, content):
    import shutil

    broken = shutil.copytree(run_dir, tmp_path / "broken")
    if content is None:
        os.remove(broken / name)
    else:
        (broken / name).write_bytes(content)
    return broken


@pytest.mark.parametrize("name, content, message", [
    ("config.json", None, "config.json is missing"),
    ("config.json", b'{"recipe": "transl', "config.json is not valid JSON"),
    ("model.keras", None, "model.keras is missing"),
    ("model.keras", b"PK\x03\x04 truncated", "model.keras is not a .keras archive"),
    ("target.spm", b"\x00garbage", "target.spm is not a SentencePiece model"),
])
def test_a_missing_or_corrupt_run_file_is_one_line_naming_it(run_dir, tmp_path, monkeypatch,
                                                             capsys, name, content, message):
    broken = _broken_copy(run_dir, tmp_path, name, content)
    (tmp_path / "pairs.tsv").write_text("March 3, 2021\t2021-03-03\n")
    for command in (["generate", str(broken), "--input", os.devnull],
                    ["evaluate", str(broken), f"--data={tmp_path / 'pairs.tsv'}"],
                    ["export", str(broken), str(tmp_path / "out")]):
        line = _one_error_line(_run_console_script(monkeypatch, *command), capsys)
        assert message in line and str(broken / name) in line, (command, line)
        assert "not found" not in line.lower() or content is None
    assert not (tmp_path / "out").exists()


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path, monkeypatch, capsys):
    for folder in (tmp_path, tmp_path / "nothing"):
        code = _run_console_script(monkeypatch, "generate", str(folder))
        assert "Received: run_dir=" in _one_error_line(code, capsys)


def test_input_that_is_not_utf8_names_the_file_and_line(run_dir, tmp_path, monkeypatch, capsys):
    (tmp_path / "in.txt").write_bytes(b"March 3, 2021\nMai \xe9t\xe9 2003\n")
    code = _run_console_script(monkeypatch, "generate", str(run_dir), "--input",
                               str(tmp_path / "in.txt"))
    line = _one_error_line(code, capsys)
    assert f"{tmp_path / 'in.txt'}, line 2, byte 5" in line and "UTF-8" in line
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ok\n\xff\n")))
    line = _one_error_line(_run_console_script(monkeypatch, "generate", str(run_dir)), capsys)
    assert "<stdin>, line 2, byte 1" in line


@pytest.mark.parametrize("output", [True, False])
def test_a_line_too_long_is_one_line_naming_the_limit_and_nothing_is_written(
        run_dir, tmp_path, monkeypatch, capsys, output):
    monkeypatch.setattr(Seq2SeqModel, "generate", lambda *a, **k: pytest.fail("called"))
    (tmp_path / "in.txt").write_text(f"March 3, 2021\n{AT_THE_LIMIT}\n{TOO_LONG}\nMay 1\n",
                                     encoding="utf-8")
    argv = ["generate", str(run_dir), "--input", str(tmp_path / "in.txt")]
    for flags in ([], ["--truncate=false"]):
        more = ["--output", str(tmp_path / "out.txt")] if output else []
        code = _run_console_script(monkeypatch, *argv, *more, *flags)
        assert capsys.readouterr() == ("", "")  # nothing on stdout
        line = _one_error_line(code, capsys)  # status 1 (a message)
        assert "line 3 has 25 tokens, more than the run's source length of 24" in line
        assert "`--truncate` on the command line" in line
        assert line.endswith("Received: texts[2] of 25 tokens")
        assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("flag", ["--truncate", "--truncate=true"])
def test_truncate_answers_a_line_too_long_with_its_first_tokens(run_dir, tmp_path, flag):
    lines = ["March 3, 2021", TOO_LONG, "May 1"]
    (tmp_path / "in.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    cli.main(["generate", str(run_dir), "--input", str(tmp_path / "in.txt"),
              "--output", str(tmp_path / "out.txt"), flag])
    answers = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    run = runs.open_run(run_dir)
    assert answers == run.generate(lines, truncate=True)
    first_tokens = run.source_tokenizer.detokenize([run.source_tokenizer(TOO_LONG)[:24]])[0]
    assert answers[1] == run.generate([first_tokens])[0]


def test_missing_input_and_data_files_are_one_line(run_dir, tmp_path, monkeypatch, capsys):
    code = _run_console_script(monkeypatch, "generate", str(run_dir), "--input",
                               str(tmp_path / "missing.txt"))
    assert "`--input` must be a readable file (No such file or directory). Received: " \
           "--input=" in _one_error_line(code, capsys)
    code = _run_console_script(monkeypatch, "evaluate", str(run_dir), "--data",
                               str(tmp_path / "missing.tsv"))
    assert "`--data` must be a file (no such file)" in _one_error_line(code, capsys)
    code = _run_console_script(monkeypatch, "generate", str(run_dir), "--input",
                               str(tmp_path), "--output", str(tmp_path / "out.txt"))
    assert "`--input` must be a readable file" in _one_error_line(code, capsys)
    assert not (tmp_path / "out.txt").exists()
    code = _run_console_script(monkeypatch, "generate", str(run_dir), "--output", str(tmp_path))
    assert "`--output` must be a file, not a folder" in _one_error_line(code, capsys)


def test_a_malformed_data_file_is_one_line_naming_file_and_line(run_dir, tmp_path,
                                                                monkeypatch, capsys):
    (tmp_path / "pairs.tsv").write_text("March 3, 2021\t2021-03-03\nno tab here\n")
    code = _run_console_script(monkeypatch, "evaluate", str(run_dir), "--data",
                               str(tmp_path / "pairs.tsv"))
    line = _one_error_line(code, capsys)
    assert str(tmp_path / "pairs.tsv") in line and "line 2" in line


def test_a_refused_export_dir_is_one_line(run_dir, tmp_path, monkeypatch, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    for export_dir, what in ((tmp_path / "taken", "a folder that is not empty"),
                             (tmp_path / "taken" / "file", "a file")):
        code = _run_console_script(monkeypatch, "export", str(run_dir), str(export_dir))
        line = _one_error_line(code, capsys)
        assert line.startswith("keras-attention: error: Argument `export_dir`") and what in line
    assert os.listdir(tmp_path / "taken") == ["file"]


@pytest.mark.large
def test_the_installed_script_prints_one_line_and_no_traceback(run_dir, tmp_path):
    """The console script in a fresh process (`tests.run_in_turn`: both
    failures in turn in one process): status 1, one stderr line each."""
    (tmp_path / "in.txt").write_bytes(b"\xff\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{")
    (tmp_path / "bad" / "model.keras").write_bytes(b"")
    cases = [(["generate", str(run_dir), "--input", str(tmp_path / "in.txt")], "line 1, byte 1"),
             (["evaluate", str(tmp_path / "bad"), "--data", str(tmp_path / "in.txt")],
              "config.json is not valid JSON")]
    results = run_in_turn([[CONSOLE_SCRIPT, *argv] for argv, _ in cases])
    for (_, message), (status, stdout, stderr) in zip(cases, results, strict=True):
        assert status == 1, stderr[-2000:]
        ours = [line for line in stderr.splitlines() if "keras-attention" in line]
        assert len(ours) == 1 and ours[0].startswith("keras-attention: error: ")
        assert message in ours[0]
        assert "Traceback" not in stderr
        assert stdout == ""


def test_a_recipe_module_this_installation_lacks_is_one_line(monkeypatch, capsys):
    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(recipes.importlib, "import_module", missing)
    line = _one_error_line(_run_console_script(monkeypatch, "train", "translation"), capsys)
    assert "keras_attention.recipes.translation is missing" in line
    monkeypatch.setattr(recipes.importlib, "import_module", lambda name: (_ for _ in ()).throw(
        ModuleNotFoundError("No module named 'keras'", name="keras")))
    with pytest.raises(ModuleNotFoundError, match="keras"):  # not a user error
        cli.main(["train", "translation"])


def test_export_on_another_backend_is_one_line_naming_it(run_dir, tmp_path):
    process = subprocess.run(
        [sys.executable, "-m", "keras_attention.cli", "export", str(run_dir),
         str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT, timeout=300,
        env=dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
                 PYTHONWARNINGS="ignore"))
    assert process.returncode == 1, process.stderr[-2000:]
    assert "Traceback" not in process.stderr
    ours = [line for line in process.stderr.splitlines() if "keras-attention" in line]
    assert len(ours) == 1 and "run it with KERAS_BACKEND=tensorflow" in ours[0]
    assert ours[0].endswith("Received: backend='jax'")
    assert not (tmp_path / "out").exists()


def test_generate_output_inside_a_run_folder_is_refused_before_any_work(run_dir, tmp_path,
                                                                        monkeypatch, capsys):
    (tmp_path / "in.txt").write_text("March 3, 2021\n", encoding="utf-8")
    other = tmp_path / "other_run"
    other.mkdir()
    (other / runs.MARKER).write_text("a run")
    before = {name: (run_dir / name).read_bytes() for name in os.listdir(run_dir)}
    monkeypatch.setattr(runs, "open_run", lambda *a: pytest.fail("the run was loaded"))
    for output in (run_dir / "model.keras", run_dir / "config.json", run_dir / "new.txt",
                   run_dir / "sub" / "out.txt", other / "out.txt"):
        code = _run_console_script(monkeypatch, "generate", str(run_dir), "--input",
                                   str(tmp_path / "in.txt"), "--output", str(output))
        line = _one_error_line(code, capsys)
        assert "`--output` must not be inside a run folder" in line
        assert line.endswith(f"Received: --output={str(output)!r}")
    assert {name: (run_dir / name).read_bytes() for name in os.listdir(run_dir)} == before
    assert os.listdir(other) == [runs.MARKER]
