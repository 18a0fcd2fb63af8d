"""Held-out check on published runs added 2026-12-06 (thirty-eighth batch: short-sample full fine-tuning without
padding under the HF Trainer and FSDP1; nothing is fitted on them), two files of a suite perf_heldout61 read but did not
take (docs/known-gaps.md 238 (g)):

(1) IBM's fms-acceleration scripts/benchmarks/refs_orca/a100_80gb_pf.csv at 3cf092a (2024-09-30; refs_orca/
requirements_pf.txt: torch 2.4.0, transformers 4.44.2, TRL 0.10.1, accelerate 0.33.0, flash-attn 2.6.3): Mistral-7B
full fine-tuning in fp16 on the first 8,000 orca-math word problems (about 289 tokens a sample), one epoch, one A100-80GB
or two under FSDP1, each micro-batch's samples flattened into one row (the attention-and-distributed-packing plugin's
padding-free path: transformers' position_ids route into FlashAttention-2's varlen kernel).

(2) The same suite's refs_orca/a100_80gb_mp.csv at 4224c66 (2024-08-23; transformers 4.43.3, torch 2.4.1): the same
job on the first 2,000 samples over 2, 4 and 8 GPUs (micro-batch 2-64 samples), padding-free alone and with the
plugin's multipack sampler (each rank's micro-batch filled to the same token budget: ranks balanced).

A flattened micro-batch is written as one packed row of micro-batch x the mean sample length, attention within each
sample (the row's `assumed` says how the mean is read). The padded rows of (1) (framework_config none: the
collator pads to the batch's longest sample; their spread of lengths is not published), its LoRA rows (the suite's own
bitsandbytes / GPTQ loaders and fused kernels) are not rows (docs/known-gaps.md 248).

Data: benchmarks/data/heldout_2027l_fms_orca.csv (finetune_heldout's columns, then the strategy settings the stack
fixes, as perf_heldout61's files).

Printed: each row (published, predicted, error), per source and figure, multipack over padding-free at one layout
(measured and predicted) and the same per-GPU work on more GPUs (the FSDP1 cost a step).

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout64.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, kept_rows, mape, num, print_case_rows, refusals_said, scored, source_label, whole

DATA = Path(__file__).resolve().parent / "data"
ORCA = DATA / "heldout_2027l_fms_orca.csv"
SOURCES = (ORCA,)


def rows() -> list[dict[str, str]]:
    """Every source's rows, in file order."""
    return [r for path in SOURCES for r in csv.DictReader(path.open(encoding="utf-8"))]


def job(r: dict[str, str]) -> dict:
    """A row as a job file (finetune_heldout's builder)."""
    return fh.job(r)


def cases() -> list[Case]:
    """Every row's scored figures; a row the job path refuses: one 'refused' case with the reason."""
    from trainsizer.catalog import load_catalog

    cat = load_catalog()
    out = [Case(r["id"], source_label(r), "refused", 0.0, skipped=r["refused"]) for r in rows() if r["refused"]]
    return refusals_said(kept_rows(rows()), lambda r: fh.row_cases(r, cat), source_label) + out


def multipack_ratios(cs: list[Case], metric: str) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) ratio of each multipack row's figure over its padding-free twin (same GPUs and
    micro-batch)."""
    got = {c.row_id: c for c in scored(cs, metric)}
    out = []
    for rid, c in got.items():
        twin = got.get(rid.replace("_multipack_", "_pf_"))
        if "_multipack_" in rid and twin is not None:
            out.append((rid, c.measured / twin.measured, c.predicted / twin.predicted))
    return out


def sampler_lines(cs: list[Case]) -> list[str]:
    """(2)'s rows by sampler (padding-free alone, multipack): n and MAPE per figure."""
    out = []
    for metric in ("tokens_s", "peak_gib"):
        for kind in ("_pf_", "_multipack_"):
            sub = [c for c in scored(cs, metric) if c.row_id.startswith("fmsorca_mp_") and kind in c.row_id]
            out.append(f"  {kind.strip('_'):10s} {metric:9s} n={len(sub):2d} MAPE {mape(sub):5.1f}%")
    return out


def fsdp_step_extra(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) seconds a step that two GPUs under FSDP1 add over half the one-GPU step of the same
    per-GPU work ((1)'s micro-batch 2 / 4 on two GPUs against 4 / 8 on one: 238 (c)'s reading); a step is 2 micro-batches
    of micro-batch x the mean sample length a GPU."""
    by = {r["id"]: r for r in rows()}
    got = {c.row_id: c for c in scored(cs, "tokens_s")}
    out = []
    for rid, c in got.items():
        one = got.get(rid.replace("_2gpu_mb2", "_1gpu_mb4").replace("_2gpu_mb4", "_1gpu_mb8"))
        if not rid.startswith("fmsorca_pf_") or "_2gpu_" not in rid or one is None:
            continue
        tokens = 2 * num(by[rid]["seq_len"])  # two micro-batches of one flattened row a GPU
        step = [tokens / c.measured, tokens / c.predicted]
        half = [2 * tokens / one.measured / 2, 2 * tokens / one.predicted / 2]
        out.append((rid, step[0] - half[0], step[1] - half[1]))
    return out


def rank0_excess(cs: list[Case]) -> list[tuple[str, int, float, float]]:
    """(row, GPUs, measured less predicted peak GiB, (1 - 1/GPUs) x the fp16 weights GiB) of every FSDP row: the other
    ranks' part of one whole unsharded model, what the miss reads as where rank 0 holds one (229 (e))."""
    from trainsizer.models import load_model

    weights_gib = 2 * load_model("mistral-7b").params_total / 2**30
    by = {r["id"]: r for r in rows()}
    out = []
    for c in scored(cs, "peak_gib"):
        n = whole(by[c.row_id]["gpu_count"])
        if n > 1:
            out.append((c.row_id, n, c.measured - c.predicted, (1 - 1 / n) * weights_gib))
    return out


def main() -> None:
    cs = cases()
    print("(1) fms-acceleration's orca-math padding-free file (3cf092a, 2024-09) and (2) its multipack file (4224c66, "
          "2024-08): Mistral-7B full fine-tuning in fp16, flattened micro-batches under FA2 varlen, reentrant "
          "checkpointing, 1 GPU or 2-8 under FSDP1 (tokens/s per GPU, peak allocated GiB; held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 44, "9.2f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    for metric, what in (("tokens_s", "tokens/s a GPU"), ("peak_gib", "peak GiB")):
        print(f"\nmultipack over padding-free, {what} (measured vs predicted):")
        print("\n".join(f"  {rid:44s} measured {m:5.3f} predicted {p:5.3f}" for rid, m, p in multipack_ratios(cs, metric)))
    print("\n(2) by sampler:")
    print("\n".join(sampler_lines(cs)))
    print("\ntwo GPUs under FSDP1 over half the one-GPU step of the same per-GPU work, seconds a step (measured vs "
          "predicted):")
    print("\n".join(f"  {rid:44s} measured {m:+6.3f} predicted {p:+6.3f}" for rid, m, p in fsdp_step_extra(cs)))
    print("\nFSDP rows' peak: measured less predicted GiB against (1 - 1/GPUs) x the fp16 weights (rank 0 holding the "
          "other ranks' part of one whole model):")
    print("\n".join(f"  {rid:44s} {n} GPUs {d:+6.2f} GiB, (1 - 1/GPUs) x weights {w:5.2f}"
                     for rid, n, d, w in rank0_excess(cs)))
    refused = [c for c in cs if c.metric == "refused"]
    unfit = [c for c in cs if c.metric == "fits"]
    print(f"\nrefused rows: {len(refused)}" + "".join(f"\n  {c.row_id}: {c.skipped}" for c in refused))
    print(f"rows that ran, said not to fit by the memory estimate: {len(unfit)}"
          + "".join(f"\n  {c.row_id}: {c.skipped}" for c in unfit))
    print("\n" + p43.summary("perf_heldout64", cs))


if __name__ == "__main__":
    main()
