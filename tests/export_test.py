"""`export_run` and `keras-attention export`: a run folder becomes a SavedModel
that maps strings to strings, checked in a fresh process that imports only
TensorFlow and TensorFlow Text against `keras-attention generate`'s outputs."""

import json
import os
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

from keras_attention import cli, data, runs
from keras_attention.export import export_run, savedmodel
from keras_attention.models import rnn_seq2seq, transformer_seq2seq

TEXTS = [
    "March 3, 2021",
    "the 1st of may, 1999",
    "",  # an empty source still gets an output
    "12/25/1990 " * 8,  # longer than the source length: cut, as generate(truncate=True) cuts
    "mai 1er, 2003 ünïcode",
]
TINY = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32)

# name: (recipe, architecture, strategy, num_beams) of an export; None is the
# recipe's setting (translation: beam, summarization: beam with coverage,
# question answering: greedy).
CASES = {
    "translation_transformer_beam": ("translation", "transformer", None, None),
    "translation_rnn_greedy": ("translation", "rnn", "greedy", None),
    "summarization_pointer_generator_beam": ("summarization", "pointer", None, 3),
    "question_answering_transformer_greedy": ("question_answering", "transformer", None, None),
}
# Each recipe's decoding settings, as its run folder's config.json holds them
# (pad, unk and start never generated; the question-answering folder is one
# saved before `suppress_token_ids` existed).
DECODINGS = {
    "translation": dict(source_length=12, target_length=12, strategy="beam", num_beams=3,
                        length_penalty=0.6, suppress_token_ids=[0, 1, 2]),
    "summarization": dict(source_length=16, target_length=10, strategy="beam", num_beams=2,
                          length_penalty=1.0, coverage_penalty=0.5, suppress_token_ids=[0, 1, 2]),
    "question_answering": dict(source_length=16, target_length=6, strategy="greedy",
                               num_beams=1),
}
SOURCE_FORMATS = {"translation": "text", "summarization": "text",
                  "question_answering": "{context} | {question}"}


def _tokenizers():
    """`{"source", "target", "shared"}` SentencePiece tokenizers on dates."""
    pairs = data.make_date_pairs(200)
    return {
        "source": data.train_tokenizer([s for s, _ in pairs], 60),
        "target": data.train_tokenizer([t for _, t in pairs], 30),
        "shared": data.train_tokenizer([s for p in pairs for s in p], 80),
    }


def _save_tiny_run(path, recipe, architecture, tokenizers):
    """An untrained model with real SentencePiece tokenizers, saved as the
    recipe would save it (random weights still give varied outputs)."""
    keras.utils.set_random_seed(0)
    if architecture == "pointer":  # one shared vocabulary
        source = target = tokenizers["shared"]
    else:
        source, target = tokenizers["source"], tokenizers["target"]
    sizes = dict(target_vocabulary_size=target.vocabulary_size(),
                 **data.special_token_ids(target))
    if architecture == "rnn":
        model = rnn_seq2seq(source.vocabulary_size(), embedding_dim=8, units=16, **sizes)
    else:
        model = transformer_seq2seq(source.vocabulary_size(), max_length=32,
                                    pointer_generator=architecture == "pointer", **TINY,
                                    **sizes)
    runs.save_run(path, model, source, target, recipe=recipe, config={}, scores={},
                  decoding=DECODINGS[recipe], source_format=SOURCE_FORMATS[recipe])
    return path


_SERVE_IN_A_FRESH_PROCESS = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)

texts, exports = json.loads(sys.argv[1]), json.loads(sys.argv[2])
results = {}
for name, path in exports.items():
    loaded = tf.saved_model.load(path)
    outputs = loaded.serve(tf.constant(texts))
    signature = loaded.signatures["serving_default"]
    named = signature(inputs=tf.constant(texts))["outputs"]
    results[name] = {
        "serve": [t.decode("utf-8") for t in outputs.numpy()],
        "signature": [t.decode("utf-8") for t in named.numpy()],
        "dtype": outputs.dtype.name,
        "shape": outputs.shape.as_list(),
        "input": str(signature.structured_input_signature),
    }
# Another batch size, with no source token at all:
results["one_empty"] = [t.decode() for t in loaded.serve(tf.constant([""])).numpy()]
results["imported"] = sorted(m for m in sys.modules if m.split(".")[0] in
                             ("keras_attention", "keras_hub", "keras_nlp"))
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """`{name: (run_dir, strategy, num_beams)}` and the fresh process' results,
    with `results["searched"]`: `{name: [suppress_token_ids of each
    Seq2SeqModel.search call while exporting name]}`."""
    from keras_attention.models import Seq2SeqModel

    root = tmp_path_factory.mktemp("export")
    tokenizers = _tokenizers()
    run_dirs = {
        (recipe, architecture): _save_tiny_run(
            root / f"{recipe}_{architecture}", recipe, architecture, tokenizers)
        for recipe, architecture, _, _ in CASES.values()
    }
    cases, exports, searched = {}, {}, {}
    search = Seq2SeqModel.search

    def recording_search(self, *args, **kwargs):
        searched[name].append(kwargs.get("suppress_token_ids"))
        return search(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:  # what each export asks of the search
        patch.setattr(Seq2SeqModel, "search", recording_search)
        for name, (recipe, architecture, strategy, num_beams) in CASES.items():
            run_dir, searched[name] = run_dirs[(recipe, architecture)], []
            exports[name] = export_run(run_dir, root / "exports" / name, strategy=strategy,
                                       num_beams=num_beams)
            cases[name] = (run_dir, strategy, num_beams)
    process = subprocess.run(
        [sys.executable, "-c", _SERVE_IN_A_FRESH_PROCESS, json.dumps(TEXTS),
         json.dumps(exports)],
        capture_output=True, text=True, timeout=300, cwd=root,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert process.returncode == 0, process.stderr[-3000:]
    results = json.loads(process.stdout.strip().splitlines()[-1])
    results["searched"] = searched
    return cases, results


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(CASES))
def test_saved_model_serves_what_generate_outputs(exported, name):
    cases, results = exported
    run_dir, strategy, num_beams = cases[name]
    expected = runs.open_run(run_dir).generate(TEXTS, strategy, num_beams, verbose=0,
                                               truncate=True)
    served = results[name]
    assert served["serve"] == expected
    assert served["signature"] == expected
    assert served["dtype"] == "string" and served["shape"] == [len(TEXTS)]
    assert "shape=(None,), dtype=tf.string, name='inputs'" in served["input"]


@pytest.mark.large
def test_serving_process_imports_none_of_our_python(exported):
    _, results = exported
    assert results["imported"] == []


@pytest.mark.large
def test_saved_model_serves_any_batch_size(exported):
    cases, results = exported
    name = list(CASES)[-1]  # the last export loaded
    run_dir, strategy, num_beams = cases[name]
    assert results["one_empty"] == runs.open_run(run_dir).generate([""], strategy, num_beams,
                                                                   verbose=0)


@pytest.mark.large
def test_generation_is_compiled_with_xla(exported):
    cases, _ = exported
    run_dir = cases["translation_transformer_beam"][0]
    export_dir = run_dir.parent / "exports" / "translation_transformer_beam"
    graph = (export_dir / "saved_model.pb").read_bytes()
    assert b"_XlaMustCompile" in graph


@pytest.mark.large
def test_export_refuses_bad_input(exported, tmp_path, monkeypatch):
    cases, _ = exported
    run_dir = cases["translation_transformer_beam"][0]
    with pytest.raises(ValueError, match=r"`run_dir`.*Received: run_dir='.*missing'"):
        export_run(tmp_path / "missing", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"`run_dir`.*model.keras is missing.*Received"):
        export_run(tmp_path / "empty", tmp_path / "out")
    (tmp_path / "poetry").mkdir()
    (tmp_path / "poetry" / "config.json").write_text(json.dumps({"recipe": "poetry"}))
    (tmp_path / "poetry" / "model.keras").write_bytes(b"")  # read after config.json
    with pytest.raises(runs.RunFolderError, match=r"config.json names an unknown recipe "
                                                  r"'poetry'.*Received: run_dir="):
        export_run(tmp_path / "poetry", tmp_path / "out")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    with pytest.raises(ValueError, match=r"`export_dir`.*Received: export_dir='.*full' "
                                         r"\(a folder that is not empty\)"):
        export_run(run_dir, tmp_path / "full")
    with pytest.raises(ValueError, match=r"`export_dir`.*Received: export_dir='.*file' "
                                         r"\(a file\)"):
        export_run(run_dir, tmp_path / "full" / "file")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # an empty working directory is still refused
    for folder in (".", ".."):
        with pytest.raises(ValueError, match=r"`export_dir` must not be the working directory"):
            export_run(run_dir, folder)
    monkeypatch.undo()
    (tmp_path / "cwd").rmdir()
    with pytest.raises(ValueError, match=r"`strategy`.*Received: strategy='top_k'"):
        export_run(run_dir, tmp_path / "out", strategy="top_k")
    with pytest.raises(ValueError, match=r"`num_beams`.*Received: num_beams=0"):
        export_run(run_dir, tmp_path / "out", num_beams=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "full", "poetry"]


@pytest.mark.large
def test_export_searches_without_the_runs_suppressed_ids(exported):
    """The exports of `exported` (traced with `Seq2SeqModel.search` recorded):
    a run that records `suppress_token_ids` searches without them, one saved
    before they existed (the question-answering folder) with none."""
    _, results = exported
    searched = results["searched"]
    assert searched["translation_rnn_greedy"] and searched["question_answering_transformer_greedy"]
    assert {tuple(s) for s in searched["translation_rnn_greedy"]} == {(0, 1, 2)}
    assert {tuple(s) for s in searched["question_answering_transformer_greedy"]} == {()}


def test_export_refuses_a_model_without_cached_generation(tmp_path):
    tokenizer = _tokenizers()["target"]
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, keras.layers.Embedding(30, 4)(inputs))
    runs.save_run(tmp_path / "run", model, tokenizer, tokenizer, recipe="question_answering",
                  config={}, scores={}, decoding=DECODINGS["question_answering"])
    with pytest.raises(runs.RunFolderError,
                       match=r"model.keras holds a Functional .*needs a Seq2SeqModel"):
        export_run(tmp_path / "run", tmp_path / "out")


@pytest.mark.large
def test_failed_export_leaves_nothing(exported, tmp_path, monkeypatch):
    cases, _ = exported
    run_dir = cases["translation_rnn_greedy"][0]

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tf.saved_model, "save", fail)
    with pytest.raises(OSError, match="disk full"):
        export_run(run_dir, tmp_path / "out", strategy="greedy")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.large
def test_cli_export_writes_a_saved_model_and_refuses_bad_input(exported, tmp_path, capsys):
    cases, results = exported
    run_dir = cases["translation_rnn_greedy"][0]
    (tmp_path / "out").mkdir()  # an empty folder is fine
    cli.main(["export", str(run_dir), str(tmp_path / "out"), "--strategy", "greedy"])
    assert str(tmp_path / "out") in capsys.readouterr().out
    loaded = tf.saved_model.load(str(tmp_path / "out"))
    outputs = [t.decode("utf-8") for t in loaded.serve(tf.constant(TEXTS)).numpy()]
    assert outputs == results["translation_rnn_greedy"]["serve"]
    (tmp_path / "reference").mkdir()  # the permissions of a plain new folder
    assert (tmp_path / "out").stat().st_mode == (tmp_path / "reference").stat().st_mode
    with pytest.raises(SystemExit, match=r"keras-attention: .*`export_dir`"):
        cli.main(["export", str(run_dir), str(tmp_path / "out")])
    with pytest.raises(SystemExit):  # argparse: export knows greedy and beam only
        cli.main(["export", str(run_dir), str(tmp_path / "other"), "--strategy", "top_k"])


def test_export_reads_runs_through_saved_run_and_imports_no_cli():
    """`export` and the CLI do not import each other's names (no cycle)."""
    import ast
    import inspect

    imported = set()
    for node in ast.walk(ast.parse(inspect.getsource(savedmodel))):
        if isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    assert "keras_attention.runs" in imported
    assert not {name for name in imported if "cli" in name.split(".")}
    assert "_write_atomically" not in vars(savedmodel)  # files.write_folder_atomically instead


@pytest.mark.parametrize("error", ["oserror", "tensorflow"])
def test_export_to_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, capsys,
                                                              error):
    import errno

    run_dir = _save_tiny_run(tmp_path / "run", "translation", "rnn", _tokenizers())

    class HalfWritten:
        def write_out(self, folder, **kwargs):
            with open(os.path.join(folder, "saved_model.pb"), "wb") as file:
                file.write(b"half")
            if error == "oserror":
                raise OSError(errno.ENOSPC, "No space left on device")
            # What TensorFlow's SavedModel writer raises on a full disk.
            raise tf.errors.ResourceExhaustedError(None, None, "saved_model.pb.tmp; No space "
                                                               "left on device")

    monkeypatch.setitem(savedmodel.ARCHIVES, "seq2seq", lambda *args: HalfWritten())
    (tmp_path / "out").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["export", str(run_dir), str(tmp_path / "out")])
    line = exit_info.value.code
    assert line.startswith("keras-attention: error: Argument `export_dir`: the SavedModel "
                           "could not be written") and "\n" not in line
    assert "No space left on device" in line
    assert line.endswith(f"Received: export_dir={str(tmp_path / 'out')!r}")
    assert sorted(os.listdir(tmp_path)) == ["out", "run"] and os.listdir(tmp_path / "out") == []
    with pytest.raises(OSError) as raised:
        export_run(run_dir, tmp_path / "out")
    assert raised.value.errno == (errno.ENOSPC if error == "oserror" else None)
