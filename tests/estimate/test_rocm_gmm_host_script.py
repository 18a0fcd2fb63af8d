"""The device script for known-gaps 207 (d) (a) (benchmarks/device/rocm_gmm_host.py): its CPU smoke run prints the
environment line and one line a path with positive host and synced times a GEMM over six GEMMs a local expert, as
Megatron-Core's legacy GroupedMLP issues them (fc1 / fc2 forward, dgrad, wgrad)."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "rocm_gmm_host.py"


def test_tiny_run_prints_the_environment_and_positive_times():
    head, *rows = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and "ROCBLAS_STREAM_ORDER_ALLOC" in head["env"]
    assert [r["path"] for r in rows] == ["torch.mm loop (cpu)"]
    assert rows[0]["host_us_per_gemm"] > 0 and rows[0]["synced_wall_us_per_gemm"] > 0
    assert rows[0]["gemms_per_layer"] == 6 * rows[0]["experts"]  # fc1 / fc2 forward, dgrad, wgrad an expert

