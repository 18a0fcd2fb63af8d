"""Held-out check on published runs added 2026-12-04 (fourth batch; nothing is fitted on them): runs no other benchmark
holds, each stated as the authors wrote it.

Data: benchmarks/data/heldout_2026e.csv, in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job, so a
row reads as a user's job file; every assumed setting is in its `assumed` column):
- torchtitan PR 1690 "[Qwen3] Add 32b training configs" (merged 2025-09-17 as d66b72a6a, whose commit message holds the
  PR text): Qwen3 32B on 8-64 H100 96 GB ("a preset for 8 H100 GPUs (with 96GiB memory)", the toml says), seq 4,096,
  FSDP 8 / 16 and FSDP x TP 4 / 8 at local batch 1-32, full AC, eager (one row compiled): one logged line each, tokens/s
  and peak memory. The power limit is not stated: the same team's Grand Teton H100 (96 GB, 500 W) taken
  (benchmarks/data/grand_teton_h100_overlay.yaml, as perf_heldout's torchtitan rows); `medium`.
Left out (the source does not state enough to run; docs/known-gaps.md 57 (l)):
- the rows of that PR that ran out of memory (no figure).

Printed: each row (published, predicted, error), per-source MAPE, the worst rows with the estimate's time breakdown,
the compile / eager gain at one layout, refused rows (each a bug: these runs were made) and rows whose measured run
the memory estimate says does not fit.

Sign: (predicted - published) / published; for tokens/s + = predicted too fast, for memory + = predicted too large.

Run: python benchmarks/perf_heldout29.py
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import yaml

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, mape

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026e.csv"


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def run_all() -> list[tuple[Case, dict[str, Any], dict[str, str]]]:
    """(case, the estimate's result or {} when refused, row) for every row, in file order."""
    models = yaml.safe_load(ph.MODELS.read_text(encoding="utf-8"))
    catalogs: dict[str, Any] = {}
    return [(*ph.estimate_row(r, models, catalogs, ph.predicted_metric), r) for r in rows()]


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    cs = [c for c, _, _ in run]
    timed = [c for c in cs if c.metric not in ph.MEMORY_METRICS]
    print(f"\nHeld-out runs, fourth batch (nothing fitted): time n={len(timed)} MAPE {mape(timed):.1f}%")
    for source, group in p28.by_source(cs).items():
        n_ok = sum(not c.skipped for c in group)
        worst = max((abs(c.err) for c in group if not c.skipped), default=math.nan)
        print(f"  {source:52s} n={n_ok:2d}/{len(group):2d} MAPE {mape(group):5.1f}%  worst {100 * worst:5.1f}%")
    print("worst time rows, with the estimate's step:")
    done = [(c, res) for c, res, _ in run if not c.skipped and c.metric not in ph.MEMORY_METRICS]
    for c, res in sorted(done, key=lambda cr: -abs(cr[0].err))[:5]:
        print(f"  {c.row_id:58s} {c.err:+7.1%}  {p28.breakdown(res)}")
    print("torch.compile on / off throughput at one layout (measured vs predicted):")
    for row_id, meas, pred in p28.option_pairs(run, "torch_compile", "true", "false"):
        print(f"  {row_id:58s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    refused = [c for c in cs if c.skipped]
    print(f"refused rows (runs that were made: each is a bug): {len(refused)}")
    for c in refused:
        print(f"  {c.row_id}: {c.skipped}")
    unfit = [c.row_id for c, res, _ in run if res and not res["memory"]["fits"]]
    print(f"rows whose measured run the memory estimate says does not fit: {len(unfit)}")
    for rid in unfit:
        print(f"  {rid}")


if __name__ == "__main__":
    main()
