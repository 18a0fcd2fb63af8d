"""The device script for known-gaps 315 (b) (benchmarks/device/thd_rope_host.py): its CPU smoke run prints the
environment line with the mm figure and the loop's counted kernels a sample, a line a (shape, pack) with the forward and
backward host times of one call, and a line a shape with the per-sample slope, its per-kernel figure and the ratio to
the mm op."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "thd_rope_host.py"


def test_tiny_run_prints_the_mm_figure_each_pack_and_the_slopes():
    head, *lines = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and head["mm_op_us"] > 0
    assert head["kernels_a_sample"] == [13.0, 12.0]  # the counts the estimate charges (perf_constants rope_thd_*)
    packs = [r for r in lines if "samples" in r]
    slopes = [r for r in lines if "samples" not in r]
    assert [(r["shape"], r["samples"]) for r in packs] == [("tiny-q", 2), ("tiny-q", 4)]
    assert all(r["forward_ms"] > 0 and r["backward_ms"] > 0 for r in packs)
    assert len(slopes) == 1 and set(slopes[0]) == {"shape", "forward_us_a_sample", "backward_us_a_sample",
                                                   "forward_us_a_kernel", "backward_us_a_kernel", "kernel_over_mm"}
