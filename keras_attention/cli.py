"""The `keras-attention` command line: train a recipe, evaluate and use a saved run.

```
keras-attention train translation | question_answering [--key=value ...]
keras-attention generate RUN_DIR [--input FILE] [--output FILE] [--strategy beam]
keras-attention evaluate RUN_DIR --data PAIRS.tsv     # BLEU and chrF on a file of pairs
```

A run directory is what a recipe saves: `model.keras`, `source.spm`,
`target.spm` and `config.json`.
"""

import argparse
import json
import os
import pathlib
import runpy
import sys

RECIPES = ("translation", "question_answering")


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


class Translator:
    """A saved translation run: tokenizers, model and its decoding settings."""

    def __init__(self, run_dir):
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        from keras_attention import runs

        try:
            loaded = runs.load_run(run_dir)
        except FileNotFoundError as error:
            raise SystemExit(f"keras-attention: {error}") from None
        self.model, self.source_tokenizer, self.target_tokenizer, metadata = loaded
        self.config = metadata["config"]

    def translate(self, sentences, strategy=None, num_beams=None, verbose=1):
        from keras_attention import data

        config = self.config
        token_ids = data.encode_sources(sentences, self.source_tokenizer, config["max_length"])
        generated = self.model.generate(
            token_ids,
            max_length=config["max_length"],
            strategy=strategy or config["strategy"],
            num_beams=num_beams or config["num_beams"],
            length_penalty=config["length_penalty"],
            batch_size=64,
            verbose=verbose,
        )
        return data.detokenize(self.target_tokenizer, generated)


def generate(args):
    """Translates the lines of `--input` (or stdin) into `--output` (or stdout)."""
    translator = Translator(args.run_dir)
    source = open(args.input, encoding="utf-8") if args.input else sys.stdin
    with source:
        lines = [line.rstrip("\n") for line in source]
    outputs = translator.translate(lines, args.strategy, args.num_beams,
                                   verbose=1 if args.output else 0)
    text = "".join(line + "\n" for line in outputs)
    if args.output:
        pathlib.Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def evaluate(args):
    """Prints BLEU and chrF of a saved run on a file of sentence pairs."""
    from keras_attention import data, metrics

    translator = Translator(args.run_dir)
    pairs = data.load_sentence_pairs(args.data, max_pairs=args.max_pairs or None)
    hypotheses = translator.translate([s for s, _ in pairs], args.strategy, args.num_beams)
    references = [t for _, t in pairs]
    scores = {"bleu": metrics.bleu(hypotheses, references),
              "chrf": metrics.chrf(hypotheses, references), "examples": len(pairs)}
    print(json.dumps(scores))
    return scores


def main(argv=None):
    parser = argparse.ArgumentParser(prog="keras-attention", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    train_parser = commands.add_parser("train", help="run a recipe")
    train_parser.add_argument("recipe", choices=RECIPES)
    for name, fn in (("generate", generate), ("evaluate", evaluate)):
        sub = commands.add_parser(name)
        sub.add_argument("run_dir")
        sub.add_argument("--strategy", choices=["greedy", "beam"], default=None)
        sub.add_argument("--num_beams", type=int, default=None)
        sub.set_defaults(function=fn)
        if name == "generate":
            sub.add_argument("--input", help="a file of source lines (default: stdin)")
            sub.add_argument("--output", help="where to write the outputs (default: stdout)")
        else:
            sub.add_argument("--data", required=True, help="a TSV file of source<TAB>target")
            sub.add_argument("--max_pairs", type=int, default=0)
    args, rest = parser.parse_known_args(argv)
    if args.command == "train":
        return train(args.recipe, rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args.function(args)


if __name__ == "__main__":
    main()
