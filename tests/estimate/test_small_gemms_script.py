"""The device script for known-gaps 231 (c) (benchmarks/device/small_gemms.py): its CPU smoke run prints one JSON line
a shape with its time, rate and the CUDA kernels the profiler saw (none on a CPU)."""

from __future__ import annotations

import sys

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "small_gemms.py"


def test_tiny_run_prints_a_line_a_shape():
    rows = tiny_lines(SCRIPT)
    assert [(r["m"], r["k"], r["n"]) for r in rows] == [(16, 32, 64), (64, 64, 64)]
    for r in rows:
        assert set(r) == {"model", "m", "k", "n", "ms", "tflops", "kernels"}
        assert r["kernels"] == []  # no CUDA kernel on a CPU


def test_the_listed_shapes_cover_forward_and_dgrad_of_each_linear_and_the_squares():
    sys.path.insert(0, str(SCRIPT.parent))
    import small_gemms as sg  # not --tiny here: the full list

    listed = {(m, k, n) for _, m, k, n in sg.shapes()}
    for lins in sg.LINEARS.values():
        for k, n in lins:
            for m in sg.TOKENS:
                assert (m, k, n) in listed and (m, n, k) in listed
    assert {(x, x, x) for x in sg.SQUARES} <= listed
