"""The device script for known-gaps 323 (c) (benchmarks/device/dp_gather_rate.py): its CPU smoke run prints every op at
each buffer size alone and beside a GEMM, and the GEMM's rate alone and beside a gather; every figure positive."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

torch = pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "dp_gather_rate.py"


def test_tiny_run_prints_each_op_alone_and_beside_a_gemm():
    rows = tiny_lines(SCRIPT)
    colls = [r for r in rows if r["op"] != "gemm"]
    assert [(r["op"], r["mode"]) for r in colls] == [(op, mode) for op in ("all_gather", "reduce_scatter", "all_reduce")
                                                     for mode in ("alone", "beside_gemm")]
    assert all(r["ranks"] == 2 and r["device"] == "cpu" and r["busbw_gb_s"] > 0 and r["ms"] > 0 for r in colls)
    gemms = [r for r in rows if r["op"] == "gemm"]
    assert [r["mode"] for r in gemms] == ["alone", "beside_all_gather"] and all(r["tflops"] > 0 for r in gemms)
