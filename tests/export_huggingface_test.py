"""`keras-attention export RUN_DIR OUT_DIR --format huggingface`: a converted
run's folder loads in `transformers` (`AutoModelForSeq2SeqLM`,
`AutoTokenizer`) with no missing, unexpected or mismatched weight, holds the
checkpoint's own tensors, and `transformers`' `generate` with its
`generation_config.json` gives the strings `keras-attention generate` gives
(beam 4 with a length penalty, and greedy); CTranslate2's converter takes it
with no other option and translates the same tokens; what cannot be
exported is refused in one line.

The run folders are convert_test.py's (`converted_run`, made once per test
run), with `transformers`' strings for `TEXTS`."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file

from keras_attention import cli
from keras_attention.export.huggingface import CTranslate2Warning, export_huggingface
from keras_attention.runs.convert import convert_checkpoint
from tests.runs.convert_test import (
    LANGUAGE_FAMILIES,
    TEXTS,
    cli_generate,
    converted_run,
    make_checkpoint,
)

pytestmark = pytest.mark.same_path_on(
    "jax", reason="the folder is written from NumPy arrays; the converted models' tokens on "
                  "JAX are bart_test's and t5_test's")


def transformers_strings(folder, texts, **settings):
    """`transformers`' `generate` on the exported folder, with its saved
    generation config (and `settings`), decoded as `batch_decode(...,
    skip_special_tokens=True)`."""
    model, loading = transformers.AutoModelForSeq2SeqLM.from_pretrained(
        str(folder), output_loading_info=True)
    assert {key: set(value) for key, value in loading.items() if key != "error_msgs"} == {
        "missing_keys": set(), "unexpected_keys": set(), "mismatched_keys": set()}
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    inputs = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        tokens = model.eval().generate(**inputs, **settings)
    return tokenizer.batch_decode(tokens, skip_special_tokens=True)


def assert_same_tensors(checkpoint, folder):
    original = load_file(checkpoint / "model.safetensors")
    exported = load_file(folder / "model.safetensors")
    assert sorted(exported) == sorted(original)
    assert all(np.array_equal(exported[name], original[name]) for name in original)


@pytest.fixture(scope="module", params=["marian", "bart", "t5"])
def converted(request, tmp_path_factory):
    """`(checkpoint, run folder, strings)` (`converted_run`): beam 4 with a
    length penalty; `strings["beam"]` and `strings["greedy"]` are
    `transformers`' for `TEXTS`."""
    return converted_run(tmp_path_factory, request.param)


def test_the_exported_folder_is_the_checkpoint_and_generates_its_strings(converted, tmp_path):
    checkpoint, run_dir, strings = converted
    cli.main(["export", run_dir, str(tmp_path / "hf"), "--format", "huggingface"])
    assert_same_tensors(checkpoint, tmp_path / "hf")
    assert transformers_strings(tmp_path / "hf", TEXTS) == strings["beam"]
    assert cli_generate(run_dir, TEXTS, tmp_path) == strings["beam"]
    greedy = export_huggingface(run_dir, tmp_path / "greedy", strategy="greedy")
    settings = json.loads((tmp_path / "greedy" / "generation_config.json").read_text())
    assert settings["num_beams"] == 1 and "length_penalty" not in settings
    assert transformers_strings(greedy, TEXTS) == strings["greedy"]
    assert len(set(strings["greedy"])) > 1  # the strings depend on the source


@pytest.mark.large
@pytest.mark.parametrize("family,layout", LANGUAGE_FAMILIES)
def test_language_families_export_the_strings_of_transformers(family, layout, tmp_path,
                                                              tmp_path_factory):
    """mBART-50, Pegasus, M2M100 and NLLB run folders (each tokenizer layout
    copied unchanged): the forced target language goes out in the
    generation config."""
    checkpoint, run_dir, strings = converted_run(tmp_path_factory, family, layout=layout)
    export_huggingface(run_dir, tmp_path / "hf")
    assert_same_tensors(checkpoint, tmp_path / "hf")
    assert transformers_strings(tmp_path / "hf", TEXTS) == strings["beam"]


def test_ctranslate2_converts_the_folder_and_translates_the_same_tokens(tmp_path):
    """A Marian with OPUS-MT's zero pad row (CTranslate2 starts the decoder
    from a zero embedding) and one head count on both sides: convert,
    export, `ct2-transformers-converter --model --output_dir`, then greedy
    `translate_batch` gives `keras-attention generate`'s strings (float32)."""
    make_checkpoint(tmp_path / "checkpoint", "marian", {"max_length": 10},
                    decoder_attention_heads=2, zero_pad_row=True)
    convert_checkpoint(tmp_path / "checkpoint", tmp_path / "run")
    export_huggingface(tmp_path / "run", tmp_path / "hf")
    texts = [text for text in TEXTS if text]  # CTranslate2 answers an empty line with nothing
    ours = cli_generate(tmp_path / "run", texts, tmp_path)
    assert ctranslate2_strings(tmp_path / "hf", texts, tmp_path) == ours
    assert ours == transformers_strings(tmp_path / "hf", texts)
    assert len(set(ours)) > 1


def test_a_decoder_ctranslate2_would_misread_is_named_in_one_warning(tmp_path_factory, tmp_path,
                                                                     capsys):
    """The shared Marian has 2 encoder heads and 4 decoder heads, which
    CTranslate2 4.8's converter reads as 2: one warning line on stderr, and
    the folder is still written (transformers loads it exactly)."""
    _, run_dir, _ = converted_run(tmp_path_factory, "marian")
    cli.main(["export", run_dir, str(tmp_path / "hf"), "--format", "huggingface"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("keras-attention: warning: CTranslate2")
    assert "4" in lines[0] and "2 attention heads" in lines[0]
    assert (tmp_path / "hf" / "model.safetensors").is_file()


def test_refusals_name_the_argument_and_write_nothing(tmp_path_factory, tmp_path):
    _, run_dir, _ = converted_run(tmp_path_factory, "t5")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    for argv, message in [
        (["export", run_dir, str(tmp_path / "mine"), "--format", "huggingface",
          "--overwrite=true"], "holds files but no checkpoint"),
        (["export", run_dir, str(tmp_path / "saved"), "--overwrite=true"],
         "applies to `--format huggingface` only"),
    ]:
        with pytest.raises(SystemExit) as error:
            cli.main(argv)
        assert message in str(error.value) and "Received:" in str(error.value)
        assert "\n" not in str(error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    export_huggingface(run_dir, tmp_path / "hf")
    with pytest.raises(ValueError, match="already holds a checkpoint"):
        export_huggingface(run_dir, tmp_path / "hf")
    export_huggingface(run_dir, tmp_path / "hf", num_beams=2, overwrite=True)
    assert json.loads((tmp_path / "hf" / "generation_config.json").read_text())[
        "num_beams"] == 2


def ctranslate2_strings(folder, texts, tmp_path):
    """`ct2-transformers-converter --model folder`, then greedy
    `translate_batch` (float32) with the generation config's suppressed
    tokens, decoded by the folder's tokenizer."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    converter = [sys.executable, "-m", "ctranslate2.converters.transformers"]
    subprocess.run([*converter, "--model", str(folder), "--output_dir", str(tmp_path / "ct2")],
                   check=True, capture_output=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), compute_type="float32")
    sources = [tokenizer.convert_ids_to_tokens(tokenizer.encode(text)) for text in texts]
    # CTranslate2 does not read `suppress_tokens` (the recipes' pad, <unk> and <s>).
    settings = json.loads((folder / "generation_config.json").read_text())
    suppressed = tokenizer.convert_ids_to_tokens(settings.get("suppress_tokens", []))
    results = translator.translate_batch(sources, beam_size=1, max_decoding_length=9,
                                         suppress_sequences=[[t] for t in suppressed] or None)
    return [tokenizer.decode(tokenizer.convert_tokens_to_ids(result.hypotheses[0]),
                             skip_special_tokens=True) for result in results]


@pytest.mark.large
def test_a_fine_tuned_marian_exports_the_same_strings_to_transformers_and_ctranslate2(tmp_path):
    """Convert an OPUS-MT-shaped Marian (zero pad row, one head count),
    fine-tune it with `train translation --init_from`, export: the weights
    moved, the decoder start row stayed zero, and `transformers` and
    CTranslate2 give `keras-attention generate`'s strings (greedy);
    exported with the run's beam search, `transformers` gives its beam
    strings."""
    from keras_attention import runs
    from keras_attention.recipes.translation import train as translation
    from tests.pretrained.tokenizers_test import ENGLISH, GERMAN
    from tests.recipes.fine_tuning_test import fine_tune_config

    make_checkpoint(tmp_path / "checkpoint", "marian",
                    {"max_length": 10, "num_beams": 4, "length_penalty": 0.6},
                    decoder_attention_heads=2, zero_pad_row=True)
    convert_checkpoint(tmp_path / "checkpoint", tmp_path / "run")
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{ENGLISH[i % 7]} {i}\t{GERMAN[i % 5]} {i}\n" for i in range(40)),
                    encoding="utf-8")
    translation.train_and_evaluate(fine_tune_config(
        init_from=str(tmp_path / "run"), data=str(data), output_dir=str(tmp_path / "tuned"),
        epochs=2, batch_size=8, max_length=16, validation_fraction=0.1, test_fraction=0.1,
        precision="float32", jit_compile="false", fine_tune_learning_rate=3e-3))
    tuned, original = runs.open_run(tmp_path / "tuned"), runs.open_run(tmp_path / "run")
    assert any(not np.array_equal(a, b) for a, b in zip(tuned.model.get_weights(),
                                                        original.model.get_weights()))
    table = tuned.model.target_embedding.token_embedding.embeddings.numpy()
    assert not table[tuned.model.pad_token_id].any() and table.any()
    cli.main(["export", str(tmp_path / "tuned"), str(tmp_path / "hf"), "--format",
              "huggingface", "--strategy", "greedy"])
    texts = [text for text in TEXTS if text]
    ours = cli_generate(tmp_path / "tuned", texts, tmp_path, "--strategy", "greedy")
    assert transformers_strings(tmp_path / "hf", texts) == ours
    assert ctranslate2_strings(tmp_path / "hf", texts, tmp_path) == ours
    # The run's own decoding (the checkpoint's beam search) goes out too.
    cli.main(["export", str(tmp_path / "tuned"), str(tmp_path / "hf_beam"), "--format",
              "huggingface"])
    assert json.loads((tmp_path / "hf_beam" / "generation_config.json").read_text())[
        "num_beams"] == tuned.generation.num_beams > 1
    beam = cli_generate(tmp_path / "tuned", texts, tmp_path)
    assert transformers_strings(tmp_path / "hf_beam", texts) == beam


## Runs the translation recipe trained


def test_a_recipe_run_exports_as_m2m100_with_its_strings(quick_translation_run, tmp_path,
                                                         recwarn):
    """The quick preset's run (one SentencePiece vocabulary, pre-norm,
    fairseq's positions: the recipe's defaults) goes out as M2M100 with a
    `tokenizer.json` of its SentencePiece model, its tokens in fairseq's
    order (pad id 1, as M2M100's): `transformers` gives `keras-attention
    generate --strategy greedy`'s strings, and so does CTranslate2 after
    `ct2-transformers-converter --model --output_dir` (float32, greedy),
    with no warning. Its beam search (transformers' scoring, the recipe's
    default) goes out too: transformers gives `keras-attention generate
    --num_beams 3`'s strings."""
    from keras_attention import data, runs

    run_dir = quick_translation_run[0]
    run = runs.open_run(run_dir)
    texts = [source for source, _ in data.make_date_pairs(12, seed=3)]
    export_huggingface(run_dir, tmp_path / "hf", strategy="greedy")
    assert not [w for w in recwarn if issubclass(w.category, CTranslate2Warning)]
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["M2M100ForConditionalGeneration"]
    assert (config["bos_token_id"], config["pad_token_id"], config["eos_token_id"]) == (0, 1, 2)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3]) == ["<s>", "<pad>", "</s>", "<unk>"]
    for text, pieces in zip(texts, run.source_tokenizer.pieces(texts)):  # renumbered
        assert tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"]) == pieces
    ours = cli_generate(run_dir, texts, tmp_path, "--strategy", "greedy")
    assert transformers_strings(tmp_path / "hf", texts) == ours
    assert ctranslate2_strings(tmp_path / "hf", texts, tmp_path) == ours
    assert len(set(ours)) > 1
    assert run.generation.length_penalty_form == "hf"
    export_huggingface(run_dir, tmp_path / "beam", strategy="beam", num_beams=3)
    settings = json.loads((tmp_path / "beam" / "generation_config.json").read_text())
    assert (settings["num_beams"], settings["length_penalty"]) == (
        3, run.generation.length_penalty)
    beam = cli_generate(run_dir, texts, tmp_path, "--num_beams", "3")
    assert transformers_strings(tmp_path / "beam", texts) == beam


def test_recipe_runs_no_architecture_computes_are_refused_naming_the_setting(
        quick_translation_run, tmp_path):
    """GNMT's beam scoring (`--length_penalty_form gnmt`, and a run saved
    before `decoding` recorded its form), and a transformer of the recipe's
    earlier layout (Keras' final-norm epsilon, interleaved positions, an
    output bias), are refused in one line; nothing is written."""
    import shutil

    from keras_attention import runs
    from keras_attention.models import transformer_seq2seq

    run_dir = quick_translation_run[0]
    run = runs.open_run(run_dir)
    gnmt = run.generation.replace(length_penalty_form="gnmt").to_dict()
    unrecorded = {key: value for key, value in gnmt.items() if key != "length_penalty_form"}
    for name, decoding in (("gnmt", gnmt), ("unrecorded", unrecorded)):
        shutil.copytree(run_dir, tmp_path / name)
        config_path = tmp_path / name / "config.json"
        config = json.loads(config_path.read_text())
        config_path.write_text(json.dumps({**config, "decoding": decoding}))
        assert runs.open_run(tmp_path / name).generation.length_penalty_form == "gnmt"
        with pytest.raises(ValueError, match="GNMT's length.*Received: strategy='beam'"):
            export_huggingface(tmp_path / name, tmp_path / "beam", strategy="beam")
        shutil.rmtree(tmp_path / name)
    earlier = transformer_seq2seq(run.model.config.vocabulary_size, num_layers=1, hidden_dim=16,
                                  num_heads=2, intermediate_dim=32, share_embeddings=True,
                                  max_length=34, start_token_id=2, end_token_id=3)
    runs.save_run(tmp_path / "earlier", earlier, run.source_tokenizer, run.target_tokenizer,
                  recipe="translation", config=run.config, scores={},
                  decoding=run.generation.to_dict(), source_format="text")
    with pytest.raises(ValueError, match="its setting `layer_norm_epsilon` is None, which "
                                         "M2M100ForConditionalGeneration computes only as"):
        export_huggingface(tmp_path / "earlier", tmp_path / "out", strategy="greedy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier"]


def test_a_run_counting_positions_from_its_pad_id_keeps_its_ids_with_one_warning(
        quick_translation_run, tmp_path):
    """A run of the recipe's version of 2026-12-07 (fairseq positions from
    the pad id 0 + 1) exports with its own ids, which transformers computes
    exactly; CTranslate2's converter would count its positions from 2: one
    warning says so."""
    from keras_attention import runs
    from keras_attention.models import transformer_seq2seq

    run = runs.open_run(quick_translation_run[0])
    c = run.model.config
    earlier = transformer_seq2seq(
        c.vocabulary_size, num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32,
        share_embeddings=True, max_length=c.max_length, pad_token_id=0, start_token_id=2,
        end_token_id=3, position="sinusoidal_fairseq", position_offset=1,
        layer_norm_epsilon=1e-5, output_bias=False)
    runs.save_run(tmp_path / "earlier", earlier, run.source_tokenizer, run.target_tokenizer,
                  recipe="translation", config=run.config, scores={},
                  decoding=run.generation.to_dict(), source_format="text")
    with pytest.warns(CTranslate2Warning, match="as if the pad id were 1; this model's is 0"):
        export_huggingface(tmp_path / "earlier", tmp_path / "hf", strategy="greedy")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert (config["pad_token_id"], config["eos_token_id"]) == (0, 3)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3]) == ["<pad>", "<unk>", "<s>", "</s>"]


@pytest.mark.large
def test_a_run_with_a_vocabulary_per_language_is_refused(tmp_path):
    from keras_attention.recipes.translation import config as translation_config
    from keras_attention.recipes.translation import train as translation

    translation.train_and_evaluate({
        **translation_config.get_quick_config(), "shared_vocabulary": False, "epochs": 1,
        "output_dir": str(tmp_path / "run"), "num_examples": 300})
    with pytest.raises(ValueError, match="a vocabulary per language.*shared_vocabulary=False"):
        export_huggingface(tmp_path / "run", tmp_path / "hf", strategy="greedy")
    assert not (tmp_path / "hf").exists()
