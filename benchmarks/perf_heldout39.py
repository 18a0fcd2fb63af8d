"""Held-out check on published runs added 2026-12-05 (thirteenth batch; nothing is fitted on them), two sources, in
heldout_pretrain.csv's columns (perf_heldout.job_of builds each job; every setting the source does not state is named
in the row's `assumed` column):

(1) NeMo 25.07's pre-training table on DGX-GB200 (NVIDIA NeMo Framework user guide, Performance Summary, container
NeMo 25.07: the release between the 25.04 page perf_heldout holds and Megatron-Bridge 25.09, perf_heldout38's; the
page as stored shows the GB200 table's first four lines only). Data: benchmarks/data/heldout_2026n_nemo2507_gb200.csv:
Llama 3 8B (8 GPUs), Llama 3 70B (64), Llama 3.1 405B (128) and Llama 4 Scout (64, EP 16), each line an FP8 per-tensor
current-scaling figure and, in parentheses, an MXFP8 figure at its own layout (70B: Megatron FSDP vs TP 2 x PP 4 x VP 5
x CP 2; 405B: FSDP at TP 2 with 95 layers' activations offloaded vs TP 4 x PP 8 x VP 8 x CP 2). Each run's options
beyond the table from NeMo v2.4.0 (the 25.07 container's, tag 2381f42f6, 2025-07-25): scripts/performance/
recommended_model_configs/model_configs_gb200.csv (CUDA graphs, Megatron FSDP, offload) and helpers.py (current
scaling with no BF16 first / last layers, bf16 gradient reduction, TE cross-entropy; under MXFP8 the parameter
all-gather overlap off, which no job field states); Llama 4 Scout's performance recipe drops tokens at capacity 1.0,
padded (moe_pad_to_capacity). 8 rows, megatron-core style.

(2) torchtitan's NVFP4 training doc (torchtitan/components/quantization/nvfp4.md, added by PR 3914 at bcc09297a,
2026-08-05): on 4 GB200 (one tray, FSDP 4), Llama 3 8B in NVFP4 with the last 5 of 32 layers and the LM head in bf16
(bf16_layers), and Qwen3 8B (local batch 16 x 2,048) in bf16, MXFP8 (every Linear, the LM head included) and NVFP4
with its last 6 of 36 layers in bf16: tokens/s a GPU and torchtitan's logged peak reserved memory. Data:
benchmarks/data/heldout_2026n_titan_nvfp4.csv. The same doc's Llama 3 8B bf16 / MXFP8 rows are perf_heldout29's
(heldout_2026e.csv): printed beside for the NVFP4 pair, not scored here. The Qwen3 rows run varlen attention over
packed C4 documents, which the estimate times as full causal attention (named in each row). 8 rows (4 time, 4 memory).

(3) KempnerForge's MFU report (KempnerInstitute/KempnerForge benchmarks/mfu_scaling/mfu_scaling.md, added at 9f3f03a,
2026-04-05, the code at 01b461a): the Kempner Institute's PyTorch-native trainer (FSDP2 + DTensor TP with sequence-
parallel norms, whole-model torch.compile, full activation checkpointing) on 1-32 H200 141 GB in hosts of 4, Llama-3
shapes of 8B, 13B (benchmarks/data/heldout_models.yaml kempnerforge-13b) and 70B at 4,096 tokens, 14 layouts (one GPU,
FSDP 2-8, TP 2-4, TP 4 x FSDP 2-8): tokens/s a GPU and the peak allocated memory (max_memory_allocated:
peak_allocated_gib, the estimate less the CUDA context, NCCL buffers and fragmentation); and its weak-scaling report
(benchmarks/weak_scaling_160gpu/README.md at e9f91892, 2026-06-30, the code at 3ad9d9a): the 13B and 70B at TP 4 x
FSDP 2-40 on 8-160 H200, the same settings; and its 175B run (benchmarks/175b_360gpu/README.md at b62d2e36,
2026-07-03, code at 5666d0d: TP 4 x FSDP 90 on 360 H200, 8 x 4,096 a GPU, no accumulation). The model is built in bf16 (no fp32 master, bf16 AdamW moments:
optimizer_precision bf16); under TP the LM head's output is gathered to every rank for an eager bf16 cross-entropy
(strategy loss_parallel false) and the token embedding stays whole on each (embedding_parallel false), and FSDP2
skips the gradient sync on every micro-batch but the last (maybe_no_sync: unsharded fp32 gradients held; strategy
fsdp_no_sync true, fsdp full on the TP-only rows, which the code wraps over a dp_shard of 1; known-gaps 121); SDPA
with no backend forced under the lockfile's torch 2.11.0+cu128 and cuDNN 9.19 runs cuDNN's fused attention first on
H200 (attention_kernel native, known-gaps 134). Data:
benchmarks/data/heldout_2026n_kempnerforge.csv. 52 rows (26 time, 26 memory).

Refused rows: none found in these sources that a job cannot state beyond the page's truncation (Llama 4 Maverick's
line shows no figure in the stored page: not a row).

Printed: each row (published, predicted, error), per-source MAPE and the worst rows with the estimate's step; the
MXFP8 / FP8-CS ratio per NeMo line (measured vs predicted: each line's two runs differ in layout where the page says
so), the NVFP4 / MXFP8 / BF16 ratios of the torchtitan runs and, for KempnerForge, each layout's throughput over the
FSDP-only (or one-GPU) run of the same model and GPU count; refused rows and rows said not to fit.

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout39.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, mape

DATA = Path(__file__).resolve().parent / "data"
NEMO = DATA / "heldout_2026n_nemo2507_gb200.csv"
TITAN = DATA / "heldout_2026n_titan_nvfp4.csv"
KFORGE = DATA / "heldout_2026n_kempnerforge.csv"
FILES = (NEMO, TITAN, KFORGE)
BATCH = ph.Batch(FILES)
rows, run_all = BATCH.rows, BATCH.run_all
# perf_heldout29's rows of the same torchtitan doc (Llama 3 8B bf16 / MXFP8): the NVFP4 row's pair, printed only
TITAN_PAIRS = (DATA / "heldout_2026e.csv", ("torchtitan_2026-08_gb200_llama3_8b_bf16_4gpu",
                                             "torchtitan_2026-08_gb200_llama3_8b_mxfp8_4gpu"))


def cases() -> list[Case]:
    return [c for c, _, _ in run_all()]


def _pair_rows() -> list[dict[str, str]]:
    path, ids = TITAN_PAIRS
    return [r for r in csv.DictReader(path.open(encoding="utf-8")) if r["id"] in ids]


def _recipe(r: dict[str, str]) -> str:
    return r["fp8_recipe"] if r["precision"] == "fp8" else "bf16"


def ratios(run: list[tuple[Case, dict[str, Any], dict[str, str]]], over: str,
           key: tuple[str, ...]) -> list[tuple[str, str, float, float]]:
    """(row id, its recipe, measured, predicted throughput over the time row of recipe `over` that agrees on `key`):
    what a recipe gains over another within one source's line, measured and modelled."""
    timed = [(c, r) for c, _, r in run if not c.skipped and c.metric not in ph.MEMORY_METRICS]
    base = {tuple(r[k] for k in key): c for c, r in timed if _recipe(r) == over}
    out = []
    for c, r in timed:
        b = base.get(tuple(r[k] for k in key))
        if b is not None and _recipe(r) != over:
            out.append((r["id"], _recipe(r), c.measured / b.measured, c.predicted / b.predicted))
    return out


def print_ratios(title: str, pairs: list[tuple[str, str, float, float]]) -> None:
    print(title)
    for row_id, recipe, meas, pred in pairs:
        print(f"  {row_id:52s} {recipe:10s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")


def layout_ratios(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, str, float, float]]:
    """(row id, its layout, measured, predicted tokens/s a GPU over the run without TP of the same report, model and
    GPU count): what TP costs against FSDP at one scale, measured and modelled (KempnerForge's rows)."""
    def layout(r: dict[str, str]) -> str:
        return f"tp{r['tp']}"
    timed = [(c, r) for c, _, r in run if not c.skipped and c.metric not in ph.MEMORY_METRICS
             and r["source_key"].startswith("KempnerForge")]
    base = {(r["source_key"], r["model"], r["gpu_count"]): c for c, r in timed if r["tp"] == "1"}
    out = []
    for c, r in timed:
        b = base.get((r["source_key"], r["model"], r["gpu_count"]))
        if b is not None and r["tp"] != "1":
            out.append((r["id"], layout(r), c.measured / b.measured, c.predicted / b.predicted))
    return out


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, thirteenth batch (nothing fitted)", 62)
    memory = [c for c, _, _ in run if c.metric in ph.MEMORY_METRICS]
    print(f"peak memory: n={sum(not c.skipped for c in memory)} MAPE {mape(memory):.1f}%")
    nemo = [t for t in run if t[2]["source_key"].startswith("NVIDIA NeMo")]
    print_ratios("MXFP8 over FP8-CS on one NeMo 25.07 line (each run at the page's layout for it):",
                 ratios(nemo, "tensorwise", ("model", "gpu_count")))
    titan = [t for t in run if t[2]["source_key"].startswith("torchtitan")]
    titan += ph.estimate_rows(_pair_rows())
    print_ratios("torchtitan on 4 GB200, over bf16 at one model and batch (perf_heldout29's Llama 3 8B rows beside):",
                 ratios(titan, "bf16", ("model", "micro_batch")))
    print_ratios("torchtitan on 4 GB200, over MXFP8 at one model and batch:",
                 ratios(titan, "mxfp8", ("model", "micro_batch")))
    print_ratios("KempnerForge: a TP layout over the FSDP-only run of the same model and GPU count:", layout_ratios(run))
    p28.print_pairs_and_refusals(run)


if __name__ == "__main__":
    main()
