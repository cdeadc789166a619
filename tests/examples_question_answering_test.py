"""The question-answering recipe on its quick configs, and its scoring."""

import json

import numpy as np
import pytest

from tests import recipes


def load_recipe():
    return recipes.load_recipe("question_answering")


def test_parse_tasks_and_scoring():
    recipe = load_recipe()
    assert recipe.parse_tasks("1-3,5") == [1, 2, 3, 5]
    test = [("s", "kitchen", 1), ("s", "garden", 1), ("s", "yes", 2)]
    scores = recipe.score(["Kitchen", "office", "yes"], test)
    assert scores["per_task_accuracy"] == {1: 50.0, 2: 100.0}
    assert scores["mean_accuracy"] == 75.0
    assert round(scores["exact_match"], 2) == 66.67


def test_sources_keep_the_last_sentences_and_place_the_question():
    recipe = load_recipe()
    example = {"story": ["A went to the x.", "B went to the y."], "question": "Where is A?"}
    assert recipe.as_source(example, 1, question_first=True) == "Where is A? | B went to the y."
    assert recipe.as_source(example, 2) == "A went to the x. B went to the y. | Where is A?"


def test_learning_rate_halves_every_decay_epochs():
    recipe = load_recipe()
    schedule = recipe.learning_rate_schedule(
        {"decay_epochs": 15, "epochs": 40, "learning_rate": 0.01}, steps_per_epoch=10)
    assert [round(float(schedule(step)), 6) for step in (0, 149, 150, 299, 300, 399)] == [
        0.01, 0.01, 0.005, 0.005, 0.0025, 0.0025]


def test_boolean_overrides_parse_false():
    recipe = load_recipe()
    config = recipe.parse_settings(["--question_first=false", "--epochs=3"])
    assert config["question_first"] is False and config["epochs"] == 3
    config = recipe.parse_settings(["--preset=transformer", "--question_first=true"])
    assert config["question_first"] is True and config["architecture"] == "transformer"


def _cli_answers(cli, output, sources, tmp_path):
    (tmp_path / "in.txt").write_text("\n".join(sources) + "\n", encoding="utf-8")
    cli.main(["generate", str(output), "--input", str(tmp_path / "in.txt"),
              "--output", str(tmp_path / "out.txt")])
    return (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")[:-1]


def _check_cli_evaluate(cli, output, tmp_path):
    record = {"id": "q1", "title": "t", "context": "Mary went to the kitchen.",
              "question": "Where is Mary?", "answer": "kitchen", "answer_start": 17}
    (tmp_path / "qa.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    scores = cli.main(["evaluate", str(output), "--data", str(tmp_path / "qa.jsonl")])
    assert set(scores) == {"exact_match", "f1", "examples"} and scores["examples"] == 1


SOURCES = ["Mary went to the kitchen. John moved to the office. | Where is Mary?",
           "John moved to the office. | Where is John?"]


@pytest.mark.large
def test_memory_network_quick_config_trains_mirrored_saves_plots_and_the_cli_answers_the_same(
        monkeypatch, tmp_path):
    """The quick config under the distribution it names (`mirrored`, with a
    backup folder): one training checks the strategy, the saved run and the
    CLI's answers."""
    import keras
    import tensorflow as tf

    from keras_attention import cli, data

    recipe = load_recipe()
    output = tmp_path / "qa"
    config = recipe.parse_settings(["--preset=quick", "--distribution=mirrored",
                                    f"--backup_dir={tmp_path / 'backup'}"])
    config.update(output_dir=str(output))
    assert config["architecture"] == "memory_network"
    assert config == dict(recipe.recipe_config.get_quick_config(), distribution="mirrored",
                          backup_dir=str(tmp_path / "backup"), output_dir=str(output))
    seen = {}
    build = recipe.memory_network

    def build_and_record(*args, **kwargs):
        seen["model"] = build(*args, **kwargs)
        seen["strategy"] = tf.distribute.get_strategy()
        return seen["model"]

    monkeypatch.setattr(recipe, "memory_network", build_and_record)
    fit = keras.Model.fit

    def fit_and_record(self, *args, **kwargs):
        seen["callbacks"] = kwargs["callbacks"]
        seen["record"] = json.loads((tmp_path / "backup" / "config.json").read_text())
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(keras.Model, "fit", fit_and_record)
    scores = recipe.train_and_evaluate(config)
    assert 0.0 <= scores["mean_accuracy"] <= 100.0
    assert isinstance(seen["strategy"], tf.distribute.MirroredStrategy)
    for variable in (seen["model"].trainable_variables[0], seen["model"].optimizer.iterations):
        assert isinstance(variable.value, tf.distribute.DistributedValues), variable.path
    assert any(isinstance(c, keras.callbacks.BackupAndRestore) for c in seen["callbacks"])
    # The backup folder records the settings it belongs to (not those a resume may change).
    assert seen["record"]["num_examples"] == config["num_examples"]
    assert "epochs" not in seen["record"]

    for name in ("model.keras", "source.spm", "target.spm", "config.json", "attention.png",
                 "training.png"):
        assert (output / name).exists(), name
    metadata = json.loads((output / "config.json").read_text())
    assert metadata["recipe"] == "question_answering" and metadata["answer_classes"]
    assert metadata["source_format"] == "{story} | {question}" and metadata["decoding"] is None

    lines = _cli_answers(cli, output, SOURCES, tmp_path)
    model, tokenizer, _, _ = recipe.runs.load_run(output)
    records = [data.story_from_source(s) for s in SOURCES]
    assert lines == _answers_of_records(model, records, tokenizer, metadata["answer_classes"],
                                        config)
    assert all(line in metadata["answer_classes"] for line in lines)
    _check_cli_evaluate(cli, output, tmp_path)


def _answers_of_records(model, records, tokenizer, answer_classes, config):
    """The memory network's answers, from the story records themselves (not
    from the `"story | question"` lines the CLI reads)."""
    from keras_attention import data

    x = data.encode_stories(records, tokenizer, max_memories=config["max_memories"])
    return [answer_classes[i] for i in np.argmax(model.predict(x, verbose=0), axis=-1)]


@pytest.mark.large
def test_transformer_quick_config_and_the_cli_answers_the_same(tmp_path):
    from keras_attention import cli

    recipe = load_recipe()
    output = tmp_path / "qa"
    config = dict(recipe.recipe_config.get_transformer_config(), output_dir=str(output),
                  num_examples=300, num_layers=1, hidden_dim=32, num_heads=2,
                  intermediate_dim=64, epochs=1, vocabulary_size=80)
    scores = recipe.train_and_evaluate(config)
    assert 0.0 <= scores["mean_accuracy"] <= 100.0
    assert (output / "training.png").exists()
    metadata = json.loads((output / "config.json").read_text())
    assert metadata["source_format"] == "{context} | {question}"
    assert metadata["decoding"]["target_length"] == config["max_answer_length"]
    assert metadata["decoding"]["suppress_token_ids"] == [0, 1, 2]  # pad, unk, start
    lines = _cli_answers(cli, output, SOURCES, tmp_path)
    model, source_tokenizer, target_tokenizer, _ = recipe.runs.load_run(output)
    decoding = recipe.decoding_settings(config, target_tokenizer)
    answerer = recipe.runs.TextGenerator(model, source_tokenizer, target_tokenizer, decoding,
                                         recipe="question_answering")
    assert lines == answerer.generate(SOURCES)
    _check_cli_evaluate(cli, output, tmp_path)


def test_unknown_architecture_is_refused(tmp_path):
    recipe = load_recipe()
    config = dict(recipe.recipe_config.get_quick_config(), architecture="lstm",
                  output_dir=str(tmp_path / "qa"), num_examples=20)
    with pytest.raises(ValueError, match=r"architecture.*Received: architecture='lstm'"):
        recipe.train_and_evaluate(config)
    assert not (tmp_path / "qa").exists()


def test_memory_network_compiles_with_xla_by_default_and_flags_override():
    recipe = load_recipe()
    auto = recipe.execution_defaults(recipe.recipe_config.get_config())
    assert auto["jit_compile"] is True and auto["dtype_policy"] == (
        "mixed_bfloat16" if recipe.runtime.has_gpu() else "float32")
    chosen = recipe.execution_defaults(recipe.parse_settings(["--jit_compile=false",
                                                              "--precision=float32"]))
    assert chosen["jit_compile"] is False and chosen["dtype_policy"] == "float32"


def test_restarts_keep_the_network_with_the_best_validation_accuracy(monkeypatch, tmp_path):
    from keras_attention import data, distribute

    recipe = load_recipe()
    accuracies = {0: [0.5, 0.7], 1: [0.6, 0.9], 2: [0.8, 0.85]}  # by seed, per epoch
    seen = []

    class History:
        def __init__(self, seed):
            self.history = {"val_accuracy": accuracies[seed]}

    def fake_fit(training, validation, vocabulary_size, num_answers, config, strategy,
                 callbacks=()):
        seen.append((config["seed"], config["backup_dir"], len(training[1]), len(validation[1])))
        return f"model {config['seed']}", History(config["seed"])

    monkeypatch.setattr(recipe, "fit_memory_network", fake_fit)
    train = [dict(e, task=1) for e in data.make_stories(100, seed=0)]
    config = dict(recipe.recipe_config.get_quick_config(), restarts=3,
                  backup_dir=str(tmp_path), validation_fraction=0.2)
    model, _, _, history, restarts = recipe.train_memory_network(
        train, config, distribute.get_strategy("default"))
    assert model == "model 1" and history.history["val_accuracy"] == [0.6, 0.9]
    assert restarts == [{"seed": s, "validation_accuracy": max(a)} for s, a in accuracies.items()]
    # Same split for every restart, each with its own backup folder.
    assert [s[0] for s in seen] == [0, 1, 2] and len({s[2:] for s in seen}) == 1
    assert [s[1] for s in seen] == [str(tmp_path / f"restart_{k}") for k in (1, 2, 3)]
    with pytest.raises(ValueError, match=r"restarts.*Received: restarts=0"):
        recipe.train_memory_network(train, dict(config, restarts=0),
                                    distribute.get_strategy("default"))


@pytest.mark.large
def test_universal_transformer_quick_config_trains_plots_halting_and_the_cli_answers_the_same(
        tmp_path):
    from keras_attention import cli, data

    recipe = load_recipe()
    output = tmp_path / "qa"
    config = recipe.parse_settings(["--preset=quick_ut", f"--output_dir={output}"])
    assert config["architecture"] == "universal_transformer" and config["act"] is True
    scores = recipe.train_and_evaluate(config)
    assert 0.0 <= scores["mean_accuracy"] <= 100.0
    for name in ("model.keras", "config.json", "halting.png", "training.png"):
        assert (output / name).exists(), name
    assert not (output / "attention.png").exists()  # the memory network's hop plot
    assert set(scores["mean_halting_steps"]) == {1}
    assert 1.0 <= scores["mean_halting_steps"][1] <= config["max_steps"]
    metadata = json.loads((output / "config.json").read_text())
    assert metadata["answer_classes"] and metadata["decoding"] is None
    assert metadata["source_format"] == "{story} | {question}"
    lines = _cli_answers(cli, output, SOURCES, tmp_path)
    model, tokenizer, _, _ = recipe.runs.load_run(output)
    records = [data.story_from_source(s) for s in SOURCES]
    assert lines == _answers_of_records(model, records, tokenizer, metadata["answer_classes"],
                                        config)
    steps = recipe.halting_steps(model).predict(
        data.encode_stories(records, tokenizer), verbose=0)
    assert steps.shape == (2, 3) and steps[1, 2] == 0  # question, 2 facts; 1 fact + padding
    assert ((steps[:, :2] >= 1) & (steps[:, :2] <= config["max_steps"])).all()


def test_universal_transformer_learning_rate_warms_up_then_decays_to_zero():
    recipe = load_recipe()
    schedule = recipe.warmup_cosine_schedule(
        {"warmup_epochs": 2, "epochs": 10, "learning_rate": 1e-3}, steps_per_epoch=10)
    rates = [float(schedule(step)) for step in (0, 10, 20, 60, 100)]
    np.testing.assert_allclose(rates, [0.0, 5e-4, 1e-3, 5e-4, 0.0], atol=1e-9)
    constant = recipe.warmup_cosine_schedule(
        {"warmup_epochs": 0, "epochs": 1, "learning_rate": 1e-3}, steps_per_epoch=10)
    assert float(constant(0)) == pytest.approx(1e-3)


def test_bucketed_batches_cut_each_batch_to_its_stories_and_keep_every_example():
    recipe = load_recipe()
    lengths = np.array([1, 3, 12, 2, 30, 11, 5])
    story = np.zeros((7, 40, 2), "int32")
    for i, n in enumerate(lengths):
        story[i, :n] = i + 1
    x = {"story": story, "question": np.arange(7)[:, None].astype("int32")}
    y = np.arange(7)
    batches = list(recipe.bucketed_batches(x, y, batch_size=2, seed=0))
    seen = []
    for inputs, labels in batches:
        width = inputs["story"].shape[1]
        assert width in (10, 25, 40)
        batch_lengths = lengths[labels.numpy()]
        assert (batch_lengths <= width).all()
        assert width == min(w for w in (10, 25, 40) if w >= batch_lengths.max())
        np.testing.assert_array_equal(inputs["story"].numpy(), story[labels.numpy(), :width])
        seen.extend(labels.numpy().tolist())
    assert sorted(seen) == list(range(7))
