"""`bench/serve_load.py` and `bench/ct2_server.py`: percentiles, level
summaries, the table, the verdicts of issue 53's targets and the ISA
settings from made-up figures, and the CTranslate2 server's batching and
protocol with a stand-in translation (the benchmark itself is run by hand;
nothing here loads a model)."""

import asyncio
import importlib.util
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module(name):
    sys.path.insert(0, ROOT)
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _module("serve_load")


@pytest.fixture(scope="module")
def ct2_server():
    return _module("ct2_server")


def test_percentile_interpolates_between_ranks(bench):
    values = [0.4, 0.1, 0.3, 0.2, 0.5]
    assert bench.percentile(values, 50) == pytest.approx(0.3)
    assert bench.percentile(values, 0) == pytest.approx(0.1)
    assert bench.percentile(values, 100) == pytest.approx(0.5)
    assert bench.percentile(values, 95) == pytest.approx(0.48)  # numpy's "linear"
    assert bench.percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert bench.percentile([7.0], 99) == 7.0
    assert bench.percentile([], 50) is None


def test_requests_per_client_and_line_order(bench):
    assert bench.requests_per_client(1, 32, 128) == 128
    assert bench.requests_per_client(16, 32, 128) == 32
    assert bench.requests_per_client(3, 4, 128) == 43
    # One round of C clients sends C consecutive lines; all lines come round.
    sent = [bench.line_index(c, j, 4, 10) for j in range(3) for c in range(4)]
    assert sent[:4] == [0, 1, 2, 3] and sent[4:8] == [4, 5, 6, 7]
    assert set(sent) == set(range(10))


def test_summarize_counts_errors_and_percentiles_of_answers(bench):
    records = [(0, 0.0, 0.010, 200, "a"), (1, 0.0, 0.020, 200, "b"),
               (2, 0.0, 0.030, 200, "c"), (3, 0.0, 0.040, 503, None),
               (4, 0.0, 0.500, "timeout", None), (5, 0.0, 0.050, 200, None)]
    s = bench.summarize(records, seconds=2.0, clients=2, planned=8)
    assert (s["requests"], s["ok"], s["errors"]) == (6, 3, 3)
    assert s["error_kinds"] == {"503": 1, "timeout": 1, "200": 1}
    assert s["sentences_per_s"] == pytest.approx(1.5)
    assert s["p50_ms"] == pytest.approx(20.0)
    assert s["p99_ms"] == pytest.approx(29.8)
    assert s["max_ms"] == pytest.approx(30.0)
    assert s["capped"] is True
    assert bench.summarize(records[:2], 1.0, 1, 2)["capped"] is False
    empty = bench.summarize([], 0.0, 1, 1)
    assert empty["p99_ms"] is None and empty["sentences_per_s"] == 0.0


def test_count_wrong_against_the_reference(bench):
    lines = ["Hi.", "Go.", "Run."]
    reference = {"Hi.": "Hallo.", "Go.": "Geh.", "Run.": ""}
    wrong, examples = bench.count_wrong([(0, "Hallo."), (1, "Gehen."), (2, ""), (1, "Geh.")],
                                        lines, reference)
    assert wrong == 1 and examples == [("Go.", "Geh.", "Gehen.")]


def _level(sps, p99, errors=0, wrong=0, requests=100, capped=False, clients=16):
    return {"clients": clients, "requests": requests, "ok": requests - errors, "errors": errors,
            "sentences_per_s": sps, "p50_ms": p99 / 2, "p95_ms": p99 * 0.9, "p99_ms": p99,
            "capped": capped, "wrong": wrong, "server_cpu_s": 2.0, "client_cpu_percent": 3.0,
            "others_cpu_percent": 12.0}


def test_verdicts_met_missed_and_not_measured(bench):
    levels = {("ours", 16): _level(60.0, 400.0), ("ct2", 16): _level(50.0, 500.0),
              ("ours_nobatch", 16): _level(25.0, 2000.0), ("ours", 1): _level(8.0, 150.0),
              ("ours_nobatch", 1): _level(9.0, 120.0, wrong=1)}
    got = {target: (figure, met) for target, figure, met in bench.verdicts(levels)}
    assert got == {
        "ours sentences/s at 16 clients >= 1.0x CTranslate2": ("1.20x (60.0 vs 50.0)", True),
        "ours sentences/s at 16 clients >= 3.0x ours with batching off":
            ("2.40x (60.0 vs 25.0)", False),
        "ours p99 at 16 clients <= CTranslate2's p99": ("400 ms vs 500 ms", True),
        "ours: no errors, every answer the reference's": ("0 errors, 0 wrong of 200", True),
        "ours, batching off: no errors, every answer the reference's":
            ("0 errors, 1 wrong of 200", False),
    }
    only_ours = {("ours", 16): dict(_level(60.0, 400.0, errors=2), wrong=None)}
    got = bench.verdicts(only_ours)
    assert [met for _, _, met in got] == [None, None, None, None]
    assert got[-1][1] == "2 errors, not checked of 100"
    assert [row[2] for row in bench.verdict_rows(got)] == ["n/a"] * 4


def test_table_rows_compare_with_ctranslate2_at_the_same_clients(bench):
    levels = {("ours", 16): _level(60.0, 400.0), ("ct2", 16): _level(50.0, 500.0),
              ("ours", 64): _level(70.0, 900.0, errors=4, capped=True, clients=64)}
    rows = bench.table_rows(levels, ["ours", "ours_nobatch", "ct2"], [16, 64])
    assert len(rows) == 3 and all(len(r) == len(bench.TABLE_HEADER) for r in rows)
    ours16, ours64, ct2 = rows
    assert ours16[:10] == ["ours", 16, "100/100", "60.0", "200", "360", "400", 0, "0", "1.20x"]
    assert ours16[10:] == ["20", "3.0", "12"]  # 2 s of server CPU / 100 answers
    assert ours64[2] == "96/100 (capped)" and ours64[9] == "-"
    assert ct2[0] == "CTranslate2" and ct2[9] == "1.00x"
    table = bench.format_table(rows, bench.TABLE_HEADER)
    assert table.splitlines()[0].startswith("| server")


def test_isa_detection_and_environment(bench):
    assert bench.cpu_isa(["sse4_2", "avx2", "avx512f", "avx512bw"]) == "AVX-512"
    assert bench.cpu_isa(["sse4_2", "avx", "avx2", "fma"]) == "AVX2"
    assert bench.cpu_isa(["sse4_2"]) == "below AVX2"
    assert bench.isa_env("native") == {}
    assert bench.isa_env("avx2") == {"ONEDNN_MAX_CPU_ISA": "AVX2",
                                     "XLA_FLAGS": "--xla_cpu_max_isa=AVX2",
                                     "CT2_FORCE_CPU_ISA": "AVX2"}
    env = bench.isa_env("avx2", {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"})
    assert env["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false --xla_cpu_max_isa=AVX2"
    assert bench.AVX512_SIGNS.search("vaddps %zmm1,%zmm2,%zmm3")
    assert bench.AVX512_SIGNS.search("vmovups %ymm17,(%rax)")
    assert not bench.AVX512_SIGNS.search("vfmadd231ps %ymm1,%ymm2,%ymm15")
    assert bench.isa_env("avx2", no_ynn=True)["XLA_FLAGS"] == (
        "--xla_cpu_max_isa=AVX2 --xla_cpu_experimental_ynn_fusion_type=")
    checks = {"xla_jax_avx512": 0, "xla_jax_ynn": True, "xla_tensorflow_avx512": 52,
              "onednn": "Intel AVX2", "ct2": "AVX2", "ct2_onednn": "Intel AVX2"}
    assert bench.isa_used("ours", "jax", checks) == (
        "XLA code AVX2 or less, YNNPACK dots AVX-512 (CPUID)")
    assert bench.isa_used("ours", "tensorflow", checks, "AVX2") == (
        "XLA code AVX-512, Eigen dots, oneDNN Intel AVX2")
    assert bench.isa_used("ct2", "ctranslate2", checks) == (
        "CTranslate2 kernels AVX2, its oneDNN GEMM Intel AVX2")


def test_backend_of_a_server_from_its_libraries(bench):
    assert bench.backend_of("/x/jaxlib/libjax_common.so\n/x/tensorflow/libtensorflow_cc.so.2"
                            ) == "jax"
    assert bench.backend_of("/x/tensorflow/libtensorflow_framework.so.2") == "tensorflow"
    assert bench.backend_of("/x/libc.so.6") is None


def test_eos_bias_is_between_gaps_and_hits_the_mean(bench):
    margins = [[1.0, 0.5, 0.2], [2.0, 1.5, 0.1]]
    bias, mean = bench.eos_bias_for(margins, 2.0, steps=3)
    assert mean == 2.0 and bias not in {g for row in margins for g in row}
    assert bench.eos_bias_for(margins, 3.0, steps=3)[1] == 3.0  # below every gap
    assert bench.eos_bias_for(margins, 1.0, steps=3)[1] == 1.0  # above every gap


def test_choose_lines_spreads_over_lengths_deterministically(bench):
    english = [f"s{i}" for i in range(101)]
    picked = bench.choose_lines(english, 11, seed=0)
    assert sorted(picked, key=lambda s: int(s[1:])) == [f"s{i}" for i in range(0, 101, 10)]
    assert picked == bench.choose_lines(english, 11, seed=0)
    assert picked != bench.choose_lines(english, 11, seed=1)
    assert len(bench.choose_lines(english, 500, seed=0)) == 101


def test_parse_args_defaults_and_quick(bench):
    args = bench.parse_args([])
    assert args.clients == [1, 4, 16, 64] and args.requests_per_client == 32
    assert args.vocab == bench.OPUS_MT_EN_DE_VOCAB and args.max_length == 64
    assert args.servers == ["ours", "ours_fixed", "ours_nobatch", "ct2"]
    fixed = bench.server_command(args, "ours_fixed", 8600, "run", "checkpoint", "sub")
    ours = bench.server_command(args, "ours", 8600, "run", "checkpoint", "sub")
    assert fixed[-2:] == ["--continuous_batching", "false"] and fixed[:-2] == ours
    quick = bench.parse_args(["--quick", "--ct2-int8"])
    assert quick.clients == [1, 4] and quick.vocab == 0 and quick.size == bench.QUICK
    assert quick.servers[-1] == "ct2_int8"
    with pytest.raises(SystemExit):
        bench.parse_args(["--servers", "ours,onnx"])


def test_ct2_decoding_options_follow_the_run(ct2_server):
    greedy = ct2_server.decoding_options({"strategy": "greedy", "num_beams": 1,
                                          "target_length": 63, "length_penalty": 1.0})
    assert greedy == {"beam_size": 1, "max_decoding_length": 63, "length_penalty": 1.0,
                      "return_end_token": False, "min_decoding_length": 0}
    beam = ct2_server.decoding_options({"strategy": "beam", "num_beams": 4, "target_length": 20,
                                        "length_penalty": 0.6, "min_length": 3})
    assert beam["beam_size"] == 4 and beam["min_decoding_length"] == 2
    assert ct2_server.decoding_options(None, beam_size=2)["beam_size"] == 2


def test_ct2_batcher_gathers_lines_in_order():
    ct2_server = _module("ct2_server")
    calls = []

    def translate(lines):
        calls.append(list(lines))
        return [line.upper() for line in lines]

    async def scenario():
        batcher = ct2_server.Batcher(translate, max_batch_size=3, timeout_s=0.05, max_queue=10)
        task = asyncio.create_task(batcher.run())
        answers = await asyncio.gather(batcher.submit(["a", "b"]), batcher.submit(["c"]),
                                       batcher.submit(["d"]))
        assert not batcher.room_for(11) and batcher.room_for(10)
        task.cancel()
        batcher.executor.shutdown()
        return answers

    assert asyncio.run(scenario()) == [["A", "B"], ["C"], ["D"]]
    assert calls == [["a", "b", "c"], ["d"]]  # at most 3 lines a batch, in arrival order


def test_ct2_server_protocol_with_a_stand_in_translation():
    pytest.importorskip("aiohttp")
    from aiohttp.test_utils import TestClient, TestServer

    ct2_server = _module("ct2_server")

    async def scenario():
        batcher = ct2_server.Batcher(lambda lines: [f"<{x}>" for x in lines], 8, 0.001, 4)
        state = {"draining": False, "in_flight": 0}
        app = ct2_server.make_app("marian", batcher, 200, state)
        task = asyncio.create_task(batcher.run())
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            got = {}
            response = await client.get("/v1/models/marian")
            got["status"] = (response.status, (await response.json())["model_version_status"][0]
                             ["state"])
            response = await client.post("/v1/models/marian:predict",
                                         json={"instances": ["a", "b"]})
            got["predict"] = (response.status, await response.json())
            for name, path, body in [
                    ("other", "/v1/models/other:predict", b'{"instances": ["a"]}'),
                    ("not json", "/v1/models/marian:predict", b"{"),
                    ("not strings", "/v1/models/marian:predict", b'{"instances": [1]}'),
                    ("large", "/v1/models/marian:predict",
                     json.dumps({"instances": ["x" * 300]}).encode()),
                    ("queue", "/v1/models/marian:predict",
                     json.dumps({"instances": ["a"] * 5}).encode())]:
                response = await client.post(path, data=body)
                got[name] = (response.status, "error" in await response.json())
            state["draining"] = True
            response = await client.post("/v1/models/marian:predict", json={"instances": ["a"]})
            got["draining"] = response.status
        task.cancel()
        batcher.executor.shutdown()
        return got

    got = asyncio.run(scenario())
    assert got["status"] == (200, "AVAILABLE")
    assert got["predict"] == (200, {"predictions": ["<a>", "<b>"]})
    assert got["other"] == (404, True) and got["not json"] == (400, True)
    assert got["not strings"] == (400, True) and got["large"] == (413, True)
    assert got["queue"] == (503, True) and got["draining"] == 503
