"""TensorFlow Serving's REST protocol (KServe v1 speaks the same), as far as
a strings-to-strings model needs it: the paths, the request bodies and the
answers. Plain functions, no HTTP: `keras_attention.server.app` calls them.

Paths (`NAME` is the served model's name; `/versions/1` may follow it, the
one version there is):

- `GET /v1/models/NAME`: the model's status, `{"model_version_status":
  [{"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK",
  "error_message": ""}}]}`.
- `GET /v1/models/NAME/metadata`: its signature (`inputs` -> `outputs`,
  strings), as `keras-attention export` writes it.
- `POST /v1/models/NAME:predict`: the row form `{"instances": ["line",
  ...]}` answered `{"predictions": ["output", ...]}`, or the columnar form
  `{"inputs": ["line", ...]}` answered `{"outputs": [...]}`; an instance may
  also be `{"inputs": "line"}` (the signature's input by name), and
  `"signature_name": "serving_default"` may be given.

Every error is `{"error": "one line"}` with its status code.
"""

import dataclasses
import json
import re

__all__ = [
    "ProtocolError",
    "Route",
    "SIGNATURE_INPUT",
    "SIGNATURE_NAME",
    "SIGNATURE_OUTPUT",
    "error_body",
    "metadata_body",
    "parse_predict_body",
    "parse_route",
    "predict_body",
    "status_body",
]

#: The serving signature of `keras-attention export`'s SavedModel, which the
#: same clients reach under TensorFlow Serving (`keras_attention.export`'s
#: names, repeated here so that serving imports no TensorFlow; a test checks
#: that they agree).
SIGNATURE_NAME = "serving_default"
SIGNATURE_INPUT = "inputs"
SIGNATURE_OUTPUT = "outputs"
VERSION = "1"

_ROUTE = re.compile(
    r"^(?P<name>[^/:]+)"
    r"(?:/versions/(?P<version>[^/:]+)|/labels/(?P<label>[^/:]+))?"
    r"(?P<action>/metadata|:[A-Za-z]+)?$"
)


class ProtocolError(Exception):
    """A request the protocol refuses: its HTTP `status` and one-line message."""

    def __init__(self, status, message):
        self.status = status
        self.message = " ".join(str(message).split())
        super().__init__(self.message)


@dataclasses.dataclass(frozen=True)
class Route:
    """What a `/v1/models/...` path asks: `"status"`, `"metadata"` or `"predict"`."""

    action: str


def parse_route(path_tail, method, model_name):
    """The `Route` of the path after `/v1/models/`.

    Raises:
        ProtocolError: 404 for another model, version or label, or a path the
            protocol does not have; 405 for the wrong method.
    """
    match = _ROUTE.match(path_tail)
    if match is None:
        raise ProtocolError(404, f"no such path: /v1/models/{path_tail}")
    if match["name"] != model_name:
        raise ProtocolError(404, f"no model {match['name']!r} here: this server serves "
                                 f"{model_name!r}")
    if match["label"] is not None:
        raise ProtocolError(404, f"model {model_name!r} has no label {match['label']!r} "
                                 f"(its one version is {VERSION})")
    if match["version"] not in (None, VERSION):
        raise ProtocolError(404, f"model {model_name!r} has no version "
                                 f"{match['version']!r} (its one version is {VERSION})")
    action = {None: "status", "/metadata": "metadata", ":predict": "predict"}.get(
        match["action"])
    if action is None:
        raise ProtocolError(404, f"no such path: /v1/models/{path_tail} (this model answers "
                                 f"`:predict`)")
    expected = "POST" if action == "predict" else "GET"
    if method != expected:
        raise ProtocolError(405, f"{method} is not allowed on /v1/models/{path_tail}: use "
                                 f"{expected}")
    return Route(action)


def parse_predict_body(body):
    """The input lines of a predict request's body (bytes) and the key its
    answer goes under (`"predictions"` or `"outputs"`).

    Raises:
        ProtocolError: 400 naming what is wrong: not JSON, not an object, no
            `instances` or `inputs` (or both), an empty list, an instance
            that is not a string.
    """
    try:
        request = json.loads(body)
    except (UnicodeDecodeError, ValueError) as error:
        raise ProtocolError(400, f"the body is not JSON ({error}). Received: "
                                 f"{_excerpt(body)}") from None
    if not isinstance(request, dict):
        raise ProtocolError(400, f"the body must be a JSON object with `instances` or "
                                 f"`inputs`. Received: {_excerpt(body)}")
    extra = sorted(set(request) - {"instances", "inputs", "signature_name"})
    if extra:
        raise ProtocolError(400, f"unknown key {extra[0]!r}: a predict request has "
                                 f"`instances` or `inputs` (and `signature_name`)")
    signature = request.get("signature_name", SIGNATURE_NAME)
    if signature != SIGNATURE_NAME:
        raise ProtocolError(400, f"`signature_name` must be {SIGNATURE_NAME!r}. Received: "
                                 f"{signature!r}")
    if ("instances" in request) == ("inputs" in request):
        raise ProtocolError(400, "the body must have exactly one of `instances` (row form) "
                                 "and `inputs` (columnar form). Received keys: "
                                 f"{sorted(request)}")
    if "instances" in request:
        return _instances(request["instances"]), "predictions"
    return _inputs(request["inputs"]), "outputs"


def _instances(instances):
    if not isinstance(instances, list) or not instances:
        raise ProtocolError(400, "`instances` must be a non-empty list of strings. Received: "
                                 f"{_excerpt(instances)}")
    lines = []
    for index, instance in enumerate(instances):
        if isinstance(instance, dict) and set(instance) == {SIGNATURE_INPUT}:
            instance = instance[SIGNATURE_INPUT]
        if not isinstance(instance, str):
            raise ProtocolError(400, f"`instances[{index}]` must be a string (or "
                                     f'{{"{SIGNATURE_INPUT}": "..."}}). Received: '
                                     f"{_excerpt(instance)}")
        lines.append(instance)
    return lines


def _inputs(inputs):
    if isinstance(inputs, dict) and set(inputs) == {SIGNATURE_INPUT}:
        inputs = inputs[SIGNATURE_INPUT]
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs:
        raise ProtocolError(400, "`inputs` must be a string or a non-empty list of strings. "
                                 f"Received: {_excerpt(inputs)}")
    for index, line in enumerate(inputs):
        if not isinstance(line, str):
            raise ProtocolError(400, f"`inputs[{index}]` must be a string. Received: "
                                     f"{_excerpt(line)}")
    return list(inputs)


def _excerpt(value, limit=80):
    """A short, one-line rendering of a received value."""
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value[:limit + 1]).decode("utf-8", "replace")
    else:
        text = json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def predict_body(key, outputs):
    """The JSON answer of a predict request (bytes)."""
    return _json({key: list(outputs)})


def status_body():
    """The JSON answer of `GET /v1/models/NAME` (bytes): available."""
    return _json({"model_version_status": [{
        "version": VERSION, "state": "AVAILABLE",
        "status": {"error_code": "OK", "error_message": ""}}]})


def metadata_body(model_name):
    """The JSON answer of `GET /v1/models/NAME/metadata` (bytes): the one
    signature, strings `(-1,)` in, strings `(-1,)` out."""
    def tensor(name):
        return {"dtype": "DT_STRING", "tensor_shape": {"dim": [{"size": "-1", "name": ""}],
                                                       "unknown_rank": False}, "name": name}

    return _json({"model_spec": {"name": model_name, "signature_name": "", "version": VERSION},
                  "metadata": {"signature_def": {"signature_def": {SIGNATURE_NAME: {
                      "inputs": {SIGNATURE_INPUT: tensor(f"{SIGNATURE_NAME}_{SIGNATURE_INPUT}:0")},
                      "outputs": {SIGNATURE_OUTPUT: tensor(f"{SIGNATURE_OUTPUT}:0")},
                      "method_name": "tensorflow/serving/predict"}}}}})


def error_body(message):
    """`{"error": "one line"}` (bytes)."""
    return _json({"error": " ".join(str(message).split())})


def _json(value):
    return json.dumps(value, ensure_ascii=False).encode("utf-8")
