"""The device script for known-gaps 299 (e) (benchmarks/device/nccl_comm_memory.py): its CPU smoke run prints the
context line, a one-rank line a channel setting and, with two ranks, the ranks line; every reading a number."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

torch = pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "nccl_comm_memory.py"


def test_tiny_run_prints_the_context_each_channel_setting_and_the_ranks():
    rows = tiny_lines(SCRIPT)
    assert [r["case"] for r in rows] == ["context"] + ["one_rank"] * 7 + ["ranks"]
    assert [r["setting"] for r in rows[1:-1]] == [1, 2, 4, 8, 16, 32, None]
    assert rows[0]["estimate_gib"] == pytest.approx(0.53125)
    assert set(rows[-1]) == {"case", "setting", "device", "ring_mib", "all_to_all_mib", "send_recv_mib"}
    assert rows[-1]["setting"] == 2
    for r in rows:
        assert r["device"] == "cpu"
        assert all(v == 0.0 for k, v in r.items() if k.endswith(("_mib", "_gib")) and k != "estimate_gib")
