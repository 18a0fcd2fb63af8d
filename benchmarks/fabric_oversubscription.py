"""What an oversubscribed scale-out fabric costs in step time (hardware.fabric; estimate/comm.py zone rules).

For a buyer choosing between a non-blocking (1:1) fabric and one with fewer spine / core switches: the same jobs on
zones of Z GPUs under full bisection with o:1 above them. Rings (DP, FSDP, PP hops) lose little while enough of a
group's members share a zone, since a ring crosses each zone boundary once per direction; an MoE all-to-all pays
for every byte that leaves its zone. The jobs: the Llama 3 405B and DeepSeek-V3 layouts of perf_external.py, and
Llama 3.1 70B under FSDP (ZeRO-3) on 256 H100. No figure here is compared with a measurement.

Run: python benchmarks/fabric_oversubscription.py
"""

from __future__ import annotations

import copy
from typing import Any

from perf_external import CASES, DSV3_JOB
from trainsizer.catalog import load_catalog
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

FSDP_70B = {"model": "llama-3.1-70b", "method": "pretrain", "data": {"tokens": 1e12}, "seq_len": 8192,
            "global_batch": {"sequences": 512}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 256, "per_node": 8, "network": "ib-ndr400"},
            "strategy": {"tp": 1, "pp": 1, "dp": 256, "fsdp": "full", "micro_batch": 1, "recompute": "full",
                         "framework": "fsdp"}}

JOBS = [("Llama 3.1 405B, 16,384 H100, TP 8 PP 16 DP 128 (8K)", CASES[1].job),
        ("DeepSeek-V3, 2,048 H800, EP 64 PP 16 DP 128", DSV3_JOB),
        ("Llama 3.1 70B, 256 H100, FSDP 256", FSDP_70B)]
FABRICS = [(7.0, 3072), (7.0, 256), (2.0, 64), (4.0, 64), (2.0, 8), (4.0, 8)]
TERMS = ("tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_bubble", "pp_comm")


def step(job: dict[str, Any], fabric: tuple[float, int] | None, catalog: Any) -> tuple[float, dict[str, float]]:
    job = copy.deepcopy(job)
    if fabric is not None:
        job["hardware"]["fabric"] = {"oversubscription": fabric[0], "zone_gpus": fabric[1]}
    t = evaluate(resolve_job(job, catalog), catalog)["time"]
    return float(t["step_s"]), t["breakdown_s"]


def main() -> None:
    catalog = load_catalog()
    for name, job in JOBS:
        flat, flat_terms = step(job, None, catalog)
        print(f"{name}: non-blocking step {flat:.2f} s")
        for o, zone in FABRICS:
            if zone >= job["hardware"]["count"]:
                continue
            s, terms = step(job, (o, zone), catalog)
            moved = ", ".join(f"{k} {flat_terms[k]:.2f} -> {terms[k]:.2f} s" for k in TERMS
                              if abs(terms[k] - flat_terms[k]) > 5e-3)
            print(f"  1:{o:g} above {zone:>5,d}-GPU zones  step {s:7.2f} s  {s / flat - 1:+7.1%}  {moved or '-'}")


if __name__ == "__main__":
    main()
