"""torchtitan's DeepSeek-V3 on 512 H100 (perf_heldout28) laid against its pipeline and against NeMo AutoModel's run of
the same model: what the pipeline schedule costs, and how much of a layer's time is left unmodelled. A diagnostic:
nothing is fitted and no estimate moves (docs/known-gaps.md 130).

1. torch's Interleaved1F1B table, rebuilt from how torch/distributed/pipelining/schedules.py lays it out
   (ScheduleInterleaved1F1B._calculate_single_rank_operations: _get_warmup_ops' warm-up of (v - 1) x the micro-batches
   of a round + 2 a hop from the last rank, then one forward and one backward a step, _get_1f1b_rank_ops' idle slots;
   torch 2.9-2.10, the 2025-12 runs' nightly), for the rows' PP 8, two stages a rank and 16 micro-batches, timed two
   ways over a rank's work with a backward of 2-4x a forward: event-driven (an action starts when its input is
   there) and in lock-step (every time step of the table as long as the longest action any rank runs in it: a CPU
   held at each MoE layer by the dispatch's host syncs cannot run ahead of the table). Against the (p - 1) / (v m)
   the estimate charges.
2. A layer and micro-batch on the paced rank: measured (the row's step, from the estimate's step over the predicted /
   measured throughput, less the estimate's exposed DP, PP p2p and optimizer time, over its bubble factor and the
   rank's micro-batches x layers) against modelled (the estimate's compute + TP + EP over the same), for torchtitan's
   rows and AutoModel's DeepSeek-V3 rows (perf_heldout: the same model, part, DeepEP dispatcher, full activation
   checkpointing and 4,096-token micro-batches).

Run: python benchmarks/titan_moe_layer.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import perf_heldout as ph

DATA = Path(__file__).resolve().parent / "data"
ROWS = {"heldout_2026d.csv": ("torchtitan_2025-12_h100_dsv3_671b_deepep_512gpu",
                              "torchtitan_2025-12_h100_dsv3_671b_alltoall_512gpu"),
        "heldout_pretrain.csv": ("automodel_dsv3_671b_bf16_256gpu", "automodel_dsv3_671b_bf16_1024gpu")}
PP, STAGES_PER_RANK, MICRO_BATCHES = 8, 2, 16  # the torchtitan rows' layout (heldout_2026d.csv)
LAYERS_PER_RANK = {"torchtitan": 8, "automodel": 16}  # the paced rank's decoder layers (estimate: most loaded stage)


def rank_actions(rank: int, p: int, v: int, m: int) -> list[tuple[str, int, int] | None]:
    """One rank's time steps in torch's Interleaved1F1B table: ("F" | "B", stage, micro-batch) or None (idle)."""
    rounds = max(1, m // p)
    per_round = m // rounds
    warmup = min((v - 1) * per_round + 2 * (p - 1 - rank), m * v)
    steady = v * m - warmup

    def fwd_stage(step: int) -> int:
        return (step // per_round) % v * p + rank

    def bwd_stage(step: int) -> int:
        return (v - 1 - ((step - warmup) // per_round) % v) * p + rank

    done: dict[tuple[str, int], int] = {}

    def act(kind: str, stage: int) -> tuple[str, int, int]:
        i = done.get((kind, stage), 0)
        done[(kind, stage)] = i + 1
        return (kind, stage, i)

    out: list[tuple[str, int, int] | None] = [None] * rank
    for step in range(warmup + steady + warmup):
        if step < warmup:
            out.append(act("F", fwd_stage(step)))
            if step == warmup - 1:  # wait for the first backward to come back up
                out.extend([None] * ((v * p + 2 * (p - 1 - rank)) - (warmup + rank)))
        elif step < warmup + steady:
            out.append(act("F", fwd_stage(step)))
            out.append(act("B", bwd_stage(step)))
        else:
            out.append(None)
            out.append(act("B", bwd_stage(step)))
    return out


def schedule_times(p: int, v: int, m: int, bwd_over_fwd: float) -> tuple[float, float, float]:
    """(event-driven, lock-step, one rank's work) in forward units for the whole table."""
    table = {r: rank_actions(r, p, v, m) for r in range(p)}
    last = p * v - 1

    def dur(a: tuple[str, int, int]) -> float:
        return 1.0 if a[0] == "F" else bwd_over_fwd

    def needs(a: tuple[str, int, int]) -> tuple[str, int, int] | None:
        kind, stage, i = a
        if kind == "F":
            return None if stage == 0 else ("F", stage - 1, i)
        return ("F", stage, i) if stage == last else ("B", stage + 1, i)

    finish: dict[tuple[str, int, int], float] = {}
    clock = dict.fromkeys(table, 0.0)
    todo = {r: [a for a in acts if a] for r, acts in table.items()}
    while any(todo.values()):
        moved = False
        for r, acts in todo.items():
            while acts and (needs(acts[0]) is None or needs(acts[0]) in finish):
                a = acts.pop(0)
                dep = needs(a)
                clock[r] = max(clock[r], finish[dep] if dep else 0.0) + dur(a)
                finish[a] = clock[r]
                moved = True
        if not moved:
            raise RuntimeError("the table deadlocks")
    steps = max(len(acts) for acts in table.values())
    lock = sum(max((dur(acts[t]) for acts in table.values() if t < len(acts) and acts[t]), default=0.0)
               for t in range(steps))
    work = max(sum(dur(a) for a in acts if a) for acts in table.values())
    return max(clock.values()), lock, work


def _rows() -> list[dict[str, str]]:
    out = []
    for name, ids in ROWS.items():
        out += [r for r in csv.DictReader((DATA / name).open(encoding="utf-8")) if r["id"] in ids]
    return out


def layer_times(row: dict[str, str], result: dict[str, Any], measured: float, predicted: float) -> tuple[float, float]:
    """(measured, modelled) seconds a decoder layer and micro-batch on the paced rank."""
    t = result["time"]
    parts = t["breakdown_s"]
    work = sum(parts.get(k, 0.0) for k in ("compute", "tp_comm", "cp_comm", "ep_comm"))
    bubble = 1.0 + parts.get("pp_bubble", 0.0) / work
    fixed = sum(parts.get(k, 0.0) for k in ("dp_comm", "pp_comm", "optimizer"))
    step = t["step_s"] * predicted / measured
    n = t["micro_batches"] * LAYERS_PER_RANK["torchtitan" if row["id"].startswith("torchtitan") else "automodel"]
    return (step - fixed) / bubble / n, work / n


def main() -> None:
    print(f"torch Interleaved1F1B table, PP {PP}, {STAGES_PER_RANK} stages a rank, {MICRO_BATCHES} micro-batches "
          f"(charged 1 + (p - 1) / (v m) = {1 + (PP - 1) / (STAGES_PER_RANK * MICRO_BATCHES):.3f}):")
    for ratio in (2.0, 3.0, 4.0):
        ideal, lock, work = schedule_times(PP, STAGES_PER_RANK, MICRO_BATCHES, ratio)
        print(f"  backward {ratio:.0f}x forward: event-driven {ideal / work:.3f}, lock-step {lock / work:.3f}")
    print("a decoder layer and micro-batch on the paced rank (ms; measured = the row's step less DP / PP / optimizer,"
          " over the bubble):")
    for c, res, row in ph.estimate_rows(_rows()):
        meas, model = layer_times(row, res, c.measured, c.predicted)
        print(f"  {c.row_id:50s} measured {1e3 * meas:6.1f}  modelled {1e3 * model:6.1f}  ratio {meas / model:.2f}")


if __name__ == "__main__":
    main()
