"""Held-out check on published runs added 2026-12-07 (forty-eighth batch; nothing fitted on them), sources no benchmark
held for these runs:

(1) NVIDIA/Megatron-LM issue 756 (2024-04): Mixtral 8x7B pre-training (continued from the converted weights) on 16 H100
with Megatron-LM at ba773259, TP 2 x EP 8 x DP 8, the alltoall dispatcher and grouped GEMM, no recompute: the logged
iteration times of the thread's second run (about 230 TFLOP/s a GPU) and its 'after 1 iterations' memory line (the
first megatron/moe allocated peak of a user's run on Hopper). The sequence (2,048) from Megatron's own logged FLOP/s
over the logged step; the micro-batch and the distributed optimizer from the MoE README's script the run's dump matches.
Data: benchmarks/data/heldout_2027v_megatron_issues.csv (docs/known-gaps.md 302 (a), (b)).

(2) nagarajankarthik/paip W2D3/distributed_training.md at 453a3c16 (AI Singapore's PAIP pre-training course, one
participant's logged answers): Megatron-Bridge's Qwen3-4B pre-training config with the repository's override yaml in the
NeMo 25.11 container on 1-4 H200: the step (mean of iterations 2-10) at GBS 16-64, MBS 1-8, full recompute,
16,384 tokens, DDP and Megatron-FSDP on 1, 2 and 4 GPUs, and the allocated memory after the first step. Confidence low:
the source's repeat spread is 10-20% (302 (d)); Megatron-FSDP's optim / optim_grads sharding refused (no job field),
the selective-recompute run too (the committed yaml cannot make it: 302 (f)).
Data: benchmarks/data/heldout_2027v_paip_h200.csv (302 (c), (d)).

Each file in heldout_pretrain.csv's columns plus `method` and `refused` (perf_heldout.job_of builds each job; every
setting a source does not state is in the row's `assumed` column with where it was read).

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, per source and for the batch
time and memory MAPE.

Sign: (predicted - published) / published; + = predicted too fast (a rate) or too slow (a step), too large (memory).

Run: python benchmarks/perf_heldout74.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import print_parts, summary_lines

DATA = Path(__file__).resolve().parent / "data"
ISSUE_ROWS, PAIP_ROWS = DATA / "heldout_2027v_megatron_issues.csv", DATA / "heldout_2027v_paip_h200.csv"
SOURCES = (("(1) Megatron-LM issue 756, Mixtral 8x7B on 16 H100 (TP 2 x EP 8, 2024-04)", "mlm756_"),
           ("(2) PAIP course, Megatron-Bridge Qwen3-4B on 1-4 H200 (NeMo 25.11)", "paip_"))

BATCH = ph.Batch((ISSUE_ROWS, PAIP_ROWS), (ph.MODELS,))
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout74")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout74")))


if __name__ == "__main__":
    main()
