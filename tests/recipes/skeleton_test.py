"""`run_recipe` owns every recipe's setup and ending: the decoding settings are
made once (the run folder records what the evaluation decoded with), and a
failure after training keeps the trained run in a rescue folder beside the
output folder, never overwriting anything, and says where in one line."""

import errno
import json
import os
import types

import keras
import pytest

from keras_attention import data, files, runs, runtime
from keras_attention.models import transformer_seq2seq
from keras_attention.recipes import skeleton
from tests.recipes import load_recipe


@pytest.fixture(scope="module")
def tokenizer():
    pairs = data.make_date_pairs(100)
    return data.train_tokenizer([s for p in pairs for s in p], 60)


def _spec(tokenizer, calls, **changes):
    """A recipe whose training is a tiny untrained model: the skeleton's steps only."""

    def train(config, splits, strategy, execution, callbacks):
        calls.append(("train", callbacks))
        model = transformer_seq2seq(tokenizer.vocabulary_size(), num_layers=1, hidden_dim=8,
                                    num_heads=2, intermediate_dim=8, max_length=16,
                                    **data.special_token_ids(tokenizer))
        for callback in callbacks:  # what `fit` would call at its end
            callback.on_train_end()
        return skeleton.Trained(model, tokenizer, tokenizer)

    def decoding_settings(config, target_tokenizer):
        calls.append("decoding_settings")
        return runs.GenerationConfig(
            source_length=12, target_length=6,
            suppress_token_ids=data.never_generated_ids(target_tokenizer))

    def evaluate(trained, splits, config, decoding):
        calls.append(("evaluate", decoding))
        return {"bleu": 1.0}

    fields = dict(
        name="translation", description="A test recipe.",
        config=types.SimpleNamespace(BACKUP_MAY_DIFFER=()), check_config=lambda config: config,
        load_data=lambda config: ([], [], []),
        execution=lambda config: runtime.fast_defaults("float32", False),
        build_model=None, train=train, decoding_settings=decoding_settings, evaluate=evaluate,
        model_kind=lambda config: "seq2seq",
    )
    return skeleton.RecipeSpec(**{**fields, **changes})


def _config(output_dir):
    return {"output_dir": str(output_dir), "overwrite": False, "backup_dir": "",
            "distribution": "default", "batch_size": 4, "seed": 0}


def test_the_run_records_the_decoding_the_evaluation_used(tokenizer, tmp_path):
    calls = []
    scores = skeleton.run_recipe(_spec(tokenizer, calls), _config(tmp_path / "run"))
    assert calls.count("decoding_settings") == 1
    (_, decoding), = [c for c in calls if c[0] == "evaluate"]
    metadata = json.loads((tmp_path / "run" / "config.json").read_text())
    assert metadata["decoding"] == decoding.to_dict() and metadata["scores"] == scores
    assert set(scores) == {"bleu", "train_seconds", "parameters"}


def _full_disk_at(output_dir, monkeypatch):
    """`files.write_folder_atomically` fails with ENOSPC for `output_dir` only."""
    write = files.write_folder_atomically

    def full(path, writer, **kwargs):
        if os.path.abspath(path) == os.path.abspath(output_dir):
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(path, writer, **kwargs)

    monkeypatch.setattr(files, "write_folder_atomically", full)


def _rescue_of(error, tmp_path):
    (rescue,) = [name for name in os.listdir(tmp_path) if ".rescue-" in name]
    assert error.rescue_dir == str(tmp_path / rescue)
    message = str(error)
    assert "\n" not in message and str(tmp_path / rescue) in message
    return tmp_path / rescue


def test_a_full_disk_at_save_keeps_the_trained_run_in_a_rescue_folder(tokenizer, tmp_path,
                                                                     monkeypatch):
    _full_disk_at(tmp_path / "run", monkeypatch)
    with pytest.raises(runs.RunNotSavedError, match=r"No space left on device.*rescue folder "
                                                    r".*Received: output_dir=") as error:
        skeleton.run_recipe(_spec(tokenizer, []), _config(tmp_path / "run"))
    rescue = _rescue_of(error.value, tmp_path)
    assert not (tmp_path / "run").exists()
    run = runs.open_run(rescue)  # a complete run folder
    assert run.recipe == "translation" and run.metadata["scores"]["bleu"] == 1.0


def test_a_run_appearing_in_the_output_folder_is_kept_and_so_is_the_new_one(tokenizer, tmp_path):
    output = tmp_path / "run"

    class AnotherRun(keras.callbacks.Callback):
        def on_train_end(self, logs=None):  # meanwhile, another run saved there
            output.mkdir()
            (output / runs.MARKER).write_text("another run\n")
            (output / "model.keras").write_bytes(b"theirs")

    with pytest.raises(runs.RunNotSavedError, match=r"holds a run already.*rescue folder"
                       ) as error:
        skeleton.run_recipe(_spec(tokenizer, []), _config(output), callbacks=[AnotherRun()])
    rescue = _rescue_of(error.value, tmp_path)
    assert (output / "model.keras").read_bytes() == b"theirs"
    assert runs.open_run(rescue).metadata["decoding"]["target_length"] == 6


def test_a_rescue_folder_never_replaces_one_already_there(tokenizer, tmp_path, monkeypatch):
    _full_disk_at(tmp_path / "run", monkeypatch)
    taken = runs.rescue_dir_for(tmp_path / "run")
    os.makedirs(taken)
    (tmp_path / "user.txt").write_text("mine")
    with pytest.raises(runs.RunNotSavedError) as error:
        skeleton.run_recipe(_spec(tokenizer, []), _config(tmp_path / "run"))
    assert error.value.rescue_dir not in (None, taken) and os.listdir(taken) == []
    assert os.path.isfile(os.path.join(error.value.rescue_dir, "model.keras"))


def test_no_rescue_possible_says_so_in_one_line(tokenizer, tmp_path, monkeypatch):
    def full(path, writer, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_folder_atomically", full)
    with pytest.raises(runs.RunNotSavedError, match=r"nor in a rescue folder .*free some space"
                       ) as error:
        skeleton.run_recipe(_spec(tokenizer, []), _config(tmp_path / "run"))
    assert error.value.rescue_dir is None and "\n" not in str(error.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.large
def test_a_recipe_run_appearing_during_training_is_rescued(tmp_path):
    """The real question-answering recipe, another run saved meanwhile by a callback."""
    recipe = load_recipe("question_answering")
    output = tmp_path / "qa"

    class AnotherRun(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            output.mkdir()
            (output / runs.MARKER).write_text("another run\n")

    config = dict(recipe.recipe_config.get_quick_config(), output_dir=str(output),
                  num_examples=120, epochs=1)
    with pytest.raises(runs.RunNotSavedError) as error:
        recipe.train_and_evaluate(config, callbacks=[AnotherRun()])
    rescue = _rescue_of(error.value, tmp_path)
    run = runs.open_run(rescue)
    assert run.kind.name == "answer_classifier" and run.metadata["scores"]["parameters"] > 0
    assert os.listdir(output) == [runs.MARKER]
