"""`keras-attention serve` end to end, as a process: quiet until ready, the
protocol over a real run, many clients at once, drain on SIGTERM, one-line
failures. The load run with figures belongs to bench/serve_load.py."""

import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from keras_attention.runs import open_run
from keras_attention.server.running import ServerSettings

LINES = ["March 3, 2021", "1981/10/29", "September 11, 1991", "12.01.1999", "", "May 5"]
READY = re.compile(r"^serving (\S+) at (http://\S+)$")


def _start(run_dir, *options):
    """A `keras-attention serve` process on a free port, once it is ready:
    `(process, url)`; its stderr's first line is the ready line."""
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_attention_launcher", "serve", str(run_dir), "--port", "0",
         *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stderr.readline().strip()
    match = READY.match(line)
    if match is None:
        process.kill()
        pytest.fail(f"no ready line: {line!r} {process.stderr.read()[-2000:]}")
    return process, match[2]


def _stop(process, timeout=60):
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout, stderr


def _request(url, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data),
                                    timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def expected(quick_translation_run):
    """What `keras-attention generate` prints for each of LINES."""
    return dict(zip(LINES, open_run(quick_translation_run[0]).generate(LINES)))


@pytest.fixture(scope="module")
def served(quick_translation_run):
    """`(process, url)` of one server for this module; lines wait up to 2 s
    for a batch of 4 to fill, so that the drain test (the module's last
    test, which stops it) finds requests waiting."""
    process, url = _start(quick_translation_run[0], "--model_name", "dates",
                          "--max_batch_size", "4", "--batch_timeout_ms", "2000")
    yield process, url
    if process.poll() is None:
        status, stdout, stderr = _stop(process)
        assert (status, stdout, stderr) == (0, "", "")  # quiet: nothing but the ready line


@pytest.fixture
def server(served):
    return served[1]


def test_ready_means_available(server):
    status, answer = _request(f"{server}/v1/models/dates")
    assert status == 200 and answer["model_version_status"][0]["state"] == "AVAILABLE"


def test_each_answer_is_what_generate_prints(server, expected):
    status, answer = _request(f"{server}/v1/models/dates:predict", {"instances": LINES})
    assert status == 200 and answer == {"predictions": [expected[line] for line in LINES]}


def test_many_clients_at_once_each_get_their_answer(server, expected):
    def one(i):
        line = LINES[i % len(LINES)]
        return line, _request(f"{server}/v1/models/dates:predict", {"instances": [line]})

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(96)))
    assert [answer for _, answer in results] == [
        (200, {"predictions": [expected[line]]}) for line, _ in results]


def test_a_line_too_long_is_refused_and_the_server_goes_on(server, expected):
    status, answer = _request(f"{server}/v1/models/dates:predict",
                              {"instances": ["May 5", "1 2 3 4 5 6 7 8 9 " * 40]})
    assert status == 400 and "`instances[1]` is longer than the model accepts" in answer["error"]
    assert "limit of 32" in answer["error"]
    assert _request(f"{server}/v1/models/dates:predict", {"instances": ["May 5"]}) == (
        200, {"predictions": [expected["May 5"]]})


def test_metrics_at_tensorflow_servings_path(server):
    _request(f"{server}/v1/models/dates:predict", {"instances": ["May 5"]})
    with urllib.request.urlopen(f"{server}/monitoring/prometheus/metrics") as response:
        text = response.read().decode()
    assert re.search(r'keras_attention_requests_total\{status="200"\} [1-9]', text)


def _wait_for_queued_rows(url, rows, timeout=30):
    """Polls the queue gauge until `rows` rows wait for a batch."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{url}/monitoring/prometheus/metrics") as response:
            if f"keras_attention_queue_rows {rows:.1f}" in response.read().decode():
                return
        time.sleep(0.02)
    pytest.fail(f"{rows} rows never waited in the queue")


def test_a_busy_port_fails_in_one_line_before_loading(quick_translation_run, server):
    port = server.rsplit(":", 1)[1]
    result = subprocess.run(
        [sys.executable, "-m", "keras_attention_launcher", "serve", str(quick_translation_run[0]),
         "--port", port], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "keras-attention: error: Argument `port` names a port in use on 127.0.0.1")
    assert f"Received: port={port}" in result.stderr


@pytest.mark.parametrize("options, batching, warm_up", [
    ([], "continuous batching: on", "warm-up: 1/3 shapes compiled (2 rows of 8 source tokens)"),
    (["--strategy", "beam", "--num_beams", "2"],
     "continuous batching: off (Argument `sampler` must be greedy",
     "warm-up: 1/6 shapes compiled (1 rows of 8 source tokens)"),
])
def test_verbose_shows_the_batching_the_warm_up_and_sigterm_during_it_exits_0(
        quick_translation_run, options, batching, warm_up, tmp_path):
    # An empty compilation cache, so that the warm-up is still compiling when
    # the signal comes.
    environment = dict(os.environ, KERAS_ATTENTION_CACHE_DIR=str(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_attention_launcher", "serve", str(quick_translation_run[0]),
         "--port", "0", "--max_batch_size", "2", "--verbose", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    first, second = process.stderr.readline(), process.stderr.readline()
    status, stdout, rest = _stop(process)
    assert first.startswith(batching)
    assert second.startswith(warm_up)
    assert (status, stdout) == (0, "") and rest.strip().endswith("stopped before serving")


@pytest.mark.parametrize("options, words", [
    (["--port", "70000"], "--port: must be an integer in [0, 65535]"),
    (["--max_batch_size", "0"], "--max_batch_size: must be a positive integer"),
    (["--batch_timeout_ms", "-1"], "--batch_timeout_ms: must be a number >= 0"),
    (["--strategy", "top_k"], "--strategy: invalid choice"),
])
def test_bad_options_fail_in_one_line(options, words, tmp_path, capsys):
    from keras_attention import cli

    with pytest.raises(SystemExit) as info:
        cli.main(["serve", str(tmp_path), *options])
    stderr = capsys.readouterr().err
    assert info.value.code == 2 and words in stderr and stderr.count("\n") == 1


def test_a_missing_run_folder_fails_in_one_line(tmp_path):
    from keras_attention import cli

    with pytest.raises(SystemExit) as info:
        cli.main(["serve", str(tmp_path / "nothing"), "--port", "0"])
    assert str(info.value.code).startswith("keras-attention: error: ")
    assert "nothing" in str(info.value.code) and "\n" not in str(info.value.code)


@pytest.mark.parametrize("settings, words", [
    ({"port": -1}, "port"), ({"port": True}, "port"), ({"host": ""}, "host"),
    ({"model_name": "a/b"}, "model_name"), ({"max_batch_size": 2.5}, "max_batch_size"),
    ({"max_queue": 4, "max_batch_size": 8}, "max_queue"),
    ({"batch_timeout_ms": float("nan")}, "batch_timeout_ms"),
    ({"drain_timeout_s": -1}, "drain_timeout_s"), ({"max_body_bytes": 0}, "max_body_bytes"),
    ({"max_source_tokens": 0}, "max_source_tokens"),
    ({"verbose": 1}, "verbose"),
])
def test_settings_are_checked_at_construction(settings, words):
    with pytest.raises(ValueError, match=f"Argument `{words}`.*Received: "):
        ServerSettings(**settings)


# The module's server stops here: keep this test last.
def test_sigterm_answers_every_request_received_then_exits_0(served, expected):
    process, url = served
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        lines = LINES[:2]
        futures = [pool.submit(_request, f"{url}/v1/models/dates:predict", {"instances": [line]})
                   for line in lines]
        _wait_for_queued_rows(url, 2)  # received, waiting for a batch of 4 (2 s)
        status, stdout, stderr = _stop(process)
        answers = [future.result() for future in futures]
    assert (status, stdout, stderr) == (0, "", "")  # quiet: nothing but the ready line
    assert answers == [(200, {"predictions": [expected[line]]}) for line in lines]
    with pytest.raises(urllib.error.URLError):  # the port is closed
        urllib.request.urlopen(f"{url}/v1/models/dates", timeout=5)
