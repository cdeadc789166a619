"""Reading weights and copying them only after every shape is checked."""

import keras
import numpy as np
import pytest
from safetensors.numpy import save_file

from keras_attention.pretrained import checkpoint


def test_assign_weights_checks_every_shape_before_copying():
    first, second = keras.layers.Dense(2), keras.layers.Dense(3)
    first.build((None, 2))
    second.build((None, 2))
    before = keras.ops.convert_to_numpy(first.kernel).copy()
    with pytest.raises(ValueError, match=r"'b.weight' has shape \(2, 2\).*Received"):
        checkpoint.assign_weights([(first.kernel, np.ones((2, 2)), "a.weight"),
                                   (second.kernel, np.ones((2, 2)), "b.weight")])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(first.kernel), before)


def test_read_weights_reads_safetensors_shards(tmp_path):
    save_file({"a": np.ones(2, "float32")}, str(tmp_path / "one.safetensors"))
    save_file({"b": np.zeros(3, "float32")}, str(tmp_path / "two.safetensors"))
    (tmp_path / "model.safetensors.index.json").write_text(
        '{"weight_map": {"a": "one.safetensors", "b": "two.safetensors"}}')
    weights = checkpoint.read_weights(tmp_path)
    assert sorted(weights) == ["a", "b"] and weights["b"].shape == (3,)


def test_torch_file_without_torch_is_an_error_saying_so(tmp_path, monkeypatch):
    import builtins

    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("no torch")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(ImportError, match="needs torch"):
        checkpoint.read_weights(tmp_path)


def test_weight_names_the_missing_names():
    with pytest.raises(ValueError, match="lacks the weight 'x' \\(or 'y'\\)"):
        checkpoint.weight({}, "x", "y")
    assert checkpoint.weight({"y": 1}, "x", "y") == 1
