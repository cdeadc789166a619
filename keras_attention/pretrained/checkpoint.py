"""Reading a local Hugging Face checkpoint folder and copying its weights.

A folder holds `config.json` and the weights: `model.safetensors` (or the
shards of `model.safetensors.index.json`), read with `safetensors.numpy`
(no torch needed), or `pytorch_model.bin`, read only when torch is
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

import numpy as np

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
TORCH_FILE = "pytorch_model.bin"


def read_config(folder):
    """The `config.json` of checkpoint `folder` as a dict; an error naming
    the folder when it is not a checkpoint folder."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(
            "Argument `folder` must be a local Hugging Face checkpoint folder "
            f"(nothing is downloaded). Received: folder={folder!r}"
        )
    path = os.path.join(folder, CONFIG_FILE)
    if not os.path.isfile(path):
        raise ValueError(
            f"The checkpoint folder has no `{CONFIG_FILE}`. Received: folder={folder!r}"
        )
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_weights(folder):
    """The weights of checkpoint `folder`: a dict `name -> numpy array`.

    Reads `model.safetensors`, the shards listed in
    `model.safetensors.index.json`, or (only when torch is installed)
    `pytorch_model.bin`."""
    folder = os.fspath(folder)
    single = os.path.join(folder, SAFETENSORS_FILE)
    index = os.path.join(folder, SAFETENSORS_INDEX)
    if os.path.isfile(single) or os.path.isfile(index):
        from safetensors.numpy import load_file

        if os.path.isfile(single):
            files = [single]
        else:
            with open(index, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
            files = [os.path.join(folder, name) for name in shards]
        weights = {}
        for path in files:
            weights.update(load_file(path))
        return weights
    torch_path = os.path.join(folder, TORCH_FILE)
    if os.path.isfile(torch_path):
        try:
            import torch
        except ImportError:
            raise ImportError(
                f"The checkpoint holds `{TORCH_FILE}` only, which needs torch to be "
                "read; install torch, or convert the folder to safetensors "
                "(`model.save_pretrained(folder)` in transformers writes them). "
                f"Received: folder={folder!r}"
            ) from None
        state = torch.load(torch_path, map_location="cpu", weights_only=True)
        return {name: value.float().numpy() if value.is_floating_point() else value.numpy()
                for name, value in state.items()}
    raise ValueError(
        f"The checkpoint folder has no weights (`{SAFETENSORS_FILE}`, "
        f"`{SAFETENSORS_INDEX}` or `{TORCH_FILE}`). Received: folder={folder!r}"
    )


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


def check_equal(config, first, second):
    """`config[first]`, which must equal `config[second]` (our models have
    one setting for both), otherwise an error naming them."""
    if config.get(first) != config.get(second):
        raise ValueError(
            f"The checkpoint's `{first}` and `{second}` differ, which our "
            f"models do not support. Received: {first}={config.get(first)!r}, "
            f"{second}={config.get(second)!r}"
        )
    return config[first]


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


# Weights of our layers from `transformers`' torch layouts ---------------------
def dense_pairs(dense, weights, prefix, bias=True):
    """A Keras `Dense` from an `nn.Linear` saved as `prefix.weight` (and
    `prefix.bias`): `y = x W^T + b`."""
    pairs = [(dense.kernel, weight(weights, f"{prefix}.weight").T, f"{prefix}.weight")]
    if bias and dense.bias is not None:
        pairs.append((dense.bias, weight(weights, f"{prefix}.bias"), f"{prefix}.bias"))
    return pairs


def norm_pairs(norm, weights, prefix):
    """A `LayerNormalization` (`prefix.weight`, `prefix.bias`) or an
    `RMSNormalization` (`prefix.weight`)."""
    if hasattr(norm, "gamma"):
        return [(norm.gamma, weight(weights, f"{prefix}.weight"), f"{prefix}.weight"),
                (norm.beta, weight(weights, f"{prefix}.bias"), f"{prefix}.bias")]
    return [(norm.scale, weight(weights, f"{prefix}.weight"), f"{prefix}.weight")]


def attention_pairs(attention, weights, names):
    """Our `MultiHeadAttention` from four `nn.Linear` of `D -> H * head_size`
    (and back), `names` = the query, key, value and output prefixes."""
    pairs = []
    ours = (attention.query_dense, attention.key_dense, attention.value_dense)
    for layer, prefix in zip(ours, names[:3]):
        kernel = weight(weights, f"{prefix}.weight").T
        pairs.append((layer.kernel, _reshape(kernel, layer.kernel.shape), f"{prefix}.weight"))
        if layer.bias is not None:
            pairs.append((layer.bias, _reshape(weight(weights, f"{prefix}.bias"),
                                               layer.bias.shape), f"{prefix}.bias"))
    prefix = names[3]
    kernel = weight(weights, f"{prefix}.weight").T
    output = attention.output_dense
    pairs.append((output.kernel, _reshape(kernel, output.kernel.shape), f"{prefix}.weight"))
    if output.bias is not None:
        pairs.append((output.bias, weight(weights, f"{prefix}.bias"), f"{prefix}.bias"))
    return pairs


def _reshape(array, shape):
    """`array` in `shape` when the sizes agree; unchanged otherwise (so that
    `assign_weights` reports the mismatch by name)."""
    shape = tuple(shape)
    if np.size(array) == int(np.prod(shape)):
        return np.reshape(array, shape)
    return array
