"""benchmarks/titan_moe_layer.py: torch's Interleaved1F1B table rebuilt (each rank runs each of its stages' forward and
backward of every micro-batch once), its event-driven time the (p - 1) / (v m) bubble the estimate charges, lock-step
never shorter; the per-layer split of a row's step (docs/known-gaps.md 130)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import titan_moe_layer as tml  # noqa: E402


@pytest.mark.parametrize(("p", "v", "m"), [(4, 2, 8), (8, 2, 16), (4, 1, 8), (2, 4, 4)])
def test_every_rank_runs_each_of_its_actions_once(p, v, m):
    for rank in range(p):
        acts = Counter(a for a in tml.rank_actions(rank, p, v, m) if a)
        stages = range(rank, p * v, p)
        assert set(acts) == {(k, s, i) for k in "FB" for s in stages for i in range(m)}
        assert set(acts.values()) == {1}


@settings(max_examples=25, deadline=None)
@given(p=hs.sampled_from([2, 4, 8]), v=hs.sampled_from([1, 2, 4]), rounds=hs.sampled_from([1, 2, 4]),
       bwd=hs.sampled_from([1.0, 2.0, 3.5]))
def test_event_driven_time_is_the_charged_bubble(p, v, rounds, bwd):
    m = p * rounds
    ideal, lock, work = tml.schedule_times(p, v, m, bwd)
    assert ideal / work == pytest.approx(1.0 + (p - 1) / (v * m), rel=1e-9)
    assert lock >= ideal - 1e-9


def test_the_rows_layout_in_lock_step_costs_under_one_percent_more():
    for bwd in (2.0, 3.0, 4.0):
        ideal, lock, _ = tml.schedule_times(tml.PP, tml.STAGES_PER_RANK, tml.MICRO_BATCHES, bwd)
        assert 1.0 < lock / ideal < 1.01


def test_layer_times_split_the_step():
    """A 10 s predicted step of 4 micro-batches on 8 layers: 6 s compute + 2 s EP, a 1 s bubble, 1 s of DP / PP /
    optimizer; measured at half the predicted throughput, so a 20 s step."""
    result = {"time": {"step_s": 10.0, "micro_batches": 4.0,
                       "breakdown_s": {"compute": 6.0, "ep_comm": 2.0, "pp_bubble": 1.0, "dp_comm": 0.5,
                                       "pp_comm": 0.25, "optimizer": 0.25}}}
    row = {"id": "torchtitan_x"}
    measured, modelled = tml.layer_times(row, result, measured=1.0, predicted=2.0)
    assert modelled == pytest.approx(8.0 / 32)
    assert measured == pytest.approx((20.0 - 1.0) / (9.0 / 8.0) / 32)
