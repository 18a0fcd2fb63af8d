"""Held-out check on published runs added 2026-12-05 (fifteenth batch: fine-tuning stacks; nothing is fitted on them):

(1) PEFT's MetaMathQA method comparison (huggingface/peft method_comparison/MetaMathQA, results committed in #3445
at 51c2ff666, 2026-07-20; the runs of 2026-07-14/15 on one NVIDIA L40S, torch 2.13, transformers 5.13.1, PEFT at
d787f51bb): Llama-3.2-3B in bf16 fine-tuned on MetaMathQA with the suite's own loop (run.py, not the HF Trainer),
batch 4, no gradient checkpointing, no compile, 5,000 steps: full fine-tuning (AdamW on the bf16 parameters) and
PEFT LoRA rank 32 / 64 on q_proj, v_proj and rank 10 on the MLP (fp32 adapters, AdamW). Tokens/s = the JSON's 'train
total tokens' over the summed 'train time' of its 250-step intervals (the steps alone, evaluation excluded).
Data: benchmarks/data/heldout_2026p_peft_metamath.csv (finetune_heldout's columns; every setting the JSON does not
state is named in the row's `assumed`, with the code's default). Peak memory is not scored: the JSON's maximum
includes the evaluations' batch-50 generation, and its reserved 99th percentile belongs to the longest batches, whose
lengths are not published. Printed beside them, not scored: the same four layouts' earlier results on the same card
(benchmarks/data/heldout_2026p_peft_metamath_history.csv: the results at f650b08ab, 2025-06, torch 2.7.1 / transformers
4.52.4; f4763a0e7, 2025-10; a99942694, 2026-01, torch 2.9.0 / transformers 4.57.1), what the software moved on one
layout. Left out: the suite's other methods on LoRA's layout (DoRA, LoRA-FA, MiCA, BD-LoRA: no
job field says what they add) and the rank-64 rsLoRA run (rank 64's layout again: 7,045 tokens/s against 7,062, a
0.2% repeat).

Printed: each row (published, predicted, error), MAPE and median, and each LoRA row over the full fine-tune and over
rank 32 (measured vs predicted: what the adapters' placement and rank change on one model and card).

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout41.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import finetune_heldout as fh
from harness import Case, mape, print_case_rows, refusals_said, scored
from trainsizer.catalog import load_catalog

DATA = Path(__file__).resolve().parent / "data"
PEFT_METAMATH = DATA / "heldout_2026p_peft_metamath.csv"
# earlier results of the same layouts on the same L40S (printed, not scored: one layout measured under older software)
PEFT_HISTORY = DATA / "heldout_2026p_peft_metamath_history.csv"
SOURCES = (PEFT_METAMATH,)
BATCH = fh.Batch(SOURCES)
rows, job = BATCH.rows, BATCH.job


def cases() -> list[Case]:
    """Every row's scored figures (a refused row: one 'refused' case with the reason)."""
    cat = load_catalog()
    return refusals_said(rows(), lambda r: fh.row_cases(r, cat), lambda r: r["source"].split(" (")[0])


def _median(cs: list[Case]) -> float:
    return 100 * float(np.median([c.err for c in cs]))


def ratio_lines(cs: list[Case], base_id: str, ids: list[str]) -> list[str]:
    """Measured and predicted tokens/s of each of `ids` over `base_id` (rows of one model on one card)."""
    timed = {c.row_id: c for c in scored(cs, "tokens_s")}
    base = timed.get(base_id)
    if base is None:
        return []
    return [
        f"  {rid:30s} over {base_id:30s} measured {timed[rid].measured / base.measured:.3f} "
        f"predicted {timed[rid].predicted / base.predicted:.3f}"
        for rid in ids
        if rid in timed and rid != base_id
    ]


def history_lines(cs: list[Case]) -> list[str]:
    """Each scored row's earlier results of the same layout (PEFT_HISTORY), with the estimate's error against each."""
    timed = {c.row_id: c for c in scored(cs, "tokens_s")}
    out = []
    for h in csv.DictReader(PEFT_HISTORY.open(encoding="utf-8")):
        c = timed.get(h["id"])
        if c is None:
            continue
        measured = float(h["tokens_per_s"])
        out.append(
            f"  {h['id']:30s} {h['created_at'][:10]} torch {h['torch']:13s} transformers {h['transformers']:7s} "
            f"measured {measured:7.1f} (scored run {c.measured:7.1f}) estimate {100 * (c.predicted / measured - 1):+5.1f}%"
        )
    return out


def main() -> None:
    cs = cases()
    print("(1) PEFT MetaMathQA method comparison on one L40S (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric == "tokens_s"], 30, "9.1f")
    peft = [r["id"] for r in rows() if r["id"].startswith("peftmm_")]
    print("\nLoRA over the full fine-tune, and over rank 32 on q / v (measured vs predicted):")
    print("\n".join(ratio_lines(cs, "peftmm_l40s_3b_full", peft)))
    print("\n".join(ratio_lines(cs, "peftmm_l40s_3b_lora_r32_qv", peft)))
    print("\nthe same layouts' earlier results on the same card (not scored; what the software moved):")
    print("\n".join(history_lines(cs)))
    refused = [c for c in cs if c.metric == "refused"]
    unfit = [c for c in cs if c.metric == "fits"]
    print(f"\nrefused rows: {len(refused)}" + "".join(f"\n  {c.row_id}: {c.skipped}" for c in refused))
    print(
        f"rows that ran, said not to fit by the memory estimate: {len(unfit)}"
        + "".join(f"\n  {c.row_id}: {c.skipped}" for c in unfit)
    )
    timed = scored(cs, "tokens_s")
    memory = scored(cs, "peak_gib")
    line = f"\nperf_heldout41 time: n={len(timed)} MAPE {mape(timed):.1f}% (median {_median(timed):+.1f}%)"
    if memory:
        line += f"; peak memory: n={len(memory)} MAPE {mape(memory):.1f}% (median {_median(memory):+.1f}%)"
    print(line + f"; refused {len(refused)}, said not to fit {len(unfit)}")


if __name__ == "__main__":
    main()
