"""benchmarks/titan_step_layout.py (known-gaps 214 (a)): torchtitan's step under full AC replayed on CPU. The loss
phase and a re-run layer are never live together (`del pred`), yet under expandable segments the forward's freed layer
tensors stay mapped below the loss's larger tensors: what memory._forward_segments charges beside the loss phase."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import titan_step_layout as ts  # noqa: E402

pytestmark = pytest.mark.torch


def test_the_forwards_holes_stay_below_the_loss_and_match_the_charge():
    events, start = ts.step_events()
    acts, loss, rerun = ts.phases(events, start)
    holes = ts.forward_holes(events, start)
    assert ts.allocated_peak(events) == acts + max(loss, rerun)  # the phases apart: `del pred`
    assert holes == pytest.approx(ts.T * 2 * (3 * ts.FFN + 2 * ts.D), rel=0.15)  # 3 f + 2 h in bf16
    assert ts.mapped_peak(events) >= acts + loss + holes  # the loss is laid out above the holes
    assert ts.mapped_peak(events) < acts + loss + rerun  # not the sum of the phases


def test_per_op_sac_leaves_fewer_holes_and_its_layout_reads_near_the_sum():
    """Eager per-op SAC (torchtitan's policy): the saved matmul outputs of later blocks fill part of the holes, and
    the loss's own layout adds to them (known-gaps 214 (f))."""
    events, start = ts.step_events(op_sac=True)
    acts, loss, rerun = ts.phases(events, start)
    holes = ts.forward_holes(events, start)
    full_events, full_start = ts.step_events()
    assert 0 < holes < ts.forward_holes(full_events, full_start)
    assert acts + loss + holes < ts.mapped_peak(events) <= acts + loss + rerun
