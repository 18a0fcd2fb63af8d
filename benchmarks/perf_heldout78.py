"""Held-out check on published runs added 2026-12-07 (fifty-second batch; nothing fitted on them), from the release
of a held source whose Nemotron-4 tables no benchmark held, and from a cluster operator's runs of its later recipes:

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

(4) Together AI's B200 cluster (8 B200 a node, 400 Gb/s InfiniBand a GPU) running dgxc-benchmarking's later
    Nemotron-4 recipes, 2026-04 (togethercomputer/together-dgxc-benchmarking at d275be99): the 15B (TP 1, MBS 2, the
    recipe of NeMo 25.09 run in the 26.02 container) in BF16 on 64 / 256 GPUs and FP8 (current scaling) on 64 and on
    256 at global batch 512-2,560, two of them at TP 2; each step as printed; and the 340B (TP 8 x PP 4 x VP 12, GBS
    64, NeMo 25.07.01) on 256 GPUs in BF16 and FP8, whose TFLOP/s a GPU alone is printed. Left out: the NVLS run (a
    NCCL algorithm the job does not state), the profiler reruns and repeats (named in the kept rows' locators), the MoE
    and Megatron-Bridge models of the same files.

Data: benchmarks/data/heldout_2027z_dgxc_nemotron4.csv (1)-(3) and heldout_2027z_together_b200.csv (4) (the models
are heldout_models.yaml's nemotron-4-15b / -340b), in heldout_pretrain.csv's columns plus `method` and `refused`
(perf_heldout.job_of builds each job; every setting the source does not state is in the row's `assumed` column).
The rows are tokens/s a GPU (the README's tokens/s over the GPUs; Together's 4,096 x global batch / printed step over
the GPUs) but the 340B's on B200, NeMo 25.07's logged model TFLOP/s a GPU (metric nemo_nemotron_tflops_per_gpu: the
estimated step read back through nemotron_flops).

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, per source and for the batch
time MAPE (the batch publishes no peak memory: its memory line says so).

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout78.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import print_parts, summary_lines

DATA = Path(__file__).resolve().parent / "data"
DGXC_ROWS = DATA / "heldout_2027z_dgxc_nemotron4.csv"
TOGETHER_ROWS = DATA / "heldout_2027z_together_b200.csv"
SOURCES = (("(1) dgxc-benchmarking v25.05 weak scaling, Nemotron-4 340B BF16 / FP8 on 128-512 GB200 (NeMo 25.04, 2025-06)",
            "heldout_2027z_dgxc_gb200_weak_"),
           ("(2) dgxc-benchmarking v25.05 strong scaling at GBS 512, Nemotron-4 340B BF16 / FP8 on 128-512 GB200",
            "heldout_2027z_dgxc_gb200_strong_"),
           ("(3) dgxc-benchmarking v25.05 H100 tables, Nemotron-4 15B / 340B on 16 / 256 H100 (v25.04's layouts)",
            "heldout_2027z_dgxc_h100_"),
           ("(4) Together AI B200 runs of dgxc's Nemotron-4 recipes, 15B / 340B on 64-256 B200 (2026-04)",
            "heldout_2027z_together_b200_"))
NEMOTRON_METRIC = "nemo_nemotron_tflops_per_gpu"


def nemotron_flops(batch: float, seq: float, model: Any) -> float:
    """Model FLOPs a step as NeMo 25.07 logs them for the Nemotron family (NVIDIA/NeMo nemo/utils/flops_formulas.py
    nemotron at v2.4.0, 2025-07-25): b s L h^2 (12 + 12 g / a + 12 ffn / h + 12 s / h + 6 V / (L h)): a two-matrix MLP,
    attention non-causal, V = 256,000 (the dgxc README's Notes give the same count)."""
    return batch * seq * model.layers * model.hidden**2 * (
        12.0 + 12.0 * model.kv_heads / model.heads + 12.0 * model.ffn / model.hidden + 12.0 * seq / model.hidden
        + 6.0 * model.vocab / (model.layers * model.hidden))


def predict(row: dict[str, str], result: dict[str, Any], model: Any) -> float:
    """The row's figure from the estimate: NeMo's logged Nemotron TFLOP/s a GPU over the estimated step, else
    perf_heldout.predicted_metric."""
    if row["metric"] != NEMOTRON_METRIC:
        return ph.predicted_metric(row, result, model)
    flops = nemotron_flops(int(row["global_batch_seqs"]), int(row["seq_len"]), model)
    return flops / float(result["time"]["step_s"]) / int(row["gpu_count"]) / 1e12


BATCH = ph.Batch((DGXC_ROWS, TOGETHER_ROWS), (ph.MODELS,), predict)
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout78")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout78")))


if __name__ == "__main__":
    main()
