"""The `"converted"` model kind's hooks: sources encoded as the checkpoint's
tokenizer gives them, and a `config.json` holding a bad decoding setting
refused naming the key. (Its `GenerationConfig`: tests/runs/generation_test.py;
converting and decoding real checkpoints: tests/runs/convert_test.py.)"""

import json

import numpy as np
import pytest

from keras_attention import runs
from keras_attention.runs import converted


class _Tokenizer:
    pad_token_id = 9

    def encode(self, texts):
        return [[1] * len(text) + [0] for text in texts]


def test_sources_are_padded_and_cut_keeping_the_end_token():
    ids = converted.checkpoint_ids(["ab", "", "abcdefgh"], _Tokenizer(), 5)
    np.testing.assert_array_equal(ids, [[1, 1, 0, 9, 9], [0, 9, 9, 9, 9], [1, 1, 1, 1, 0]])


def test_sources_are_not_cut_without_a_source_length():
    ids = converted.checkpoint_ids(["abcdefgh", "a"], _Tokenizer(), None)
    np.testing.assert_array_equal(ids, [[1] * 8 + [0], [1, 0] + [9] * 7])


def test_a_bad_decoding_in_config_json_is_one_run_folder_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "format_version": 1, "recipe": "translation", "config": {}, "scores": {},
        "tokenizers": {"source": "tokenizer", "target": "tokenizer"},
        "decoding": {"source_length": 8, "target_length": 8, "strategy": "sample"},
        "source_format": "text", "converted_from": {"family": "marian"}}))
    with pytest.raises(runs.RunFolderError, match=r"config.json has bad settings .*"
                                                  r"Received: strategy='sample'"):
        runs.read_metadata(str(tmp_path))
