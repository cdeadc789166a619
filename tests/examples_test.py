"""The README's main job, on a small configuration."""

import importlib
import importlib.util
import pathlib
import runpy
import sys

import pytest

from keras_attention import cli
from tests.run_in_turn import run_in_turn

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_demo():
    spec = importlib.util.spec_from_file_location("reverse_demo",
                                                  ROOT / "examples" / "reverse_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.large
def test_reverse_demo_learns_to_reverse_and_to_align(capsys):
    demo = load_demo()
    # 4 epochs: 1.0 greedy, beam and anti-diagonal on this machine (6 were used before).
    # Whole batches of 64 (3008 = 47 x 64, 128 = 2 x 64): one compiled step
    # for training and one for validation.
    config = dict(demo.get_config(), num_train=3008, num_test=128, epochs=4, max_length=6)
    metrics = demo.main(config)
    assert metrics["accuracy"] >= 0.9
    assert metrics["beam_accuracy"] >= 0.9
    assert metrics["anti_diagonal"] >= 0.75
    assert "Held-out exact match" in capsys.readouterr().out


def test_reverse_demo_settings_are_checked():
    demo = load_demo()
    assert demo.parse_settings(["--epochs=2", "--attention=luong_dot"]) == dict(
        demo.get_config(), epochs=2, attention="luong_dot")
    with pytest.raises(ValueError, match=r"`attention` must be one of .*Received: "
                                         r"attention='dot'"):
        demo.parse_settings(["--attention=dot"])


@pytest.mark.parametrize("recipe", ["translation", "summarization", "question_answering"])
def test_each_recipe_script_runs_the_packaged_recipe_with_its_arguments(recipe, monkeypatch):
    package = importlib.import_module(f"keras_attention.recipes.{recipe}")
    called = []
    monkeypatch.setattr(package, "main", lambda: called.append(sys.argv[1:]))
    monkeypatch.setattr(sys, "argv", ["train.py", "--preset=quick", "--epochs=1"])
    runpy.run_path(str(ROOT / "examples" / recipe / "train.py"), run_name="__main__")
    assert called == [["--preset=quick", "--epochs=1"]]


BAD_SETTINGS = [
    ("examples/translation/train.py", "--epochs=0", "Setting `epochs` must be >= 1"),
    ("examples/summarization/train.py", "--preset=nope", "preset"),
    ("examples/question_answering/train.py", "--num_hops=x", "num_hops"),
    ("examples/reverse_demo.py", "--attention=dot", "`attention` must be one of"),
]

@pytest.fixture(scope="module")
def bad_setting_runs():
    """`{script: (status, stdout, stderr)}` of every script of `BAD_SETTINGS`
    run on its bad setting, in one fresh process (`tests.run_in_turn`)."""
    results = run_in_turn([[script, argument] for script, argument, _ in BAD_SETTINGS])
    return {script: result for (script, _, _), result in zip(BAD_SETTINGS, results)}


@pytest.mark.parametrize("script, argument, message", BAD_SETTINGS)
@pytest.mark.large
def test_each_example_script_reports_a_bad_setting_in_one_line(script, argument, message,
                                                              bad_setting_runs):
    """In a fresh process, as a user runs it (`bad_setting_runs`: the four
    scripts in turn in one process): status 1, one stderr line naming the
    script and the setting, no traceback, nothing trained."""
    status, stdout, stderr = bad_setting_runs[script]
    assert status == 1, stderr[-2000:]
    assert "Traceback" not in stderr
    ours = [line for line in stderr.splitlines() if line.startswith(script)]
    assert len(ours) == 1 and ours[0].startswith(f"{script}: error: "), stderr[-2000:]
    assert message in ours[0] and "Received:" in ours[0]
    assert "Epoch" not in stdout


def test_run_script_passes_results_and_reports_only_what_the_user_caused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["examples/x/train.py"])
    assert cli.run_script(lambda: {"bleu": 1.0}) == {"bleu": 1.0}

    def bad_file():
        raise FileNotFoundError(2, "No such file or directory", "data.tsv")

    with pytest.raises(SystemExit) as stop:
        cli.run_script(bad_file)
    assert str(stop.value.code).startswith("examples/x/train.py: error: ")
    assert "data.tsv" in str(stop.value.code)

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as stop:
        cli.run_script(interrupted)
    assert stop.value.code == 130
    assert capsys.readouterr().err == "examples/x/train.py: error: interrupted\n"

    def our_bug():
        raise TypeError("not the user's doing")

    with pytest.raises(TypeError):  # a defect keeps its traceback
        cli.run_script(our_bug)
