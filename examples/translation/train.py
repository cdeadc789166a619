"""
Title: Neural machine translation with keras_attention
Run: `python examples/translation/train.py [--preset=NAME] [--key=value ...]`
(the same as `keras-attention train translation ...`).

The recipe, with its explanation, is `keras_attention/recipes/translation/train.py`;
its settings, presets and their rules are in
`keras_attention/recipes/translation/config.py` (`--help` lists them). It
ships in the package, so an installed wheel trains it too.
"""

import os

import keras_attention_launcher

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow's C++ start-up lines off stderr, as the `keras-attention` command keeps them
# (TF_CPP_MIN_LOG_LEVEL=3 unless set; `TF_CPP_MIN_LOG_LEVEL=0 python ...` shows them).
keras_attention_launcher.silence_tensorflow_start()

from keras_attention import cli  # noqa: E402 (after the backend is chosen)
from keras_attention.recipes import translation  # noqa: E402

if __name__ == "__main__":
    cli.run_script(translation.main)  # a bad setting: one line, not a traceback
