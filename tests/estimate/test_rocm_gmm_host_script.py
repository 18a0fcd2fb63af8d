"""The device script for known-gaps 207 (d) (a) and 274 (b) / (c) (benchmarks/device/rocm_gmm_host.py): its CPU smoke
run prints the environment line, one line a path with positive host, synced and device-event times a GEMM over six
GEMMs a local expert, as Megatron-Core's legacy GroupedMLP issues them (fc1 / fc2 forward, dgrad, wgrad), and the
unfused sort_chunks_by_idxs line (three sorts a layer over EP x local-expert chunks)."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "rocm_gmm_host.py"


def test_tiny_run_prints_the_environment_and_positive_times():
    head, *rows = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and "ROCBLAS_STREAM_ORDER_ALLOC" in head["env"]
    assert [r["path"] for r in rows] == ["torch.mm loop (cpu)", "sort_chunks_by_idxs (unfused)"]
    gemm, sort = rows
    assert gemm["host_us_per_gemm"] > 0 and gemm["synced_wall_us_per_gemm"] > 0 and gemm["gpu_us_per_gemm"] > 0
    assert gemm["sync_exposed_us_per_gemm"] >= 0  # the synced wall less the device-event time, never negative
    assert gemm["gemms_per_layer"] == 6 * gemm["experts"]  # fc1 / fc2 forward, dgrad, wgrad an expert
    assert sort["host_us_per_layer"] > 0 and sort["sorts_per_layer"] == 3
    assert sort["chunks"] % sort["experts"] == 0 and sort["chunks"] > sort["experts"]  # EP x local experts

