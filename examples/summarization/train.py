"""
Title: Abstractive summarization with a pointer-generator Transformer
Run: `python examples/summarization/train.py [--preset=NAME] [--key=value ...]`
(the same as `keras-attention train summarization ...`).

The recipe, with its explanation, is `keras_attention/recipes/summarization/train.py`;
its settings, presets and their rules are in
`keras_attention/recipes/summarization/config.py` (`--help` lists them). It
ships in the package, so an installed wheel trains it too.
"""

import os

import keras_attention_launcher

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow's C++ start-up lines off stderr, as the `keras-attention` command keeps them
# (TF_CPP_MIN_LOG_LEVEL=3 unless set; `TF_CPP_MIN_LOG_LEVEL=0 python ...` shows them).
keras_attention_launcher.silence_tensorflow_start()

from keras_attention import cli  # noqa: E402 (after the backend is chosen)
from keras_attention.recipes import summarization  # noqa: E402

if __name__ == "__main__":
    cli.run_script(summarization.main)  # a bad setting: one line, not a traceback
