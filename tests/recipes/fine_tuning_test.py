"""`--init_from`: fine-tuning a converted checkpoint (`recipes.fine_tuning`):
the settings it cannot apply are refused before any work, a folder that is
not a converted run is refused, and tiny converted Marian / T5 models fit 40
synthetic pairs with the recipe's loss (the loss falls, the weights move)."""

import json

import keras
import numpy as np
import pytest

from keras_attention.pretrained import load_pretrained
from keras_attention.recipes import fine_tuning
from keras_attention.recipes.translation import config as translation_config
from keras_attention.recipes.translation import train as translation
from keras_attention.runs import GenerationConfig
from keras_attention.tokenizer import Tokenizer, keep_last
from tests.pretrained import hf_checkpoints


class WordTokenizer(Tokenizer):
    """Words `w3` ... `w30` as ids 3 ... 30, the checkpoint's end id appended
    (a stand-in for the checkpoint's tokenizer: the same contract, and its
    `truncate`, which keeps the end token)."""

    def __init__(self, end_token_id, pad_token_id):
        self.end_token_id, self.pad_token_id = end_token_id, pad_token_id

    def tokenize(self, texts):
        return [[int(word[1:]) for word in text.split()] + [self.end_token_id]
                for text in texts]

    def detokenize(self, token_ids):
        return [" ".join(f"w{i}" for i in row if 3 <= i <= 30) for row in token_ids]

    def vocabulary_size(self):
        return hf_checkpoints.VOCAB

    def truncate(self, token_ids, max_length):
        return keep_last(token_ids, max_length)


def synthetic_pairs(count=40, seed=0):
    """`count` pairs "a b c" -> "c b a" (reversed) of 2-5 words."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        words = [f"w{i}" for i in rng.integers(3, 31, rng.integers(2, 6))]
        pairs.append((" ".join(words), " ".join(reversed(words))))
    return pairs


def fine_tune_config(**overrides):
    return {**translation_config.get_config(), "fine_tune_learning_rate": 3e-3,
            "label_smoothing": 0.0, **overrides}


@pytest.mark.large
@pytest.mark.parametrize("family", ["marian", "t5"])
def test_converted_model_fits_synthetic_pairs(tmp_path, family):
    """Marian and T5 start the decoder with their pad id: the examples start
    with it, the pad labels are ignored, and a few steps lower the loss."""
    hf_checkpoints.save_checkpoint(tmp_path, family)
    model, info = load_pretrained(tmp_path)
    before = [np.array(w) for w in model.get_weights()]
    tokenizer = WordTokenizer(model.end_token_id, model.pad_token_id)
    generation = GenerationConfig.from_generate_kwargs(info["generation"], source_length=5)
    inputs, labels = fine_tuning.make_examples(synthetic_pairs(), tokenizer, model, generation,
                                               max_length=5)
    pad = model.pad_token_id
    assert (inputs["decoder_token_ids"][:, 0] == hf_checkpoints.ids(family)[2]).all()
    np.testing.assert_array_equal(inputs["decoder_token_ids"][:, 1:], labels[:, :-1])
    assert labels.shape[1] <= 5 and (labels == model.end_token_id).any(axis=1).all()
    model.compile(**fine_tuning.compile_settings(fine_tune_config(), pad))
    first = model.evaluate(inputs, labels, verbose=0)
    model.fit(inputs, labels, batch_size=8, epochs=3, verbose=0)
    assert model.evaluate(inputs, labels, verbose=0) < first - 0.1
    assert any(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))


def test_recipe_loss_equals_transformers_loss(tmp_path):
    """The fine-tuning loss on padded labels is `transformers`' (-100 labels
    ignored, the mean over the others)."""
    reference = hf_checkpoints.save_checkpoint(tmp_path, "marian")
    model, _ = load_pretrained(tmp_path)
    pad, _, start = hf_checkpoints.ids("marian")
    source, labels = hf_checkpoints.source_ids("marian"), hf_checkpoints.labels("marian")
    _, loss = hf_checkpoints.reference_training_outputs(reference, source, labels, pad)
    decoder, target = hf_checkpoints.teacher_forcing_inputs(labels, start, pad)
    model.compile(**fine_tuning.compile_settings(fine_tune_config(), pad))
    ours = model.evaluate({"encoder_token_ids": source, "decoder_token_ids": decoder}, target,
                          verbose=0)
    np.testing.assert_allclose(ours, loss, rtol=1e-4)


@pytest.mark.parametrize("key, value", [
    ("vocabulary_size", 300), ("num_layers", 5), ("hidden_dim", 64), ("learning_rate", 1e-4),
    ("architecture", "rnn"), ("num_beams", 2)])
def test_settings_a_converted_model_fixes_are_refused(tmp_path, key, value):
    config = fine_tune_config(init_from=str(tmp_path), **{key: value})
    with pytest.raises(ValueError, match=rf"Received: {key}={value!r}"):
        translation.check_config(config)
    with pytest.raises(ValueError, match=rf"Received: {key}="):
        translation.parse_settings([f"--init_from={tmp_path}", f"--{key}={value}"])


def test_a_folder_that_is_not_a_converted_run_is_refused(tmp_path):
    with pytest.raises(ValueError, match="init_from"):
        translation.check_config(fine_tune_config(init_from=str(tmp_path / "missing")))
    (tmp_path / "model.keras").write_bytes(b"")
    (tmp_path / "config.json").write_text(json.dumps({"recipe": "translation"}))
    with pytest.raises(ValueError, match="converted run folder.*backup_dir"):
        translation.check_config(fine_tune_config(init_from=str(tmp_path)))
    with pytest.raises(ValueError, match="fine_tune_learning_rate"):
        translation.parse_settings(["--fine_tune_learning_rate=0.01"])


def test_without_init_from_nothing_changes():
    config = translation.check_config(translation_config.get_config())
    assert translation.SPEC.model_kind(config) == "seq2seq"
    assert fine_tuning.check_init_from(config, [config]) is None
    assert keras.__version__


@pytest.mark.large
@pytest.mark.parametrize("family", ["marian"])
def test_train_translation_init_from_a_converted_run(tmp_path_factory, tmp_path, family):
    """`train translation --init_from=RUN_DIR`: 40 pairs fine-tune the
    converted model; the saved run is a converted one, `open_run(...).generate`
    answers with the checkpoint's tokenizer and settings, and the weights
    are not the converted ones. The converted run is convert_test.py's
    (`converted_run`, made once per test run), read only."""
    import pathlib

    from keras_attention import runs
    from tests.pretrained.tokenizers_test import ENGLISH, GERMAN
    from tests.runs.convert_test import converted_run

    _, converted, _ = converted_run(tmp_path_factory, family, beam=False)
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{ENGLISH[i % 7]} {i}\t{GERMAN[i % 5]} {i}\n" for i in range(40)),
                    encoding="utf-8")
    output = tmp_path / "fine_tuned"
    scores = translation.train_and_evaluate(fine_tune_config(
        init_from=converted, data=str(data), output_dir=str(output), epochs=2, batch_size=8,
        max_length=16, validation_fraction=0.1, test_fraction=0.1, precision="float32",
        jit_compile="false"))
    assert np.isfinite(scores["bleu"])
    run = runs.open_run(output)
    original = runs.open_run(converted)
    assert run.kind is runs.TextGenerator and run.generation == original.generation
    assert run.metadata["converted_from"]
    assert run.metadata["fine_tuned_from"] == converted
    outputs = run.generate(["I am a small frog.", "Hello, world!"])
    assert len(outputs) == 2 and all(isinstance(text, str) for text in outputs)
    assert any(not np.allclose(a, b) for a, b in zip(run.model.get_weights(),
                                                     original.model.get_weights()))
    assert sorted(p.name for p in (output / "tokenizer").iterdir()) == sorted(
        p.name for p in (pathlib.Path(converted) / "tokenizer").iterdir())


@pytest.mark.large
def test_train_summarization_init_from_a_converted_t5_run(tmp_path_factory, tmp_path):
    """`train summarization --init_from=RUN_DIR` with a converted T5 (which
    starts the decoder with its pad id) on 40 built-in abstracts; the
    converted run is convert_test.py's (`converted_run`), read only."""
    from keras_attention import runs
    from keras_attention.recipes.summarization import config as summarization_config
    from keras_attention.recipes.summarization import train as summarization
    from tests.runs.convert_test import converted_run

    _, converted, _ = converted_run(tmp_path_factory, "t5", beam=False)
    output = tmp_path / "fine_tuned"
    config = {**summarization_config.get_config(), "init_from": converted,
              "output_dir": str(output), "num_examples": 40, "epochs": 1, "batch_size": 8,
              "max_source_length": 48, "max_target_length": 16, "validation_fraction": 0.1,
              "test_fraction": 0.1, "max_test_examples": 4, "precision": "float32",
              "jit_compile": "false"}
    with pytest.raises(ValueError, match="Received: summarizer='extractive'"):
        summarization.check_config({**config, "summarizer": "extractive"})
    scores = summarization.train_and_evaluate(config)
    assert np.isfinite(scores["model"]["rouge1"])
    run = runs.open_run(output)
    assert run.kind is runs.TextGenerator and run.metadata["recipe"] == "summarization"
    assert run.metadata["converted_from"]
    assert len(run.generate(["A short document. It has two sentences."])) == 1
    assert any(not np.allclose(a, b) for a, b in zip(
        run.model.get_weights(), runs.open_run(converted).model.get_weights()))
