"""Reading weights and copying them only after every shape is checked, and
refusing (in one line) what a checkpoint folder must not make us read."""

import json
import os

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


# A hostile checkpoint folder: each refusal is one line naming the file or
# weight, raised before anything outside the folder is read.


def _one_line(error):
    message = str(error.value)
    assert "\n" not in message and "Received:" in message, message
    return message


def _index(folder, weight_map):
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


@pytest.mark.parametrize("name, pattern", [
    ("../outside.safetensors", r"'\.\./outside\.safetensors', a name outside the folder"),
    ("/etc/outside.safetensors", r"'/etc/outside\.safetensors', a name outside the folder"),
    ("link.safetensors", r"'link\.safetensors', a link to a place outside the folder"),
])
def test_a_shard_outside_the_folder_is_never_read(tmp_path, name, pattern):
    folder, outside = tmp_path / "checkpoint", tmp_path / "outside.safetensors"
    folder.mkdir()
    save_file({"a": np.ones(2, "float32")}, str(outside))
    (folder / "link.safetensors").symlink_to(outside)
    _index(folder, {"a": name})
    with pytest.raises(ValueError, match=pattern) as error:
        checkpoint.read_weights(folder)
    _one_line(error)


def test_a_shard_that_is_not_a_plain_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.safetensors")  # reading it would block
    _index(tmp_path, {"a": "pipe.safetensors"})
    with pytest.raises(ValueError, match=r"pipe\.safetensors is not a plain file") as error:
        checkpoint.read_weights(tmp_path)
    _one_line(error)


@pytest.mark.parametrize("index, pattern", [
    ({"metadata": {}}, r"map weight names to shard files in `weight_map`.*weight_map=NoneType"),
    ({"weight_map": ["a"]}, r"weight_map=list"),
    ({"weight_map": {"a": "one.safetensors", "b": "missing.safetensors"}},
     r"has no missing\.safetensors"),
    ({"weight_map": {"a": "one.safetensors", "z": "one.safetensors"}},
     r"places 'z' in one\.safetensors, which lacks it"),
])
def test_a_bad_shard_index_is_one_line(tmp_path, index, pattern):
    save_file({"a": np.ones(2, "float32")}, str(tmp_path / "one.safetensors"))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises((ValueError, FileNotFoundError), match=pattern) as error:
        checkpoint.read_weights(tmp_path)
    _one_line(error)


@pytest.mark.parametrize("content", [b"", b"\x08\x00\x00\x00\x00\x00\x00\x00{bad}   ", None],
                         ids=["empty", "bad_header", "truncated"])
def test_an_unreadable_safetensors_file_is_one_line(tmp_path, content):
    path = tmp_path / "model.safetensors"
    save_file({"a": np.ones(64, "float32")}, str(path))
    if content is None:
        content = path.read_bytes()[:-100]
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"model\.safetensors is not a readable safetensors "
                                         r"file") as error:
        checkpoint.read_weights(tmp_path)
    _one_line(error)


@pytest.mark.parametrize("array, pattern", [
    (np.arange(4, dtype="int32"), r"'w' is not floating point.*Received: w\.dtype=int32"),
    (np.array([1.0, np.nan, np.inf], "float32"), r"'w' holds NaN or infinite values.*"
                                                 r"with 2 non-finite values"),
])
def test_weights_are_finite_floats(tmp_path, array, pattern):
    save_file({"w": array}, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match=pattern) as error:
        checkpoint.read_weights(tmp_path)
    _one_line(error)


@pytest.mark.parametrize("content, pattern", [
    (b"[1, 2]", r"config\.json must hold a JSON object.*a JSON list"),
    (b"{\"model_type\": ", r"config\.json is not JSON"),
    (b"\xff\xfe", r"config\.json is not JSON"),
])
def test_a_config_that_is_not_a_json_object_is_one_line(tmp_path, content, pattern):
    (tmp_path / "config.json").write_bytes(content)
    with pytest.raises(ValueError, match=pattern) as error:
        checkpoint.read_config(tmp_path)
    _one_line(error)


def test_a_pickle_that_runs_code_is_refused_and_never_runs(tmp_path):
    torch = pytest.importorskip("torch")
    ran = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(ran), "w"))

    torch.save({"w": Payload()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(ValueError, match=r"pytorch_model\.bin holds pickled objects other than "
                                         r"tensors.*save it as safetensors") as error:
        checkpoint.read_weights(tmp_path)
    _one_line(error)
    assert not ran.exists()
    (tmp_path / "pytorch_model.bin").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match=r"pytorch_model\.bin does not load") as error:
        checkpoint.read_weights(tmp_path)
    _one_line(error)
    torch.save({"w": torch.ones(2, dtype=torch.bfloat16)}, tmp_path / "pytorch_model.bin")
    assert checkpoint.read_weights(tmp_path)["w"].dtype == np.float32


def test_weights_remember_what_was_read_and_unread_ones_are_refused():
    weights = checkpoint.CheckpointWeights({"a": np.ones(2), "b": np.ones(3), "copy": np.ones(2)})
    assert checkpoint.weight(weights, "a") is not None and weights.get("missing") is None
    assert checkpoint.weight_shape(weights, "b") == (3,) and weights.read == {"a"}
    with pytest.raises(ValueError, match=r"'b' is not used by the model.*Received: "
                                         r"b\.shape=\(3,\)"):
        checkpoint.check_all_read(weights, copies=("copy",))
    weights.get("b")
    checkpoint.check_all_read(weights, copies=("copy",))
