"""Held-out check on published runs added 2026-12-04 (sixth batch; nothing is fitted on them): the sharded-data-parallel
stacks fine-tuning teams run, on several Hopper hosts, where the held-out set had no rows (docs/known-gaps.md 66 (a)).
Each row is stated as the authors wrote it.

Data: benchmarks/data/heldout_2026g_*.csv, in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job; every
assumed setting is in its `assumed` column):
- heldout_2026g_zero3.csv: DeepSpeed's DeepCompile benchmark (deepspeedai/DeepSpeedExamples benchmarks/deepcompile at
  b76c7ccd, 2025-04-15; the DeepSpeed blog blogs/deepcompile): Hugging Face Llama-3-70B and Mixtral-8x7B on 4 nodes of
  8 H100 through accelerate, DeepSpeed ZeRO-3 (>= 0.16.6, eager) and accelerate's FSDP1 (FULL_SHARD), full activation
  checkpointing, micro-batch 1 / 2 / 4 at 512 / 1,024 / 2,048 tokens, and ZeRO-3 at 2-16 accumulation steps: tokens/s
  a GPU read off the benchmark's own charts. The network is not stated (written as 8 x NDR 400 a node).
- heldout_2026g_fms.csv: IBM / PyTorch FMS-FSDP (pytorch.org blog 2024-03-13, fms-fsdp README at ed74fd5dd): Llama 2
  7B / 34B / 70B under PyTorch FSDP1 (HSDP for 7B) on 128 A100 and 96 H100, batch 2 x 4,096 a GPU, eager, and the 7B
  rows with torch.compile. Rows at an unstated selective-checkpointing ratio (13B; the README's compiled 13B-70B) are
  left out.

Printed: each row (published, predicted, error), per-source MAPE, the worst rows with the estimate's step breakdown,
the ZeRO-3 / FSDP pair at one layout (measured and predicted ratio), the DeepCompile rows in seconds a micro-batch
(measured, estimate, missing) and ZeRO-3 less FSDP in seconds, refused rows (each a bug: these runs were made).

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout31.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import perf_heldout as ph
import perf_heldout28 as p28
import perf_heldout56 as p56
from harness import Case

DATA = Path(__file__).resolve().parent / "data"
FILES = (DATA / "heldout_2026g_zero3.csv", DATA / "heldout_2026g_fms.csv")
BATCH = ph.Batch(FILES)
rows, run_all = BATCH.rows, BATCH.run_all


def zero3_over_fsdp(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float]]:
    """(ZeRO-3 row id, measured, predicted ZeRO-3 / FSDP rate) for rows that differ only in the sharding engine."""
    def key(r: dict[str, str]) -> tuple:
        return (r["model"], r["micro_batch"], r["seq_len"], r["global_batch_seqs"])
    done = [(c, r) for c, res, r in run if res]
    fsdp = {key(r): c for c, r in done if "fsdp=full" in r["strategy_extra"] and r["framework"] == "hf"}
    return [(r["id"], c.measured / fsdp[key(r)].measured, c.predicted / fsdp[key(r)].predicted)
            for c, r in done if "zero=3" in r["strategy_extra"] and key(r) in fsdp]


def seconds_per_micro_batch(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float]]:
    """(row id, measured, predicted seconds a micro-batch) for the DeepCompile rows: a GPU's tokens a micro-batch
    (micro_batch x seq_len) over its tokens/s, the step's own share spread over its micro-batches as the runs' rate
    spreads it. What the estimate misses in seconds a micro-batch, read across micro-batch sizes and accumulation
    steps, tells a cost paid every micro-batch and flat in the tokens from one that scales (docs/known-gaps.md 206, 215)."""
    return [(r["id"], tokens / c.measured, tokens / c.predicted)
            for c, res, r in run if res and r["id"].startswith("dc_")
            for tokens in (float(r["micro_batch"]) * float(r["seq_len"]),)]


def serial_seconds(rs: list[dict[str, str]]) -> dict[str, tuple[float, float]]:
    """{row id: (serial, host)} seconds a micro-batch for the DeepCompile ZeRO-3 rows of `rs`: the estimate's GPU time
    with none of ZeRO-3's collectives hidden behind compute (step_s - zero3_hooks - dp_comm + dp_comm_serial,
    step_time._dp_comm_zero3, over the step's micro-batches), what the rows' excess over the estimate is read against
    (docs/known-gaps.md 226), and the host time the estimate counts for DeepSpeed's hooks and the layers' own issue
    (zero3_host, step_time._deepspeed_hook_excess: 262 (a))."""
    from trainsizer.estimate.step_time import step_time_arrays

    models = ph.model_data(ph.MODELS)
    cat = ph.load_catalog()
    out = {}
    for r in rs:
        if not r["id"].startswith("dc_") or "zero=3" not in r["strategy_extra"] or r["overlay"]:
            continue
        sc = ph.resolve_job(ph.job_of(r, models), cat)
        a = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in
             step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()}
        m = a["micro_batches"]
        out[r["id"]] = ((a["step_s"] - a["zero3_hooks"] - a["dp_comm"] + a["dp_comm_serial"]) / m, a["zero3_host"] / m)
    return out


def zero3_minus_fsdp_s(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float]]:
    """(ZeRO-3 row id, measured, predicted seconds a micro-batch of ZeRO-3 less FSDP1) at the layouts both engines ran:
    the engines' difference in seconds, where `zero3_over_fsdp` gives it as a rate ratio."""
    sec = {rid: (meas, pred) for rid, meas, pred in seconds_per_micro_batch(run)}
    return [(zid, sec[zid][0] - sec[fid][0], sec[zid][1] - sec[fid][1])
            for zid in sec if "_zero-3_" in zid and (fid := zid.replace("_zero-3_", "_fsdp_")) in sec]


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, sixth batch (nothing fitted)", 58)
    print("ZeRO-3 over FSDP at one layout (measured vs predicted):")
    for row_id, meas, pred in zero3_over_fsdp(run):
        print(f"  {row_id:58s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    print("DeepCompile rows, seconds a micro-batch (measured, estimate, what the estimate misses):")
    serial = serial_seconds(rows())
    for row_id, meas, pred in seconds_per_micro_batch(run):
        sum_s, host = serial.get(row_id, (0.0, 0.0))
        floor = p56.implied_floor(meas, sum_s) if row_id in serial else None
        over = (f"  serial {sum_s:6.3f} over it {meas - sum_s:+6.3f}"
                + ("" if floor is None else f"  floor {floor:6.3f} host {host:6.3f}")) if row_id in serial else ""
        print(f"  {row_id:58s} measured {meas:6.3f} estimate {pred:6.3f}  missing {meas - pred:+6.3f}{over}")
    print("ZeRO-3 less FSDP at one layout, seconds a micro-batch (measured vs estimate):")
    for row_id, meas, pred in zero3_minus_fsdp_s(run):
        print(f"  {row_id:58s} measured {meas:+6.3f} estimate {pred:+6.3f}")
    p28.print_pairs_and_refusals(run)


if __name__ == "__main__":
    main()
