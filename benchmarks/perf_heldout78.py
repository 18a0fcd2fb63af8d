"""Held-out check on published runs added 2026-12-07 (fifty-second batch; nothing fitted on them), from the release
of a held source whose Nemotron-4 tables no benchmark held:

NVIDIA's dgxc-benchmarking release v25.05.05 (commit c5c765f, 2025-10-22; the tables unchanged since v25.05, commit
68eaf7e, 2025-06-10), nemotron/README.md, NeMo 25.04.00 (NeMo b4148d21, Megatron-LM 7094270c), 4,096 tokens,
Nemotron-4 pre-training on synthetic data, the figure the mean step of iterations 11-44:
(1) 'GB200 Performance', weak scaling: Nemotron-4 340B on 128 / 256 / 512 GB200 (NVL72 trays of 4), BF16 and FP8
    (delayed scaling), TP 8 x PP 4 x VP 12, MBS 1, global batch GPUs / 4, per-layer CUDA graphs, TP overlap on;
(2) the same tables' strong scaling: global batch 512 on 128 / 256 / 512 GB200 (128 down to 32 micro-batches a
    pipeline);
(3) 'H100 Performance': Nemotron-4 15B on 16 H100 (TP 2, MBS 2) and 340B on 256 H100 (TP 8 x PP 8 x VP 12), BF16 and
    FP8, global batch 64: the layouts of v25.04's rows (perf_heldout's dgxc_v25.04_nemotron4_*, NeMo 25.02.01)
    measured again a release later, kept as their own source.
The README's 15B GB200 launch settings (TP 1) have no published figure; its MFU and days-to-train lines are derived
from the step and are not scored.

Data: benchmarks/data/heldout_2027z_dgxc_nemotron4.csv (the models are heldout_models.yaml's nemotron-4-15b / -340b),
in heldout_pretrain.csv's columns plus `method` and `refused` (perf_heldout.job_of builds each job; every setting the
source does not state is in the row's `assumed` column). Each row is tokens/s a GPU: the README's tokens/s (4,096 x
global batch / step) over the GPUs.

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, per source and for the batch
time MAPE (the batch publishes no peak memory: its memory line says so).

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout78.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import print_parts, summary_lines

DATA = Path(__file__).resolve().parent / "data"
DGXC_ROWS = DATA / "heldout_2027z_dgxc_nemotron4.csv"
SOURCES = (("(1) dgxc-benchmarking v25.05 weak scaling, Nemotron-4 340B BF16 / FP8 on 128-512 GB200 (NeMo 25.04, 2025-06)",
            "heldout_2027z_dgxc_gb200_weak_"),
           ("(2) dgxc-benchmarking v25.05 strong scaling at GBS 512, Nemotron-4 340B BF16 / FP8 on 128-512 GB200",
            "heldout_2027z_dgxc_gb200_strong_"),
           ("(3) dgxc-benchmarking v25.05 H100 tables, Nemotron-4 15B / 340B on 16 / 256 H100 (v25.04's layouts)",
            "heldout_2027z_dgxc_h100_"))

BATCH = ph.Batch((DGXC_ROWS,), (ph.MODELS,), ph.predicted_metric)
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout78")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout78")))


if __name__ == "__main__":
    main()
