"""The device script for known-gaps 273 (c) (benchmarks/device/mixtral_moe_loop.py): its CPU smoke run prints the
host facts and one JSON line a case and size; its loop, hit-expert loop and grouped block compute the same."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, import_tiny, tiny_lines

torch = pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "mixtral_moe_loop.py"


def test_tiny_run_prints_the_host_facts_then_a_line_a_case_and_size():
    rows = tiny_lines(SCRIPT)
    assert rows[0]["case"] == "host" and set(rows[0]) == {"case", "device", "launch_bound_op_us", "round_trip_us"}
    assert rows[0]["launch_bound_op_us"] > 0.0 and rows[0]["round_trip_us"] > 0.0
    assert [(r["case"], r["tokens"]) for r in rows[1:]] == [
        (case, n) for case in ("loop", "loop_hit", "grouped", "dense") for n in (16, 64)]
    for r in rows[1:]:
        assert set(r) == {"case", "tokens", "device", "wall_ms_per_block", "host_ms_per_block"}


def test_the_loops_and_the_grouped_block_compute_the_same():
    """One router and the same experts' weights: the 4.45 loop, the 4.47+ hit-expert loop and the grouped bound give
    one output."""
    m = import_tiny(SCRIPT)
    torch.manual_seed(0)
    loop, hit, grouped = m.Block("loop"), m.Block("loop_hit"), m.Block("grouped")
    hit.load_state_dict(loop.state_dict())
    grouped.load_state_dict(loop.state_dict())
    h = torch.randn(1, 16, m.H)
    assert torch.allclose(loop(h), hit(h), atol=1e-5)
    assert torch.allclose(loop(h), grouped(h), atol=1e-5)
