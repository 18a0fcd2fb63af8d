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


def test_an_option_priced_only_in_the_other_currency_is_converted_and_says_so():
    """H800 has CNY prices only: a USD plan ranks it at its CNY cost converted at the bill of materials' dated rate
    (it was left unpriced while the BOM converted it), the table labels the figure 'converted' and a note names the
    rate (en / zh); in CNY it is priced as the catalog gives it and nothing is said."""
    from trainsizer.plan.buildout.bom import fx
    from trainsizer.plan.texts import say
    from trainsizer.render.cost_basis import ranked

    job = {"name": "h800 usd", "model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1.0e8}, "seq_len": 2048,
           "global_batch": {"sequences": 32}, "goal": {"procurement": "buy"},
           "constraints": {"market": "china", "currency": "USD"},
           "hardware": {"accelerator": "h800-sxm-80gb", "count": 8}}
    usd = make_plan(job, build=False)
    cny = make_plan({**job, "constraints": {"market": "china", "currency": "CNY"}}, build=False)
    k, label = fx("CNY", "USD")
    assert usd.hardware_options[0].cost == pytest.approx(cny.hardware_options[0].cost * k)
    note = next(m for m in usd.notes_msg if m is not None and m.key == "note_price_other_currency").model_dump()
    assert "h800-sxm-80gb has a price in CNY only" in say(note, "en") and label in say(note, "en")
    assert "constraints.currency: CNY" in say(note, "en") and "只有 CNY 价格" in say(note, "zh")
    shown = ranked(usd.recommended.model_dump(mode="json"), "buy")
    assert shown.currency == "USD" and shown.converted and "converted" in shown.label("en")
    assert not any(m is not None and m.key == "note_price_other_currency" for m in cny.notes_msg)
    assert not ranked(cny.recommended.model_dump(mode="json"), "buy").converted


def test_a_china_market_job_without_a_currency_is_priced_in_cny_and_says_so():
    """market: china without a currency priced in USD, leaving the China SKUs (H800 in CNY only) unpriced: the
    market's currency now prices it, and a note says so and how to ask for USD (en / zh)."""
    from trainsizer.plan.texts import say

    job = {"name": "h800 china", "model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1.0e8},
           "seq_len": 2048, "global_batch": {"sequences": 32}, "goal": {"procurement": "buy"},
           "constraints": {"market": "china"}, "hardware": {"accelerator": "h800-sxm-80gb", "count": 8}}
    plan = make_plan(job, build=False)
    assert plan.hardware_options[0].cost is not None and plan.goal.currency == "CNY"
    note = next(m for m in plan.notes_msg if m is not None and m.key == "note_currency_market").model_dump()
    assert "constraints.currency: USD" in say(note, "en") and "按 CNY 计价" in say(note, "zh")


FT14 = {"model": "qwen2.5-14b", "method": "full", "data": {"samples": 50000, "avg_tokens": 1024, "epochs": 3},
        "seq_len": 4096, "global_batch": {"sequences": 64}, "precision": "bf16", "optimizer": "adamw",
        "goal": {"deadline_days": 7, "procurement": "buy"}, "hardware": {"accelerator": "rtx-4090", "count": 1}}


def test_the_ranking_prices_a_bought_offloaded_option_with_its_host_ram(catalog):
    """One RTX 4090 holds a 14B full fine-tune only with ZeRO-3 offload: the ranked cost is the card, the host RAM
    its states need (evaluate.host_ram_block) and the electricity, and a budget the card alone meets is not met."""
    card = catalog.purchase("rtx-4090").mid
    plan = make_plan(FT14, catalog, top=1, build=True)
    o = plan.options[0]
    ram = o.cost.model_dump()["buy"]["host_ram"]
    assert o.strategy.offload == "optimizer+params" and ram["gib"] > 200
    assert o.score.cost == pytest.approx(card + ram["mid"] + o.cost.model_dump()["buy"]["electricity"])
    line = next(ln for ln in plan.build["bom"]["lines"] if ln["part"] == "ram-ddr5-rdimm-gib")
    assert line["quantity"] == ram["gib"] and line["total"]["typical"] == pytest.approx(ram["mid"])
    tight = make_plan({**FT14, "goal": {**FT14["goal"], "budget": {"amount": card + 500, "currency": "USD"}}},
                      catalog, top=1, build=False)
    assert tight.options[0].meets.budget is False


def test_ram_priced_beyond_a_server_of_unknown_extensibility_says_so(build):
    """43 (w): a pinned offloaded 405B on 16 H100 needs more host RAM a node than a DGX H100's 2,048 GiB; the
    catalog does not know whether that server takes more (servers.yaml ram_extensible null): the RAM is priced and
    the note says the price assumes DIMMs can be added and to ask the vendor (en / zh)."""
    from trainsizer.messages import tr

    b = build(model="llama-3.1-405b", global_batch={"sequences": 16},
              strategy={"tp": 1, "pp": 1, "fsdp": "full", "offload": "optimizer+params", "micro_batch": 1,
                        "recompute": "full"})
    ram = b.evaluation["cost"]["buy"].get("host_ram")
    assert ram is not None and ram["need_gib_per_node"] > 2048
    note = next(n for n in b.evaluation["notes"] if "ram_extensible unknown" in tr(n, "en"))
    assert "ask the vendor" in tr(note, "en") and "未知" in tr(note, "zh")
