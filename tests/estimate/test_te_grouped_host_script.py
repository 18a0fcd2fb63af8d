"""The device script for known-gaps 260 (c) (benchmarks/device/te_grouped_host.py): its CPU smoke run prints the
environment line, one line a local-expert count with the synced wall, GPU and exposed times at a fixed routed-token
count, and a closing line with the intercept and slope of the exposed time over the local experts."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "te_grouped_host.py"


def test_tiny_run_prints_one_line_a_local_expert_count_and_the_fit():
    head, *rows, last = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and "NVTE_GROUPED_LINEAR_USE_FUSED_GROUPED_GEMM" in head["env"]
    assert [r["local_experts"] for r in rows] == [2, 4]
    assert {r["path"] for r in rows} == {"torch.mm loop"}  # TE is not used off a GPU
    assert rows[0]["rows_per_expert"] == 2 * rows[1]["rows_per_expert"]  # the routed rows fixed, split finer
    assert all(r["wall_ms"] > 0 and r["gpu_ms"] > 0 and r["exposed_ms"] >= 0 for r in rows)
    assert set(last) == {"shape", "exposed_ms_intercept", "exposed_ms_per_local_expert"}
