"""The model builders show every parameter: in `inspect.signature`, `help()` and their Args."""

import dataclasses
import inspect
import re

import pytest

from keras_attention.models import (
    memory_network,
    rnn_seq2seq,
    transformer_seq2seq,
    universal_transformer_qa,
)
from keras_attention.models.rnn_seq2seq import RNNSeq2Seq
from keras_attention.models.transformer_config import TransformerConfig
from keras_attention.models.transformer_seq2seq import TransformerSeq2Seq

pytestmark = pytest.mark.keras_ops_only

BUILDERS = {
    "transformer_seq2seq": transformer_seq2seq,
    "rnn_seq2seq": rnn_seq2seq,
    "memory_network": memory_network,
    "universal_transformer_qa": universal_transformer_qa,
}
MODEL_CLASSES = {"rnn_seq2seq": RNNSeq2Seq}


def documented_arguments(function):
    """The names the `Args:` section of `function`'s docstring documents."""
    doc = inspect.getdoc(function)
    args = re.search(r"^Args:\n(.*?)(?:^\S|\Z)", doc, re.S | re.M).group(1)
    names = set()
    for entry in re.findall(r"^    (\w+(?:, \w+)*):", args, re.M):
        names.update(entry.split(", "))
    return names


@pytest.mark.parametrize("builder", BUILDERS)
def test_signature_lists_every_parameter_without_catch_alls(builder):
    parameters = inspect.signature(BUILDERS[builder]).parameters.values()
    kinds = {parameter.kind for parameter in parameters}
    assert inspect.Parameter.VAR_KEYWORD not in kinds
    assert inspect.Parameter.VAR_POSITIONAL not in kinds
    assert len(parameters) >= 12
    assert "name" in {parameter.name for parameter in parameters}


@pytest.mark.parametrize("builder", BUILDERS)
def test_every_parameter_is_documented_in_args(builder):
    names = set(inspect.signature(BUILDERS[builder]).parameters)
    documented = documented_arguments(BUILDERS[builder])
    assert names == documented, (
        f"undocumented: {sorted(names - documented)}, stale: {sorted(documented - names)}"
    )


@pytest.mark.parametrize("builder", MODEL_CLASSES)
def test_builder_defaults_are_the_model_defaults(builder):
    model_parameters = inspect.signature(MODEL_CLASSES[builder].__init__).parameters
    builder_parameters = inspect.signature(BUILDERS[builder]).parameters
    for name, parameter in builder_parameters.items():
        if name == "name":
            continue
        assert name in model_parameters, name
        assert parameter.default == model_parameters[name].default, name
    model_arguments = {
        name for name, parameter in model_parameters.items()
        if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD
    }
    assert model_arguments <= set(builder_parameters)


def test_the_transformer_builder_is_its_config():
    """Each setting of the Transformer is written once: a `TransformerConfig`
    field, which is a builder argument with the same default."""
    fields = {field.name: field.default for field in dataclasses.fields(TransformerConfig)}
    builder = inspect.signature(transformer_seq2seq).parameters
    assert list(builder) == list(fields) + ["name"]
    for name, default in fields.items():
        if name != "vocabulary_size":
            assert builder[name].default == default, name
    model = transformer_seq2seq(12, num_layers=1, hidden_dim=8, num_heads=2, intermediate_dim=8)
    assert isinstance(model.config, TransformerConfig)
    assert model.get_config() == {**model.get_config(), **model.config.to_dict()}
    same = TransformerSeq2Seq(model.config, name="same")
    assert same.config == model.config and same.count_params() == model.count_params()
    with pytest.raises(ValueError, match=r"not also as keyword arguments. Received: num_heads"):
        TransformerSeq2Seq(model.config, num_heads=4)
    with pytest.raises(ValueError, match=r"Received: config=None"):
        TransformerSeq2Seq()


def test_transformer_builder_forwards_every_argument():
    arguments = dict(
        target_vocabulary_size=11, num_layers=1, hidden_dim=16, num_heads=2,
        intermediate_dim=24, dropout=0.0, max_length=20, position="learned", norm_first=False,
        num_key_value_heads=1, pad_token_id=3, start_token_id=4, end_token_id=5,
    )
    model = transformer_seq2seq(12, name="my_transformer", **arguments)
    config = model.get_config()
    assert model.name == "my_transformer"
    assert {key: config[key] for key in arguments} == arguments
    copy_model = transformer_seq2seq(
        12, num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=24,
        pointer_generator=True, coverage_loss_weight=0.5,
    )
    assert copy_model.get_config()["coverage_loss_weight"] == 0.5
    assert copy_model.copy_head is not None


def test_rnn_builder_forwards_every_argument():
    arguments = dict(
        target_vocabulary_size=11, embedding_dim=8, units=16, attention="luong_concat",
        cell="lstm", input_feeding=False, dropout=0.1, pad_token_id=3, start_token_id=4,
        end_token_id=5,
    )
    model = rnn_seq2seq(12, name="my_rnn", **arguments)
    config = model.get_config()
    assert model.name == "my_rnn"
    assert {key: config[key] for key in arguments} == arguments


def test_builders_refuse_unknown_and_positional_arguments():
    with pytest.raises(TypeError, match="num_layer"):
        transformer_seq2seq(12, num_layer=1)
    with pytest.raises(TypeError):
        rnn_seq2seq(12, 13)  # everything after vocabulary_size is keyword-only
