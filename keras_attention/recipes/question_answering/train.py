"""
Title: Question answering on bAbI stories with a memory network built from attention layers
Description: Read a story and a question, answer it: an End-To-End Memory
Network (Sukhbaatar et al. 2015) whose hops are keras_attention's
`LuongAttention(score="dot")` over sentence memories, trained on the bAbI
tasks (or on built-in bAbI-like stories), with per-task accuracy on the test
files next to the published figures and SQuAD-style exact match and F1.
A Transformer seq2seq alternative generates the answer instead
(`--architecture=transformer`).
Accelerator: none needed (2 CPU cores).

## Introduction

The memory network keeps each story sentence as one memory vector (a
position-weighted bag of words plus a temporal encoding), and reads them with
`num_hops` rounds of dot-product attention, each round's question state plus
what it read becoming the next round's query. The answer is one class of the
training answers. The hop attention plot shows which sentences each round
read.

Before anything is trained, the whole configuration is checked: every
setting (`config.RULES`, and `tasks`), the output folder
(`runs.check_output_dir`), the backup folder (`--backup_dir` holds a backup
of these settings, or none), the splits (none empty) and the vocabulary size.

Run: `keras-attention train question_answering [--preset babi] [--tasks=1-20]`
or `python examples/question_answering/train.py ...` (the settings and
presets: `keras_attention/recipes/question_answering/config.py`;
`--distribution=mirrored` for several GPUs on TensorFlow,
`--distribution=data_parallel` on JAX: docs/guides/distributed.md)
"""

import collections
import os
import sys

import keras
import numpy as np

from keras_attention import data, distribute, metrics, runs, runtime, settings, visualize
from keras_attention.models import (
    LinearStart,
    halting_steps,
    hop_attention,
    memory_network,
    transformer_seq2seq,
    universal_transformer_qa,
)
from keras_attention.recipes import checks, skeleton
from keras_attention.recipes.question_answering import config as recipe_config
from keras_attention.runs import registry
from keras_attention.validation import check_positive_int

BABI_TASKS = range(1, 21)


## Settings


def parse_settings(argv=None):
    """The configuration from `--preset=NAME` and `--key=value` arguments
    (`sys.argv[1:]` by default), checked (`keras_attention.settings`)."""
    return skeleton.parse_settings(SPEC, sys.argv[1:] if argv is None else argv)


def check_config(config):
    """`config` if every setting is known, of its type and within its rule,
    and `tasks` names bAbI tasks."""
    config = settings.check(config, recipe_config.get_config(), recipe_config.RULES)
    parse_tasks(config["tasks"])
    return config


## Data: stories with their task number


def parse_tasks(spec):
    """"1-3,5" -> [1, 2, 3, 5].

    Raises:
        ValueError: naming `tasks`, for anything but bAbI tasks 1 to 20.
    """
    tasks = []
    for part in str(spec).split(","):
        low, _, high = part.strip().partition("-")
        try:
            tasks.extend(range(int(low), int(high or low) + 1))
        except ValueError:
            tasks = []
            break
    if not tasks or not set(tasks) <= set(BABI_TASKS):
        raise ValueError("Setting `tasks` must list bAbI tasks 1 to 20, e.g. \"1,2,3\" or "
                         f"\"1-20\". Received: tasks={spec!r}")
    return tasks


def load_examples(config):
    """Train and test lists of `load_babi` records with a `"task"` key."""
    if not config["data"]:
        stories = [dict(e, task=1) for e in data.make_stories(config["num_examples"],
                                                               seed=config["seed"])]
        train, _, test = data.split_examples(
            stories, validation_fraction=0.0, test_fraction=config["test_fraction"],
            seed=config["seed"],
        )
        return train, checks.check_split("test", test, "test_fraction", config["test_fraction"])
    splits = {"train": [], "test": []}
    for task in parse_tasks(config["tasks"]):
        for split in splits:
            splits[split].extend(dict(e, task=task)
                                 for e in data.load_babi_task(config["data"], task, split))
    for split in splits.values():
        checks.check_split("test", split, "tasks", config["tasks"])
    return splits["train"], splits["test"]


# The sources of each architecture, as templates (`source_format`): the
# memory network's `data.story_source`, and the transformer's encoder text.
STORY_SOURCE = "{story} | {question}"
CONTEXT_FIRST = "{context} | {question}"
QUESTION_FIRST = "{question} | {context}"


def is_classifier(config):
    """Whether the architecture picks an answer class from encoded stories
    (the memory network, the Universal Transformer) rather than generating it."""
    return config["architecture"] in ("memory_network", "universal_transformer")


def source_format(config):
    """The template of this run's sources (`runs.save_run`): what
    `keras-attention generate` expects on each line."""
    if is_classifier(config):
        return STORY_SOURCE
    return QUESTION_FIRST if config["question_first"] else CONTEXT_FIRST


def as_source(example, max_sentences, question_first=False):
    """The transformer's encoder text: the story, then the question, or the
    question first with `question_first=True` (measured: no better, see
    examples/RESULTS.md)."""
    template = QUESTION_FIRST if question_first else CONTEXT_FIRST
    return runs.format_source(template, {"context": example["story"][-max_sentences:],
                                         "question": example["question"]})


## The memory network


def learning_rate_schedule(config, steps_per_epoch):
    """The paper's annealing: halve the rate every `decay_epochs` epochs."""
    boundaries = list(range(config["decay_epochs"], config["epochs"], config["decay_epochs"]))
    if not boundaries:
        return config["learning_rate"]
    return keras.optimizers.schedules.PiecewiseConstantDecay(
        [b * steps_per_epoch - 1 for b in boundaries],  # step <= boundary: earlier rate
        [config["learning_rate"] / 2**i for i in range(len(boundaries) + 1)],
    )


def warmup_cosine_schedule(config, steps_per_epoch):
    """The Universal Transformer's rate: a linear rise to `learning_rate`
    over `warmup_epochs`, then a cosine decay to 0 at the last epoch."""
    warmup = min(config["warmup_epochs"], config["epochs"] - 1) * steps_per_epoch
    return keras.optimizers.schedules.CosineDecay(
        0.0 if warmup else config["learning_rate"],
        decay_steps=max(config["epochs"] * steps_per_epoch - warmup, 1),
        warmup_target=config["learning_rate"] if warmup else None, warmup_steps=warmup,
    )


def execution_defaults(config):
    """The dtype policy and `jit_compile` to train with (`runtime.fast_defaults`).

    "auto" compiles the memory network with XLA on a CPU too (fixed-shape
    arrays, a small model bound by per-op overhead: faster than graph mode
    there), and so trains it in float32 there; the Universal Transformer
    too (faster under XLA than in graph mode at its quick and default
    sizes); the Transformer trains in
    float32 graph mode on a CPU (as the translation one, measured). On a GPU
    both use XLA and mixed_bfloat16.
    """
    return runtime.fast_defaults(config["precision"], config["jit_compile"],
                                 xla_on_cpu=is_classifier(config), bf16_on_cpu=False)


def train_memory_network(train, config, strategy, extra_callbacks=()):
    """Returns `(model, tokenizer, answer_classes, history, restarts)`;
    `restarts` lists `{"seed", "validation_accuracy"}` of each network trained.
    The network is the architecture's answer classifier: a memory network or
    a Universal Transformer (`fit_memory_network`).

    With `restarts > 1`, trains that many networks from different random
    initialisations (seeds `seed`, `seed + 1`, ...) on the same split and
    keeps the one with the best validation accuracy (the paper repeated each
    training 10 times and kept the best run).
    """
    check_positive_int("restarts", config["restarts"])
    fit_split, validation, _ = data.split_examples(
        train, validation_fraction=config["validation_fraction"], test_fraction=0.0,
        seed=config["seed"],
    )
    if config["validation_fraction"]:  # 0: no validation, the last epoch is kept
        checks.check_split("validation", validation, "validation_fraction",
                           config["validation_fraction"])
    tokenizer = checks.train_tokenizer(data.story_texts(train), config["vocabulary_size"],
                                       lowercase=True, model_type="word")
    answer_classes = sorted({e["answer"] for e in train})

    def arrays(records):
        x = data.encode_stories(records, tokenizer, max_memories=config["max_memories"])
        return x, np.array([answer_classes.index(e["answer"]) for e in records])

    training = arrays(fit_split)
    validation = arrays(validation) if validation else None
    best, restarts = None, []
    for restart in range(config["restarts"]):
        seed = config["seed"] + restart
        if config["restarts"] > 1:
            print(f"Restart {restart + 1}/{config['restarts']} (seed {seed}).")
        backup_dir = config["backup_dir"]
        if backup_dir and config["restarts"] > 1:  # each restart resumes its own backup
            backup_dir = os.path.join(backup_dir, f"restart_{restart + 1}")
        model, history = fit_memory_network(
            training, validation, tokenizer.vocabulary_size(), len(answer_classes),
            dict(config, seed=seed, backup_dir=backup_dir), strategy, extra_callbacks,
        )
        accuracy = float(max(history.history.get("val_accuracy") or history.history["accuracy"]))
        restarts.append({"seed": seed, "validation_accuracy": round(accuracy, 4)})
        if config["restarts"] > 1:
            print(f"Restart {restart + 1}: best validation accuracy {accuracy:.4f}.")
        if best is None or accuracy > best[0]:
            best = (accuracy, model, history)
    return best[1], tokenizer, answer_classes, best[2], restarts


def build_classifier(vocabulary_size, num_answers, config, steps_per_epoch):
    """The architecture's answer classifier and its optimizer, `(model, optimizer)`:
    a memory network (Adam, the paper's halving rate, clipnorm 40) or a
    Universal Transformer (Adam, warm-up then cosine decay, clipnorm 1)."""
    if config["architecture"] == "memory_network":
        model = memory_network(
            vocabulary_size, num_answers, hidden_dim=config["hidden_dim"],
            num_hops=config["num_hops"], max_memories=config["max_memories"],
            temporal_noise=config["temporal_noise"], linear_start=config["linear_start"],
            seed=config["seed"],
        )
        return model, keras.optimizers.Adam(learning_rate_schedule(config, steps_per_epoch),
                                            clipnorm=40.0)
    model = universal_transformer_qa(
        vocabulary_size, num_answers, hidden_dim=config["hidden_dim"],
        num_heads=config["num_heads"], intermediate_dim=config["intermediate_dim"],
        max_steps=config["max_steps"], act=config["act"], ponder_cost=config["ponder_cost"],
        dropout=config["dropout"],
    )
    return model, keras.optimizers.Adam(warmup_cosine_schedule(config, steps_per_epoch),
                                        clipnorm=1.0)


def fit_memory_network(training, validation, vocabulary_size, num_answers, config, strategy,
                       extra_callbacks=()):
    """One answer classifier (`build_classifier`) trained on `training` `(x, y)`;
    returns `(model, history)` (the epoch with the best validation accuracy
    when `validation` is given)."""
    if config["architecture"] != "memory_network" and distribute.needs_even_batches(strategy):
        raise ValueError(
            "Argument `distribution` must be 'default' with "
            f"architecture={config['architecture']!r}: its length-bucketed batches do not "
            "split evenly between devices; use architecture='memory_network' for "
            f"data-parallel training. Received: distribution={config['distribution']!r}"
        )
    # Where batches must split evenly between devices, the last batch too.
    training = distribute.trim_to_even_batches(training, strategy)
    if validation:
        validation = distribute.trim_to_even_batches(validation, strategy)
    steps_per_epoch = -(-len(training[1]) // config["batch_size"])
    execution = execution_defaults(config)
    # Variables on every replica (fit splits each global batch; keras.distribution,
    # on JAX, only while its scope is open); layers in the policy.
    with strategy.scope():
        with runtime.dtype_policy_scope(execution["dtype_policy"]):
            model, optimizer = build_classifier(vocabulary_size, num_answers, config,
                                                steps_per_epoch)
            model.compile(
                optimizer=optimizer,
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"],
                jit_compile=execution["jit_compile"],
            )
        return _fit_classifier(model, training, validation, config, strategy, extra_callbacks)


def _fit_classifier(model, training, validation, config, strategy, extra_callbacks=()):
    """`model.fit` with the recipe's callbacks, inside the strategy's scope;
    returns `(model, history)`."""
    callbacks = []
    if config["backup_dir"]:  # an interrupted run resumes from its last epoch
        callbacks.append(distribute.backup_and_restore(config["backup_dir"], strategy))
    if config["linear_start"] and config["architecture"] == "memory_network":
        callbacks.append(LinearStart(monitor="val_loss" if validation else "loss",
                                     patience=config["linear_start_patience"]))
    if validation:
        callbacks.append(keras.callbacks.EarlyStopping(
            monitor="val_accuracy", mode="max", patience=config["epochs"],
            restore_best_weights=True,
        ))
    callbacks += list(extra_callbacks)
    runtime.build_optimizer_before_fit(model)  # the memory network and the UT are not Seq2SeqModels
    if config["architecture"] == "memory_network":
        history = model.fit(
            *training, batch_size=config["batch_size"], epochs=config["epochs"],
            validation_data=validation, callbacks=callbacks, verbose=2,
        )
        return model, history
    history = model.fit(
        bucketed_batches(*training, config["batch_size"], seed=config["seed"]),
        epochs=config["epochs"], callbacks=callbacks, verbose=2, shuffle=False,  # shuffled
        validation_data=validation and bucketed_batches(*validation, config["batch_size"]),
    )
    return model, history


# Story lengths (sentences) the Universal Transformer's batches are cut to:
# bAbI 1k's stories have 9 sentences on average (75% at most 10), so cutting
# each batch to the first bucket that holds its stories does 3.5x less work
# than padding all to 50, for 3 shapes to compile.
STORY_BUCKETS = (10, 25)


def bucketed_batches(x, y, batch_size, seed=None, buckets=STORY_BUCKETS):
    """A `tf.data` dataset of `(x, y)` batches grouped by story length.

    The stories of `x["story"]` `(N, M, J)` (padded at the end) go to the
    smallest of `buckets` (or `M`) that holds their sentences, and each
    batch is cut to its bucket's length. With a `seed`, the examples of a
    bucket and the order of the batches are shuffled every epoch.
    """
    import tensorflow as tf  # the input pipeline only

    lengths = np.asarray(x["story"] != 0).any(-1).sum(-1)
    width = x["story"].shape[1]
    sizes = sorted({min(b, width) for b in buckets} | {width})
    dataset, low = None, -1
    for size in sizes:
        index = np.flatnonzero((lengths > low) & (lengths <= size))
        low = size
        if not len(index):
            continue
        part = tf.data.Dataset.from_tensor_slices((
            {"story": x["story"][index, :size], "question": x["question"][index]}, y[index]))
        if seed is not None:
            part = part.shuffle(len(index), seed=seed)
        part = part.batch(batch_size)
        dataset = part if dataset is None else dataset.concatenate(part)
    if seed is not None:
        dataset = dataset.shuffle(-(-len(y) // batch_size) + len(sizes), seed=seed)
    return dataset.prefetch(2)


def sample_story(records):
    """A story to plot: the first with 4 to 12 sentences (else the first)."""
    return next((r for r in records if 4 <= len(r["story"]) <= 12), records[0])


def plot_hops(model, record, tokenizer, config, path):
    """What each hop read in one story: sentences (rows) by hops (columns)."""
    x = data.encode_stories([record], tokenizer, max_memories=config["max_memories"])
    weights = hop_attention(model).predict(x, verbose=0)[0]  # (hops, sentences)
    sentences = record["story"][-config["max_memories"]:]
    visualize.plot_attention(
        weights.T, [f"hop {k + 1}" for k in range(weights.shape[0])],
        [f"{i + 1}: {s}" for i, s in enumerate(sentences)], path=path,
        title=f"{record['question']} -> {record['answer']}", xlabel="hop", ylabel="sentence",
    )


def halting_by_task(model, records, tokenizer, config):
    """`{task: mean steps}`: how many steps the Universal Transformer took
    at a fact, on average over the real facts of each task's `records`."""
    x = data.encode_stories(records, tokenizer, max_memories=config["max_memories"])
    steps = halting_steps(model).predict(x, batch_size=256, verbose=0)[:, 1:]  # facts
    real = x["story"].any(-1)
    tasks = np.array([r["task"] for r in records])
    return {int(task): round(float(steps[tasks == task][real[tasks == task]].mean()), 2)
            for task in sorted(set(tasks.tolist()))}


def halting_stories(records, count=3):
    """Stories to plot the halting of: `sample_story` of each of the first
    `count` tasks in `records`."""
    tasks = list(dict.fromkeys(r["task"] for r in records))[:count]
    return [sample_story([r for r in records if r["task"] == task]) for task in tasks]


def plot_halting(model, records, tokenizer, config, path):
    """The steps the Universal Transformer took at the question and at each
    fact of some stories (one panel each): horizontal bars from 0 to
    `max_steps`; returns the steps, a list of `(1 + facts,)` arrays."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from keras_attention.files import write_atomically

    x = data.encode_stories(records, tokenizer, max_memories=config["max_memories"])
    steps = halting_steps(model).predict(x, verbose=0)  # (N, 1 + M): question, facts
    rows = [len(r["story"][-config["max_memories"]:]) + 1 for r in records]
    figure = Figure(figsize=(6.5 * len(records), 0.32 * max(rows) + 1.6), layout="constrained")
    FigureCanvasAgg(figure)
    kept = []
    for k, (record, n) in enumerate(zip(records, rows)):
        axes = figure.add_subplot(1, len(records), k + 1)
        sentences = record["story"][-config["max_memories"]:]
        labels = [f"Q: {record['question']}"] + [f"{i + 1}: {s}" for i, s in enumerate(sentences)]
        axes.barh(range(n), steps[k, :n], color=["tab:orange"] + ["tab:blue"] * (n - 1))
        axes.set_yticks(range(n), labels, fontsize=8)
        axes.invert_yaxis()
        axes.set_xlim(0, config["max_steps"])
        axes.set_xlabel("steps before halting (ACT)")
        axes.set_title(f"task {record['task']}: -> {record['answer']}", fontsize=9)
        kept.append(steps[k, :n])
    write_atomically(path, lambda file: figure.savefig(file, format="png"))
    return kept


## The transformer alternative


def train_transformer(train, config, strategy, extra_callbacks=()):
    """Returns `(model, source_tokenizer, target_tokenizer, history)`."""
    sources = [as_source(e, config["max_sentences"], config["question_first"]) for e in train]
    answers = [e["answer"] for e in train]
    source_tokenizer = checks.train_tokenizer(sources, config["vocabulary_size"])
    target_tokenizer = checks.train_tokenizer(answers, config["vocabulary_size"])
    execution = execution_defaults(config)
    # Full-size batches where they must split evenly between devices.
    pad = execution["jit_compile"] or distribute.needs_even_batches(strategy)
    dataset = data.make_dataset(
        list(zip(sources, answers)), source_tokenizer, target_tokenizer,
        batch_size=config["batch_size"], max_source_length=config["max_length"],
        max_target_length=config["max_answer_length"], seed=config["seed"],
        bucket_boundaries=(32, 64, 96, 128),
        pad_to_multiple=32 if pad else None,  # few shapes for XLA
    )
    with strategy.scope():  # keras.distribution (JAX) is set only inside
        with runtime.dtype_policy_scope(execution["dtype_policy"]):
            model = transformer_seq2seq(
                source_tokenizer.vocabulary_size(),
                target_vocabulary_size=target_tokenizer.vocabulary_size(),
                num_layers=config["num_layers"], hidden_dim=config["hidden_dim"],
                num_heads=config["num_heads"], intermediate_dim=config["intermediate_dim"],
                dropout=config["dropout"], max_length=config["max_length"] + 2,
                **data.special_token_ids(target_tokenizer),
            )
            model.compile(
                optimizer=keras.optimizers.Adam(config["learning_rate"]),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
                metrics=["accuracy"],
                jit_compile=execution["jit_compile"],
            )
        callbacks = []
        if config["backup_dir"]:
            callbacks.append(distribute.backup_and_restore(config["backup_dir"], strategy))
        history = model.fit(dataset, epochs=config["epochs"], shuffle=False,
                            callbacks=callbacks + list(extra_callbacks), verbose=2)
    return model, source_tokenizer, target_tokenizer, history


def decoding_settings(config, target_tokenizer):
    """How this recipe decodes (`runs.GenerationConfig`), as the run folder
    records it (`runs.save_run`), pad, `<unk>` and start never generated
    (`data.never_generated_ids`); `None` for the classifiers, which pick an
    answer class instead."""
    if is_classifier(config):
        return None
    return runs.GenerationConfig(
        source_length=config["max_length"], target_length=config["max_answer_length"],
        suppress_token_ids=data.never_generated_ids(target_tokenizer))


## Evaluation


def score(predictions, test):
    """Per-task accuracy (exact answer) and SQuAD exact match / F1 overall
    (`metrics.scores` with the recipe's registered metrics, as `keras-attention
    evaluate` scores a saved run); `test` holds `(source, gold answer, task)`
    triples."""
    by_task = collections.defaultdict(list)
    for prediction, (_, gold, task) in zip(predictions, test):
        by_task[task].append(metrics.normalize_answer(prediction) == metrics.normalize_answer(gold))
    per_task = {task: 100.0 * float(np.mean(hits)) for task, hits in sorted(by_task.items())}
    golds = [[gold] for _, gold, _ in test]
    return {
        "per_task_accuracy": per_task,
        "mean_accuracy": float(np.mean(list(per_task.values()))),
        **metrics.scores(registry.recipe("question_answering").metrics, predictions, golds),
    }


def evaluate(trained, splits, config, decoding):
    """Per-task accuracy, exact match and F1 of the test questions (the
    transformer decoding with `decoding`), and the Universal Transformer's
    mean halting steps."""
    test = splits[1]
    model, tokenizer = trained.model, trained.source_tokenizer
    if is_classifier(config):
        sources = [data.story_source(e) for e in test]
    else:
        sources = [as_source(e, config["max_sentences"], config["question_first"]) for e in test]
    answerer = trained.text_to_text(decoding, "question_answering", config, source_format(config))
    predictions = answerer.generate(sources, verbose=1, truncate=True)
    test_triples = [(data.story_source(e), e["answer"], e["task"]) for e in test]
    scores = score(predictions, test_triples)
    if config["architecture"] == "universal_transformer":
        scores["mean_halting_steps"] = halting_by_task(model, test, tokenizer, config)
        print("Mean steps at a fact, by task:", scores["mean_halting_steps"])
    print(f"\nMean accuracy over {len(scores['per_task_accuracy'])} task(s): "
          f"{scores['mean_accuracy']:.1f}% (exact match {scores['exact_match']:.1f}, "
          f"F1 {scores['f1']:.1f}).")
    for task, accuracy in scores["per_task_accuracy"].items():
        print(f"  task {task:2d}: {accuracy:5.1f}%")
    for (source, gold, _), prediction in list(zip(test_triples, predictions))[:3]:
        print(f"  {source[-70:]!r} -> {prediction!r} (gold {gold!r})")
    return scores


## The skeleton's steps


def load_data(config):
    """`(train, test)` questions (the validation split is made from train)."""
    train, test = load_examples(config)
    print(f"{len(train)} training and {len(test)} test questions.")
    return train, test


def train(config, splits, strategy, execution, extra_callbacks):
    """The architecture's model trained on the training questions (`skeleton.Trained`;
    a classifier's `extra` holds its `restarts` and `answer_classes`)."""
    if is_classifier(config):
        model, tokenizer, answer_classes, history, restarts = train_memory_network(
            splits[0], config, strategy, extra_callbacks)
        return skeleton.Trained(model, tokenizer, tokenizer, history,
                                extra={"restarts": restarts, "answer_classes": answer_classes})
    model, source_tokenizer, target_tokenizer, history = train_transformer(
        splits[0], config, strategy, extra_callbacks)
    return skeleton.Trained(model, source_tokenizer, target_tokenizer, history)


def plot_attention(trained, splits, config, decoding):
    """The hops of a memory network or the halting of a Universal Transformer,
    as PNGs in the run folder."""
    test = splits[1]
    if config["architecture"] == "memory_network":
        plot_hops(trained.model, sample_story(test), trained.source_tokenizer, config,
                  os.path.join(config["output_dir"], "attention.png"))
    if config["architecture"] == "universal_transformer":
        plot_halting(trained.model, halting_stories(test), trained.source_tokenizer, config,
                     os.path.join(config["output_dir"], "halting.png"))


SPEC = skeleton.RecipeSpec(
    name="question_answering", description="Train a question-answering model.",
    config=recipe_config, check_config=check_config, load_data=load_data,
    execution=execution_defaults, build_model=build_classifier, train=train,
    decoding_settings=decoding_settings, evaluate=evaluate, source_format=source_format,
    finish=plot_attention,
    model_kind=lambda config: "answer_classifier" if is_classifier(config) else "seq2seq",
)


def main(argv=None):
    """Trains, evaluates and saves with the settings of `argv` (`--preset=NAME`,
    `--key=value`; `sys.argv[1:]` by default); returns the scores."""
    return train_and_evaluate(parse_settings(argv))


def train_and_evaluate(config, callbacks=()):
    """Trains with `config` (a full configuration dict, checked first), scores
    the test questions, saves the run in `config["output_dir"]`; returns the
    scores (`skeleton.run_recipe`; `callbacks` go to `fit` too)."""
    return skeleton.run_recipe(SPEC, config, callbacks=callbacks)
