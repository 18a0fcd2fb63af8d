"""A pinned GPU count where every layout offloads to the CPU: the plan prices the next count of the same hardware
that fits on the GPUs alone (plan/next_count.py), beside the pinned count, without ranking it."""

from __future__ import annotations

import pytest

from conftest import REPO
from trainsizer.plan.core import make_plan
from trainsizer.plan.texts import say
from trainsizer.search import Pins

SFT_70B = str(REPO / "examples" / "sft-70b-16gpu.yaml")


@pytest.fixture(scope="module")
def pinned_plan():
    return make_plan(SFT_70B, build=False)


def _note(plan, key):
    return next((m for m in plan.notes_msg or [] if m is not None and m.key == key), None)


def test_pinned_count_that_offloads_gets_the_next_fitting_count_priced(pinned_plan):
    rec, nxt = pinned_plan.recommended, pinned_plan.next_count
    assert rec.hardware.count == 16 and rec.strategy.offload != "none"  # the job's count, as pinned
    assert nxt is not None and nxt.count > 16 and nxt.count % 8 == 0 and nxt.accelerator == rec.hardware.accelerator
    assert "offload" not in nxt.layout and nxt.cost is not None and nxt.train_days > 0
    assert all(o.count == 16 for o in pinned_plan.hardware_options)  # not ranked: the job keeps its count
    note = _note(pinned_plan, "note_next_count").model_dump()
    en, zh = say(note, "en"), say(note, "zh")
    assert "the job pins 16 GPUs" in en and nxt.id in en and "hardware.count" in en
    assert "作业固定为 16 张卡" in zh and nxt.id in zh


def test_the_next_count_is_what_the_plan_finds_when_it_is_pinned_there(pinned_plan):
    """Searched and priced as every option: pinning the job at that count recommends the same figures."""
    nxt = pinned_plan.next_count
    there = make_plan(SFT_70B, build=False, pins=Pins(count=nxt.count))
    assert there.recommended.id == nxt.id
    assert there.recommended.time.train_days == pytest.approx(nxt.train_days)
    # it fits without offload: no next-fitting-count line (a nearby count that beats it may still be named: 24 H100,
    # TP8 PP3 since search.yaml pp_odd_factors, against 32 at the same cost in 3/4 of the time)
    assert there.recommended.strategy.offload == "none" and _note(there, "note_next_count") is None


def test_no_next_count_when_the_count_is_not_pinned_or_the_limits_allow_none():
    import yaml

    job = yaml.safe_load(open(SFT_70B, encoding="utf-8"))
    job["constraints"]["max_nodes"] = 2  # 16 GPUs = 2 nodes: no larger count allowed
    limited = make_plan(job, build=False)
    assert limited.next_count is None and _note(limited, "note_next_count") is None
    assert _note(limited, "note_next_count_none") is None


def test_nothing_fits_prices_the_first_count_from_the_states_need():
    """Nothing fits 405B full SFT on 16 H100: the binding's 'more GPUs: >= N' row names the first count from N up
    that fits, searched and priced (it read 'the model states fit; activations need more')."""
    import re

    job = {"name": "405b on 16", "model": "llama-3.1-405b", "method": "full", "data": {"tokens": 1.0e9},
           "seq_len": 4096, "global_batch": {"sequences": 256}, "goal": {"deadline_days": 30, "procurement": "rent"},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"}}
    plan = make_plan(job, build=False)
    b = plan.binding
    assert b.constraint == "memory" and plan.recommended is None
    first = b.relaxations[0]
    count = int(re.search(r"h100-sxm-80gb x(\d+)", first.result).group(1))
    assert count >= b.needed and count % 8 == 0 and "$" in first.result
    assert "x" + str(count) in say(first.result_msg.model_dump(), "zh")
    assert say(first.change_msg.model_dump(), "en").startswith("more GPUs")


def _qwen_on(count):
    return {"name": f"72b on {count}", "model": "qwen2.5-72b", "method": "pretrain", "data": {"tokens": 2.0e10},
            "seq_len": 4096, "global_batch": {"sequences": 96}, "goal": {"procurement": "rent"},
            "hardware": {"accelerator": "h100-sxm-80gb", "count": count, "network": "ib-ndr400"}}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_pinned_count_that_fits_but_splits_poorly_gets_the_nearby_count_that_beats_it(lang):
    """96 sequences on 40 H100 fit without offload but split poorly (PP 5 x TP 4 x DP 2 at best): 48 H100 (a server
    more), searched and priced as every option, is faster and cheaper, so the plan says so beside the pinned count
    (known-gaps 43 (n)); it does not join the ranking. On 48 no neighbour beats it and nothing is said. (With 160
    sequences, the case before search.yaml pp_odd_factors held 5, 40 splits as PP 5 x DP 2 and is the better count.)"""
    plan = make_plan(_qwen_on(40), build=False, lang=lang)
    rec, nxt = plan.recommended, plan.next_count
    assert rec.hardware.count == 40 and rec.strategy.offload == "none"
    assert nxt is not None and nxt.count in (32, 48) and nxt.accelerator == rec.hardware.accelerator
    assert nxt.train_days <= rec.time.train_days and nxt.cost <= rec.score.cost
    assert (nxt.train_days < rec.time.train_days * 0.93) or (nxt.cost < rec.score.cost * 0.93)
    assert all(o.count == 40 for o in plan.hardware_options)
    note = say(_note(plan, "note_nearby_count").model_dump(), lang)
    assert nxt.id in note and ("the job pins 40 GPUs" in note if lang == "en" else "作业固定为 40 张卡" in note)
    well = make_plan(_qwen_on(48), build=False)
    assert well.next_count is None and _note(well, "note_nearby_count") is None
