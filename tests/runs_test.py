import keras
import numpy as np
import pytest

from keras_attention import data, runs
from keras_attention.models import transformer_seq2seq


@pytest.fixture
def parts():
    pairs = data.make_date_pairs(200)
    source = data.train_tokenizer([s for s, _ in pairs], 60)
    target = data.train_tokenizer([t for _, t in pairs], 30)
    model = transformer_seq2seq(source.vocabulary_size(), num_layers=1, hidden_dim=16,
                                num_heads=2, intermediate_dim=32)
    return model, source, target


def test_save_then_load_round_trips(parts, tmp_path):
    model, source, target = parts
    runs.save_run(tmp_path / "run", model, source, target, recipe="x", config={"a": 1},
                  scores={"bleu": 1.0})
    loaded, loaded_source, _, metadata = runs.load_run(tmp_path / "run")
    assert metadata == {"recipe": "x", "config": {"a": 1}, "scores": {"bleu": 1.0}}
    ids = {"encoder_token_ids": np.array([[5, 6]]), "decoder_token_ids": np.array([[2, 7]])}
    np.testing.assert_array_equal(loaded(ids), model(ids))
    np.testing.assert_array_equal(loaded_source("May 1"), source("May 1"))


def test_failed_save_leaves_nothing_and_keeps_the_old_run(parts, tmp_path, monkeypatch):
    model, source, target = parts
    runs.save_run(tmp_path / "run", model, source, target, recipe="x", config={}, scores={})
    monkeypatch.setattr(keras.Model, "save", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        runs.save_run(tmp_path / "run", model, source, target, recipe="y", config={}, scores={})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert runs.load_run(tmp_path / "run")[3]["recipe"] == "x"


def test_load_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="model.keras is missing"):
        runs.load_run(tmp_path)
