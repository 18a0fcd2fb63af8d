"""Writes fixtures/plan_70b_fixture.json: a plan-shaped file for the report renderer's tests.

The memory, time, cost and energy blocks are real `evaluate` results of the 70B SFT search example on a
few hand-picked configurations; the build-out blocks (bom, network, ...) are test data in the shape the
plan documents, so the renderer can be tested before the plan layer ships them. Run:

    python tests/render/report/make_fixture.py
"""

from __future__ import annotations

import json
from pathlib import Path

from trainsizer.catalog import load_catalog
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job
from trainsizer.spec import read_mapping
from trainsizer.spec.overrides import apply_overrides

HERE = Path(__file__).parent
JOB = HERE.parents[2] / "examples" / "sft-70b-search.yaml"

def _cfg(acc: str, count: int, network: str = "ib-ndr400") -> dict:
    return dict(accelerator=acc, count=count, per_node=8, network=network, tp=8, pp=2, dp=count // 16, zero=1,
                micro_batch=1, recompute="full")


CONFIGS = [_cfg("h100-sxm-80gb", 32), _cfg("h100-sxm-80gb", 64), _cfg("h200-sxm-141gb", 16),
           _cfg("h200-sxm-141gb", 32), _cfg("h200-sxm-141gb", 64), _cfg("a100-sxm-80gb", 64, "ib-hdr200")]


def _option(catalog, cfg: dict) -> dict:
    data = apply_overrides(read_mapping(JOB), cfg)
    scenario = resolve_job(JOB, catalog, data=data)
    res = evaluate(scenario, catalog)
    hw = res["job"]["hardware"]
    return {
        "hardware": {"accelerator": hw["accelerator"], "server": f"{hw['accelerator']}-hgx-8", "count": hw["gpus"],
                     "per_node": hw["gpus_per_node"], "nodes": hw["nodes"], "network": hw["network"]},
        "strategy": res["job"]["strategy"],
        "memory": res["memory"], "time": res["time"], "cost": res["cost"], "energy": res["energy"],
        "meets": {"deadline": res["goal"]["meets_deadline"], "budget": res["goal"]["within_budget"]},
        "notes": res["notes"],
    }


def _line(cat, item, part, q, lo, ty, hi):
    return {"category": cat, "item": item, "part": part, "quantity": q,
            "unit_price": {"low": lo, "typical": ty, "high": hi}, "currency": "USD", "source": "test fixture",
            "date": "2026-11"}


def buildout_blocks() -> dict:
    """Test data in the shape of the plan's build-out blocks (not a real design)."""
    from trainsizer.accept import criteria

    lines = [
        _line("compute", "GPU server", "HGX H100 8-GPU", 4, 250000, 290000, 340000),
        _line("network", "InfiniBand HCA", "ConnectX-7 400G", 32, 1800, 2200, 2800),
        _line("network", "Leaf switch", "QM9700 64x400G", 1, 28000, 33000, 40000),
        _line("network", "Transceiver", "OSFP 400G SR4", 64, 700, 900, 1200),
        _line("network", "Cable", "MPO fibre 10 m", 32, 60, 90, 140),
        _line("storage", "Storage server", "NVMe NFS 2U 100 TB", 1, 45000, 60000, 80000),
        _line("management", "Management switch", "1/10 GbE 48-port", 1, 2500, 3500, 5000),
        _line("facility", "Rack + PDU", "42U + 2x 17 kW PDU", 2, 3000, 4500, 6500),
    ]
    totals = {k: sum(ln["quantity"] * ln["unit_price"][k] for ln in lines) for k in ("low", "typical", "high")}
    return {
        "bom": {"currency": "USD", "lines": lines, "totals": totals,
                "rent": {"per_month": {"low": 21000, "typical": 43000, "high": 80000}, "months": 1},
                "buy_vs_rent": {"break_even_month": 15}},
        "node": {"cpu_cores": 96, "ram_gib": 2048, "nvme_tb": 15.4, "nvme_read_gb_s": 25.0,
                 "nvme_write_gb_s": 12.0},
        "network": {"topology": "rail-optimised fat-tree", "kind": "ib", "tiers": 1, "nics_per_node": 8,
                    "gbps_per_nic": 400, "rails": 8, "nvlink_domain_gpus": 8, "oversubscription": 1.0,
                    "switches": [{"tier": "leaf", "count": 1, "radix": 64, "gbps": 400, "model": "QM9700"}],
                    "links": [{"from": "node", "to": "leaf", "count": 32, "gbps": 400, "cable": "MPO fibre"}],
                    "storage_fabric": {"kind": "ethernet", "gbps_per_node": 200},
                    "management_fabric": {"kind": "ethernet", "gbps_per_node": 1}, "allreduce_s": 1.9},
        "storage": {"tier": "NVMe NFS", "capacity_tb": 100, "read_gb_s": 4.0, "write_gb_s": 8.0,
                    "checkpoint_interval_min": 45, "checkpoint_stall_share": 0.02, "restore_min": 3.5},
        "facility": {"node_kw_max": 10.2, "node_kw_typical": 7.8, "nodes_per_rack": 2, "racks": 2, "rack_kw": 20,
                     "cooling": "air", "ups_kva": 30, "floor_m2": 3.2, "energy_kwh_year": 137000},
        "software": {"driver": "550.127", "cuda": "12.4", "nccl": "2.21.5", "pytorch": "2.4.1",
                     "framework": "Megatron-Core 0.9", "scheduler": "slurm"},
        "risks": [{"id": "deadline_slack", "severity": "medium", "evidence": "8.1 of 10 days with expected failures",
                   "mitigation": "rent a third node for the first week"},
                  {"id": "checkpoint_stall", "severity": "low", "evidence": "2% of time in checkpoint writes",
                   "mitigation": "asynchronous checkpointing"}],
        "acceptance": criteria.from_platform("h100-sxm-80gb", gpus_per_node=8).model_dump(mode="json",
                                                                                         exclude_none=True),
        "phases": [{"phase": "pilot", "weeks": 1, "what": "one rented node, run 100 steps"},
                   {"phase": "order", "weeks": 8, "what": "servers, HCAs, switch"},
                   {"phase": "deploy", "weeks": 2, "what": "rack, cable, install"},
                   {"phase": "acceptance", "weeks": 1, "what": "trainsizer accept --plan plan.json"}],
        "rules_of_thumb": [{"what": "RAM per node", "guide": "1.5-2x GPU memory (1,280 GB)", "ours": "2,048 GiB",
                            "why": "checkpoint staging and pinned buffers"}],
    }


def main() -> None:
    catalog = load_catalog()
    options = [_option(catalog, c) for c in CONFIGS]
    job = evaluate(resolve_job(JOB, catalog, data=apply_overrides(read_mapping(JOB), CONFIGS[0])), catalog)["job"]
    extra = buildout_blocks()
    plan = {
        "schema_version": "1",
        "job": job,
        "search": {"evaluated": 1_284_512, "feasible": 18_233, "seconds": 0.84},
        "tier": "few-nodes",
        "decided_by": "deadline",
        "recommended": 0,
        "options": options,
        "pareto": [0, 1, 4],
        "binding": None,
        "notes": ["test fixture: build-out blocks are test data"],
        **extra,
    }
    (HERE / "fixtures" / "plan_70b_fixture.json").write_text(json.dumps(plan, indent=1, ensure_ascii=False) + "\n",
                                                             encoding="utf-8")


if __name__ == "__main__":
    main()
