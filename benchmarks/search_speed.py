"""Speed of `trainsizer plan`: a Llama-3.1-405B pretraining job (examples/pretrain-405b.yaml without its
hardware and strategy) over the whole catalog and 8 to 16,384 GPUs.

Prints the plan's wall time (best and median of several runs: the machine is shared, the best run is the
least disturbed), its CPU time, the hardware options and strategies evaluated, and strategies per second.
The product target: under 3 s on a 2-core machine.

Run: python benchmarks/search_speed.py [--runs 5] [--job examples/other.yaml]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import yaml

from trainsizer.catalog import load_catalog
from trainsizer.plan.core import make_plan

REPO = Path(__file__).resolve().parents[1]


def job(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.pop("hardware", None)
    data.pop("strategy", None)
    return data


def run(path: Path, runs: int) -> dict:
    catalog = load_catalog()
    data = job(path)
    make_plan(data, catalog)  # warm caches (YAML constants, numpy) as a long-running process would be
    walls, cpus, plan = [], [], None
    for _ in range(runs):
        t0, c0 = time.perf_counter(), os.times()
        plan = make_plan(data, catalog)
        c1 = os.times()
        walls.append(time.perf_counter() - t0)
        cpus.append((c1.user - c0.user) + (c1.system - c0.system))
    assert plan is not None
    return {"walls": walls, "cpus": cpus, "plan": plan}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--job", type=Path, default=REPO / "examples" / "pretrain-405b.yaml")
    args = ap.parse_args()
    r = run(args.job, args.runs)
    plan = r["plan"]
    s = plan.search
    best, med = min(r["walls"]), statistics.median(r["walls"])
    print(f"job: {args.job.name} without hardware/strategy; {os.cpu_count()} CPUs visible")
    print(f"hardware options: {s.hardware_options} ({s.hardware_options_pruned} skipped by the memory lower bound, "
          f"{s.hardware_options_feasible} feasible); accelerators excluded: {len(s.excluded_accelerators)}")
    print(f"strategies judged: {s.evaluated:,} ({s.feasible:,} fit and were timed); distinct rules + memory "
          f"evaluations: {s.memory_evaluations:,} (options of one shape share them)")
    print(f"plan wall time: best {best:.2f} s, median {med:.2f} s over {args.runs} runs "
          f"(CPU {min(r['cpus']):.2f} s); target < 3 s")
    print(f"strategies per second (whole plan, best run): {s.evaluated / best:,.0f}")
    rec = plan.recommended
    if rec is not None:
        print(f"recommended: {rec.id}, {rec.time.train_days:.1f} days ({plan.tier.id})")
    elif plan.binding is not None:
        print(f"nothing satisfies the job: {plan.binding.detail}")


if __name__ == "__main__":
    main()
