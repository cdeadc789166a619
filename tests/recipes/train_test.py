"""Every recipe checks its whole configuration before any training: each bad
setting, empty split, untrainable vocabulary or foreign backup is refused with
the setting named, before the tokenizers are trained and before `fit`."""

import importlib
import json

import keras
import pytest

from keras_attention import data
from keras_attention.recipes import RECIPES
from tests.recipes import load_recipe

SMALL = {"translation": ["--num_examples=120"], "summarization": ["--num_examples=60"],
         "question_answering": ["--num_examples=60"]}
BOOLEANS = {"translation": ["overwrite", "pack"],
            "summarization": ["overwrite", "all_references", "pointer_generator",
                              "oracle_sentences", "keep_best_epoch"],
            "question_answering": ["overwrite", "linear_start", "question_first"]}


class FitCalled(Exception):
    pass


class TokenizerTrained(Exception):
    pass


@pytest.fixture
def no_training(monkeypatch):
    """`fit` and tokenizer training raise: a refusal must come before them."""
    def fit(*args, **kwargs):
        raise FitCalled

    def train_tokenizer(*args, **kwargs):
        raise TokenizerTrained

    monkeypatch.setattr(keras.Model, "fit", fit)
    monkeypatch.setattr(data, "train_tokenizer", train_tokenizer)


def refuse(recipe, tmp_path, *argv, match):
    """Runs the recipe's `main` on `argv`; it must raise a ValueError matching `match`."""
    output = tmp_path / "run"
    with pytest.raises(ValueError, match=match):
        load_recipe(recipe).main(["--preset=quick", f"--output_dir={output}", *SMALL[recipe],
                                  *argv])
    assert not output.exists()


def every_recipe_with(*cases):
    return pytest.mark.parametrize("recipe, argument, match", [
        (recipe, argument, match) for recipe in RECIPES for argument, match in cases])


@every_recipe_with(
    ("--learning_rate=-0.01", r"`learning_rate` must be > 0. Received: learning_rate=-0.01"),
    ("--epochs=0", r"`epochs` must be >= 1. Received: epochs=0"),
    ("--vocabulary_size=1", r"`vocabulary_size` must be >= 5. Received: vocabulary_size=1"),
    ("--batch_size=many", r"`batch_size` must be an integer. Received: batch_size='many'"),
    ("--precision=float16", r"`precision` must be one of .*Received: precision='float16'"),
    ("--epoch=3", r"Unknown setting `epoch`. Known settings: .*backup_dir, batch_size, .*"
                  r"Received: epoch='3'"),
)
def test_bad_settings_are_refused_before_training(recipe, argument, match, tmp_path,
                                                  no_training):
    refuse(recipe, tmp_path, argument, match=match)


@pytest.mark.parametrize("recipe, name", [
    (recipe, name) for recipe in RECIPES for name in BOOLEANS[recipe]])
def test_a_mistyped_boolean_is_refused_in_every_recipe(recipe, name, tmp_path, no_training):
    refuse(recipe, tmp_path, f"--{name}=ture",
           match=rf"`{name}` must be true or false.*Received: {name}='ture'")


@pytest.mark.parametrize("recipe", ["translation", "question_answering"])
def test_an_unknown_architecture_is_refused(recipe, tmp_path, no_training):
    refuse(recipe, tmp_path, "--architecture=lstm",
           match=r"`architecture` must be one of .*Received: architecture='lstm'")


@pytest.mark.parametrize("recipe", ["translation", "summarization"])
def test_num_beams_0_is_refused(recipe, tmp_path, no_training):
    refuse(recipe, tmp_path, "--num_beams=0", match=r"`num_beams` must be >= 1. "
                                                     r"Received: num_beams=0")


@pytest.mark.parametrize("recipe, argv, match", [
    ("translation", ["--test_fraction=0"], r"test split holds no examples.*`test_fraction`. "
                                           r"Received: test_fraction=0.0"),
    ("translation", ["--validation_fraction=0"], r"validation split holds no examples.*"
                                                 r"Received: validation_fraction=0.0"),
    ("summarization", ["--test_fraction=0.001"], r"test split.*Received: test_fraction=0.001"),
    ("summarization", ["--validation_fraction=0"], r"validation split.*"
                                                   r"Received: validation_fraction=0.0"),
    ("question_answering", ["--test_fraction=0.001"], r"test split.*"
                                                      r"Received: test_fraction=0.001"),
    ("question_answering", ["--validation_fraction=0.001"],
     r"validation split.*Received: validation_fraction=0.001"),
    ("question_answering", ["--tasks=0-3"], r"`tasks` must list bAbI tasks 1 to 20.*"
                                            r"Received: tasks='0-3'"),
])
def test_empty_splits_are_refused_naming_the_setting(recipe, argv, match, tmp_path, no_training):
    refuse(recipe, tmp_path, *argv, match=match)


@pytest.mark.tf_only("SentencePiece training through tf.data")
@pytest.mark.parametrize("recipe", ["translation", "summarization"])
def test_a_vocabulary_too_small_for_the_data_is_refused_before_fit(recipe, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setattr(keras.Model, "fit", lambda *a, **k: pytest.fail("fit was called"))
    refuse(recipe, tmp_path, "--vocabulary_size=12",
           match=r"`vocabulary_size` must be at least \d+ for this data.*"
                 r"Received: vocabulary_size=12")


def test_an_output_folder_that_is_not_a_run_is_refused_before_training(tmp_path, no_training):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my own file")
    with pytest.raises(ValueError, match=r"`output_dir`.*Received: output_dir="):
        load_recipe("translation").main(["--preset=quick", f"--output_dir={folder}"])
    assert (folder / "notes.txt").read_text() == "my own file"


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_users_folder_or_the_working_directory_as_backup_is_refused_and_kept(
        recipe, tmp_path, no_training, monkeypatch):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my own file")
    refuse(recipe, tmp_path, f"--backup_dir={folder}",
           match=rf"`backup_dir` must not be a folder holding other files.*"
                 rf"Received: backup_dir='{folder}'")
    assert (folder / "notes.txt").read_text() == "my own file"
    refuse(recipe, tmp_path, f"--backup_dir={tmp_path}",
           match=r"`backup_dir` must not be the output folder or a folder holding it")
    monkeypatch.chdir(folder)
    refuse(recipe, tmp_path, "--backup_dir=.",
           match=r"`backup_dir` must not be the working directory.*Received: backup_dir='.'")
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_backup_of_another_configuration_is_refused(recipe, tmp_path, no_training):
    module = load_recipe(recipe)
    config = module.parse_settings(["--preset=quick", f"--backup_dir={tmp_path / 'backup'}",
                                    f"--output_dir={tmp_path / 'run'}"])
    backup = importlib.import_module("keras_attention.recipes.backup")
    record = backup.backup_record(dict(config, hidden_dim=config["hidden_dim"] + 8),
                                  module.recipe_config.BACKUP_MAY_DIFFER)
    backup.write_backup_record(config["backup_dir"], record)
    (tmp_path / "backup" / "latest.weights.h5").write_bytes(b"an interrupted fit")
    hidden = config["hidden_dim"]
    with pytest.raises(ValueError, match=rf"`backup_dir` holds the backup of another "
                                         rf"configuration \(hidden_dim={hidden + 8} there, "
                                         rf"{hidden} now\)"):
        module.train_and_evaluate(dict(config, output_dir=str(tmp_path / "run")))
    # The same configuration passes the check (and so goes on to train).
    backup.write_backup_record(config["backup_dir"], backup.backup_record(
        dict(config, epochs=config["epochs"] + 5), module.recipe_config.BACKUP_MAY_DIFFER))
    with pytest.raises((FitCalled, TokenizerTrained)):
        module.train_and_evaluate(dict(config, output_dir=str(tmp_path / "run")))
    assert json.loads((tmp_path / "backup" / "config.json").read_text())["hidden_dim"] == hidden
