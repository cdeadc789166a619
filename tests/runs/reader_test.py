"""`open_run` checks a run folder's parts against each other before any work:
a tokenizer or `model.keras` of another run is one line naming the file; a
model that does not decode refuses a beam search instead of ignoring it."""

import json
import os
import shutil

import keras
import pytest

from keras_attention import cli, data, runs
from keras_attention.models import memory_network, transformer_seq2seq

DECODING = {"source_length": 12, "target_length": 8, "strategy": "greedy", "num_beams": 1}
CLASSES = ["kitchen", "office", "garden"]


@pytest.fixture(scope="module")
def tokenizers():
    pairs = data.make_date_pairs(200)
    texts = [s for p in pairs for s in p]
    return data.train_tokenizer(texts, 80), data.train_tokenizer(texts, 60)


def _translation_run(path, tokenizer):
    keras.utils.set_random_seed(0)
    model = transformer_seq2seq(tokenizer.vocabulary_size(), num_layers=1, hidden_dim=8,
                                num_heads=2, intermediate_dim=8, max_length=16,
                                **data.special_token_ids(tokenizer))
    return runs.save_run(path, model, tokenizer, tokenizer, recipe="translation",
                         config={}, scores={}, decoding=DECODING)


def _memory_run(path, tokenizer, classes=CLASSES):
    network = memory_network(tokenizer.vocabulary_size(), len(classes), hidden_dim=8,
                             num_hops=1, max_memories=4, seed=0)
    return runs.save_run(path, network, tokenizer, tokenizer, recipe="question_answering",
                         config={"max_memories": 4}, scores={},
                         extra={"answer_classes": classes})


@pytest.fixture(scope="module")
def folders(tokenizers, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    big, small = tokenizers
    return {"translation": _translation_run(root / "translation", big),
            "small": _translation_run(root / "small", small),
            "memory": _memory_run(root / "memory", big)}


def _copy(folders, name, tmp_path):
    return shutil.copytree(folders[name], tmp_path / name)


def _refused(run_dir, match):
    with pytest.raises(runs.RunFolderError, match=match) as error:
        runs.open_run(run_dir)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_matching_parts_load(folders):
    for name in folders:
        runs.open_run(folders[name])


NOT_A_NAME = r"has tokenizers\['source'\]='{}', not a file name in the folder"
OUTSIDE = (r"{} is a link to a place outside the folder, named in config\.json \(only files "
           r"inside the run folder are read\)")


@pytest.mark.parametrize("name, what", [
    ("..", NOT_A_NAME.format(r"\.\.")),
    ("../source.spm", NOT_A_NAME.format(r"\.\./source\.spm")),
    ("/etc/hostname", NOT_A_NAME.format("/etc/hostname")),
    ("linked.spm", OUTSIDE.format(r"linked\.spm")),
])
def test_a_tokenizer_named_outside_the_folder_is_never_read(folders, tmp_path, name, what):
    """`config.json` names the tokenizers: a name leading out of the run folder
    (`..`, an absolute name, a link) is refused, and nothing outside is read."""
    run_dir = _copy(folders, "translation", tmp_path)
    outside = tmp_path / "source.spm"
    shutil.copy(run_dir / "source.spm", outside)  # a real tokenizer, one folder up
    (run_dir / "linked.spm").symlink_to(outside)
    config = json.loads((run_dir / "config.json").read_text())
    config["tokenizers"]["source"] = name
    (run_dir / "config.json").write_text(json.dumps(config))
    message = _refused(run_dir, rf"{what}.*Received: run_dir=")
    assert str(outside) not in message


def test_a_run_set_aside_by_an_interrupted_replacement_is_found_again(folders, tmp_path):
    """`--overwrite=true` killed between its two renames leaves the old run in
    `.NAME.previous-*` and no run folder: the next read restores it, and so
    does the next write (which then refuses to replace it without overwrite)."""
    shutil.copytree(folders["translation"], tmp_path / ".translation.previous-5f3a")
    run = runs.open_run(tmp_path / "translation")
    assert run.model is not None and os.listdir(tmp_path) == ["translation"]
    os.rename(tmp_path / "translation", tmp_path / ".translation.previous-77aa")
    with pytest.raises(ValueError, match=r"holds a run already"):
        runs.check_output_dir(tmp_path / "translation")
    assert os.listdir(tmp_path) == ["translation"]


@pytest.mark.parametrize("name", ["source.spm", "target.spm"])
def test_a_tokenizer_of_another_run_is_named(folders, tmp_path, name):
    run_dir = _copy(folders, "translation", tmp_path)
    shutil.copy(folders["small"] + "/" + name, run_dir / name)
    side = name.split(".")[0]
    message = _refused(run_dir, rf"{name} gives a {side} vocabulary of 60, but model.keras "
                                r"was trained with 80 .*Received: run_dir=")
    assert str(run_dir / name) in message


def test_a_memory_network_tokenizer_of_another_run_is_named(folders, tmp_path):
    run_dir = _copy(folders, "memory", tmp_path)
    shutil.copy(folders["small"] + "/source.spm", run_dir / "source.spm")
    _refused(run_dir, r"source.spm gives a vocabulary of 60, but model.keras was trained with 80")


def test_answer_classes_that_are_not_the_models_are_named(folders, tokenizers, tmp_path):
    run_dir = _memory_run(tmp_path / "four", tokenizers[0], CLASSES + ["hallway"])
    shutil.copy(folders["memory"] + "/model.keras", run_dir + "/model.keras")
    _refused(run_dir, r"config.json gives a number of answer classes of 4, but model.keras "
                      r"was trained with 3")


def test_a_memory_networks_model_in_a_translation_run_is_one_line(folders, tmp_path,
                                                                 monkeypatch, capsys):
    run_dir = _copy(folders, "translation", tmp_path)
    shutil.copy(folders["memory"] + "/model.keras", run_dir / "model.keras")
    _refused(run_dir, r"model.keras holds an answer classifier over stories .*but a translation "
                      r"run of this folder's settings needs a Seq2SeqModel")
    (tmp_path / "in.txt").write_text("May 1\n", encoding="utf-8")
    monkeypatch.setattr("sys.argv", ["keras-attention", "generate", str(run_dir),
                                     "--input", str(tmp_path / "in.txt")])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code.startswith("keras-attention: error: Argument `run_dir` must "
                                           "hold the model its config.json describes")
    assert "\n" not in exit_info.value.code and capsys.readouterr().out == ""


def test_a_translation_model_in_a_memory_network_run_is_named(folders, tmp_path):
    run_dir = _copy(folders, "memory", tmp_path)
    shutil.copy(folders["translation"] + "/model.keras", run_dir / "model.keras")
    _refused(run_dir, r"model.keras holds a Seq2SeqModel .*needs an answer classifier")


@pytest.mark.parametrize("argument, value", [("strategy", "beam"), ("num_beams", 4)])
def test_a_memory_network_refuses_a_beam_search(folders, argument, value, tmp_path, capsys,
                                                monkeypatch):
    run = runs.open_run(folders["memory"])
    line = "Mary went to the kitchen. | Where is Mary?"
    assert run.generate([line], strategy="greedy", num_beams=1)[0] in CLASSES
    with pytest.raises(ValueError, match=rf"Argument `{argument}` must be left unset for this "
                                         rf"run: .*Received: {argument}={value!r}"):
        run.generate([line], **{argument: value})
    (tmp_path / "in.txt").write_text(line + "\n", encoding="utf-8")
    monkeypatch.setattr("sys.argv", ["keras-attention", "generate", folders["memory"],
                                     "--input", str(tmp_path / "in.txt"),
                                     f"--{argument}", str(value)])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code.startswith(f"keras-attention: error: Argument `{argument}`")
    assert capsys.readouterr().out == ""


def test_a_memory_network_reads_long_lines_as_before_and_encodes_none(folders):
    """A kind that does not decode has no source limit: a story of any length
    is answered, `truncate` or not; it is an `AnswerClassifier`, which has no
    `encode`, `search` or `source_limit` (one class per model kind)."""
    run = runs.open_run(folders["memory"])
    assert type(run) is runs.AnswerClassifier and run.generation is None
    assert not any(hasattr(run, name) for name in ("encode", "search", "source_limit"))
    story = " ".join(["Mary went to the kitchen. John went to the office."] * 20)
    line = f"{story} | Where is Mary?"
    answers = run.generate([line])
    assert answers[0] in CLASSES and run.generate([line], truncate=True) == answers


def test_a_converted_runs_bad_decoding_in_config_json_is_one_run_folder_error(tmp_path):
    """(Converting and decoding real checkpoints: tests/runs/convert_test.py.)"""
    (tmp_path / "config.json").write_text(json.dumps({
        "format_version": 1, "recipe": "translation", "config": {}, "scores": {},
        "tokenizers": {"source": "tokenizer", "target": "tokenizer"},
        "decoding": {"source_length": 8, "target_length": 8, "strategy": "sample"},
        "source_format": "text", "converted_from": {"family": "marian"}}))
    with pytest.raises(runs.RunFolderError, match=r"config.json has bad settings .*"
                                                  r"Received: strategy='sample'"):
        runs.read_metadata(str(tmp_path))
