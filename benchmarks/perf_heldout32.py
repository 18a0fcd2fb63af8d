"""Held-out check on published runs added 2026-12-04 (seventh batch; nothing is fitted on them): the China-market parts
our users buy (A800, H800) and the Chinese-published benchmark suite that runs them, where the held-out set had no row
(docs/known-gaps.md 78). Each row is stated as the launch scripts of the run wrote it.

Data: benchmarks/data/heldout_2026h_flagperf.csv, in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job;
every assumed setting is in its `assumed` column). BAAI's FlagPerf (FlagOpen/FlagPerf, training/nvidia/<case>/README.md
'性能指标' tables, 2023-12 .. 2024-06; tokens/s a GPU as each case's run_pretraining.py computes it from the logged step):
- Llama 3 8B under Megatron-Core core_v0.6.0 with Transformer Engine on one DGX A800: seven PP x DP x TP layouts of the
  same job (global batch 512 x 8,192, micro-batch 1, no recompute, no TP / gradient-reduce overlap).
- The same Llama 3 8B on 8 / 16 / 440 H100 (TP 2, BF16 and FP8 delayed scaling) and Llama 3 70B on 64 H100 (TP 8 PP 4).
- Llama 2 70B under FlagScale (BAAI's Megatron-LM fork, early 2024) on 4 hosts of 8 H800, TP 8 / 4 x PP 4 / 8.
- Llama 2 7B, Hugging Face transformers 4.34 model on DeepSpeed ZeRO-3 (8 A800 / 8 H800, FlashAttention-2).
- Llama 2 7B under Megatron-DeepSpeed ZeRO-1 on 8 A800 (its launch script's '#' drops its last flags: see `assumed`).
Left out (the layout is not stated or does not hold): the Llama 2 70B fp32 row (TF32 or fp32 GEMMs not stated); the
masked-vendor row of the Llama 3 8B table; Mixtral 8x7B on 32 H100 (the table's PP2DP2EP1TP8 disagrees with its
script's --expert-model-parallel-size 8, which DP 2 cannot hold); cases whose model has no preset here (Aquila2,
Baichuan2, ChatGLM3, Qwen1.5-MoE, LLaVA).

Printed: each row (published, predicted, error), per-source MAPE, the worst rows with the estimate's step breakdown,
refused rows (each a bug: these runs were made) and rows the memory estimate says do not fit.

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout32.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case

DATA = Path(__file__).resolve().parent / "data"
FILES = (DATA / "heldout_2026h_flagperf.csv",)


def rows() -> list[dict[str, str]]:
    return [r for f in FILES for r in csv.DictReader(f.open(encoding="utf-8"))]


def run_all() -> list[tuple[Case, dict[str, Any], dict[str, str]]]:
    """(case, the estimate's result or {} when refused, row) for every row, in file order."""
    return ph.estimate_rows(rows())


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, seventh batch: China-market parts (nothing fitted)", 58)
    p28.print_pairs_and_refusals(run)


if __name__ == "__main__":
    main()
