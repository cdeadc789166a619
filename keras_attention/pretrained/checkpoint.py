"""Reading a local Hugging Face checkpoint folder and copying its weights.

A folder holds `config.json` and the weights: `model.safetensors` (or the
shards of `model.safetensors.index.json`), read with `safetensors.numpy`
(no torch needed; bfloat16 tensors, which NumPy lacks, are read here and
widened to float32 exactly), or `pytorch_model.bin`, read only when torch is
installed. Nothing is downloaded.

`assign_weights(pairs)` copies `(variable, array, name)` pairs only after
every shape has been checked, so a mismatched checkpoint changes nothing:

>>> import keras, numpy as np
>>> dense = keras.layers.Dense(2)
>>> dense.build((None, 3))
>>> assign_weights([(dense.kernel, np.ones((3, 2)), "fc.weight")])
>>> float(keras.ops.convert_to_numpy(dense.kernel).sum())
6.0
"""

import json
import os
import re
import stat
import struct

import numpy as np

from keras_attention import files

CHECKPOINT_CONFIG_FILE = "config.json"
GENERATION_CONFIG_FILE = "generation_config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
TORCH_FILE = "pytorch_model.bin"


def checkpoint_file(folder, name):
    """The path of `name`, a plain file inside checkpoint `folder`.

    Raises:
        ValueError: naming `name` when it is not a relative name inside the
            folder (an absolute name, `..`, a link to a file elsewhere) or
            not a plain file (a folder, a device).
        FileNotFoundError: naming `name` when it is missing.
    """
    folder = os.fspath(folder)
    outside = files.outside_folder(folder, name)
    if outside is not None:
        raise ValueError(f"The checkpoint names {name!r}, {outside}: only files inside the "
                         f"checkpoint folder are read. Received: folder={folder!r}")
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"The checkpoint folder has no {name}. Received: "
                                f"folder={folder!r}")
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError(f"The checkpoint file {name} is not a plain file. Received: "
                         f"folder={folder!r}")
    return path


def read_json(folder, name):
    """The JSON object (a dict) of the file `name` of checkpoint `folder`;
    one-line errors naming the file."""
    path = checkpoint_file(folder, name)
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"The checkpoint file {name} is not JSON ({error}). Received: "
                         f"folder={os.fspath(folder)!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"The checkpoint file {name} must hold a JSON object. Received: "
                         f"a JSON {type(value).__name__} in folder={os.fspath(folder)!r}")
    return value


def read_config(folder):
    """The `config.json` of checkpoint `folder` as a dict; an error naming
    the folder when it is not a checkpoint folder."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(
            "Argument `folder` must be a local Hugging Face checkpoint folder "
            f"(nothing is downloaded). Received: folder={folder!r}"
        )
    if not os.path.lexists(os.path.join(folder, CHECKPOINT_CONFIG_FILE)):
        raise ValueError(
            f"The checkpoint folder has no `{CHECKPOINT_CONFIG_FILE}`. Received: folder={folder!r}"
        )
    return read_json(folder, CHECKPOINT_CONFIG_FILE)


def read_weights(folder):
    """The weights of checkpoint `folder`: a dict `name -> numpy array`,
    every one floating point and finite.

    Reads `model.safetensors`, the shards listed in
    `model.safetensors.index.json` (each a plain file inside the folder),
    or (only when torch is installed) `pytorch_model.bin`, loaded with
    `weights_only=True`: a pickle holding anything but tensors is refused.
    Every failure is one line naming the file or the weight."""
    folder = os.fspath(folder)
    if os.path.lexists(os.path.join(folder, SAFETENSORS_FILE)):
        weights = _read_safetensors(folder, SAFETENSORS_FILE)
    elif os.path.lexists(os.path.join(folder, SAFETENSORS_INDEX)):
        weights = {}
        for shard, names in _shards(folder).items():
            arrays = _read_safetensors(folder, shard)
            missing = sorted(set(names) - set(arrays))
            if missing:
                raise ValueError(f"The checkpoint file {SAFETENSORS_INDEX} places "
                                 f"{missing[0]!r} in {shard}, which lacks it. Received: "
                                 f"folder={folder!r}")
            weights.update(arrays)
    elif os.path.lexists(os.path.join(folder, TORCH_FILE)):
        weights = _read_torch_file(folder)
    else:
        raise ValueError(
            f"The checkpoint folder has no weights (`{SAFETENSORS_FILE}`, "
            f"`{SAFETENSORS_INDEX}` or `{TORCH_FILE}`). Received: folder={folder!r}"
        )
    for name, array in weights.items():
        check_weight_values(name, array)
    return CheckpointWeights(weights)


def check_weight_values(name, array):
    """A weight must be floating point and finite; an error naming it otherwise."""
    if not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"The checkpoint weight {name!r} is not floating point (weights "
                         f"are converted as floats only). Received: {name}.dtype={array.dtype}")
    if not np.isfinite(array).all():
        raise ValueError(f"The checkpoint weight {name!r} holds NaN or infinite values. "
                         f"Received: {name} with {int(np.size(array) - np.isfinite(array).sum())} "
                         f"non-finite values")


def _shards(folder):
    """`{shard file: [weight names]}` of `model.safetensors.index.json`."""
    index = read_json(folder, SAFETENSORS_INDEX)
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise ValueError(f"The checkpoint file {SAFETENSORS_INDEX} must map weight names "
                         f"to shard files in `weight_map`. Received: weight_map="
                         f"{type(weight_map).__name__} in folder={folder!r}")
    shards = {}
    for name, shard in sorted(weight_map.items()):
        checkpoint_file(folder, shard)
        shards.setdefault(shard, []).append(name)
    return shards


def _read_safetensors(folder, name):
    from safetensors.numpy import load_file

    path = checkpoint_file(folder, name)
    try:
        header = _bfloat16_header(path)
        return load_file(path) if header is None else _read_bfloat16_file(path, header)
    except Exception as error:  # safetensors' errors of a truncated, empty or bad file
        raise ValueError(f"The checkpoint file {name} is not a readable safetensors file "
                         f"(truncated, empty or a bad header: {_first_line(error)}). "
                         f"Received: folder={folder!r}") from None


#: NumPy's dtypes of safetensors' dtype names (besides BF16, widened to float32).
_SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                       "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def _bfloat16_header(path):
    """The header (`{name: {dtype, shape, data_offsets}}`) of a safetensors
    file holding a BF16 tensor, else None (`safetensors` reads it; a header
    that does not parse is left for `safetensors` to describe)."""
    with open(path, "rb") as file:
        size = file.read(8)
        if len(size) < 8:
            return None
        (length,) = struct.unpack("<Q", size)
        if length > os.path.getsize(path) - 8:
            return None
        try:
            header = json.loads(file.read(length))
        except ValueError:
            return None
    if not isinstance(header, dict):
        return None
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    if not any(isinstance(v, dict) and v.get("dtype") == "BF16" for v in tensors.values()):
        return None
    return {"length": length, "tensors": tensors}


def _read_bfloat16_file(path, header):
    """The arrays of a safetensors file with BF16 tensors: those as float32
    (a bfloat16 is the upper half of a float32's bits), the others as stored."""
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header["length"])
    arrays = {}
    for name, entry in header["tensors"].items():
        start, end = entry["data_offsets"]
        shape, dtype = tuple(entry["shape"]), entry["dtype"]
        if dtype != "BF16" and dtype not in _SAFETENSORS_DTYPES:
            raise ValueError(f"tensor {name!r} has dtype {dtype!r}, which is not read here")
        item = 2 if dtype == "BF16" else np.dtype(_SAFETENSORS_DTYPES[dtype]).itemsize
        if not 0 <= start <= end <= len(data) or end - start != item * int(np.prod(shape)):
            raise ValueError(f"tensor {name!r} lies outside the file or has the wrong size")
        raw = np.asarray(data[start:end])
        if dtype == "BF16":
            array = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            array = raw.view(_SAFETENSORS_DTYPES[dtype])
        arrays[name] = array.reshape(shape).copy()
    return arrays


def _read_torch_file(folder):
    path = checkpoint_file(folder, TORCH_FILE)
    try:
        import torch
    except ImportError:
        raise ImportError(
            f"The checkpoint holds `{TORCH_FILE}` only, which needs torch to be "
            "read; install torch, or convert the folder to safetensors "
            "(`model.save_pretrained(folder)` in transformers writes them). "
            f"Received: folder={folder!r}"
        ) from None
    import pickle

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        raise ValueError(f"The checkpoint file {TORCH_FILE} holds pickled objects other "
                         f"than tensors, which are not loaded (torch's weights_only "
                         f"refusal: {_first_line(error)}); save it as safetensors. "
                         f"Received: folder={folder!r}") from None
    except Exception as error:  # a truncated or corrupt archive
        raise ValueError(f"The checkpoint file {TORCH_FILE} does not load "
                         f"({type(error).__name__}: {_first_line(error)}). "
                         f"Received: folder={folder!r}") from None
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise ValueError(f"The checkpoint file {TORCH_FILE} must hold a dict of tensors by "
                         f"name. Received: {type(state).__name__} in folder={folder!r}")
    return {name: (value.float() if value.dtype == torch.bfloat16 else value).numpy()
            for name, value in state.items()}


def _first_line(error):
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else type(error).__name__)[:200]


class CheckpointWeights(dict):
    """A checkpoint's weights by name (`name -> numpy array`) that remembers
    which were read (`[]` and `get`), so that `check_all_read` can refuse a
    checkpoint holding weights the conversion did not use."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        if name in self:
            self.read.add(name)
        return super().get(name, default)


def check_all_read(weights, copies=()):
    """Every weight of `weights` (a `CheckpointWeights`) was read, or is one
    of `copies` (the names under which a checkpoint may also save a tied
    table that was read under another name); an error naming the first
    other one (a weight the conversion would silently drop)."""
    unread = sorted(set(weights) - weights.read - set(copies))
    if unread:
        raise ValueError(
            f"The checkpoint weight {unread[0]!r} is not used by the model its config "
            f"describes ({len(unread)} such weights; a config with fewer layers than the "
            f"weights, or weights of another model?). Received: {unread[0]}.shape="
            f"{tuple(np.shape(dict.__getitem__(weights, unread[0])))}")


def config_int(config, key, default=None, minimum=1):
    """`config[key]` (or `default` when unset), which must be an int >=
    `minimum`; an error naming the key otherwise."""
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"The checkpoint's config value `{key}` must be an integer >= "
                         f"{minimum}. Received: {key}={value!r}")
    return value


def count_blocks(weights, prefix):
    """How many blocks `{prefix}.{i}.` the weights hold (`i` from 0 up)."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.")
    found = {int(match.group(1)) for match in map(pattern.match, weights) if match}
    return max(found) + 1 if found else 0


def check_against_weights(config, key, found, evidence, default=None):
    """`config[key]` (or `default` when unset) must be `found`, what the
    weights say (`evidence` names the weight that says it): checked before a
    model is built, so that a wrong or huge config value is refused by name
    without building anything."""
    value = config.get(key, default)
    if value != found:
        raise ValueError(f"The checkpoint's config value `{key}` does not match its weights "
                         f"({evidence} says {found}). Received: {key}={value!r}")


def weight_shape(weights, name):
    """The shape of weight `name`, or None when absent (without counting it
    as read: the shape checks before building read no weight)."""
    return tuple(np.shape(dict.__getitem__(weights, name))) if name in weights else None


def check_token_table(config, weights, names):
    """`vocab_size` and `d_model` (the config's keys) against the first of
    `names` the weights hold (the token table), then the special token ids
    against `vocab_size`."""
    for name in names:
        shape = weight_shape(weights, name)
        if shape is not None:
            check_against_weights(config, "vocab_size", shape[0], f"{name} {shape}")
            check_against_weights(config, "d_model", shape[-1], f"{name} {shape}")
            break
    check_token_ids(config, config["vocab_size"])


def check_token_ids(config, vocabulary_size):
    """The config's special token ids (pad, end, start, decoder start) lie
    in the vocabulary; an error naming the first that does not."""
    for key in ("pad_token_id", "eos_token_id", "bos_token_id", "decoder_start_token_id"):
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not (
                0 <= value < vocabulary_size):
            raise ValueError(f"The checkpoint's config value `{key}` must be a token id "
                             f"below its vocab_size={vocabulary_size}. Received: {key}={value!r}")


def weight(weights, *names):
    """The first of `names` present in `weights` (tied weights are saved
    under one name only); an error naming them when none is."""
    for name in names:
        if name in weights:
            return weights[name]
    raise ValueError(
        f"The checkpoint lacks the weight {names[0]!r}"
        + (f" (or {', '.join(map(repr, names[1:]))})" if len(names) > 1 else "")
        + f". Received: {len(weights)} weights"
    )


def assign_weights(pairs):
    """Copies each `(variable, array, name)` of `pairs` into its variable,
    after checking every shape first: a mismatch is an error naming the
    checkpoint weight, and then nothing has been copied."""
    pairs = list(pairs)
    for variable, array, name in pairs:
        if tuple(variable.shape) != tuple(np.shape(array)):
            raise ValueError(
                f"The checkpoint weight {name!r} has shape {tuple(np.shape(array))}, "
                f"the model's `{variable.path}` needs {tuple(variable.shape)}. "
                f"Received: {name}.shape={tuple(np.shape(array))}"
            )
    for variable, array, _ in pairs:
        variable.assign(np.asarray(array, dtype=variable.dtype))


def check_config_value(config, key, allowed, default=None):
    """`config[key]` (or `default` when unset) if it is one of `allowed`,
    otherwise an error naming the key."""
    value = config.get(key, default)
    if value not in allowed:
        raise ValueError(
            f"The checkpoint's config value `{key}` is not supported (supported: "
            f"{', '.join(map(repr, allowed))}). Received: {key}={value!r}"
        )
    return value


def distinct_start_token_id(config):
    """The model's `start_token_id`: the checkpoint's decoder start id when
    it differs from its pad and end ids, else its `bos_token_id`, else the
    smallest other id. Our models need three different ids, while Marian
    and T5 start with their pad id, BART with its end id: generation then passes
    the checkpoint's own `decoder_start_token_id` (see `load_pretrained`)."""
    taken = {config.get("pad_token_id"), config.get("eos_token_id")}
    for key in ("decoder_start_token_id", "bos_token_id"):
        if config.get(key) is not None and config[key] not in taken:
            return config[key]
    return min(set(range(len(taken) + 1)) - taken)
