"""The device script for known-gaps 255 (a) (benchmarks/device/granitemoe_expert_loop.py): its CPU smoke run prints
one JSON line a case and size, transformers' expert-at-a-time loop and the grouped bound."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, import_tiny, tiny_lines

torch = pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "granitemoe_expert_loop.py"


def test_tiny_run_prints_a_line_a_case():
    rows = tiny_lines(SCRIPT)
    assert [(r["case"], r["tokens"], r["device"]) for r in rows] == [
        ("loop", 32, "cpu"), ("own_weights", 32, "cpu"), ("grouped", 32, "cpu")]
    for r in rows:
        assert set(r) == {"case", "tokens", "device", "wall_ms_per_block", "host_ms_per_block", "fused_grad_gb"}
    assert rows[0]["fused_grad_gb"] > 0.0 == rows[1]["fused_grad_gb"] == rows[2]["fused_grad_gb"]


def test_the_loop_and_the_grouped_block_compute_the_same():
    """The grouped bound routes the same rows through the same weights: one output for both paths."""
    g = import_tiny(SCRIPT)
    torch.manual_seed(0)
    loop, own, grouped = g.Block("loop"), g.Block("own_weights"), g.Block("grouped")
    grouped.load_state_dict(loop.state_dict())
    own.load_state_dict(loop.state_dict(), strict=False)
    own.own_in = torch.nn.ParameterList([torch.nn.Parameter(w.detach().clone()) for w in loop.w_in])
    own.own_out = torch.nn.ParameterList([torch.nn.Parameter(w.detach().clone()) for w in loop.w_out])
    h = torch.randn(2, 16, g.H)
    assert torch.allclose(loop(h), grouped(h), atol=1e-5)
    assert torch.allclose(loop(h), own(h), atol=1e-5)

