"""The one recipe skeleton: a recipe is a `RecipeSpec`, and `run_recipe` owns
what every recipe does around its own training and scoring.

`run_recipe(spec, config)`:

1. checks the whole configuration (`spec.check_config`), the output folder
   and the backup folder (`checks.check_folders`), before any work;
2. opens the distribution strategy (first: `multi_worker` connects to the
   other workers), checks the batch size against it, seeds everything;
3. loads the data (`spec.load_data`), prints the execution defaults
   (`spec.execution`) and writes the backup record;
4. trains (`spec.train`, which builds the model with `spec.build_model`)
   and times it;
5. computes the decoding settings once (`spec.decoding_settings`, a
   `runs.GenerationConfig`): the run folder records them and the
   evaluation decodes with them;
6. scores the test split (`spec.evaluate`, through `Trained.text_to_text`:
   the `runs.TextToText` that `keras-attention generate` reads back);
7. on the chief, saves the run (`runs.save_run_or_rescue`: a failure after
   training keeps the run in a rescue folder beside the output folder and
   says where), then writes the plots (`spec.finish`, `training.png`).

The decoding settings are computed once, in step 5: the evaluation, the
run folder and the plots all use that one `GenerationConfig`.
"""

import dataclasses
import os
import time
from collections.abc import Callable

import keras

from keras_attention import distribute, runs, runtime, settings, visualize
from keras_attention.recipes import backup, checks
from keras_attention.runs import registry


@dataclasses.dataclass(frozen=True)
class Trained:
    """What a recipe's `train` returns.

    Attributes:
        model: the trained Keras model.
        source_tokenizer, target_tokenizer: its tokenizers (one model twice
            when source and target share a vocabulary).
        history: the `History` of the (last) `fit`, or `None`.
        extra: dict, keys the run folder's `config.json` gets besides the
            standard ones (e.g. `answer_classes`, `selection`, `restarts`).
        tokenizer_files: None (SentencePiece tokenizers, saved as such), or
            the files of a converted checkpoint's tokenizer, copied unchanged
            into the run folder (`--init_from`: `recipes.fine_tuning`).
    """

    model: object
    source_tokenizer: object
    target_tokenizer: object
    history: object = None
    extra: dict = dataclasses.field(default_factory=dict)
    tokenizer_files: list | None = None

    def text_to_text(self, generation, recipe, config=None, source_format="text"):
        """The model kind of the trained parts (a `runs.TextToText`): the
        model, tokenizers and generation settings the run folder will hold,
        of the kind `extra` describes (a memory network's `answer_classes`
        make an `AnswerClassifier`, an extractive summarizer's `selection` a
        `SentenceSelector`; else a `TextGenerator`, fine-tuned checkpoints
        included). The recipes evaluate through it.

        Args:
            generation: the recipe's `GenerationConfig` (`decoding_settings`),
                `None` for a model that does not decode.
            recipe: the recipe's name.
            config: dict, the recipe's settings.
            source_format: how one input line is made.
        """
        return registry.kind_of_metadata(self.extra).from_run_parts(
            self.model, self.source_tokenizer, self.target_tokenizer, generation,
            recipe=recipe, source_format=source_format, config=dict(config or {}),
            metadata=self.extra)


@dataclasses.dataclass(frozen=True)
class RecipeSpec:
    """A recipe, as `run_recipe` runs it.

    Attributes:
        name: str, the registered name (`registry.recipe_names()`), which the
            run folder records.
        description: str, the `--help` line.
        config: the recipe's `config` module: `get_config()`, `PRESETS`,
            `RULES`, `unused_settings`, `BACKUP_MAY_DIFFER`.
        check_config: `check_config(config) -> config`, every setting checked.
        load_data: `load_data(config) -> data`, the splits (whatever the
            recipe's `train` and `evaluate` take), checked not empty.
        execution: `execution(config) -> dict`, the dtype policy and
            `jit_compile` (`runtime.fast_defaults`).
        build_model: the recipe's model builder (called by `train`).
        train: `train(config, data, strategy, execution, callbacks) ->
            Trained`; `callbacks` (a list) go to its `fit` too.
        decoding_settings: `decoding_settings(config, target_tokenizer) ->
            runs.GenerationConfig or None` (`None`: a model kind that does
            not decode).
        evaluate: `evaluate(trained, data, config, decoding) -> scores`,
            decoding with `decoding`.
        model_kind: `model_kind(config) -> str`, the registered model kind
            this configuration trains (`registry.model_kind`).
        source_format: `source_format(config) -> str`, how one input line
            is made (`runs.check_source_format`).
        finish: `finish(trained, data, config, decoding)`, plots written
            into the saved run folder; `None`: only `training.png`.
    """

    name: str
    description: str
    config: object
    check_config: Callable
    load_data: Callable
    execution: Callable
    build_model: Callable
    train: Callable
    decoding_settings: Callable
    evaluate: Callable
    model_kind: Callable
    source_format: Callable = lambda config: "text"
    finish: Callable | None = None


def parse_settings(spec, argv):
    """The configuration of `--preset=NAME` and `--key=value` arguments,
    checked (`keras_attention.settings`, then `spec.check_config`)."""
    return spec.check_config(settings.parse(
        argv, spec.config.PRESETS, spec.config.RULES, description=spec.description,
        unused=spec.config.unused_settings))


def run_recipe(spec, config, *, callbacks=()):
    """Trains with `config` (a full configuration dict, checked first), scores
    the test split, saves the run in `config["output_dir"]`; returns the scores.

    Args:
        spec: a `RecipeSpec`.
        config: dict, the recipe's settings.
        callbacks: more Keras callbacks for the recipe's `fit`.

    Raises:
        ValueError: naming the setting, for a bad configuration, output or
            backup folder, before any training.
        runs.RunNotSavedError: when the trained run could not be saved in
            `output_dir`; the message names the rescue folder that holds it.
    """
    config = spec.check_config(config)
    record = checks.check_folders(config, spec.config.BACKUP_MAY_DIFFER)
    # First, before any TensorFlow op: multi_worker connects to the other workers.
    strategy = distribute.get_strategy(config["distribution"])
    distribute.check_batch_size(config["batch_size"], strategy)
    keras.utils.set_random_seed(config["seed"])  # before any tokenizer (see data.pipeline)
    data = spec.load_data(config)
    execution = spec.execution(config)
    print(runtime.describe(execution))
    backup.write_backup_record(config["backup_dir"], record)
    start = time.time()
    trained = spec.train(config, data, strategy, execution, list(callbacks))
    train_seconds = time.time() - start
    decoding = spec.decoding_settings(config, trained.target_tokenizer)
    scores = spec.evaluate(trained, data, config, decoding)
    scores.update(train_seconds=round(train_seconds, 1), parameters=trained.model.count_params())
    print(f"Trained in {train_seconds:.0f} s ({scores['parameters']:,} parameters).")
    if not distribute.is_chief(strategy):
        return scores  # one worker of several: the chief writes the run
    kind = registry.kind_of_metadata(trained.extra)
    if kind.name != spec.model_kind(config):  # the recipe's own consistency
        raise RuntimeError(f"The {spec.name} recipe trained a {spec.model_kind(config)} model "
                           f"but describes a {kind.name} run.")
    output_dir = config["output_dir"]
    runs.save_run_or_rescue(
        output_dir, trained.model, trained.source_tokenizer, trained.target_tokenizer,
        recipe=spec.name, config=config, scores=scores, decoding=decoding,
        source_format=spec.source_format(config), extra=trained.extra,
        overwrite=config["overwrite"],
        **({} if trained.tokenizer_files is None
           else {"tokenizer_files": trained.tokenizer_files}))
    if spec.finish is not None:
        spec.finish(trained, data, config, decoding)
    if trained.history is not None:
        visualize.plot_history(trained.history, os.path.join(output_dir, "training.png"))
    print(f"Saved the model, tokenizers and plots in {output_dir}/")
    return scores


__all__ = ["RecipeSpec", "Trained", "parse_settings", "run_recipe"]
