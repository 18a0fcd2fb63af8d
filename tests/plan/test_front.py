"""The time / cost front of a plan compares one cost basis (search.rank.front_basis): a small rented LoRA job's front
never lists a rack bought outright because it has no rental price, and the plan says what it left off."""

from __future__ import annotations

from trainsizer.plan.core import make_plan
from trainsizer.search import load_config

# an 8B LoRA that rents for a few dollars; GB300 NVL72 has a purchase price and no rental price in the catalog
LORA = {"name": "8B LoRA, rent or buy", "model": "llama-3.1-8b", "method": "lora",
        "lora": {"rank": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"]},
        "data": {"dataset_gb": 0.4, "epochs": 2}, "seq_len": 4096, "global_batch": {"sequences": 32},
        "constraints": {"include": ["rtx-pro-6000", "gb300"]}}


def test_a_rented_job_front_leaves_out_purchases_and_names_them(catalog):
    plan = make_plan(LORA, catalog, top=3, build=False)
    assert plan.goal.procurement == "either" and plan.recommended.score.cost_basis == "rent"
    assert plan.pareto and {p.cost_basis for p in plan.pareto} == {"rent"}
    bought = [h for h in plan.hardware_options if h.cost_basis == "buy"]
    assert bought and min(h.train_days for h in bought) < min(p.train_days for p in plan.pareto)
    assert not {h.id for h in bought} & {p.id for p in plan.pareto}
    note = [n for n in plan.notes_msg or [] if n is not None and n.key == "note_front_basis"]
    fastest = min(p.train_days for p in plan.pareto)
    faster = [h for h in bought if h.train_days * (1.0 + load_config().tie_fraction) < fastest]
    assert len(note) == 1 and note[0].params["count"] == len(faster) < len(bought)
    zh = make_plan(LORA, catalog, top=1, build=False, lang="zh")
    assert any("未列入前沿" in n for n in zh.notes)
