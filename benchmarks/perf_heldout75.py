"""Held-out check on published runs added 2026-12-07 (forty-ninth batch; nothing fitted on them), sources no benchmark
held for these runs:

(1) NeMo AutoModel's LoRA lines under pipeline parallelism (NVIDIA-NeMo/Automodel docs/performance-summary.md,
'Finetuning (LoRA) Performance', DGX-H100 BF16), as the table printed them from 2025-11-12 (b3c51c328) until 2026-04-10
(2013a4dd6) replaced every line with the TP 2 x FSDP layouts perf_heldout26 holds: Llama 3.3 70B at TP 2 x PP 4 x VP 10
on 8 and 16 GPUs, each at two software states (the first figures and those of 822effa16, 2026-01-28: AutoModel's Llama
with Transformer Engine's RMSNorm and a cached RoPE table), and Qwen2.5-32B at PP 4 x VP 8 on 8 and 16 GPUs. Each row
is stated from the config of the commit that printed its figure (examples/llm_finetune/*/..._peft_benchmark*.yaml):
AutoPipeline's interleaved 1F1B, one micro-batch of one sequence, a pipeline schedule per local batch (strategy
local_batch), full activation checkpointing, LoRA dim 16 on every linear layer (AutoModel's eager LinearLoRA). The
first rows of the held-out set where LoRA runs under a torch pipeline schedule.
Data: benchmarks/data/heldout_2027w_automodel_pp.csv (docs/known-gaps.md 309 (a)).

(2) NeMo Megatron's GPT-3 scaling tables on DGX A100 80GB (NVIDIA/NeMo-Framework-Launcher README.md, 'Training
Performance Results', 2022; removed from the README in 2023): GPT-3 5B on 1-32 nodes and 175B on 8-128 nodes as the
22.08 release printed them (3579cdb3, 2022-09-07), and the tables they replaced (5B on 1-20 nodes, b20f85d4 2022-06-03;
175B on 16-128 nodes, d4317ddd 2022-07-14). Each row from the launcher's config of its model at the table's commit
(conf/training/gpt3/5b.yaml, 175b.yaml): 5B at TP 2 (June) or TP 1 (August) without recompute, 175B at TP 8 x PP 8
with sequence parallelism and selective recompute, micro-batch 2, the config's global batch at every node count, Apex
FusedAdam (June / July) or DistributedFusedAdam (August). megatron/dense on Ampere from NVIDIA's own 2022 stack beside
the Megatron-LM papers of the development set. The two 175B tables disagree: at one layout the August rate a GPU is
0.72x the July one (309 (d)).
Data: benchmarks/data/heldout_2027w_nemo_launcher_a100.csv; GPT-3 175B as NeMo padded its vocabulary in
benchmarks/data/heldout_2027w_models.yaml.

Each file in heldout_pretrain.csv's columns plus `method` and `refused` (perf_heldout.job_of builds each job; LoRA rank,
targets, implementation and dropout in strategy_extra; every setting a source does not state is in the row's `assumed`
column with where it was read).

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, per source and for the batch
time MAPE.

Sign: (predicted - published) / published; + = predicted too fast (a rate) or too slow (a step), too large (memory).

Run: python benchmarks/perf_heldout75.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import print_parts, summary_lines

DATA = Path(__file__).resolve().parent / "data"
AUTOMODEL_ROWS, LAUNCHER_ROWS = DATA / "heldout_2027w_automodel_pp.csv", DATA / "heldout_2027w_nemo_launcher_a100.csv"
SOURCES = (("(1) NeMo AutoModel LoRA at TP x PP x VP, Llama 3.3 70B / Qwen2.5-32B on 8-16 H100 (2025-11 .. 2026-01)",
            "am_"),
           ("(2) NeMo Megatron launcher README, GPT-3 5B / 175B on 8-1,024 A100 (2022-06 .. 2022-09)", "nemo22"))

BATCH = ph.Batch((AUTOMODEL_ROWS, LAUNCHER_ROWS), (ph.MODELS, DATA / "heldout_2027w_models.yaml"))
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout75")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout75")))


if __name__ == "__main__":
    main()
