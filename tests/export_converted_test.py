"""`export_run` of a converted run folder (`keras-attention export`): the
reloaded SavedModel's serving signature answers strings with the strings of
`transformers`' `generate` + `batch_decode(skip_special_tokens=True)`, with
the checkpoint's generation config (beam 4) and greedy."""

import pytest
import tensorflow as tf

from keras_attention import cli
from keras_attention.export import SIGNATURE_INPUT, SIGNATURE_OUTPUT, export_run
from keras_attention.runs.convert import convert_checkpoint
from tests.runs.convert_test import TEXTS, make_checkpoint, reference_strings

pytestmark = pytest.mark.backend_independent("a TensorFlow SavedModel: exporting needs the "
                                              "TensorFlow backend")


@pytest.fixture(scope="module", params=["marian", "t5"])
def converted(request, tmp_path_factory):
    """`(torch model, transformers tokenizer, run folder, root)`: the
    checkpoint decodes with beam 4 and a length penalty."""
    root = tmp_path_factory.mktemp(request.param)
    model, tokenizer = make_checkpoint(root / "checkpoint", request.param,
                                       {"num_beams": 4, "length_penalty": 0.6,
                                        "max_length": 10})
    return model, tokenizer, convert_checkpoint(root / "checkpoint", root / "run"), root


def _serve(export_dir, texts):
    loaded = tf.saved_model.load(str(export_dir))
    outputs = loaded.signatures["serving_default"](**{SIGNATURE_INPUT: tf.constant(texts)})
    return [text.decode("utf-8") for text in outputs[SIGNATURE_OUTPUT].numpy()]


@pytest.mark.large
def test_saved_model_serves_the_strings_of_transformers(converted):
    model, tokenizer, run_dir, root = converted
    beam = export_run(run_dir, root / "beam")  # the checkpoint's beam 4
    assert _serve(beam, TEXTS) == reference_strings(model, tokenizer, TEXTS)
    greedy = export_run(run_dir, root / "greedy", strategy="greedy")
    expected = reference_strings(model, tokenizer, TEXTS, num_beams=1)
    assert _serve(greedy, TEXTS) == expected
    assert any(expected) and len(set(expected)) > 1  # the strings depend on the source
    assert _serve(greedy, [TEXTS[1]]) == expected[1:2]  # another batch size


@pytest.mark.large
def test_cli_export_of_a_converted_run(converted, tmp_path):
    model, tokenizer, run_dir, _ = converted
    cli.main(["export", str(run_dir), str(tmp_path / "exported"), "--num_beams", "2"])
    assert _serve(tmp_path / "exported", TEXTS[:2]) == reference_strings(
        model, tokenizer, TEXTS[:2], num_beams=2)


@pytest.mark.large
def test_a_setting_the_graph_cannot_honour_is_refused_naming_it(converted, tmp_path,
                                                                monkeypatch):
    from keras_attention.runs import GenerationConfig

    _, _, run_dir, _ = converted
    mapping = GenerationConfig.generate_kwargs
    monkeypatch.setattr(GenerationConfig, "generate_kwargs",
                        lambda self: {**mapping(self), "temperature": 0.7})
    with pytest.raises(ValueError, match=r"cannot honour .*Received: temperature=0\.7$"):
        export_run(run_dir, tmp_path / "exported")
    assert not (tmp_path / "exported").exists()
