"""`bench/serving.py`: the verdicts of issue 36's targets from made-up
results (the benchmark itself is run by hand)."""

import importlib.util
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module():
    sys.path.insert(0, ROOT)
    spec = importlib.util.spec_from_file_location("serving", os.path.join(ROOT, "bench",
                                                                         "serving.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _result(engine, precision, case, tokens_per_s):
    return {"engine": engine, "precision": precision, "case": case,
            "tokens_per_s": tokens_per_s}


def test_each_target_is_met_or_missed_by_its_figure(tmp_path):
    serving = _module()
    rows = [_result("ctranslate2", "float32", "greedy b1", 50.0),
            _result("ctranslate2", "int8", "greedy b1", 100.0),
            _result("transformers", "float32", "greedy b1", 40.0),
            _result("ours_tensorflow", "float32", "greedy b1", 60.0),  # 1.2x: met
            _result("ours_tensorflow", "int8", "greedy b1", 79.0)]    # 0.79x: missed
    with open(tmp_path / "result-ours_tensorflow.json", "w") as file:
        json.dump({"results": rows[3:]}, file)
    with open(tmp_path / "result-ctranslate2.json", "w") as file:
        json.dump({"results": rows[:2]}, file)
    with open(tmp_path / "result-transformers.json", "w") as file:
        json.dump({"results": rows[2:3]}, file)
    results = serving.load_results(str(tmp_path))
    assert len(results) == 5
    tokens = np.array([[5, 6, 0], [7, 8, 0]])
    np.save(tmp_path / "tokens-ctranslate2-float32-greedy_b1.npy", tokens)
    np.save(tmp_path / "tokens-ours_tensorflow-float32-greedy_b1.npy", tokens * [[1], [2]])
    agreement = {("ours_tensorflow", "greedy b1"): serving.token_agreement(
        str(tmp_path), "ours_tensorflow", "greedy b1")}
    assert serving.token_agreement(str(tmp_path), "ours_jax", "greedy b1") is None
    got = {target: (figure, met) for target, figure, met in serving.verdicts(
        results, agreement, {"jax": [9.0, 2.5, 2.7], "tensorflow": [12.0, 6.0, 5.5]})}
    assert got == {
        "ours TF (XLA) greedy b1 vs CTranslate2 float32 >= 1.0x": ("1.20x", True),
        "ours TF (XLA) int8 greedy b1 vs CTranslate2 int8 >= 0.8x": ("0.79x", False),
        "ours TF (XLA) greedy b1 ahead of transformers": ("1.50x", True),
        "ours TF (XLA) int8 greedy b1 ahead of transformers": ("1.98x", True),
        "ours TF (XLA) greedy b1: CTranslate2 float32's tokens": ("50% of rows", False),
        "keras-attention generate, later calls (jax) <= 5 s": ("2.60 s", True),
        "keras-attention generate, later calls (tensorflow) <= 5 s": ("5.75 s", False),
    }


def test_the_instruction_set_is_printed_and_avx2_limits_every_engine(capsys):
    import pytest

    serving = _module()
    args = serving.parse_args(["--isa", "avx2", "--no-ynn"])
    env = serving.isa_env(args.isa, {}, args.no_ynn)
    assert env["ONEDNN_MAX_CPU_ISA"] == env["CT2_FORCE_CPU_ISA"] == "AVX2"
    assert "--xla_cpu_max_isa=AVX2" in env["XLA_FLAGS"]
    line = serving.isa_line(args.isa, env)
    assert line.startswith("CPU: ") and "--isa avx2, limits: CT2_FORCE_CPU_ISA=AVX2" in line
    assert serving.isa_line("native", {}).endswith("--isa native, limits: none")
    with pytest.raises(SystemExit):
        serving.parse_args(["--no-ynn"])
    assert "--no-ynn applies with --isa avx2 only" in capsys.readouterr().err
