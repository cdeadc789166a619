"""Run folders never lose work, describe themselves, and have one reader (`open_run`)."""

import json
import os
import pathlib

import keras
import numpy as np
import pytest

from keras_attention import data, files, runs
from keras_attention.decoding.samplers import BeamSampler
from keras_attention.models import transformer_seq2seq

DECODING = {"source_length": 12, "target_length": 8, "strategy": "greedy", "num_beams": 1,
            "suppress_token_ids": [0, 1, 2]}


@pytest.fixture(scope="module")
def tokenizer():
    pairs = data.make_date_pairs(200)
    return data.train_tokenizer([s for p in pairs for s in p], 80)


@pytest.fixture(scope="module")
def model(tokenizer):
    keras.utils.set_random_seed(0)
    return transformer_seq2seq(tokenizer.vocabulary_size(), num_layers=1, hidden_dim=16,
                               num_heads=2, intermediate_dim=16, max_length=32,
                               **data.special_token_ids(tokenizer))


def _save(path, model, tokenizer, recipe="translation", **kwargs):
    kwargs.setdefault("decoding", DECODING)
    return runs.save_run(path, model, tokenizer, tokenizer, recipe=recipe,
                         config={"a": 1}, scores={"bleu": 1.0}, **kwargs)


def _snapshot(folder):
    """`{relative path: (bytes, mode)}` of every file and folder under `folder`."""
    result = {}
    for root, folders, names in os.walk(folder):
        for name in folders + names:
            path = os.path.join(root, name)
            content = None if os.path.isdir(path) else open(path, "rb").read()
            result[os.path.relpath(path, folder)] = (content, os.stat(path).st_mode)
    return result


def _fail(*args, **kwargs):
    raise OSError("disk full")


## Writing


@pytest.mark.large
def test_save_writes_a_self_describing_run_that_loads(model, tokenizer, tmp_path):
    path = _save(tmp_path / "run", model, tokenizer, extra={"answer_notes": "x"})
    assert path == str(tmp_path / "run")
    assert sorted(os.listdir(path)) == sorted(
        [runs.MARKER, "config.json", "model.keras", "source.spm", "target.spm"])
    metadata = json.loads((tmp_path / "run" / "config.json").read_text())
    assert metadata == {
        "format_version": runs.FORMAT_VERSION, "keras_attention": keras_attention_version(),
        "recipe": "translation", "config": {"a": 1}, "scores": {"bleu": 1.0},
        "tokenizers": {"source": "source.spm", "target": "target.spm"},
        "decoding": dict(DECODING, length_penalty=0.0, length_penalty_form="gnmt",
                         coverage_penalty=0.0),  # every key
        "source_format": "text", "answer_notes": "x",
    }
    run = runs.open_run(tmp_path / "run")
    assert (run.recipe, run.config, run.generation, run.source_format, type(run)) == (
        "translation", {"a": 1}, runs.GenerationConfig(**DECODING), "text", runs.TextGenerator)
    ids = {"encoder_token_ids": np.array([[5, 6]]), "decoder_token_ids": np.array([[2, 7]])}
    np.testing.assert_allclose(run.model(ids), model(ids), atol=1e-6)
    np.testing.assert_array_equal(run.source_tokenizer("May 1"), tokenizer("May 1"))
    outputs = run.generate(["March 3, 2021", "May 1"])
    assert len(outputs) == 2 and all(isinstance(o, str) for o in outputs)
    assert runs.load_run(tmp_path / "run")[3] == run.metadata


def keras_attention_version():
    import keras_attention

    return keras_attention.__version__


def test_generate_of_no_lines_calls_no_model(model, tokenizer, tmp_path, monkeypatch):
    run = runs.open_run(_save(tmp_path / "run", model, tokenizer))
    monkeypatch.setattr(run.model, "generate", _fail)
    assert run.generate([]) == []
    with pytest.raises(ValueError, match=r"`num_beams`.*Received: num_beams=0"):
        run.generate(["x"], num_beams=0)


def _capture_generate(run, monkeypatch):
    """`run.model.generate` replaced by one that records its keyword
    arguments and returns the end token for every row."""
    calls = []

    def generate(token_ids, **kwargs):
        calls.append(kwargs)
        return np.full((len(token_ids), kwargs["max_length"]), run.model.end_token_id)

    monkeypatch.setattr(run.model, "generate", generate)
    return calls


def test_generate_never_generates_the_runs_suppressed_ids(model, tokenizer, tmp_path,
                                                          monkeypatch):
    saved = json.loads((pathlib.Path(_save(tmp_path / "run", model, tokenizer))
                        / "config.json").read_text())
    assert saved["decoding"]["suppress_token_ids"] == [0, 1, 2]
    run = runs.open_run(tmp_path / "run")
    assert list(run.generation.suppress_token_ids) == data.never_generated_ids(tokenizer)
    calls = _capture_generate(run, monkeypatch)
    assert run.generate(["May 1"], strategy="beam", num_beams=2) == [""]
    assert calls[0]["suppress_token_ids"] == [0, 1, 2]
    assert calls[0]["sampler"] == BeamSampler(num_beams=2)
    # A folder saved without the key (before it existed) suppresses nothing.
    decoding = {k: v for k, v in DECODING.items() if k != "suppress_token_ids"}
    run = runs.open_run(_save(tmp_path / "older", model, tokenizer, decoding=decoding))
    calls = _capture_generate(run, monkeypatch)
    run.generate(["May 1"])
    assert not calls[0].get("suppress_token_ids")  # nothing suppressed


def test_user_folder_is_refused_and_kept(model, tokenizer, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my thesis")
    before = _snapshot(folder)
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=r"`output_dir`.*other files.*Received: "
                                             r"output_dir='.*mine'"):
            runs.check_output_dir(folder, overwrite=overwrite)
        with pytest.raises(ValueError, match=r"`output_dir`.*other files"):
            _save(folder, model, tokenizer, overwrite=overwrite)
    assert _snapshot(folder) == before
    assert sorted(os.listdir(tmp_path)) == ["mine"]  # no staging folder left


def test_working_directory_and_its_parents_are_refused_even_with_overwrite(tmp_path,
                                                                           monkeypatch):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "keep.txt").write_text("x")
    monkeypatch.chdir(tmp_path / "a" / "b")
    for folder in (".", "..", str(tmp_path), "../b", "/", os.getcwd()):
        with pytest.raises(ValueError, match=r"working directory or one of its parents.*"
                                             r"Received: output_dir="):
            runs.check_output_dir(folder, overwrite=True)
    assert (tmp_path / "a" / "b" / "keep.txt").read_text() == "x"
    runs.check_output_dir("run", overwrite=True)  # a child of the working directory is fine


def test_run_folder_is_replaced_only_with_overwrite(model, tokenizer, tmp_path):
    _save(tmp_path / "run", model, tokenizer, decoding=dict(DECODING, target_length=5))
    with pytest.raises(ValueError, match=r"holds a run already: pass `--overwrite=true`.*"
                                         r"Received: output_dir="):
        _save(tmp_path / "run", model, tokenizer)
    assert runs.read_metadata(tmp_path / "run")["decoding"]["target_length"] == 5
    _save(tmp_path / "run", model, tokenizer, overwrite=True)
    assert runs.read_metadata(tmp_path / "run")["decoding"]["target_length"] == 8
    assert sorted(os.listdir(tmp_path)) == ["run"]  # the old run set aside is gone


def test_check_output_dir_accepts_new_and_empty_folders_and_refuses_files(tmp_path):
    runs.check_output_dir(tmp_path / "new" / "deeper")
    (tmp_path / "empty").mkdir()
    runs.check_output_dir(tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"must be a folder.*Received: output_dir='.*file' "
                                         r"\(a file\)"):
        runs.check_output_dir(tmp_path / "file", overwrite=True)
    with pytest.raises(ValueError, match=r"inside a folder, but .*file is a file"):
        runs.check_output_dir(tmp_path / "file" / "run")
    # /proc takes no new files, even from root.
    with pytest.raises(ValueError, match=r"writable folder; files cannot be created in /proc"):
        runs.check_output_dir("/proc/keras_attention_run")
    with pytest.raises(ValueError, match=r"`overwrite` must be a bool"):
        runs.check_output_dir(tmp_path / "new", overwrite="yes")
    assert sorted(os.listdir(tmp_path)) == ["empty", "file"]  # the checks wrote nothing


def test_saving_into_an_empty_folder(model, tokenizer, tmp_path):
    (tmp_path / "run").mkdir()
    _save(tmp_path / "run", model, tokenizer)
    assert runs.is_run_folder(tmp_path / "run")


@pytest.mark.parametrize("failing", ["model", "tokenizer", "move"])
def test_a_failed_save_leaves_the_previous_run_byte_identical(model, tokenizer, tmp_path,
                                                              monkeypatch, failing):
    _save(tmp_path / "run", model, tokenizer)
    before = _snapshot(tmp_path / "run")
    if failing == "model":
        monkeypatch.setattr(keras.Model, "save", _fail)
    elif failing == "tokenizer":
        monkeypatch.setattr(data, "save_tokenizer", _fail)
    else:  # the new folder's rename into place, after the old one was set aside
        rename = os.rename
        monkeypatch.setattr(files.os, "rename", lambda source, destination: (
            _fail() if ".partial-" in str(source) else rename(source, destination)))
    with pytest.raises(OSError, match="disk full"):
        _save(tmp_path / "run", model, tokenizer, decoding=dict(DECODING, target_length=3),
              overwrite=True)
    assert _snapshot(tmp_path / "run") == before
    assert sorted(os.listdir(tmp_path)) == ["run"]  # the staging folder is removed


def test_a_failed_first_save_leaves_nothing(model, tokenizer, tmp_path, monkeypatch):
    monkeypatch.setattr(keras.Model, "save", _fail)
    with pytest.raises(OSError, match="disk full"):
        _save(tmp_path / "runs" / "run", model, tokenizer)
    assert os.listdir(tmp_path / "runs") == []


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_run_folder_has_the_users_permissions(model, tokenizer, tmp_path, umask):
    saved = os.umask(umask)
    try:
        _save(tmp_path / "run", model, tokenizer)
    finally:
        os.umask(saved)
    assert os.stat(tmp_path / "run").st_mode & 0o777 == 0o777 & ~umask
    for name in os.listdir(tmp_path / "run"):
        assert os.stat(tmp_path / "run" / name).st_mode & 0o777 == 0o666 & ~umask, name


def test_save_refuses_bad_settings_before_writing(model, tokenizer, tmp_path):
    cases = [
        (dict(recipe="poetry"), r"`recipe` must be one of.*Received: recipe='poetry'"),
        (dict(decoding={"source_length": 4}), r"`decoding` must set `target_length`"),
        (dict(decoding=dict(DECODING, beams=2)), r"`decoding` has unknown keys \['beams'\]"),
        (dict(decoding=dict(DECODING, num_beams=0)), r"`num_beams`.*Received: num_beams=0"),
        (dict(decoding=dict(DECODING, suppress_token_ids=[1, -1])),
         r"`suppress_token_ids` must be a list of token ids.*Received"),
        (dict(decoding=dict(DECODING, suppress_token_ids=1)),
         r"`suppress_token_ids` must be a list"),
        (dict(decoding=dict(DECODING, length_penalty_form="fairseq")),
         r"`length_penalty_form` must be one of 'gnmt', 'hf'.*Received"),
        (dict(decoding=dict(DECODING, length_penalty_form="hf", coverage_penalty=0.1)),
         r"`decoding` has unknown keys \['coverage_penalty'\]"),
        (dict(source_format="{passage} | {question}"), r"`source_format`.*Received"),
        (dict(extra={"recipe": "x"}), r"`extra` must not set keys config.json uses"),
        (dict(recipe="summarization", decoding=None), r"`decoding` must be given.*max_source"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            _save(tmp_path / "run", model, tokenizer, **kwargs)
    assert os.listdir(tmp_path) == []


def test_tokenizer_files_are_copied_unchanged_and_checked_first(model, tokenizer, tmp_path):
    """`save_run(..., tokenizer_files=[...])` (a converted checkpoint's
    tokenizer): copied into tokenizer/, named in config.json; a missing file
    is refused before anything is written."""
    source = tmp_path / "files"
    source.mkdir()
    (source / "vocab.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="merges.txt is not one"):
        _save(tmp_path / "run", model, tokenizer,
              tokenizer_files=[source / "vocab.json", source / "merges.txt"])
    assert not (tmp_path / "run").exists()
    run_dir = pathlib.Path(_save(tmp_path / "run", model, tokenizer,
                                 tokenizer_files=[source / "vocab.json"]))
    assert os.listdir(run_dir / runs.TOKENIZER_FOLDER) == ["vocab.json"]
    assert (run_dir / "tokenizer" / "vocab.json").read_text() == "{}"
    assert not (run_dir / "source.spm").exists()
    metadata = json.loads((run_dir / "config.json").read_text())
    assert metadata["tokenizers"] == {"source": "tokenizer", "target": "tokenizer"}


def test_source_formats():
    record = {"context": "Mary went home.", "question": "Where is Mary?"}
    assert runs.format_source("{question} | {context}", record) == (
        "Where is Mary? | Mary went home.")
    assert runs.format_source("text", {"text": "hello"}) == "hello"
    with pytest.raises(ValueError, match=r"`record` must have the field\(s\) story"):
        runs.format_source("{story} | {question}", record)
    for bad in ("", "{context!r}", "{question} {question}", "{0}", "{context", 3):
        with pytest.raises(ValueError, match=r"`source_format`.*Received"):
            runs.check_source_format(bad)


## Reading: errors name the file


@pytest.fixture(scope="module")
def saved(model, tokenizer, tmp_path_factory):
    return _save(tmp_path_factory.mktemp("saved") / "run", model, tokenizer)


def _copy(saved, tmp_path):
    import shutil

    return shutil.copytree(saved, tmp_path / "run")


def test_missing_pieces_are_named(saved, tmp_path):
    with pytest.raises(runs.RunFolderError, match=r"no such folder.*Received: run_dir="):
        runs.open_run(tmp_path / "nothing")
    for name in ("config.json", "model.keras", "target.spm"):
        run_dir = _copy(saved, tmp_path)
        os.remove(run_dir / name)
        with pytest.raises(runs.RunFolderError, match=rf"{name} is missing"):
            runs.open_run(run_dir)
        import shutil

        shutil.rmtree(run_dir)


@pytest.mark.parametrize("name, content, message", [
    ("config.json", b'{"recipe": "translation", ', r"config.json is not valid JSON"),
    ("config.json", b"\xff\xfe", r"config.json is not valid JSON"),
    ("config.json", b"[1, 2]", r"config.json holds a list"),
    ("config.json", b'{"format_version": 1, "recipe": "poetry"}', r"unknown recipe 'poetry'"),
    ("config.json", b'{"format_version": 9}', r"format_version=9"),
    ("source.spm", b"not a sentencepiece model", r"source.spm is not a SentencePiece model"),
    ("source.spm", b"", r"source.spm is not a SentencePiece model"),
])
def test_corrupt_files_are_named(saved, tmp_path, name, content, message):
    run_dir = _copy(saved, tmp_path)
    (run_dir / name).write_bytes(content)
    with pytest.raises(runs.RunFolderError, match=message) as error:
        runs.open_run(run_dir)
    assert str(run_dir / name) in str(error.value) and "Received: run_dir=" in str(error.value)


def test_truncated_or_corrupt_model_is_named_not_reported_missing(saved, tmp_path):
    run_dir = _copy(saved, tmp_path)
    model_bytes = (run_dir / "model.keras").read_bytes()
    (run_dir / "model.keras").write_bytes(model_bytes[: len(model_bytes) // 2])
    with pytest.raises(runs.RunFolderError, match=r"model.keras is not a .keras archive "
                                                  r"\(truncated or corrupt\)") as error:
        runs.open_run(run_dir)
    assert "not found" not in str(error.value).lower()
    import zipfile

    with zipfile.ZipFile(run_dir / "model.keras", "w") as archive:
        archive.writestr("config.json", "{not json")
    with pytest.raises(runs.RunFolderError, match=r"model.keras is a .keras archive that does "
                                                  r"not load"):
        runs.open_run(run_dir)


## Folders saved before format 1


def _save_legacy(path, model, tokenizer, metadata):
    """A run folder as `save_run` wrote it before format 1: no marker, and
    `config.json` holding `recipe`, `config` and `scores` only."""
    path.mkdir()
    model.save(path / "model.keras")
    data.save_tokenizer(tokenizer, path / "source.spm")
    data.save_tokenizer(tokenizer, path / "target.spm")
    (path / "config.json").write_text(json.dumps(metadata))
    return path


def test_old_question_answering_folder_loads_and_evaluates(model, tokenizer, tmp_path):
    config = {"max_length": 12, "max_answer_length": 5, "question_first": True}
    run_dir = _save_legacy(tmp_path / "old", model, tokenizer, {
        "recipe": "question_answering", "config": config, "scores": {"f1": 1.0}})
    assert runs.is_run_folder(run_dir)
    runs.check_output_dir(run_dir, overwrite=True)  # a new run may replace it
    run = runs.open_run(run_dir)
    assert run.metadata["format_version"] == 0
    assert run.generation == runs.GenerationConfig(source_length=12, target_length=5)
    assert run.source_format == "{question} | {context}"
    squad = tmp_path / "squad.jsonl"
    squad.write_text(json.dumps({"id": "q1", "context": "May 1 1999.", "question": "When?",
                                 "answers": ["May 1"]}) + "\n")
    assert run.evaluation_examples(squad) == (["When? | May 1 1999."], [["May 1"]])
    scores = run.evaluate(squad)
    assert set(scores) == {"exact_match", "f1", "examples"} and scores["examples"] == 1


def test_old_translation_folder_decodes_as_its_config_says(model, tokenizer, tmp_path):
    config = {"max_length": 10, "strategy": "beam", "num_beams": 3, "length_penalty": 0.6}
    run_dir = _save_legacy(tmp_path / "old", model, tokenizer, {
        "recipe": "translation", "config": config, "scores": {}})
    run = runs.open_run(run_dir)
    assert run.generation == runs.GenerationConfig(source_length=10, target_length=10,
                                                   strategy="beam", num_beams=3,
                                                   length_penalty=0.6)
    assert run.source_format == "text"
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("March 3, 2021\t2021-03-03\nMay 1, 1999\t1999-05-01\n")
    assert run.evaluate(pairs, max_examples=1)["examples"] == 1
    (run_dir / "config.json").write_text(json.dumps({"recipe": "translation", "config": {}}))
    with pytest.raises(runs.RunFolderError, match=r"config.json has no 'max_length'"):
        runs.open_run(run_dir)


def test_a_folder_with_other_files_is_not_a_run_folder(model, tokenizer, tmp_path):
    run_dir = _save_legacy(tmp_path / "old", model, tokenizer, {
        "recipe": "translation", "config": {}, "scores": {}})
    (run_dir / "training.png").write_bytes(b"png")
    assert runs.is_run_folder(run_dir)
    (run_dir / "thesis.tex").write_text("mine")
    assert not runs.is_run_folder(run_dir)
    with pytest.raises(ValueError, match="other files"):
        runs.check_output_dir(run_dir, overwrite=True)


def test_memory_network_run_answers_from_its_classes(tokenizer, tmp_path):
    from keras_attention.models import memory_network

    classes = ["kitchen", "office", "garden"]
    network = memory_network(tokenizer.vocabulary_size(), len(classes), hidden_dim=8,
                             num_hops=1, max_memories=4, seed=0)
    runs.save_run(tmp_path / "qa", network, tokenizer, tokenizer, recipe="question_answering",
                  config={"max_memories": 4}, scores={}, extra={"answer_classes": classes})
    run = runs.open_run(tmp_path / "qa")
    assert run.metadata["decoding"] is None and run.generation is None
    assert run.source_format == "{story} | {question}" and run.answer_classes == classes
    answers = run.generate(["Mary went to the kitchen. John left. | Where is Mary?", "| Who?"])
    assert len(answers) == 2 and set(answers) <= set(classes)
    squad = tmp_path / "squad.jsonl"
    squad.write_text(json.dumps({"id": "1", "context": "Mary went to the kitchen.",
                                 "question": "Where is Mary?", "answers": ["kitchen"]}) + "\n")
    assert run.evaluation_examples(squad)[0] == ["Mary went to the kitchen. | Where is Mary?"]
    assert run.evaluate(squad)["examples"] == 1
    (tmp_path / "qa" / "config.json").write_text(json.dumps(dict(
        run.metadata, config={})))
    with pytest.raises(runs.RunFolderError, match=r"answer_classes without .*max_memories"):
        runs.open_run(tmp_path / "qa")


def test_extractive_run_answers_with_a_sentence_and_refuses_bad_selection(tokenizer, tmp_path):
    from keras_attention.models import extractive_summarizer

    model = extractive_summarizer(tokenizer.vocabulary_size(), max_sentences=3, hidden_dim=8,
                                  num_heads=2, intermediate_dim=16, num_layers=1)
    selection = {"max_length": 40, "max_sentences": 3}
    runs.save_run(tmp_path / "ext", model, tokenizer, tokenizer, recipe="summarization",
                  config={}, scores={}, source_format="text", extra={"selection": selection})
    run = runs.open_run(tmp_path / "ext")
    assert run.metadata["decoding"] is None and run.selection == selection
    documents = ["The cat sat. The dog ran far. A bird sang.", "Only one sentence here."]
    summaries = run.generate(documents)
    assert summaries[0] in ["The cat sat.", "The dog ran far.", "A bird sang."]
    assert summaries[1] == "Only one sentence here."
    for bad in ({"max_length": 0, "max_sentences": 3}, {"max_length": 40}, [40, 3]):
        (tmp_path / "ext" / "config.json").write_text(json.dumps(dict(
            run.metadata, selection=bad)))
        with pytest.raises(runs.RunFolderError, match=r"selection=.*Received: run_dir"):
            runs.open_run(tmp_path / "ext")
