"""The `"converted"` model kind: a `config.json` holding a bad decoding
setting refused naming the key. (Its `GenerationConfig`:
tests/runs/generation_test.py; converting and decoding real checkpoints:
tests/runs/convert_test.py; how sources are encoded and cut, one function for
every tokenizer: tests/tokenizer_test.py.)"""

import json

import pytest

from keras_attention import runs


def test_a_bad_decoding_in_config_json_is_one_run_folder_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "format_version": 1, "recipe": "translation", "config": {}, "scores": {},
        "tokenizers": {"source": "tokenizer", "target": "tokenizer"},
        "decoding": {"source_length": 8, "target_length": 8, "strategy": "sample"},
        "source_format": "text", "converted_from": {"family": "marian"}}))
    with pytest.raises(runs.RunFolderError, match=r"config.json has bad settings .*"
                                                  r"Received: strategy='sample'"):
        runs.read_metadata(str(tmp_path))
