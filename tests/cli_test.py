"""The `keras-attention` console script as a shell sees it: exit status and
stdout. The commands themselves run on real runs in
examples_translation_test.py and export_test.py; here they are stubbed."""

import json
import sys

import pytest

from keras_attention import cli


def _run_console_script(monkeypatch, *args):
    """What the installed `keras-attention` script does: `sys.exit(main())`."""
    monkeypatch.setattr(sys, "argv", ["keras-attention", *args])
    with pytest.raises(SystemExit) as exit_info:
        sys.exit(cli.main())
    return exit_info.value.code


class _FakeRun:
    """A translation run whose generation writes a progress bar to stdout, as Keras does."""

    recipe = "translation"
    config = {}

    def __init__(self, run_dir):
        self.run_dir = run_dir

    def generate(self, texts, strategy=None, num_beams=None, verbose=1):
        sys.stdout.write("1/1 ━━━━━━━━━━━━━━━━━━━━ 0s 4ms/batch\n")
        return ["2021-03-03" for _ in texts]


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("March 3, 2021\t2021-03-03\n", encoding="utf-8")
    return path


def test_evaluate_exits_0_and_prints_only_the_scores_on_stdout(monkeypatch, capsys, pairs_file):
    monkeypatch.setattr(cli, "SavedRun", _FakeRun)
    code = _run_console_script(monkeypatch, "evaluate", "runs/x", f"--data={pairs_file}")
    assert code is None  # exit status 0
    out, err = capsys.readouterr()
    scores = json.loads(out)  # one JSON line and nothing else
    assert scores == pytest.approx({"bleu": 100.0, "chrf": 100.0, "examples": 1})
    assert "1/1" in err  # the progress bar went to stderr
    assert "'bleu'" not in err  # no repr of the returned dict


def test_evaluate_still_returns_the_scores_to_python_callers(monkeypatch, capsys, pairs_file):
    monkeypatch.setattr(cli, "SavedRun", _FakeRun)
    scores = cli.main(["evaluate", "runs/x", "--data", str(pairs_file)])
    assert scores == pytest.approx({"bleu": 100.0, "chrf": 100.0, "examples": 1})


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


def test_a_refused_export_exits_with_the_message(monkeypatch, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    code = _run_console_script(monkeypatch, "export", str(tmp_path), str(tmp_path / "taken"))
    assert isinstance(code, str) and code.startswith("keras-attention: Argument `export_dir`")


def test_every_command_has_a_help_line(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for command in ("train", "generate", "evaluate", "export"):
        assert any(line.split()[:1] == [command] and len(line.split()) > 1
                   for line in out.splitlines()), command


def test_train_help_reaches_the_recipe_and_train_alone_lists_the_recipes(monkeypatch, capsys):
    ran = {}
    monkeypatch.setattr(cli.runpy, "run_path", lambda path, run_name: ran.update(
        path=path, argv=list(sys.argv)))
    cli.main(["train", "translation", "--help"])
    assert ran["path"].endswith("examples/translation/train.py")
    assert ran["argv"][1:] == ["--help"]  # the recipe's parser lists --preset and the settings
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--help"])
    assert exit_info.value.code == 0
    assert "question_answering" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train"])
    assert exit_info.value.code == 2
    assert "required: recipe" in capsys.readouterr().err
