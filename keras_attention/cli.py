"""The `keras-attention` command line: train a recipe, evaluate and use a saved run.

```
keras-attention train translation | summarization | question_answering [--key=value ...]
keras-attention generate RUN_DIR [--input FILE] [--output FILE] [--strategy beam]
keras-attention evaluate RUN_DIR --data FILE   # BLEU/chrF, ROUGE or EM/F1, by recipe
keras-attention export RUN_DIR EXPORT_DIR [--strategy beam] [--num_beams N]  # a SavedModel
```

A run directory is what a recipe saves: `model.keras`, `source.spm`,
`target.spm` and `config.json`.
"""

import argparse
import contextlib
import json
import os
import pathlib
import runpy
import sys

RECIPES = ("translation", "summarization", "question_answering")


def _examples_dir():
    return pathlib.Path(__file__).resolve().parents[1] / "examples"


def train(recipe, overrides):
    """Runs `examples/<recipe>/train.py` with `--key=value` overrides."""
    script = _examples_dir() / recipe / "train.py"
    if recipe not in RECIPES or not script.exists():
        raise SystemExit(
            f"keras-attention: unknown recipe {recipe!r} (known: {', '.join(RECIPES)}), "
            f"or {script} is missing (install the repository with `pip install -e .`)."
        )
    saved_argv = sys.argv
    sys.argv = [str(script)] + list(overrides)
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved_argv


# How each recipe's saved config names its decoding settings.
_DECODING = {
    "translation": lambda c: dict(
        source_length=c["max_length"], target_length=c["max_length"],
        strategy=c["strategy"], num_beams=c["num_beams"],
        length_penalty=c["length_penalty"],
    ),
    "summarization": lambda c: dict(
        source_length=c["max_source_length"], target_length=c["max_target_length"],
        strategy="beam", num_beams=c["num_beams"], length_penalty=c["length_penalty"],
        coverage_penalty=c["coverage_penalty"],
    ),
    "question_answering": lambda c: dict(
        source_length=c["max_length"], target_length=c["max_answer_length"],
        strategy="greedy", num_beams=1,
    ),
}


class SavedRun:
    """A saved recipe run: tokenizers, model and the recipe's decoding settings."""

    def __init__(self, run_dir):
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        from keras_attention import runs

        try:
            loaded = runs.load_run(run_dir)
        except FileNotFoundError as error:
            raise SystemExit(f"keras-attention: {error}") from None
        self.model, self.source_tokenizer, self.target_tokenizer, metadata = loaded
        self.recipe = metadata.get("recipe", "translation")
        if self.recipe not in _DECODING:
            raise SystemExit(
                f"keras-attention: {run_dir} was saved by an unknown recipe "
                f"{self.recipe!r} (known: {', '.join(_DECODING)})."
            )
        self.config = metadata["config"]
        self.decoding = _DECODING[self.recipe](self.config)
        # A memory-network QA run picks one of these answers (see the recipe).
        self.answer_classes = metadata.get("answer_classes")

    def generate(self, texts, strategy=None, num_beams=None, verbose=1):
        """Outputs (translations, summaries or answers) for a list of strings."""
        from keras_attention import data

        if self.answer_classes is not None:
            return self._answer_from_memory(texts, verbose)
        settings = dict(self.decoding)
        source_length = settings.pop("source_length")
        target_length = settings.pop("target_length")
        settings["strategy"] = strategy or settings["strategy"]
        settings["num_beams"] = num_beams or settings["num_beams"]
        token_ids = data.encode_sources(texts, self.source_tokenizer, source_length)
        generated = self.model.generate(
            token_ids, max_length=target_length, batch_size=64, verbose=verbose, **settings
        )
        return data.detokenize(self.target_tokenizer, generated)


    def _answer_from_memory(self, texts, verbose):
        """Answers of a memory network to `"story | question"` lines."""
        import numpy as np

        from keras_attention import data

        records = [data.story_from_source(text) for text in texts]
        inputs = data.encode_stories(records, self.source_tokenizer,
                                     max_memories=self.config["max_memories"])
        logits = self.model.predict(inputs, batch_size=256, verbose=verbose)
        return [self.answer_classes[i] for i in np.argmax(logits, axis=-1)]


def generate(args):
    """Writes one output line per line of `--input` (or stdin) to `--output` (or stdout)."""
    run = SavedRun(args.run_dir)
    source = open(args.input, encoding="utf-8") if args.input else sys.stdin
    with source:
        lines = [line.rstrip("\n") for line in source]
    outputs = run.generate(lines, args.strategy, args.num_beams,
                           verbose=1 if args.output else 0)
    text = "".join(line.replace("\n", " ") + "\n" for line in outputs)
    if args.output:
        pathlib.Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def _evaluation_examples(recipe, config, path, max_examples):
    """`(sources, references)` from a file in the recipe's format."""
    from keras_attention import data

    limit = max_examples or None
    if recipe == "translation":
        pairs = data.load_sentence_pairs(path, max_pairs=limit)
        return [s for s, _ in pairs], [t for _, t in pairs]
    if recipe == "summarization":
        records = data.load_summaries(path, max_examples=limit)
        return [r["document"] for r in records], [r["summaries"] for r in records]
    records = data.load_squad(path)[:limit]
    if config.get("question_first", False):  # as the question-answering recipe built them
        sources = [f"{r['question']} | {r['context']}" for r in records]
    else:
        sources = [f"{r['context']} | {r['question']}" for r in records]
    return sources, [r["answers"] for r in records]


def evaluate(args):
    """Prints the recipe's scores of a saved run on a file: BLEU and chrF
    (translation, TSV pairs), ROUGE (summarization, JSONL), exact match and
    F1 (question answering, SQuAD-style JSON/JSONL)."""
    from keras_attention import metrics

    run = SavedRun(args.run_dir)
    sources, references = _evaluation_examples(run.recipe, run.config, args.data,
                                               args.max_examples)
    # Keras writes its progress bar to stdout; stdout is for the scores alone,
    # so that `keras-attention evaluate ... > scores.json` is one JSON line.
    with contextlib.redirect_stdout(sys.stderr):
        hypotheses = run.generate(sources, args.strategy, args.num_beams)
    if run.recipe == "translation":
        scores = {"bleu": metrics.bleu(hypotheses, references),
                  "chrf": metrics.chrf(hypotheses, references)}
    elif run.recipe == "summarization":
        scores = metrics.rouge(hypotheses, references)
    else:
        scores = {"exact_match": metrics.exact_match(hypotheses, references),
                  "f1": metrics.f1_score(hypotheses, references)}
    scores["examples"] = len(sources)
    print(json.dumps(scores))
    return scores


def export(args):
    """Writes a SavedModel serving strings -> generated strings
    (`keras_attention.export.export_run`)."""
    from keras_attention.export import export_run

    try:
        path = export_run(args.run_dir, args.export_dir, strategy=args.strategy,
                          num_beams=args.num_beams)
    except ValueError as error:
        raise SystemExit(f"keras-attention: {error}") from None
    print(f"Exported {args.run_dir} to {path} (serving signature: strings -> strings).")
    return path


def main(argv=None):
    """Runs one command. Called from Python with a list `argv`, returns the
    command's result (the scores of `evaluate`, the folder of `export`). As
    the `keras-attention` console script (`argv=None`, the arguments come from
    `sys.argv`), returns `None`: the script passes the result to `sys.exit`,
    which would print any other value and exit with status 1."""
    parser = argparse.ArgumentParser(prog="keras-attention", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    # `train RECIPE --help` reaches the recipe's own parser, which lists its
    # presets and every `--key=value` setting; `train --help` shows this one.
    train_parser = commands.add_parser(
        "train", add_help=False,
        help="run a recipe (`keras-attention train RECIPE --help` lists its settings)",
        description="Runs examples/RECIPE/train.py with any `--preset=...` and `--key=value` "
                    "overrides; `keras-attention train RECIPE --help` lists them.")
    train_parser.add_argument("recipe", nargs="?", choices=RECIPES)
    helps = {"generate": "one output line per input line, with the run's decoding settings",
             "evaluate": "the recipe's scores of a run on a file, as one JSON line"}
    for name, fn in (("generate", generate), ("evaluate", evaluate)):
        sub = commands.add_parser(name, help=helps[name])
        sub.add_argument("run_dir")
        sub.add_argument("--strategy", choices=["greedy", "beam"], default=None)
        sub.add_argument("--num_beams", type=int, default=None)
        sub.set_defaults(function=fn)
        if name == "generate":
            sub.add_argument("--input", help="a file of source lines (default: stdin)")
            sub.add_argument("--output", help="where to write the outputs (default: stdout)")
        else:
            sub.add_argument("--data", required=True, help=(
                "translation: a TSV file of source<TAB>target; summarization: a JSONL "
                "file of document/summary; question_answering: SQuAD-style JSON/JSONL"))
            sub.add_argument("--max_examples", type=int, default=0)
    export_parser = commands.add_parser("export", help="a SavedModel: strings in, strings out")
    export_parser.add_argument("run_dir")
    export_parser.add_argument("export_dir", help="a new or empty folder")
    export_parser.add_argument("--strategy", choices=["greedy", "beam"], default=None)
    export_parser.add_argument("--num_beams", type=int, default=None)
    export_parser.set_defaults(function=export)
    args, rest = parser.parse_known_args(argv)
    if args.command == "train":
        if args.recipe is None:
            if {"-h", "--help"} & set(rest):
                train_parser.print_help()
                raise SystemExit(0)
            train_parser.error("the following arguments are required: recipe")
        result = train(args.recipe, rest)
    else:
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        result = args.function(args)
    return result if argv is not None else None


if __name__ == "__main__":
    main()
