"""`bench/pretrained_decode.py --quick`: a tiny Marian checkpoint decoded by
ours (TensorFlow, XLA), `transformers` and CTranslate2 with the same
settings: every engine returns the fixed number of tokens, the greedy tokens
agree, and the table has a row per engine and case."""

import importlib.util
import os
import subprocess
import sys

import pytest

pytest.importorskip("ctranslate2", reason="the bench extra (ctranslate2) is not installed")
pytest.importorskip("transformers", reason="the hf extra (transformers) is not installed")
pytest.importorskip("torch", reason="torch is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "pretrained_decode.py")


def _module():
    spec = importlib.util.spec_from_file_location("pretrained_decode", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cases_and_settings_force_the_length():
    bench = _module()
    args = bench.parse_args(["--batches", "1,16", "--new-tokens", "64",
                             "--beam-batch-tokens", "32"])
    cases = {c["name"]: c for c in bench.cases(args)}
    assert sorted(cases) == ["beam4 b1", "beam4 b16", "greedy b1", "greedy b16"]
    assert cases["beam4 b16"]["new_tokens"] == 32 and cases["greedy b16"]["new_tokens"] == 64
    config = bench.generation_config({"start": 9, "end": 0, "pad": 9}, cases["beam4 b1"])
    assert config["min_length"] == config["max_length"] == 65  # both count the start token
    assert config["num_beams"] == 4 and config["bad_words_ids"] == [[9]]
    assert config["forced_eos_token_id"] is None


def test_parse_args_refuses_an_unknown_engine(capsys):
    with pytest.raises(SystemExit):
        _module().parse_args(["--engines", "ours_tensorflow,onnx"])
    assert "Received: engines='onnx'" in capsys.readouterr().err


@pytest.mark.tf_only("runs each engine in its own process; once is enough")
def test_quick_run_agrees_with_transformers_and_ctranslate2(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.run(
        [sys.executable, SCRIPT, "--quick", "--batches", "2", "--no-int8",
         "--engines", "ctranslate2,transformers,ours_tensorflow",
         "--workdir", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    out = process.stdout
    for case in ("greedy b2", "beam4 b2"):
        for engine in ("ours TF (XLA)", "transformers (torch)", "CTranslate2"):
            assert any(case in line and f"| {engine} " in line for line in out.splitlines()), (
                case, engine, out[-3000:])
    assert "WARNING" not in out  # every row returned exactly 8 tokens
    assert "ctranslate2 float32: greedy b2: 100.0% / 100.0%" in out
    assert "ours_tensorflow float32: greedy b2: 100.0% / 100.0%" in out
    assert (tmp_path / "ct2-float32" / "model.bin").is_file()
