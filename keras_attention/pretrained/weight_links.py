"""Which checkpoint tensor each of our variables is, in both directions.

A `WeightLink` pairs one variable of our model with one tensor of a
`transformers` checkpoint and says how their layouts differ. The families'
modules (`bart.py`, `t5.py`) describe their models once, as links, and the
same links copy a checkpoint's tensors in (`pairs_from_links`, then
`checkpoint.assign_weights`) and write ours back out (`tensors_from_links`),
so that a checkpoint converted and exported gives back its own tensors.

Layouts:

- `"same"`: the tensor is the variable (token tables, norms, position
  tables, relative position biases).
- `"flat"`: the same values in another shape (an attention bias `(H * d,)`
  is ours `(H, d)`; `final_logits_bias` `(1, V)` is ours `(V,)`).
- `"linear"`: an `nn.Linear` weight `(out, in)` whose transpose is our
  kernel, `input_axes` leading axes of which are the input (a query kernel
  `(D, H, d)` has one, an output kernel `(H, d, D)` two).

>>> import keras, numpy as np
>>> dense = keras.layers.Dense(3, use_bias=False)
>>> dense.build((None, 2))
>>> link = WeightLink(dense.kernel, "fc.weight", "linear")
>>> link.to_ours(np.arange(6.0).reshape(3, 2)).shape
(2, 3)
>>> tensors_from_links([link])["fc.weight"].shape
(3, 2)
"""

import dataclasses

import keras
import numpy as np

from keras_attention.pretrained.checkpoint import weight

LAYOUTS = ("same", "flat", "linear")


@dataclasses.dataclass(frozen=True)
class WeightLink:
    """One variable of our model and the checkpoint tensor it is.

    Attributes:
        variable: the Keras variable.
        name: the checkpoint's name of the tensor (what `transformers` saves).
        layout: `"same"`, `"flat"` or `"linear"` (see the module docstring).
        input_axes: the leading axes of a `"linear"` kernel that are its input.
        tensor_shape: the checkpoint's shape of a `"flat"` tensor; default
            one axis.
        other_names: names an older file may save the same tensor under
            (read, never written).
    """

    variable: object
    name: str
    layout: str = "same"
    input_axes: int = 1
    tensor_shape: tuple = (-1,)
    other_names: tuple = ()

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"Argument `layout` must be one of {', '.join(map(repr, LAYOUTS))}."
                             f" Received: layout={self.layout!r}")

    def to_ours(self, tensor):
        """The variable's value of the checkpoint's `tensor` (a mismatched
        size is left as it is, for `assign_weights` to name)."""
        if self.layout == "linear":
            return _reshape(np.transpose(tensor), self.variable.shape)
        if self.layout == "flat":
            return _reshape(tensor, self.variable.shape)
        return tensor

    def to_checkpoint(self, value):
        """The checkpoint's tensor of the variable's `value` (a NumPy array)."""
        if self.layout == "linear":
            shape = tuple(value.shape)
            inputs = int(np.prod(shape[:self.input_axes]))
            return np.ascontiguousarray(np.reshape(value, (inputs, -1)).T)
        if self.layout == "flat":
            return np.reshape(value, self.tensor_shape)
        return value


def pairs_from_links(links, weights, tensors=None):
    """The `(variable, array, name)` pairs of `checkpoint.assign_weights`:
    each link's tensor read from `weights` (under its name or one of its
    other names; an error naming it when missing), or from `tensors`
    (`name -> array`: tables already read, e.g. a tied table found under
    another name)."""
    tensors = tensors or {}
    pairs = []
    for link in links:
        tensor = (tensors[link.name] if link.name in tensors
                  else weight(weights, link.name, *link.other_names))
        pairs.append((link.variable, link.to_ours(tensor), link.name))
    return pairs


def tensors_from_links(links):
    """`{name: array}`: the checkpoint's tensors of our variables, float32
    (the first link of a name wins: a tied table is written once)."""
    tensors = {}
    for link in links:
        if link.name not in tensors:
            value = np.asarray(keras.ops.convert_to_numpy(link.variable), "float32")
            tensors[link.name] = np.ascontiguousarray(link.to_checkpoint(value))
    return tensors


def dense_links(dense, prefix, bias=True):
    """A Keras `Dense` as an `nn.Linear` saved as `prefix.weight` (and
    `prefix.bias`): `y = x W^T + b`."""
    links = [WeightLink(dense.kernel, f"{prefix}.weight", "linear")]
    if bias and dense.bias is not None:
        links.append(WeightLink(dense.bias, f"{prefix}.bias"))
    return links


def norm_links(norm, prefix):
    """A `LayerNormalization` (`prefix.weight`, `prefix.bias`) or an
    `RMSNormalization` (`prefix.weight`)."""
    if hasattr(norm, "gamma"):
        return [WeightLink(norm.gamma, f"{prefix}.weight"),
                WeightLink(norm.beta, f"{prefix}.bias")]
    return [WeightLink(norm.scale, f"{prefix}.weight")]


def attention_links(attention, names):
    """Our `MultiHeadAttention` as four `nn.Linear` of `D -> H * head_size`
    (and back), `names` = the query, key, value and output prefixes."""
    links = []
    for layer, prefix in zip((attention.query_dense, attention.key_dense,
                              attention.value_dense), names[:3]):
        links.append(WeightLink(layer.kernel, f"{prefix}.weight", "linear"))
        if layer.bias is not None:
            links.append(WeightLink(layer.bias, f"{prefix}.bias", "flat"))
    output = attention.output_dense
    links.append(WeightLink(output.kernel, f"{names[3]}.weight", "linear",
                            input_axes=len(output.kernel.shape) - 1))
    if output.bias is not None:
        links.append(WeightLink(output.bias, f"{names[3]}.bias"))
    return links


def _reshape(array, shape):
    """`array` in `shape` when the sizes agree; unchanged otherwise (so that
    `assign_weights` reports the mismatch by name)."""
    shape = tuple(shape)
    if np.size(array) == int(np.prod(shape)):
        return np.reshape(array, shape)
    return array


__all__ = ["LAYOUTS", "WeightLink", "attention_links", "dense_links", "norm_links",
           "pairs_from_links", "tensors_from_links"]
