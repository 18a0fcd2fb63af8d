"""The recommended count refined between two rungs of the search's ladder when a deadline binds a bought
cluster (plan/refine.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.plan.core import make_plan
from trainsizer.plan.refine import MAX_PROBES, _probes

# llama-3.1-8b pretraining on bought H100: the ladder has 32 GPUs at 7.0 days and 48 at 4.7, so a 6-day deadline
# first holds at 48 while 40 (five nodes; 960 sequences divide over 40) also meets it for a sixth less capex
JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 2.0e11}, "seq_len": 4096,
       "global_batch": {"sequences": 960}, "goal": {"procurement": "buy", "deadline_days": 6.0},
       "constraints": {"include": ["h100-sxm-80gb"], "max_nodes": 8}}


@given(st.integers(1, 20000), st.integers(1, 20000), st.sampled_from([1, 4, 8, 16, 72]))
def test_probes_are_whole_units_strictly_between_the_rungs(lo, hi, unit):
    out = _probes(lo, hi, unit)
    assert len(out) <= MAX_PROBES and out == sorted(set(out))
    assert all(lo < n < hi and n % unit == 0 for n in out)
    whole = [n for n in range(lo + 1, hi) if n % unit == 0]
    assert bool(out) == bool(whole)  # some count is tried whenever a whole unit fits between


def test_a_bought_cluster_is_not_a_rung_larger_than_the_deadline_needs():
    cat = load_catalog()
    plan = make_plan(JOB, cat, build=False)
    rec = plan.recommended
    notes = [n for n in plan.notes_msg or [] if n is not None and n.key == "note_count_refined"]
    assert rec.hardware.count == 40 and len(notes) == 1
    assert rec.meets.deadline and notes[0].params["option"] == rec.id
    by_id = {h.id: h for h in plan.hardware_options}
    lower, rung = by_id[notes[0].params["lower"]], by_id[notes[0].params["rung"]]
    assert lower.count < rec.hardware.count < rung.count
    assert not lower.meets.deadline and rung.meets.deadline
    assert rec.score.value * (1 + rec.score.uncertainty_fraction) < rung.cost
    # renting, the GPU-hours barely change with the count: the ladder's rung stays
    rented = make_plan({**JOB, "goal": {**JOB["goal"], "procurement": "rent"}}, cat, build=False)
    assert not any(n is not None and n.key == "note_count_refined" for n in rented.notes_msg or [])
