"""The device script for known-gaps 219 (a) (benchmarks/device/titan_sdpa_backend.py): its CPU smoke run prints the
environment line, then one line a K / V form of the call with each backend's verdict and, under torchtitan's backend
list, the SDPA op the profiler saw (the math path on a CPU) and its times."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "titan_sdpa_backend.py"


def test_tiny_run_prints_the_environment_the_verdicts_and_the_op_it_ran():
    head, *rows = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and head["machine"] and head["torch"]
    assert [r["enable_gqa"] for r in rows] == [True, False]  # K / V at the KV heads' width, then repeat_kv'd
    for r in rows:
        assert set(r["can_use"]) == {"cudnn", "flash", "efficient"}
        assert not any(v["ok"] for v in r["can_use"].values())  # no fused backend on a CPU
        for run in (r["titan_eager"], r["titan_compiled"]):
            assert "aten::_scaled_dot_product_attention_math" in run["ops"]
            assert run["fwd_ms"] > 0 and run["bwd_ms"] >= 0  # the backward is fwd + bwd less fwd: no wall-clock bound
