"""`keras_attention.runtime`: the execution defaults and their detection."""

import pytest

from keras_attention import runtime


def test_auto_on_a_cpu_follows_native_bf16_and_never_compiles():
    plain = runtime.fast_defaults(gpu=False, native_bf16=False)
    assert plain["dtype_policy"] == "float32" and plain["jit_compile"] is False
    amx = runtime.fast_defaults(gpu=False, native_bf16=True)
    assert amx["dtype_policy"] == "mixed_bfloat16" and amx["jit_compile"] is False
    assert "graph mode" in amx["reason"]


def test_auto_on_a_gpu_uses_xla_and_bf16():
    gpu = runtime.fast_defaults(gpu=True)
    assert gpu == {"dtype_policy": "mixed_bfloat16", "jit_compile": True, "device": "gpu",
                   "reason": "bf16 is native here; XLA on GPU"}


def test_explicit_settings_override_the_detection():
    chosen = runtime.fast_defaults("float32", False, gpu=True)
    assert chosen["dtype_policy"] == "float32" and chosen["jit_compile"] is False
    assert runtime.fast_defaults("mixed_float16", "true", gpu=False)["jit_compile"] is True


def test_bad_settings_name_the_argument():
    with pytest.raises(ValueError, match=r"precision.*Received: precision='fp8'"):
        runtime.fast_defaults("fp8")
    with pytest.raises(ValueError, match=r"jit_compile.*Received: jit_compile='yes'"):
        runtime.fast_defaults(jit_compile="yes")


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx512f amx_bf16 amx_tile\n\n"
                    "processor : 1\nflags : fpu\n", encoding="utf-8")
    assert runtime.cpu_flags(info) == {"fpu", "avx512f", "amx_bf16", "amx_tile"}
    assert runtime.cpu_has_native_bf16(info)
    info.write_text("flags : fpu avx2\n", encoding="utf-8")
    assert not runtime.cpu_has_native_bf16(info)
    assert runtime.cpu_flags(tmp_path / "missing") == set()


def test_detection_runs_on_this_machine():
    chosen = runtime.fast_defaults()
    assert chosen["device"] in ("cpu", "gpu")
    assert runtime.describe(chosen).startswith("Execution: ")
