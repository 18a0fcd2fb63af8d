"""benchmarks/hf_layer_host.py (docs/known-gaps.md 279 (b)): its op count leaves views out and counts the backward apart,
its charge is the estimate's floor and the count at the launch-bound op, and without transformers it times nothing."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import host_figure

# the script counts a torch model's ops; the README's test command runs without torch
torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import hf_layer_host as lh  # noqa: E402


def test_op_count_leaves_views_out_and_counts_the_backward_apart():
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)
    fwd, bwd = lh.count_pass(lambda: torch.nn.functional.silu(lin(x).view(2, 16)))
    assert "view" not in fwd and fwd["silu"] == 1
    assert sum(fwd.values()) == 2  # the linear (addmm) and the SiLU
    assert bwd["silu_backward"] == 1 and sum(bwd.values()) >= 3  # SiLU's, the weight's and the bias's gradients
    assert lh.kernel_ops(Counter({"view": 3, "mul": 2, "empty": 1})) == Counter({"mul": 2})


def test_charge_is_the_floor_per_pass_and_the_count_at_the_launch_bound_op():
    k, op = load_constants().host_s_per_layer_pass, host_figure("launch_bound_op_s", "nvidia")
    floor, counted = lh.charged_ms(48, 72, recompute=False)
    assert floor == pytest.approx(1e3 * 3.0 * k) and counted == pytest.approx(1e3 * 120 * op)
    floor, counted = lh.charged_ms(48, 72, recompute=True)
    assert floor == pytest.approx(1e3 * 4.0 * k) and counted == pytest.approx(1e3 * 168 * op)


def test_layer_host_says_so_without_transformers(monkeypatch, capsys):
    monkeypatch.setattr(lh, "llama_layer", lambda: None)
    lh.main()
    assert "not installed" in capsys.readouterr().out
