"""Every example gets a plan that validates against the shipped JSON Schema; each tier's example gets the
recommendation a practitioner would accept."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import EXAMPLES, REPO
from trainsizer.search.config import load_config

SCHEMA = json.loads((REPO / "docs" / "plan.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_gets_a_valid_plan(path, plan_of):
    plan = plan_of(str(path))
    data = plan.model_dump(mode="json")
    jsonschema.validate(data, SCHEMA)
    assert data["recommended"] is not None or data["binding"] is not None
    if data["recommended"]:
        rec = data["recommended"]
        assert rec == data["options"][0]
        assert rec["memory"]["fits"]
        s = rec["strategy"]
        assert s["tp"] * s["pp"] * s["dp"] * s["cp"] == rec["hardware"]["count"]
        assert data["tier"] is not None


def test_search_example_searches_the_catalog(plan_of):
    plan = plan_of(str(REPO / "examples" / "sft-70b-search.yaml"))
    assert plan.search.hardware_options > 50
    assert len({o.accelerator for o in plan.hardware_options}) > 5
    assert plan.search.evaluated > plan.search.feasible > 0
    excluded = plan.search.excluded_accelerators
    assert "rtx-4090" in excluded and "exclude" in excluded["rtx-4090"]
    # a 70B full SFT: one or a few 8-GPU nodes, a fast fabric when it spans nodes, within the max_nodes = 8
    rec = plan.recommended
    assert rec.hardware.per_node == 8 and 1 <= rec.hardware.nodes <= 8
    assert rec.hardware.nodes == 1 or rec.hardware.network.gbps_per_nic >= 200
    assert rec.meets.deadline and rec.meets.budget
    assert all(o.hardware.nodes <= 8 for o in plan.options)
    assert plan.tier.id in ("single-node", "few-nodes")
    # what the README's first job recommends is not flagged by its own risks for GPU memory headroom
    floor = load_config().memory_headroom_min
    assert rec.memory.per_gpu_gib <= (1.0 - floor) * rec.memory.capacity_gib
    assert plan.build is None or all(r["id"] != "gpu_memory_headroom" for r in plan.build["risks"])
    # a tie put second by the tie order is not "passed over for scale" (it has the same documented standing)
    levels = {o.id: o.scale for o in plan.hardware_options}
    for note in plan.notes_msg or []:
        if note is not None and note.key == "note_scale_passed_over":
            assert levels[note.params["option"]] != "demonstrated"


def test_qlora_7b_is_one_card(plan_of):
    plan = plan_of(str(REPO / "examples" / "qlora-7b-one-gpu.yaml"))
    assert plan.recommended.hardware.count == 1
    assert plan.tier.id == "single-gpu" and plan.tier.decided_by == "memory"


def test_pareto_front_is_not_dominated(plan_of):
    plan = plan_of(str(REPO / "examples" / "sft-70b-search.yaml"))
    front = plan.pareto
    assert front
    days = [p.train_days for p in front]
    costs = [p.cost for p in front]
    assert days == sorted(days) and costs == sorted(costs, reverse=True)
    priced = [o for o in plan.hardware_options if o.cost is not None]
    for o in priced:  # no option beats a front point on both figures
        for p in front:
            assert not (o.train_days < p.train_days and o.cost < p.cost)


def _without_hardware(name: str) -> dict:
    import yaml

    data = yaml.safe_load((REPO / "examples" / name).read_text(encoding="utf-8"))
    data.pop("hardware", None)
    data.pop("strategy", None)
    return data


def test_405b_pretraining_searches_to_thousands_of_gpus():
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.core import make_plan

    plan = make_plan(_without_hardware("pretrain-405b.yaml"), load_catalog(), top=3)
    rec = plan.recommended
    assert rec is not None and rec.hardware.count >= 1000 and rec.meets.deadline
    assert plan.tier.id == "large-cluster"
    assert rec.hardware.network is not None and rec.hardware.network.gbps_per_nic >= 200
    assert "gb200" in plan.search.excluded_accelerators  # 120 kW racks, constraints.rack_kw is 40


def test_qlora_7b_searched_in_its_market_stays_on_one_host_of_small_cards():
    # A 7B QLoRA fits one 24 GB card of the recommended part; since the RTX A5000 (USD 0.16-0.34 an hour) joined the
    # catalog, two of them without recompute cost less than one with it (known-gaps 142), so the search may take two
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.core import make_plan

    # PEFT's fp32 stream stated (kbit_upcast true, the figures this was set on; unstated, hf's 16-bit stream fits one
    # card without recompute and two cost within 1% of it: docs/known-gaps.md 258 (a))
    job = {**_without_hardware("qlora-7b-one-gpu.yaml"), "strategy": {"kbit_upcast": True}}
    plan = make_plan(job, load_catalog(), top=3, lang="zh")
    rec = plan.recommended.hardware
    assert rec.count <= 2 and rec.nodes == 1 and plan.tier.id in ("single-gpu", "single-node")
    best = next(o for o in plan.hardware_options if o.id == plan.recommended.id)
    one = [o for o in plan.hardware_options if o.accelerator == rec.accelerator and o.count == 1]
    assert one and one[0].meets.deadline and one[0].cost >= best.cost
    assert rec.count == 1 or "full recompute" in one[0].layout  # why a second card can be cheaper
    assert "出口受限" in plan.search.excluded_accelerators["h100-sxm-80gb"]


def test_china_workstation_qlora_buys_a_china_market_consumer_card():
    # known-gaps 43 (a): under market china the RTX 4090 / 5090 are export-restricted; a 7B QLoRA to buy under
    # CNY 30,000 gets the China SKU (RTX 4090 D at its CNY 12,999 launch price), not nothing (an L20 at CNY 75,000)
    from trainsizer.plan.core import make_plan

    from .conftest import example_job

    job = example_job("qlora-7b-one-gpu.yaml", goal={"deadline_days": 7, "procurement": "buy",
                                                     "budget": {"amount": 30000, "currency": "CNY"}})
    plan = make_plan(job, build=False)
    rec = plan.recommended
    assert rec is not None and rec.meets.budget and rec.meets.deadline
    assert rec.hardware.accelerator in ("rtx-4090d", "rtx-5090d-v2") and rec.hardware.count == 1
    assert plan.search.excluded_accelerators.get("rtx-4090")  # the global SKU stays out of a China plan


def test_a_job_file_may_pin_only_the_gpu_count():
    # known-gaps 43 (b): `hardware: {count: N}` is what `plan --count N` was; estimate names the missing accelerator
    from trainsizer.catalog import load_catalog
    from trainsizer.errors import SpecError
    from trainsizer.evaluate import require_configuration
    from trainsizer.plan.core import make_plan
    from trainsizer.scenario import resolve_job

    from .conftest import example_job

    job = example_job("sft-70b-search.yaml", hardware={"count": 64})
    plan = make_plan(job, build=False)
    assert plan.options and {o.hardware.count for o in plan.options} == {64}
    assert len({o.hardware.accelerator for o in plan.options}) > 2
    assert plan.recommended is None or plan.recommended.hardware.count == 64
    with pytest.raises(SpecError) as err:
        require_configuration(resolve_job(job, load_catalog()))  # what estimate / fit / build ask for
    assert "hardware.accelerator" in str(err.value) and "trainsizer plan" in str(err.value)
