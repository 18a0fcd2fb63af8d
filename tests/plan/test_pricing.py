"""The plan ranks and prices options on the figures `trainsizer estimate` reports for them: time to train over
whole optimizer steps (a partial last batch is one more step), as a real run takes them."""

from __future__ import annotations

import pytest

from trainsizer.errors import SpecError
from trainsizer.plan.core import make_plan

from .conftest import make_job


def test_plan_figures_are_the_estimate_figures_over_whole_steps(catalog):
    # 1e9 + 12,345 tokens at 64 x 4096 tokens per step: 3,815 steps, the last one partial
    job = make_job(data={"tokens": 1.0e9 + 12_345}, goal={"procurement": "rent"})
    job.pop("strategy")
    plan = make_plan(job, catalog, top=3, build=False).model_dump(mode="json", by_alias=True)
    shown = {o["id"]: o for o in plan["options"]}
    assert plan["pareto"]
    for point in plan["pareto"]:
        option = shown[point["id"]]
        assert point["train_days"] == pytest.approx(option["time"]["train_days"], rel=1e-12)
        assert point["cost"] == pytest.approx(option["cost"]["rent"]["mid"], rel=1e-12)


def test_a_plan_strategy_block_is_a_job_strategy_and_estimates_the_same(catalog):
    """Copying the recommended option's hardware and strategy into the job reproduces its figures (the plan
    writes shard_group 0 for "all of DP", which a job file takes as such)."""
    from trainsizer import api

    job = make_job(goal={"procurement": "rent"})
    job.pop("strategy")
    rec = make_plan(job, catalog, top=1, build=False).recommended
    job["strategy"] = rec.strategy.model_dump(mode="json")
    assert job["strategy"]["shard_group"] == 0
    got = api.estimate(job, catalog)
    assert got["time"]["train_days"] == pytest.approx(rec.time.train_days, rel=1e-12)
    with pytest.raises(SpecError, match="hybrid needs shard_group"):
        api.estimate(make_job(strategy={"fsdp": "hybrid", "shard_group": 0}), catalog)


def test_an_option_priced_only_in_the_other_currency_says_so():
    """H800 has CNY prices only: a USD plan leaves it unpriced in the table while the BOM converts the price, so a
    note says why and how to rank by it (en / zh); in CNY it is priced and nothing is said."""
    from trainsizer.plan.texts import say

    job = {"name": "h800 usd", "model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1.0e8}, "seq_len": 2048,
           "global_batch": {"sequences": 32}, "goal": {"procurement": "buy"},
           "constraints": {"market": "china"}, "hardware": {"accelerator": "h800-sxm-80gb", "count": 8}}
    usd = make_plan(job, build=False)
    assert usd.hardware_options[0].cost is None
    note = next(m for m in usd.notes_msg if m is not None and m.key == "note_price_other_currency").model_dump()
    assert "h800-sxm-80gb has a price in CNY only" in say(note, "en") and "constraints.currency: CNY" in say(note, "en")
    assert "只有 CNY 价格" in say(note, "zh")
    cny = make_plan({**job, "constraints": {"market": "china", "currency": "CNY"}}, build=False)
    assert cny.hardware_options[0].cost is not None
    assert not any(m is not None and m.key == "note_price_other_currency" for m in cny.notes_msg)
