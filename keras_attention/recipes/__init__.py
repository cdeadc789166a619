"""The recipes: train, evaluate and save a model for one task, end to end.

Each recipe is a subpackage with a `config` module (its defaults, presets and
the rules of its settings) and a `train` module (the recipe itself, its
explanation in the module docstring), and exposes `main(argv=None)`: it reads
`--preset=NAME` and `--key=value` arguments, checks the whole configuration
before any training, trains, saves a run folder and returns the scores.

- `keras_attention.recipes.translation`: sentence pairs (or built-in dates),
  a Transformer or a Bahdanau-attention RNN, BLEU and chrF.
- `keras_attention.recipes.summarization`: a pointer-generator Transformer,
  ROUGE against the lead-1 baseline.
- `keras_attention.recipes.question_answering`: an End-To-End Memory Network
  or a Transformer on bAbI stories, per-task accuracy, exact match and F1.

Each recipe is one registration in `keras_attention.recipes.registry` and one
`RecipeSpec` (its configuration, data, model, decoding settings and
evaluation) that `keras_attention.recipes.skeleton.run_recipe` runs: the
setup and the ending (folders, seeds, distribution, saving the run) are
written once, there.

`keras-attention train RECIPE [--key=value ...]` and
`python examples/RECIPE/train.py [--key=value ...]` both call `main`.
The submodules are imported on use (each brings TensorFlow and Keras).
"""

from keras_attention.recipes import registry

RECIPES = registry.recipe_names()  # the built-in ones; see `registry` for the rest
