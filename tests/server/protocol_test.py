"""TensorFlow Serving's REST protocol: paths, bodies and answers (no HTTP)."""

import json

import pytest

from keras_attention.server import protocol
from keras_attention.server.protocol import ProtocolError, parse_predict_body, parse_route


def _refusal(function, *args):
    with pytest.raises(ProtocolError) as info:
        function(*args)
    assert "\n" not in info.value.message
    return info.value.status, info.value.message


@pytest.mark.parametrize("tail, method, action", [
    ("dates", "GET", "status"),
    ("dates/versions/1", "GET", "status"),
    ("dates/metadata", "GET", "metadata"),
    ("dates/versions/1/metadata", "GET", "metadata"),
    ("dates:predict", "POST", "predict"),
    ("dates/versions/1:predict", "POST", "predict"),
])
def test_routes_of_tensorflow_serving(tail, method, action):
    assert parse_route(tail, method, "dates").action == action


@pytest.mark.parametrize("tail, method, status, words", [
    ("other:predict", "POST", 404, "no model 'other'"),
    ("dates/versions/2:predict", "POST", 404, "no version '2'"),
    ("dates/labels/stable:predict", "POST", 404, "no label 'stable'"),
    ("dates:classify", "POST", 404, "answers `:predict`"),
    ("dates/extra/part", "GET", 404, "no such path"),
    ("dates:predict", "GET", 405, "use POST"),
    ("dates", "POST", 405, "use GET"),
])
def test_other_paths_and_methods_refused(tail, method, status, words):
    got_status, message = _refusal(parse_route, tail, method, "dates")
    assert got_status == status and words in message


@pytest.mark.parametrize("body, lines, key", [
    (b'{"instances": ["a", "b c"]}', ["a", "b c"], "predictions"),
    (b'{"instances": [{"inputs": "a"}, "b"]}', ["a", "b"], "predictions"),
    (b'{"inputs": ["a", ""]}', ["a", ""], "outputs"),
    (b'{"inputs": "a"}', ["a"], "outputs"),
    (b'{"inputs": {"inputs": ["a"]}}', ["a"], "outputs"),
    (b'{"signature_name": "serving_default", "instances": ["a"]}', ["a"], "predictions"),
    ('{"instances": ["März"]}'.encode(), ["März"], "predictions"),
])
def test_row_and_columnar_bodies(body, lines, key):
    assert parse_predict_body(body) == (lines, key)


@pytest.mark.parametrize("body, words", [
    (b"not json", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (b"{}", "exactly one of `instances`"),
    (b'{"instances": ["a"], "inputs": ["b"]}', "exactly one of `instances`"),
    (b'{"instances": []}', "non-empty list"),
    (b'{"instances": "a"}', "non-empty list"),
    (b'{"instances": ["a", 3]}', "`instances[1]` must be a string. Received: 3"
     .replace(". Received", ' (or {"inputs": "..."}). Received')),
    (b'{"instances": [{"text": "a"}]}', "`instances[0]` must be a string"),
    (b'{"inputs": []}', "non-empty list"),
    (b'{"inputs": ["a", null]}', "`inputs[1]` must be a string. Received: null"),
    (b'{"instances": ["a"], "extra": 1}', "unknown key 'extra'"),
    (b'{"instances": ["a"], "signature_name": "other"}', "`signature_name` must be"),
])
def test_bad_bodies_refused_with_400(body, words):
    status, message = _refusal(parse_predict_body, body)
    assert status == 400 and words in message


@pytest.mark.parametrize("body", [b'{"instances": [[' + b"1, " * 5000 + b"1]]}",
                                  b"x" * 5000])
def test_a_long_received_value_is_cut_in_the_message(body):
    status, message = _refusal(parse_predict_body, body)
    assert status == 400 and len(message) < 300 and message.endswith("...")


def test_answers_are_json():
    assert json.loads(protocol.predict_body("predictions", ["x", "ü"])) == {
        "predictions": ["x", "ü"]}
    status = json.loads(protocol.status_body())["model_version_status"][0]
    assert (status["version"], status["state"]) == ("1", "AVAILABLE")
    assert json.loads(protocol.error_body("two\nlines")) == {"error": "two lines"}
    signature = json.loads(protocol.metadata_body("dates"))["metadata"]["signature_def"][
        "signature_def"]["serving_default"]
    assert list(signature["inputs"]) == ["inputs"] and list(signature["outputs"]) == ["outputs"]


@pytest.mark.tf_only("reads the SavedModel export's signature names")
def test_signature_names_are_the_exported_savedmodels():
    from keras_attention import export

    assert (protocol.SIGNATURE_INPUT, protocol.SIGNATURE_OUTPUT) == (
        export.SIGNATURE_INPUT, export.SIGNATURE_OUTPUT)
