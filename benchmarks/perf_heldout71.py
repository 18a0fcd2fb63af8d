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

Printed: each row (published, predicted, error, the estimate's step terms: perf_heldout69.row_line), memory fits, the
batch's time figures.

Sign: (predicted - published) / published of the row's rate: + = predicted too fast.

Run: python benchmarks/perf_heldout71.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import row_line, timed

DATA = Path(__file__).resolve().parent / "data"
FLASHATTN_ROWS = DATA / "heldout_2027s_flashattn_gpt3.csv"
MODELS = DATA / "heldout_2027s_models.yaml"
# (title, the row-id prefix of a source), printed in this order
SOURCES = (("(1) FlashAttention training GPT-3 125M-2.7B on 8 A100-80GB (2022-11)", "fa_"),)

BATCH = ph.Batch((FLASHATTN_ROWS,), (ph.MODELS, MODELS))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def main() -> None:
    run = run_all()
    title = SOURCES[0][0]
    print(f"{title}: published, predicted, error (held out, nothing fitted):")
    print("\n".join(row_line(*t) for t in run))
    print_fits(fits(), "perf_heldout71")
    print(ph.time_summary("perf_heldout71", timed(run)))


if __name__ == "__main__":
    main()
