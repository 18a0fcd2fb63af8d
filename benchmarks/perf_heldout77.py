"""Held-out check on published runs added 2026-12-07 (fifty-first batch; nothing fitted on them), from two sources no
benchmark held (the second a release of a held source whose dense GB200 tables no benchmark held):

(1)-(3) Liu et al. 2025, 'MoE Parallel Folding: Heterogeneous Parallelism Mappings for Efficient Large-Scale MoE Model Training
with Megatron Core' (arXiv:2504.14960, 2025-04-21): NVIDIA's own Megatron-Core MoE runs on the Eos H100 cluster (8 GPUs
a node, 400 Gb/s InfiniBand a GPU), BF16 (and FP8 delayed scaling for Table 2), 4,096-token sequences, token drop at
capacity factor 1. Two published models: Mixtral 8x22B (coarse-grained, 8 experts top-2) and Qwen2-57B-A14B
(fine-grained, 64 experts top-8 and a gated shared expert), each under MCore's coupled mapping (EP inside DP, expert TP
= TP) and under MoE Parallel Folding (expert TP 1, EP folded over attention's TP x DP): Table 2's Mixtral TFLOPS at 128
GPUs (BF16 and FP8, global batch 256), Table 3's Qwen2 MFU at 64 GPUs (global batch 256) and Table 4's strong scaling
of both to 1,024 GPUs (global batch 1,024). The paper's upcycled models (Llama3-8x70B, Mixtral-8x22B-G8T8: top-k and
shapes not printed), its FSDP / TP+EP+DP baselines (their implementation inside Megatron-Core not described) and its
context-scaling Table 5 (Qwen2's rows repeat Mixtral's figures cell for cell) are left out.

(4) NVIDIA's dgxc-benchmarking release v25.05.05 (commit c5c765f, 2025-10-22), llama3.1/README.md 'GB200 Performance':
Llama 3.1 405B pre-training on 128 / 256 / 512 GB200 (NVL72 trays of 4), BF16 and FP8 (delayed scaling), NeMo 25.04.01
(NeMo 6f2c6fda), TP 4 x PP 8 x CP 2 x VP 8, MBS 1, global batch GPUs / 2, 8,192 tokens, TP overlap on; tokens/s as
printed, over the GPUs. Its H100 rows (512 GPUs) are left out: they repeat v25.04's, which the development set holds.

Data: benchmarks/data/heldout_2027y_folding.csv (1)-(3) and heldout_2027y_dgxc_gb200.csv (4); Qwen2-57B-A14B in
benchmarks/data/heldout_2027y_models.yaml, Mixtral 8x22B in heldout_2027u_models.yaml.

Each file in heldout_pretrain.csv's columns plus `method` and `refused` (perf_heldout.job_of builds each job; every
setting the source does not state is in the row's `assumed` column).

The paper's rows print MFU (metric megatron_moe_mfu_pct) or TFLOP/s a GPU (megatron_moe_tflops_per_gpu): the estimate's
step is read back through megatron_moe_flops, the model FLOPs Megatron-LM logs, over the paper's 989.5 TFLOP/s peak; the
GB200 rows are tokens/s a GPU.

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, per source and for the batch
time MAPE (the batch publishes no peak memory: its memory line says so).

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout77.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import print_parts, summary_lines

DATA = Path(__file__).resolve().parent / "data"
FOLDING_ROWS = DATA / "heldout_2027y_folding.csv"
DGXC_ROWS = DATA / "heldout_2027y_dgxc_gb200.csv"
SOURCES = (("(1) MoE Parallel Folding Table 2, Mixtral 8x22B BF16 / FP8 on 128 H100 (2025-04)", "heldout_2027y_folding_t2_"),
           ("(2) MoE Parallel Folding Table 3, Qwen2-57B-A14B on 64 H100 (2025-04)", "heldout_2027y_folding_t3_"),
           ("(3) MoE Parallel Folding Table 4, strong scaling to 1,024 H100 (2025-04)", "heldout_2027y_folding_t4_"),
           ("(4) dgxc-benchmarking v25.05, Llama 3.1 405B BF16 / FP8 on 128-512 GB200 (NeMo 25.04, 2025-10)", "heldout_2027y_dgxc_"))
H100_PEAK_TFLOPS = 989.5  # the paper's s4.1 BF16 peak, its MFU denominator (Table 2 TFLOPS / Table 3 MFU = 989.5)
MOE_METRICS = ("megatron_moe_mfu_pct", "megatron_moe_tflops_per_gpu")


def megatron_moe_flops(batch: float, seq: float, model: Any) -> float:
    """Model FLOPs a step as Megatron-LM logs them for an MoE GPT (NVIDIA/Megatron-LM megatron/training/training.py
    num_floating_point_operations, MoE branch, 2025): 12 b s L h^2 x ((1 + g/a + s/h) + moe_ffn/h x top-k x 3/2 +
    shared_ffn/h x 3/2 + V/(2 L h)), i.e. NeMo's dense expression (flops.nemo_llama_flops) with the MLP width top-k x
    the routed expert's plus the shared experts'; attention non-causal, no router term."""
    width = model.experts_per_token * model.expert_ffn + model.shared_expert_ffn
    return ph.F.nemo_llama_flops(batch, seq, model.layers, model.hidden, model.kv_heads, model.heads, width,
                                 model.vocab)


def predict(row: dict[str, str], result: dict[str, Any], model: Any) -> float:
    """The row's figure from the estimate: Megatron's logged model TFLOP/s a GPU over the estimated step (or that over
    the 989.5 TFLOP/s peak, in %), else perf_heldout.predicted_metric."""
    if row["metric"] not in MOE_METRICS:
        return ph.predicted_metric(row, result, model)
    flops = megatron_moe_flops(int(row["global_batch_seqs"]), int(row["seq_len"]), model)
    tflops = flops / float(result["time"]["step_s"]) / int(row["gpu_count"]) / 1e12
    return tflops if row["metric"] == "megatron_moe_tflops_per_gpu" else 100.0 * tflops / H100_PEAK_TFLOPS


BATCH = ph.Batch((FOLDING_ROWS, DGXC_ROWS), (ph.MODELS, DATA / "heldout_2027u_models.yaml", DATA / "heldout_2027y_models.yaml"),
                 predict)
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout77")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout77")))


if __name__ == "__main__":
    main()
