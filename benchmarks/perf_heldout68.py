"""Held-out check on published runs added 2026-12-06 (forty-second batch: fine-tuning under ms-swift, DPO, MoE and the H20
among it; nothing is fitted on them), one source no benchmark held for these runs:

ModelScope ms-swift's example scripts (modelscope/ms-swift examples/megatron and examples/train, read at 3602360a5,
2026-08-22), each stating the peak memory a GPU (and often the seconds a step) its run logged: 'N * X GiB'. Each row is
read at the commit that wrote its figure (git blame of the comment line) with the script and its defaults
(swift/megatron/argument/megatron_args.py, swift/llm/ds_config/zero3.json) as they stood there. Scored: the packed runs
(rows of 8,192 or 16,384 tokens), whose peak does not hang on the datasets' unstated lengths.
(1) Megatron-SWIFT (Megatron-Core): full DPO of Qwen3-4B and of Qwen3-30B-A3B (expert parallel, optimizer on the host),
full SFT of Qwen1.5-MoE-A2.7B, Moonlight-16B-A3B (pipeline 2 x expert 4), Qwen3-30B-A3B (optimizer on the host; TP 4 x
PP 2 x EP 4 with expert TP 1 through Mcore-Bridge) and Qwen2.5-72B (TP 8, optimizer on the host); the scripts that name
their card, all H20: the FP8 benchmark (Qwen3-14B, FP8 blockwise and BF16) and the FlashAttention-3 script (Qwen3-30B-A3B
LoRA, EP 4, FlashAttention-2 and -3), memory and seconds a step.
(2) `swift sft` / `swift rlhf` (transformers, TRL, DeepSpeed ZeRO-3): full SFT of Qwen2.5-7B with Liger's kernels (the
FlashAttention-3 script on 4 H20 at 16,384 tokens, memory and seconds a step; the cached-dataset script at 8,192, memory)
and full DPO of Qwen2.5-7B-Instruct packed at 8,192 (memory).
The other scripts' seconds are not scored (their card is not named). Refused with the reason (the `refused` column): KTO
(no estimate method), LoRA DPO (the dpo method trains every weight beside a separate reference), a figure that is the
whole card, and the run perf_heldout32 already scores. The unpacked scripts (their peak set by the longest samples of
datasets whose lengths are not stated) and the multimodal, reward-model, embedding and reranker ones are not rows
(docs/known-gaps.md 266 (d)).

Memory: ms-swift logs memory(GiB) = torch.cuda.max_memory_reserved() / 1024**3 (Megatron-SWIFT: swift/megatron/trainers/
base.py, the max over the model-parallel group; the HF trainer: swift/trainers/mixin.py get_max_cuda_memory); the comment
is read as that log, so the metric is peak_memory_gib (the estimate less the CUDA context and NCCL's buffers). Time: s/it,
one optimizer step (step_time_s).

Data: benchmarks/data/heldout_2027p_mswift.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job;
`lora_rank` / `lora_targets` in strategy_extra give a LoRA row its adapters) plus `method` (full, lora or dpo: the job's
method), `refused` (why a row is not estimated) and `published` (the script's comment as written); every setting the
script does not state is in the row's `assumed` column.

Printed: each row (published, predicted, error, the estimate's largest memory items or step terms), per source and
metric, the FP8 / BF16 pair and the FlashAttention-3 / -2 pairs on H20 (measured and predicted), memory fits.

Sign: (predicted - published) / published; + = predicted too large (memory) or too slow (seconds a step).

Run: python benchmarks/perf_heldout68.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import perf_heldout as ph
from harness import Case, mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
MSWIFT = DATA / "heldout_2027p_mswift.csv"
BATCH = ph.Batch((MSWIFT,))
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data refuses (its `refused` column) is listed


def memory_line(c: Case, result: dict[str, Any], width: int) -> str:
    """A scored memory row with the estimate's items over 1 GiB."""
    items = ", ".join(f"{k} {v['gib']:.1f}" for k, v in result["memory"]["items"].items() if v["gib"] >= 1.0)
    return f"  {c.row_id:{width}s} {c.measured:6.1f} {c.predicted:6.1f} ({100 * c.err:+6.1f}%)  {items}"


def row_line(c: Case, result: dict[str, Any], width: int) -> str:
    """A row as printed: refused with its reason, a memory row with its items, a step row with its terms."""
    if c.skipped:
        return f"  {c.row_id:{width}s} {c.skipped}"
    if c.metric == "peak_memory_gib":
        return memory_line(c, result, width)
    terms = ", ".join(f"{k} {v:.2f}" for k, v in result["time"]["breakdown_s"].items() if v > 0.005)
    return f"  {c.row_id:{width}s} {c.measured:6.2f} {c.predicted:6.2f} ({100 * c.err:+6.1f}%)  step terms: {terms}"


def precision_pair(run: ph.Run, metric: str) -> tuple[float, float]:
    """(measured, predicted) BF16 over FP8 figure of the H20 FP8 benchmark's two Qwen3-14B runs (seconds a step or peak
    GiB)."""
    got = {r["precision"]: c for c, _, r in run if not c.skipped and c.metric == metric and r["model"] == "qwen3-14b"}
    return got["bf16"].measured / got["fp8"].measured, got["bf16"].predicted / got["fp8"].predicted


def attention_pairs(run: ph.Run) -> list[tuple[str, float, float]]:
    """(fa2 row, measured, predicted) FlashAttention-2 over FlashAttention-3 seconds a step of the H20 scripts that ran
    both (one job with attention_kernel fa2, then native)."""
    steps = {c.row_id: c for c, _, _ in run if not c.skipped and c.metric == "step_time_s"}
    return [(rid, c.measured / steps[rid.replace("_fa2_", "_fa3_")].measured,
             c.predicted / steps[rid.replace("_fa2_", "_fa3_")].predicted)
            for rid, c in steps.items() if "_fa2_" in rid and rid.replace("_fa2_", "_fa3_") in steps]


def source_lines(run: ph.Run) -> list[str]:
    """Each (source, metric)'s n, MAPE and median signed error."""
    scored = [c for c, _, _ in run if not c.skipped]
    out = []
    for key in dict.fromkeys((c.source, c.metric) for c in scored):
        sub = [c for c in scored if (c.source, c.metric) == key]
        median = 100.0 * float(np.median([c.err for c in sub]))
        out.append(f"  {key[0]:46s} {key[1]:16s} n={len(sub):2d} MAPE {mape(sub):5.1f}% (median {median:+.1f}%)")
    return out


def summary(run: ph.Run) -> str:
    """The closing line: memory and time n, MAPE and median, and the refused count."""
    parts = []
    for metric, label in (("peak_memory_gib", "memory"), ("step_time_s", "time")):
        sub = [c for c, _, _ in run if not c.skipped and c.metric == metric]
        parts.append(f"{label}: n={len(sub)} MAPE {mape(sub):.1f}% (median {100 * float(np.median([c.err for c in sub])):+.1f}%)")
    refused = sum(1 for c, _, _ in run if c.skipped)
    return "perf_heldout68 " + "; ".join(parts) + f"; refused {refused}"


def main() -> None:
    run = run_all()
    print("ms-swift example scripts (modelscope/ms-swift, 2025-06 to 2025-12): packed fine-tuning, peak reserved "
          "GiB a GPU (published, predicted, error, the estimate's items over 1 GiB) and seconds a step (held out, "
          "nothing fitted):")
    for c, res, _ in run:
        print(row_line(c, res, 44))
    print("\nper source and metric:")
    print("\n".join(source_lines(run)))
    for metric, what in (("step_time_s", "seconds a step"), ("peak_memory_gib", "peak GiB")):
        measured, predicted = precision_pair(run, metric)
        print(f"\nQwen3-14B on 8 H20, BF16 over FP8 (blockwise) {what}: measured {measured:.3f}, predicted {predicted:.3f}")
    print("\nFlashAttention-2 over FlashAttention-3 seconds a step on H20 (measured, predicted):")
    print("\n".join(f"  {rid:44s} {m:.3f} {p:.3f}" for rid, m, p in attention_pairs(run)))
    print_fits(fits(), "perf_heldout68")
    print("\n" + summary(run))


if __name__ == "__main__":
    main()
