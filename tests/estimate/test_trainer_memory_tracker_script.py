"""The device script for known-gaps 289 (c) (benchmarks/device/trainer_memory_tracker.py): its CPU smoke run prints a
line a case and setting, then the ratios; its tracker replica reads the process's resident bytes and stops."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, import_tiny, tiny_lines

torch = pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "trainer_memory_tracker.py"
CASES = ("python_loop", "mm", "split_loop_fwd", "split_loop_fb")


def test_tiny_run_prints_each_case_alone_and_beside_the_tracker_then_the_ratios():
    rows = tiny_lines(SCRIPT)
    assert [(r["case"], r["tracker"]) for r in rows[:-1]] == [(c, t) for c in CASES for t in (False, True)]
    for r in rows[:-1]:
        assert set(r) == {"case", "tracker", "reader", "device", "host_us_per_op", "cpu_us_per_op",
                          "tracker_loops_per_op"}
        assert r["host_us_per_op"] > 0.0
    assert rows[-1]["case"] == "ratio" and set(rows[-1]) == {"case", "device", *CASES}


def test_tracker_runs_before_the_first_op_reads_the_resident_bytes_and_stops():
    m = import_tiny(SCRIPT)
    assert m.statm_rss() > 0
    with m.Tracker(m.statm_rss) as t:
        assert t.iterations > 0
    assert not t.thread.is_alive() and t.peak > 0

