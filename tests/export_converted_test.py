"""`export_run` of a converted run folder (`keras-attention export`): the
reloaded SavedModel's serving signature answers strings with the strings of
`transformers`' `generate` + `batch_decode(skip_special_tokens=True)`, with
the checkpoint's generation config (beam 4, exported by the CLI) and greedy.

The run folders are convert_test.py's (`converted_run`, made once per test
run), with `transformers`' strings. A beam width other than the
checkpoint's reaches `export_run` from the CLI (tests/cli_test.py) and is
honoured by it (tests/export_test.py)."""

import pytest
import tensorflow as tf

from keras_attention import cli
from keras_attention.export import SIGNATURE_INPUT, SIGNATURE_OUTPUT, export_run
from tests.runs.convert_test import LANGUAGE_FAMILIES, TEXTS, converted_run

pytestmark = pytest.mark.backend_independent("a TensorFlow SavedModel: exporting needs the "
                                              "TensorFlow backend")


@pytest.fixture(scope="module", params=["marian", "t5"])
def converted(request, tmp_path_factory):
    """`(run folder, strings)` (`converted_run`): the checkpoint decodes with
    beam 4 and a length penalty; `strings["beam"]` and `strings["greedy"]`
    are `transformers`' for `TEXTS`."""
    _, run_dir, strings = converted_run(tmp_path_factory, request.param)
    return run_dir, strings


def _serving(export_dir):
    """The reloaded SavedModel's serving signature as `texts -> strings`."""
    signature = tf.saved_model.load(str(export_dir)).signatures["serving_default"]

    def serve(texts):
        outputs = signature(**{SIGNATURE_INPUT: tf.constant(texts)})
        return [text.decode("utf-8") for text in outputs[SIGNATURE_OUTPUT].numpy()]

    return serve


@pytest.mark.large
def test_exports_serve_the_strings_of_transformers(converted, tmp_path):
    """`keras-attention export` with the checkpoint's settings (beam 4 and its
    length penalty) and `export_run(strategy="greedy")`: each reloaded
    SavedModel answers `transformers`' strings, greedy at two batch sizes."""
    run_dir, strings = converted
    cli.main(["export", run_dir, str(tmp_path / "beam")])
    assert _serving(tmp_path / "beam")(TEXTS) == strings["beam"]
    greedy = _serving(export_run(run_dir, tmp_path / "greedy", strategy="greedy"))
    expected = strings["greedy"]
    assert greedy(TEXTS) == expected
    assert any(expected) and len(set(expected)) > 1  # the strings depend on the source
    assert greedy([TEXTS[1]]) == expected[1:2]  # another batch size


@pytest.mark.large
def test_a_setting_the_graph_cannot_honour_is_refused_naming_it(converted, tmp_path,
                                                                monkeypatch):
    from keras_attention.runs import GenerationConfig

    run_dir, _ = converted
    mapping = GenerationConfig.generate_kwargs
    monkeypatch.setattr(GenerationConfig, "generate_kwargs",
                        lambda self: {**mapping(self), "temperature": 0.7})
    with pytest.raises(ValueError, match=r"cannot honour .*Received: temperature=0\.7$"):
        export_run(run_dir, tmp_path / "exported")
    assert not (tmp_path / "exported").exists()


@pytest.mark.large
@pytest.mark.parametrize("family,layout", [
    # An older Pegasus folder serves through the same graph as a saved
    # tokenizer.json (graph_tokenizers_test): its run is not exported again here.
    case for case in LANGUAGE_FAMILIES if case != ("pegasus", "spiece.model")])
def test_tokenizer_json_families_export_the_strings_of_transformers(family, layout, tmp_path,
                                                                    tmp_path_factory):
    """mBART-50, Pegasus and NLLB run folders (`tokenizer.json` read as
    TensorFlow ops) and M2M100's own files; the target language as the
    forced first token: `keras-attention export` with the checkpoint's beam 4
    serves `transformers`' strings."""
    _, run_dir, strings = converted_run(tmp_path_factory, family, layout=layout)
    cli.main(["export", run_dir, str(tmp_path / "beam")])
    assert _serving(tmp_path / "beam")(TEXTS) == strings["beam"]
    assert len(set(strings["beam"])) > 1  # the strings depend on the source
