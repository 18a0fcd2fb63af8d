"""Held-out check on published runs added 2026-12-07 (fiftieth batch; nothing fitted on them), from a source no
benchmark held:

Modalities' scaling tables (Modalities/modalities README.md 'Scaling Experiments', added 2024-09-04 at commit
2029c649): a PyTorch-native pre-training framework (Fraunhofer IAIS / OpenGPT-X) on two EuroHPC machines whose nodes
hold four GPUs of 64 GB: CINECA's Leonardo Booster (custom A100 64 GB, 2 x dual-port HDR a node) and BSC's
MareNostrum 5 (H100 64 GB). PyTorch FSDP1 with FULL_SHARD or HYBRID_SHARD (shard within the node of 4), BF16, no
activation checkpointing, no gradient accumulation, micro-batch 2 or 4 of 4,096 / 8,192 tokens, 4 to 1,024 GPUs; the
2.7B and 6.7B rows of the README (its 28B rows are left out: their shape is not fixed by the MFU column). Every
FULL_SHARD row is here, and the HYBRID_SHARD rows where the table's FULL_SHARD figure drops (A100 at 128 / 256 GPUs, H100
at 512 / 1,024): the pairs that show what the inter-node network costs FSDP. The first rows of the held-out set on
4-GPU nodes of 64 GB parts and the first from an HPC centre's InfiniBand HDR / NDR fabric at up to 1,024 GPUs under
plain FSDP.
Data: benchmarks/data/heldout_2027x_modalities.csv; the two models (shapes derived from the table's MFU column and
Modalities' MFU code at the table's commit) in benchmarks/data/heldout_2027x_models.yaml; the 64 GB parts through
benchmarks/data/leonardo_a100_64gb_overlay.yaml and marenostrum5_h100_64gb_overlay.yaml (docs/known-gaps.md 320).

Each file in heldout_pretrain.csv's columns plus `method` and `refused` (perf_heldout.job_of builds each job; every
setting the source does not state is in the row's `assumed` column with where it was read).

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, per source and for the batch
time MAPE.

Sign: (predicted - published) / published; + = predicted too fast (a rate) or too slow (a step), too large (memory).

Run: python benchmarks/perf_heldout76.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import print_parts, summary_lines

DATA = Path(__file__).resolve().parent / "data"
MODALITIES_ROWS = DATA / "heldout_2027x_modalities.csv"
SOURCES = (("(1) Modalities README, 2.7B / 6.7B under PyTorch FSDP on 8-256 Leonardo A100 64GB (2024-09)",
            "heldout_2027x_modalities_leonardo"),
           ("(2) Modalities README, 2.7B under PyTorch FSDP on 4-1,024 MareNostrum 5 H100 64GB (2024-09)",
            "heldout_2027x_modalities_mn5"))

BATCH = ph.Batch((MODALITIES_ROWS,), (ph.MODELS, DATA / "heldout_2027x_models.yaml"))
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout76")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout76")))


if __name__ == "__main__":
    main()
