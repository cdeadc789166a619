"""`convert_checkpoint` / `keras-attention convert`: a tiny random checkpoint of
each family with its tokenizer files becomes a run folder whose
`keras-attention generate` gives `transformers`' strings (greedy and beam 4
with the checkpoint's generation config), and the folder's refusals.

Each family's checkpoint is made and converted once per test run
(`converted_run`, shared with export_converted_test.py and
recipes/fine_tuning_test.py through `tests.made_once`), with `transformers`'
strings for `TEXTS`; tests that change a folder copy it first."""

import json
import shutil

import numpy as np
import pytest
import torch
import transformers

from keras_attention import cli, runs
from keras_attention.pretrained.families import FAMILIES
from keras_attention.runs.convert import convert_checkpoint
from keras_attention.tokenizer import encode_lines
from tests.made_once import made_once
from tests.pretrained import hf_checkpoints
from tests.pretrained.tokenizers_test import (
    ENGLISH,
    GERMAN,
    fairseq_tokenizer,
    m2m100_folder_files,
    mbart_older_folder_files,
    nllb_older_folder_files,
    pegasus_older_folder_files,
    train_spm,
)

# The run folder and CLI around `generate`; JAX's compiled tokens of converted
# models are compared with transformers' in bart_test.py and t5_test.py.
pytestmark = pytest.mark.same_path_on(
    "jax", reason="run folders and the CLI around generate, whose JAX tokens bart_test and "
                  "t5_test compare with transformers'")

TEXTS = ["I am a small frog.", "Hello, world! How are you?", "", "Tom asked his teacher.",
         "The quick brown fox jumps over the lazy dog."]


def _marian_tokenizer(folder):
    """source.spm, target.spm, vocab.json (`</s>` 0, `<unk>` 1, `<pad>` last);
    returns the vocabulary size."""
    vocabulary = {"</s>": 0, "<unk>": 1}
    for name, texts in (("source", ENGLISH), ("target", GERMAN)):
        shutil.copyfile(train_spm(texts, folder / name), folder / f"{name}.spm")
        for line in (folder / f"{name}.vocab").read_text(encoding="utf-8").splitlines():
            piece = line.split("\t")[0]
            if piece not in vocabulary and piece not in ("<s>", "</s>", "<unk>"):
                vocabulary[piece] = len(vocabulary)
    vocabulary["<pad>"] = len(vocabulary)
    (folder / "vocab.json").write_text(json.dumps(vocabulary, ensure_ascii=False))
    for name in ("source", "target"):
        for suffix in (".model", ".vocab"):
            (folder / f"{name}{suffix}").unlink()
    return len(vocabulary)


def _bart_tokenizer(folder):
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([t for t in ENGLISH if t.isascii()], vocab_size=300,
                            min_frequency=1, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return len(json.loads((folder / "vocab.json").read_text(encoding="utf-8")))


def _t5_tokenizer(folder):
    train_spm(ENGLISH, folder / "spiece", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    (folder / "spiece.vocab").unlink()
    return 60 + 100


def _fast_tokenizer(folder, family):
    """`family`'s tokenizer made by `transformers` 5 from a SentencePiece
    model and saved as it saves it (`tokenizer.json` and its config): mBART-50
    (English source), Pegasus, NLLB (M2M100's architecture; English source);
    returns it."""
    spm = folder / "spm"
    spm.mkdir()
    if family == "pegasus":
        train_spm(ENGLISH, spm / "spiece", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
        tokenizer = transformers.PegasusTokenizer.from_pretrained(str(spm))
    else:
        tokenizer = fairseq_tokenizer(spm, family)
    shutil.rmtree(spm)
    tokenizer.save_pretrained(str(folder))
    return transformers.AutoTokenizer.from_pretrained(str(folder))


#: The target language of the checkpoints read from tokenizer.json (the
#: checkpoint's forced first token).
TARGET_LANGUAGE = {"mbart": "de_DE", "m2m_100": "deu_Latn"}

#: Seeds whose tiny random models' strings depend on the source (by family,
#: or `family/layout`).
SEEDS = {"marian": 2, "bart": 2, "t5": 3, "mbart": 3, "pegasus": 3, "m2m_100": 5,
         "m2m_100/vocab.json": 3, "m2m_100/sentencepiece.bpe.model": 20}


def make_checkpoint(folder, family, generation=None, layout=None, **model_options):
    """A tiny random checkpoint with its tokenizer files; returns
    `(torch model, transformers tokenizer)`. `layout`: the family's
    `LAYOUTS` default, or `"tokenizer.json"` (BART, T5): the tokenizer saved
    by transformers 5, `tokenizer.json` alone; `"vocab.json"` (M2M100): its
    own files, `vocab.json` + `sentencepiece.bpe.model`, instead of NLLB's
    `tokenizer.json`; `"sentencepiece.bpe.model"` (mBART, NLLB),
    `"spiece.model"` (Pegasus): an older folder, without `tokenizer.json`.
    `model_options`: more `hf_checkpoints.save_checkpoint` arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    seed = SEEDS.get(f"{family}/{layout}", SEEDS[family])
    if family == "marian":
        size = _marian_tokenizer(folder)
        pad = size - 1
        options = dict(vocab_size=size, pad_token_id=pad, decoder_start_token_id=pad)
        generation = {"decoder_start_token_id": pad, "pad_token_id": pad,
                      "bad_words_ids": [[pad]], **(generation or {})}
    elif family == "bart":
        size = _bart_tokenizer(folder)
        options = dict(vocab_size=size)
    elif family in ("mbart", "pegasus", "m2m_100"):
        own = family == "m2m_100" and layout == "vocab.json"
        older = layout == "sentencepiece.bpe.model"
        tokenizer = (m2m100_folder_files(folder) if own
                     else nllb_older_folder_files(folder) if older and family == "m2m_100"
                     else mbart_older_folder_files(folder) if older
                     else pegasus_older_folder_files(folder) if layout == "spiece.model"
                     else _fast_tokenizer(folder, family))
        # M2M100's table has 8 rows past its language tokens (fairseq's
        # "madeup words"), never written by the tokenizer.
        madeup = list(range(len(tokenizer), len(tokenizer) + 8)) if own else []
        options = dict(vocab_size=len(tokenizer) + len(madeup))
        if family in TARGET_LANGUAGE:
            # Most of a tiny vocabulary is language codes: a random model would
            # write little else, so the other codes are suppressed.
            code = tokenizer.convert_tokens_to_ids("__de__" if own else TARGET_LANGUAGE[family])
            others = sorted(set(tokenizer.all_special_ids) - {
                code, tokenizer.eos_token_id, tokenizer.pad_token_id}) + madeup
            generation = {"forced_bos_token_id": code, "suppress_tokens": others,
                          **(generation or {})}
        return hf_checkpoints.save_checkpoint(folder, family, generation, seed=seed,
                                              **options, **model_options), tokenizer
    else:
        size = _t5_tokenizer(folder)
        # T5 pads its embedding past the tokenizer's ids (32128 for 32100):
        # 8 rows more here, never generated, as the checkpoints suppress them.
        options = dict(vocab_size=size + 8)
        generation = {"suppress_tokens": list(range(size, size + 8)), **(generation or {})}
    model = hf_checkpoints.save_checkpoint(folder, family, generation, seed=seed,
                                           **options, **model_options)
    if family == "marian":
        tokenizer = transformers.MarianTokenizer(
            str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"))
    elif family == "bart":
        tokenizer = transformers.BartTokenizer.from_pretrained(str(folder))
    else:
        tokenizer = transformers.T5Tokenizer.from_pretrained(str(folder))
    if layout == "tokenizer.json":
        for name in FAMILIES[family].tokenizer_layouts[0]:
            (folder / name).unlink()
        tokenizer.save_pretrained(str(folder))
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    return model, tokenizer


def reference_strings(model, tokenizer, texts, **settings):
    inputs = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        tokens = model.generate(**inputs, **settings)
    return tokenizer.batch_decode(tokens, skip_special_tokens=True)


def cli_generate(run_dir, texts, tmp_path, *options):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    cli.main(["generate", str(run_dir), "--input", str(source), "--output", str(output),
              *options])
    return output.read_text(encoding="utf-8").split("\n")[:-1]


#: The generation config of the shared beam checkpoints (`converted_run`).
BEAM = {"num_beams": 4, "length_penalty": 0.6, "max_length": 10}
#: The tokenizer files of the shared checkpoints: as transformers 5 saves BART
#: and T5 (`tokenizer.json` alone; transformers 5 still saves Marian's
#: SentencePiece files). The older layout converts to the same run
#: (`test_the_older_tokenizer_files_convert_to_the_same_run`).
LAYOUTS = {"marian": None, "bart": "tokenizer.json", "t5": "tokenizer.json"}


def _make_converted_run(folder, family, generation, strings, layout=None):
    """Fills `folder` with `checkpoint/` (a tiny `family` checkpoint with
    `generation`) and `run/` (its conversion); returns `transformers`'
    strings for `TEXTS` (with `strings`, else {}): `"beam"` with the
    checkpoint's settings, `"greedy"` with `num_beams=1`."""
    model, tokenizer = make_checkpoint(folder / "checkpoint", family, generation,
                                       layout or LAYOUTS.get(family))
    convert_checkpoint(folder / "checkpoint", folder / "run")
    if not strings:
        return {}
    return {"beam": reference_strings(model, tokenizer, TEXTS),
            "greedy": reference_strings(model, tokenizer, TEXTS, num_beams=1)}


def converted_run(tmp_path_factory, family, beam=True, layout=None):
    """`(checkpoint folder, run folder (absolute str), strings)` of `family`'s
    tiny checkpoint converted once per test run (`tests.made_once`): with the
    `BEAM` generation config and `transformers`' strings, or (`beam=False`)
    `make_checkpoint`'s default one and no strings ({}); `strings` as
    `_make_converted_run` returns them; `layout`: `make_checkpoint`'s.
    Read-only: a test that changes a folder copies it first."""
    name = f"converted_{family}_{'beam' if beam else 'default'}" + (
        f"_{layout}" if layout else "")
    folder, strings = made_once(
        tmp_path_factory, name,
        lambda folder: _make_converted_run(folder, family, BEAM if beam else None, beam,
                                           layout))
    return folder / "checkpoint", str((folder / "run").absolute()), strings


@pytest.fixture(scope="module", params=["marian", "bart", "t5"])
def converted(request, tmp_path_factory):
    """`(family, strings, checkpoint, run folder)` (`converted_run`): the
    checkpoint decodes with beam 4 and a length penalty."""
    folder, run_dir, strings = converted_run(tmp_path_factory, request.param)
    return request.param, strings, folder, run_dir


def test_the_run_folder(converted):
    family, _, folder, run_dir = converted
    run = runs.open_run(run_dir)
    assert run.kind is runs.TextGenerator and run.metadata["converted_from"]
    assert run.recipe == ("translation" if family == "marian" else "summarization")
    assert run.metadata["converted_from"]["family"] == family
    assert run.metadata["tokenizers"] == {"source": "tokenizer", "target": "tokenizer"}
    generation = run.generation
    assert generation.strategy == "beam" and generation.num_beams == 4
    assert generation.length_penalty == 0.6 and generation.target_length == 9
    assert generation.length_penalty_form == "hf"
    for name in run.metadata["converted_from"]["tokenizer_files"]:  # copied unchanged
        assert (folder / name).read_bytes() == (run_dir_path(run_dir) / "tokenizer" /
                                                name).read_bytes()
    assert run.source_tokenizer is run.target_tokenizer
    assert runs.is_run_folder(run_dir)


@pytest.mark.parametrize("family", ["bart", "t5"])
def test_the_older_tokenizer_files_convert_to_the_same_run(family, tmp_path_factory, tmp_path):
    """The same checkpoint with `vocab.json` + `merges.txt` / `spiece.model`
    instead of transformers 5's `tokenizer.json`: the run folder copies those
    files, and its tokenizer gives the same ids (so `generate` the same
    strings, shown on the shared `tokenizer.json` run) as transformers'."""
    _, shared_run, _ = converted_run(tmp_path_factory, family)
    model, tokenizer = make_checkpoint(tmp_path / "checkpoint", family, BEAM)
    convert_checkpoint(tmp_path / "checkpoint", tmp_path / "run")
    older, shared = runs.open_run(tmp_path / "run"), runs.open_run(shared_run)
    files = list(FAMILIES[family].tokenizer_layouts[0])
    assert older.metadata["converted_from"]["tokenizer_files"] == files
    assert shared.metadata["converted_from"]["tokenizer_files"] == ["tokenizer.json"]
    assert sorted(p.name for p in (tmp_path / "run" / "tokenizer").iterdir()) == sorted(files)
    ids = tokenizer(TEXTS)["input_ids"]
    assert older.source_tokenizer.tokenize(TEXTS) == ids == shared.source_tokenizer.tokenize(TEXTS)
    for mine, theirs in zip(older.model.weights, shared.model.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def run_dir_path(run_dir):
    import pathlib

    return pathlib.Path(run_dir)


@pytest.mark.large
def test_generate_gives_the_strings_of_transformers(converted, tmp_path):
    """`keras-attention generate` with the recorded settings (beam 4 and the
    checkpoint's length penalty), and greedy, as `transformers` decodes; and
    `runs.open_checkpoint` converts in memory what `convert` saves: the
    same kind, recipe and generation config, and the same strings."""
    _, strings, folder, run_dir = converted
    assert cli_generate(run_dir, TEXTS, tmp_path) == strings["beam"]
    greedy = strings["greedy"]
    assert cli_generate(run_dir, TEXTS, tmp_path, "--strategy", "greedy") == greedy
    assert any(greedy) and len(set(greedy)) > 1  # the strings depend on the source
    in_memory = runs.open_checkpoint(folder)
    saved = runs.open_run(run_dir)
    assert in_memory.kind is saved.kind and in_memory.recipe == saved.recipe
    assert in_memory.generation == saved.generation
    # The saved run's strings are the CLI's above.
    assert in_memory.generate(TEXTS) == strings["beam"]


@pytest.mark.large
def test_greedy_checkpoint_and_generation_rules(tmp_path):
    """A greedy checkpoint with `no_repeat_ngram_size` and `min_length`: the
    rules are recorded and applied; `--num_beams 4` searches as
    `transformers` does with 4 beams."""
    folder = tmp_path / "checkpoint"
    model, tokenizer = make_checkpoint(folder, "marian", {"no_repeat_ngram_size": 2,
                                                          "min_length": 5, "max_length": 10})
    run_dir = convert_checkpoint(folder, tmp_path / "run")
    generation = runs.open_run(run_dir).generation
    assert generation.strategy == "greedy" and generation.no_repeat_ngram_size == 2
    assert generation.min_length == 4
    assert cli_generate(run_dir, TEXTS, tmp_path) == reference_strings(model, tokenizer, TEXTS)
    assert cli_generate(run_dir, TEXTS, tmp_path, "--num_beams", "4") == reference_strings(
        model, tokenizer, TEXTS, num_beams=4)


@pytest.mark.large
def test_evaluate_gives_scores(converted, tmp_path):
    family, _, _, run_dir = converted
    if family == "marian":
        data = tmp_path / "test.tsv"
        data.write_text("".join(f"{s}\t{t}\n" for s, t in zip(ENGLISH[:4], GERMAN[:4])),
                        encoding="utf-8")
    else:
        data = tmp_path / "test.jsonl"
        data.write_text("".join(json.dumps({"document": s, "summary": s[:10]}) + "\n"
                                for s in ENGLISH[:4]), encoding="utf-8")
    scores = cli.main(["evaluate", str(run_dir), "--data", str(data)])
    assert scores["examples"] == 4
    assert all(np.isfinite(v) for v in scores.values())


def test_a_line_longer_than_the_run_accepts_is_refused_unless_cut(converted, monkeypatch):
    """A converted run: a line of more tokens than the run's source length
    is refused, naming it, before any search; cut (`truncate=True`), it keeps
    its first ids and its end token, as the tokenizer cuts it (`encode_lines`). Its tokenizer
    pads with the model's pad id, which is how `encode` finds the long row."""
    family, _, _, run_dir = converted
    run = runs.open_run(run_dir)
    tokenizer, limit = run.source_tokenizer, run.source_limit
    assert limit == run.generation.source_length and tokenizer.pad_token_id == (
        run.model.pad_token_id)
    long = " ".join(TEXTS[:2] * limit)
    length = len(tokenizer.tokenize([long])[0])
    assert length > limit
    texts = [TEXTS[0], long]
    monkeypatch.setattr(run.model, "generate", None)  # never reached
    for call in (run.encode, run.search, run.generate):
        with pytest.raises(runs.SourceTooLongError) as error:
            call(texts)
        assert (error.value.index, error.value.length, error.value.limit) == (1, length, limit)
        assert f"line 2 has {length} tokens, more than the run's source length of {limit}" in (
            str(error.value)), family
    cut = run.encode(texts, truncate=True)
    np.testing.assert_array_equal(cut, encode_lines(tokenizer, texts, limit))
    assert cut.shape == (2, limit) and cut[1, -1] == tokenizer.tokenize([long])[0][-1]
    # A line of exactly the source length fits; one token fewer allowed does not.
    fits = len(tokenizer.tokenize([TEXTS[4]])[0])
    for source_length, refused in ((fits, False), (fits - 1, True)):
        exact = runs.TextGenerator(run.model, tokenizer, generation=run.generation.replace(
            source_length=source_length), recipe=run.recipe)
        if refused:
            with pytest.raises(runs.SourceTooLongError, match=rf"has {fits} tokens"):
                exact.encode(TEXTS[3:])
        else:
            np.testing.assert_array_equal(exact.encode(TEXTS[3:]),
                                          encode_lines(tokenizer, TEXTS[3:], fits))


def test_folder_refusals(converted, tmp_path, capsys):
    """Never a user's folder; a run folder only with `--overwrite=true`."""
    _, _, folder, run_dir = converted
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep me")
    with pytest.raises(SystemExit, match="holds other files"):
        cli.main(["convert", str(folder), str(user)])
    assert (user / "notes.txt").read_text() == "keep me" and len(list(user.iterdir())) == 1
    with pytest.raises(SystemExit, match="holds a run already"):
        cli.main(["convert", str(folder), str(run_dir)])
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    (copy / "model.keras").write_bytes(b"old")
    cli.main(["convert", str(folder), str(copy), "--overwrite=true"])
    assert runs.open_run(copy).metadata["converted_from"]


def test_another_architecture_is_one_line(tmp_path):
    folder = tmp_path / "checkpoint"
    make_checkpoint(folder, "marian")
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = ["MarianForCausalLM"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(SystemExit) as error:
        cli.main(["convert", str(folder), str(tmp_path / "run")])
    assert str(error.value).startswith("keras-attention: error: ")
    assert "\n" not in str(error.value) and "MarianForCausalLM" in str(error.value)
    assert not (tmp_path / "run").exists()


def test_a_swapped_tokenizer_is_one_run_folder_error(converted, tmp_path):
    """A converted folder whose tokenizer/ holds another family's files, or a
    tokenizer larger than the model's vocabulary."""
    family, _, _, run_dir = converted
    other = {"marian": "t5", "bart": "marian", "t5": "bart"}[family]
    swapped = tmp_path / "swapped"
    shutil.copytree(run_dir, swapped)
    shutil.rmtree(swapped / "tokenizer")
    (swapped / "tokenizer").mkdir()
    {"marian": _marian_tokenizer, "bart": _bart_tokenizer, "t5": _t5_tokenizer}[other](
        swapped / "tokenizer")
    with pytest.raises(runs.RunFolderError) as error:
        runs.open_run(swapped)
    message = str(error.value)
    assert "\n" not in message and "tokenizer" in message
    assert message.endswith(f"Received: run_dir={str(swapped)!r}")


@pytest.mark.large
def test_a_larger_tokenizer_is_refused_a_smaller_one_allowed(tmp_path_factory, tmp_path):
    folder, run_dir, _ = converted_run(tmp_path_factory, "t5", beam=False)
    run = runs.open_run(run_dir)  # 160 ids for 168 rows: allowed
    assert run.source_tokenizer.vocabulary_size() < run.model.target_vocabulary_size
    small = tmp_path / "small"
    shutil.copytree(folder, small)
    hf_checkpoints.save_checkpoint(small, "t5", {"suppress_tokens": None}, vocab_size=150)
    with pytest.raises(ValueError, match=r"ids up to 159, beyond the 150 ids of its model"):
        convert_checkpoint(small, tmp_path / "run2")
    assert not (tmp_path / "run2").exists()
    # A model of another checkpoint put in a copy of the converted folder.
    other = tmp_path / "run3"
    shutil.copytree(run_dir, other)
    from keras_attention.pretrained import load_pretrained

    model, _ = load_pretrained(small)
    model.save(str(other / "model.keras"))
    with pytest.raises(runs.RunFolderError, match="more than the 150 ids of model.keras"):
        runs.open_run(other)


@pytest.mark.parametrize("family", ["mbart", "pegasus", "m2m_100"])
def test_a_checkpoint_without_its_tokenizer_files_is_refused_naming_them(family, tmp_path):
    folder = tmp_path / "checkpoint"
    hf_checkpoints.save_checkpoint(folder, family)
    layouts = {"mbart": r"sentencepiece.bpe.model \+ tokenizer_config.json",
               "pegasus": r"spiece.model \+ tokenizer_config.json or spiece.model",
               "m2m_100": r"vocab.json \+ sentencepiece.bpe.model \+ tokenizer_config.json or "
                          r"vocab.json \+ sentencepiece.bpe.model or "
                          r"sentencepiece.bpe.model \+ tokenizer_config.json"}[family]
    with pytest.raises(FileNotFoundError, match=rf"no tokenizer.json \(nor {layouts}\)\. "
                                                r"Received: folder="):
        convert_checkpoint(folder, tmp_path / "run")
    assert not (tmp_path / "run").exists()


#: The families whose tokenizer is `tokenizer.json` (as transformers 5 saves
#: them), M2M100's own files and older mBART-50, Pegasus and NLLB folders (no
#: `tokenizer.json`): `(family, make_checkpoint's layout)`.
LANGUAGE_FAMILIES = [("mbart", None), ("pegasus", None), ("m2m_100", None),
                     ("m2m_100", "vocab.json"), ("mbart", "sentencepiece.bpe.model"),
                     ("pegasus", "spiece.model"), ("m2m_100", "sentencepiece.bpe.model")]


@pytest.mark.large
@pytest.mark.parametrize("family,layout", LANGUAGE_FAMILIES)
def test_tokenizer_json_families_generate_the_strings_of_transformers(family, layout, tmp_path,
                                                                     tmp_path_factory):
    """mBART-50, Pegasus and NLLB folders as transformers 5 saves them
    (`tokenizer.json`), and M2M100's own files (`vocab.json` +
    `sentencepiece.bpe.model`); the target language as the forced first
    token: `keras-attention convert`, then `generate` gives `transformers`'
    strings, beam 4 with a length penalty and greedy (the exported
    SavedModel: export_converted_test.py)."""
    _, run_dir, strings = converted_run(tmp_path_factory, family, layout=layout)
    run = runs.open_run(run_dir)
    assert run.recipe == ("summarization" if family == "pegasus" else "translation")
    assert sorted(run.metadata["converted_from"]["tokenizer_files"]) == {
        "vocab.json": ["sentencepiece.bpe.model", "tokenizer_config.json", "vocab.json"],
        "sentencepiece.bpe.model": ["sentencepiece.bpe.model", "tokenizer_config.json"],
        "spiece.model": ["spiece.model", "tokenizer_config.json"],
        None: ["tokenizer.json", "tokenizer_config.json"]}[layout]
    assert cli_generate(run_dir, TEXTS, tmp_path) == strings["beam"]
    greedy = strings["greedy"]
    assert cli_generate(run_dir, TEXTS, tmp_path, "--strategy", "greedy") == greedy
    assert len(set(greedy)) > 1  # the strings depend on the source
