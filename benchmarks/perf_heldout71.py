"""Held-out check on published runs added 2026-12-07 (forty-fifth batch: pre-training on NVIDIA parts; nothing is fitted
on them):

(1) FlashAttention's own GPT-3 training (Dao-AILab/flash-attention training/README.md 'Training speed', added at
4a6eaa9f, 2022-11-29, unchanged since): GPT-3 125M / 355M / 760M / 1.3B / 2.7B (head dim 128) on The Pile, one node of 8
A100-SXM4-80GB, sequence 2,048, bf16 autocast, FlashAttention v1 with the repository's fused MLP, dropout-add-LayerNorm
and cross-entropy kernels, no activation checkpointing; DDP (125M, 355M) or DDP with torch's ZeroRedundancyOptimizer
(760M and up). The figure is the node's tokens a second (metric tokens_per_s_per_gpu: it over 8). Each row's batch is
the experiment config at the same commit (configs/experiment/pile/*.yaml, their A100-80GB branch).

Data: benchmarks/data/heldout_2027s_flashattn_gpt3.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each
job; every setting the source does not state is in the row's `assumed` column with the file and commit it was read
from); models that are not presets in benchmarks/data/heldout_2027s_models.yaml.

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, each source's time figures,
the batch's.

Sign: (predicted - published) / published of the row's rate: + = predicted too fast.

Run: python benchmarks/perf_heldout71.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import Case, mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
FLASHATTN_ROWS = DATA / "heldout_2027s_flashattn_gpt3.csv"
MODELS = DATA / "heldout_2027s_models.yaml"
# (title, the row-id prefix of a source), printed in this order
SOURCES = (("(1) FlashAttention training GPT-3 125M-2.7B on 8 A100-80GB (2022-11)", "fa_"),)

BATCH = ph.Batch((FLASHATTN_ROWS,), (ph.MODELS, MODELS))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def part(run: ph.Run, prefix: str) -> ph.Run:
    """The rows of one source (its row-id prefix)."""
    return [t for t in run if t[2]["id"].startswith(prefix)]


def timed(run: ph.Run) -> ph.Run:
    """The rows of a time metric (a rate or a step)."""
    return [t for t in run if t[2]["metric"] not in ph.MEMORY_METRICS]


def row_line(c: Case, result: dict[str, Any], r: dict[str, str]) -> str:
    """A scored row as perf_heldout.step_line prints it, its figures to four digits and its metric; a refused one with
    the estimator's error."""
    if c.skipped:
        return f"  {c.row_id:44s} {c.skipped}"
    terms = ", ".join(f"{k} {v:.3f}" for k, v in result["time"]["breakdown_s"].items() if v > 0.0005)
    return (f"  {c.row_id:44s} {c.measured:8.4g} {c.predicted:8.4g} ({100 * c.err:+6.1f}%) {r['metric']}; step "
            f"{result['time']['step_s']:.3f} s: {terms}")


def main() -> None:
    run = run_all()
    for title, prefix in SOURCES:
        print(f"{title}: published, predicted, error (held out, nothing fitted):")
        for c, res, r in part(run, prefix):
            print(row_line(c, res, r))
    print_fits(fits(), "perf_heldout71")
    for title, prefix in SOURCES:
        scored, refused = ph.scored_refused(timed(part(run, prefix)))
        figure = f"MAPE {mape(scored):.1f}% (median {ph.median_pct(scored):+.1f}%)" if scored else "none scored"
        print(f"{title.split(' on ')[0]} time: n={len(scored)} {figure}; refused {len(refused)}")
    print(ph.time_summary("perf_heldout71", timed(run)))


if __name__ == "__main__":
    main()
