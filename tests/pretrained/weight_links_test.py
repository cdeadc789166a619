"""`weight_links`: each layout turns a checkpoint tensor into our variable's
value and back unchanged, and the pairs of a model's links read tied tables
under their other names."""

import keras
import numpy as np
import pytest

from keras_attention.pretrained import weight_links
from keras_attention.pretrained.weight_links import WeightLink


def _variable(shape):
    layer = keras.layers.Layer()
    return layer.add_weight(shape=shape, initializer="zeros")


@pytest.mark.parametrize("layout, shape, tensor_shape, input_axes, extra", [
    ("same", (5, 3), (5, 3), 1, {}),
    ("flat", (2, 4), (8,), 1, {}),
    ("flat", (6,), (1, 6), 1, {"tensor_shape": (1, -1)}),
    ("linear", (3, 2, 4), (8, 3), 1, {}),        # a query kernel (D, H, d)
    ("linear", (2, 4, 3), (3, 8), 2, {}),        # an output kernel (H, d, D)
])
def test_each_layout_goes_in_and_back_out_unchanged(layout, shape, tensor_shape, input_axes,
                                                    extra):
    link = WeightLink(_variable(shape), "w", layout, input_axes=input_axes, **extra)
    tensor = np.random.default_rng(0).normal(size=tensor_shape).astype("float32")
    ours = link.to_ours(tensor)
    assert ours.shape == shape
    link.variable.assign(ours)
    back = weight_links.tensors_from_links([link])["w"]
    assert back.shape == tensor_shape and np.array_equal(back, tensor)


def test_a_linear_link_is_the_transpose_of_torch_s_weight():
    dense = keras.layers.Dense(3, use_bias=True)
    dense.build((None, 2))
    weight = np.arange(6.0, dtype="float32").reshape(3, 2)  # nn.Linear(2, 3).weight
    bias = np.array([1.0, 2.0, 3.0], "float32")
    links = weight_links.dense_links(dense, "fc")
    pairs = weight_links.pairs_from_links(links, {"fc.weight": weight, "fc.bias": bias})
    for variable, value, _ in pairs:
        variable.assign(value)
    x = np.array([[1.0, -1.0]], "float32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(dense(x)), x @ weight.T + bias)


def test_a_tensor_is_read_under_its_other_names_and_written_under_its_own():
    link = WeightLink(_variable((2, 2)), "shared.weight",
                      other_names=("encoder.embed_tokens.weight",))
    table = np.eye(2, dtype="float32")
    (variable, value, name), = weight_links.pairs_from_links(
        [link], {"encoder.embed_tokens.weight": table})
    assert name == "shared.weight" and np.array_equal(value, table)
    with pytest.raises(ValueError, match="lacks the weight 'shared.weight'"):
        weight_links.pairs_from_links([link], {})


def test_a_tied_table_is_written_once():
    variable = _variable((2, 2))
    links = [WeightLink(variable, "shared.weight"), WeightLink(variable, "shared.weight")]
    assert list(weight_links.tensors_from_links(links)) == ["shared.weight"]


def test_an_unknown_layout_is_refused():
    with pytest.raises(ValueError, match="Received: layout='transposed'"):
        WeightLink(_variable((2,)), "w", "transposed")
