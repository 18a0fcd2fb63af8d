"""The device script for known-gaps 252 (b) (benchmarks/device/fp8_expert_gemms.py): its CPU smoke run prints one JSON
line a case, linear and GEMM with the bf16 time (FP8 and Transformer Engine need a GPU), then a sustained run; the full
list is Grok-1's routed-expert GEMMs at the rows' layouts."""

from __future__ import annotations

import sys

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "fp8_expert_gemms.py"


def test_tiny_run_prints_a_line_a_gemm_then_the_sustained_run():
    rows = tiny_lines(SCRIPT)
    gemms = [r for r in rows if "gemm" in r]
    assert len(gemms) == 3 * 2 * 3  # cases x linears x (fprop, dgrad, wgrad)
    for r in gemms:
        assert r["fp8_ms"] is None and r["bf16_ms"] >= 0.0  # no FP8 GEMM on a CPU
    assert [r["sustained"] for r in rows if "sustained" in r] == ["bf16"]


def test_the_shapes_are_grok_1_s_expert_gemms():
    """hidden 6,144, expert FFN 32,768 (gate + up fused), split over the expert TP; dgrad swaps K and N, wgrad puts the
    rows on the contraction axis; the cases are the benchmark's (fp8_gemm_shapes.GROK_EXPERTS)."""
    sys.path.insert(0, str(SCRIPT.parent))
    sys.path.insert(0, str(SCRIPT.parents[1]))
    import fp8_expert_gemms as fe  # not --tiny here: the full shapes

    import fp8_gemm_shapes as fg

    assert [(rows, etp) for _, rows, etp in fe.CASES] == [(rows, etp) for _, rows, etp, _ in fg.GROK_EXPERTS]
    assert fe.linears(2048, 4) == [("up", 6144, 16384), ("down", 8192, 6144)]
    assert fe.passes(2048, 6144, 16384) == [("fprop", 2048, 6144, 16384), ("dgrad", 2048, 16384, 6144),
                                            ("wgrad", 6144, 2048, 16384)]
    # the same (M, K, N) the benchmark's model times (compute.linear_gemms derives dgrad and wgrad likewise)
    assert [(m, k, n) for m, k, n in fg.expert_gemms(2048, 4)] == [(2048.0, k, n) for _, k, n in fe.linears(2048, 4)]
