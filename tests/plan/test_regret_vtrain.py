"""The plan's pick on vTrain's measured layouts (benchmarks/plan_regret_vtrain.py). Bounds are what the
search reaches today with a small margin; a change that makes the choice worse fails here."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import plan_regret_vtrain as prv  # noqa: E402


def test_pick_and_ties_against_measurements():
    r = prv.evaluate()
    assert r["groups"] == 144
    assert r["within_2pct"] >= 0.65  # reached: 74% of groups
    assert r["regret_median"] <= 0.01  # reached: 0.0%
    # reached: 85% (the measured best is the pick or shown as a tie) within the runs' class's tie band: the class's
    # spread about its median (megatron/dense/ampere/node 7.3% since perf_heldout75's one-node NeMo GPT-3 rows,
    # plan.searched.tie_fraction_of) is just above the development set's 7%, the floor; 83% at the floor; 94% within the class's MAPE (8.6%, the band before ties read the spread); 90% at 7% before
    # the megatron style's step passes (step_time._step_passes, counted from Megatron-LM's code: norm read, master
    # copy, buffer clear), which took the pick within 2% from 72% to 74% but the ties from 90% to 83%
    # since session 65's megatron/dense/ampere changes (known-gaps 324: the class's node spread 7.3 -> 7.0%) the band
    # sits at the development set's 7% floor, where the ties hold the measured best in 83% of groups
    assert r["tie_fraction"] == 0.07 and r["best_in_ties"] >= 0.80
    # ties cost something: a wider tie band holds the best more often
    wider = prv.evaluate(tie_fraction=0.15)
    assert wider["best_in_ties"] >= r["best_in_ties"] and wider["mean_ties"] >= r["mean_ties"]
