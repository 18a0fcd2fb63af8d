"""benchmarks/hf_moe_layer_ops.py (docs/known-gaps.md 289 (a)): the estimate's charge a pass is the layer floor and the
loop's ops at the launch-bound op, its summary counts GEMMs and torch.where's syncs, and without transformers it counts
nothing."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import KERNELS
from trainsizer.estimate.host_sync import host_figure

# the script counts a torch model's ops; the README's test command runs without torch
torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import hf_moe_layer_ops as lo  # noqa: E402


def test_charge_is_the_floor_and_the_loop_ops_in_launch_bound_ops():
    floor = load_constants().host_s_per_layer_pass / host_figure("launch_bound_op_s", "nvidia")
    fwd, bwd = lo.charged_ops(40, split=True)
    assert fwd == pytest.approx(floor + 40 * KERNELS["moe_split_loop_forward_ops"]) and bwd == pytest.approx(2 * floor)
    fwd, _ = lo.charged_ops(8, split=False)
    assert fwd == pytest.approx(floor + 8 * KERNELS["moe_expert_loop_forward"])


def test_summary_counts_gemms_and_nonzero():
    s = lo.summary(Counter({"mm": 3, "addmm": 1, "nonzero": 2, "add": 4}), Counter({"mm": 6, "add": 1}))
    assert s == {"forward": 10, "backward": 7, "forward_mm": 4, "backward_mm": 6, "nonzero": 2}


def test_says_so_without_transformers(monkeypatch, capsys):
    monkeypatch.setattr(lo, "granite_layer", lambda: None)
    lo.main()
    assert "not installed" in capsys.readouterr().out
