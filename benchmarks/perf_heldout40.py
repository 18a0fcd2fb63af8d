"""Held-out check on published runs added 2026-12-05 (fourteenth batch; nothing is fitted on them), three sources:

(1) Answer.AI's FSDP + QLoRA benchmarks (AnswerDotAI/fsdp_qlora benchmarks_03_2024.md, added at 4cd6923 / e877dda,
2024-05-03; 'benchmarks were done in February and March 2024'): the repository's own train.py (read at 7242daa,
2024-03-21) fine-tuning Llama-2 7B / 70B, Yi 34B and Mistral 7B v0.2 with PEFT LoRA or bitsandbytes NF4 QLoRA (rank
64 on q / k / v / gate / up / down) under torch FSDP1 (FULL_SHARD, NO_SHARD as 'DDP', FSDP's parameter CPU offload),
pure bf16, reentrant activation checkpointing inside each FSDP unit, 1,024 dummy samples of full context: the time
for the whole run and the peak reserved memory, on two RTX 4090 (PCIe, no NVLink), and for Llama-2 70B QLoRA on 2-4 RTX
6000 Ada, 2-8 A100 40GB SXM and 4 H100 SXM (time only), two RTX 3090 (no NVLink bridge, 280 W: the rows' overlay
rtx3090_280w_no_nvlink_overlay.yaml) and 2-8 RTX A5000 (Llama-2 70B QLoRA, time only; docs/known-gaps.md 142). Data:
benchmarks/data/heldout_2026o_fsdp_qlora.csv (finetune_heldout's columns, with `fsdp`, `checkpoint_impl` and
`overlay`, a catalog overlay under benchmarks/data the row runs on; every setting the post does not state is named in
the row's `assumed`, with the code's default).
Tokens/s = the sequences each rank trains (the dataset cut to a multiple of batch x accumulation, split by
DistributedSampler) x GPUs x context / time; peak memory on the reserved basis (GiB-allocator: no CUDA context or NCCL
buffers). The 'Bonus: Mistral 7B' 24,576-token row is left out: its dummy sample ('output' x 10,000) may tokenise
shorter than 24,576, so the tokens it trained are not known.

(2) NeMo AutoModel's DeepEP vs HybridEP report (NVIDIA-NeMo/Automodel docs/deepep_vs_hybridep_benchmark.md, added
at 4e1e3d6cd, 2026-07-22): Qwen3-30B-A3B pre-training on 8 H100 (EP 8, global batch 128, local batch 4, grouped_gemm
experts) and 16 H100 (EP 16, 256 / 2, torch._grouped_mm experts), with DeepEP v1 or HybridEP as the dispatcher, the
benchmark recipe qwen3_moe_30b_te_deepep.yaml read at 4074cd40d: tokens/s a GPU. Data:
benchmarks/data/heldout_2026o_automodel_hybridep.csv (heldout_pretrain.csv's columns; the torchtitan style, as
perf_heldout's AutoModel rows). DeepEP is moe_dispatcher flex, HybridEP moe_dispatcher hybridep: the same transport,
HybridEP grouping the tokens by expert inside its dispatch / combine kernels, so each pass takes the longer of the
transport and the permute (step_time._permute_in_transport; known-gaps 137 (c)).

(3) torchao's pre-training tutorial (pytorch/ao docs/source/eager_tutorials/pretraining.rst, its logs dated
2025-06-04, unchanged at 42ff8ed67): torchtitan Llama3-8B on 8 H100 96 GB (the log's memory percentage; the Grand Teton
overlay), llama3_8b.toml at 775a486ed (local batch 1 x 8,192, FSDP2, per-op SAC), --training.compile (the model and the
loss compiled at that commit): bf16, torchao float8 rowwise and tensorwise (bf16 all-gathers, the LM head left out):
tokens/s a GPU and torchtitan's max-reserved memory. Data: benchmarks/data/heldout_2026o_torchao_pretrain.csv
(heldout_pretrain.csv's columns). The same job as perf_heldout28's torchao README rows of 2025-03 (loss not compiled
then): printed beside them, the memory the compiled loss frees, measured and modelled.

Printed: each row (published, predicted, error), per-source and per-part MAPE, the LoRA / QLoRA and DDP / FSDP /
offload ratios of the RTX 4090 rows at one model (measured vs predicted), the HybridEP / DeepEP ratios, refused rows and
rows said not to fit.

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout40.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

import finetune_heldout as fh
import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, mape, print_case_rows, refusals_said, scored

DATA = Path(__file__).resolve().parent / "data"
FSDP_QLORA = DATA / "heldout_2026o_fsdp_qlora.csv"
AUTOMODEL = DATA / "heldout_2026o_automodel_hybridep.csv"
TORCHAO = DATA / "heldout_2026o_torchao_pretrain.csv"
# perf_heldout28's torchao README rows of the same job in 2025-03 (the loss eager then): the June rows' pairs, printed
MARCH = (DATA / "heldout_2026d.csv", "torchao_2025-03_h100_llama3_8b_")
MODELS = DATA / "heldout_models.yaml"
FSDP = fh.Batch((FSDP_QLORA,), (MODELS,), overlays=True)  # job: an FSDP-QLoRA row with the benchmark models
fsdp_rows, models, job = FSDP.rows, FSDP.models, FSDP.job
automodel_rows, torchao_rows = ph.Batch((AUTOMODEL,)).rows, ph.Batch((TORCHAO,)).rows
run_all = ph.Batch((AUTOMODEL, TORCHAO)).run_all  # the AutoModel and torchao rows, in file order


def _part(r: dict[str, str]) -> str:
    return f"{r['gpu_count']} x {r['gpu']}"


def fsdp_cases() -> list[Case]:
    """The FSDP-QLoRA rows' tokens/s and peak GiB (a refused row: one 'refused' case with the reason), each row on the
    catalog with its `overlay` (the RTX 3090 rows: no NVLink bridge, 280 W)."""
    archs = models()
    return refusals_said(fsdp_rows(), lambda r: fh.row_cases(r, fh.overlay_catalog(r["overlay"]), archs),
                         lambda r: "Answer.AI FSDP+QLoRA")


def march_pairs(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float, float, float]]:
    """(June row id, measured March, measured June, predicted March, predicted June) for each torchao tutorial row and
    perf_heldout28's row of the same job in 2025-03 (the loss eager then, compiled in June)."""
    path, prefix = MARCH
    march = ph.estimate_rows([r for r in csv.DictReader(path.open(encoding="utf-8")) if r["id"].startswith(prefix)])
    by = {r["id"].replace("2025-03", "2025-06"): c for c, _, r in march}
    return [(r["id"], by[r["id"]].measured, c.measured, by[r["id"]].predicted, c.predicted)
            for c, _, r in run if r["id"] in by and not c.skipped]


def cases() -> list[Case]:
    """Every scored or refused figure of both sources."""
    return fsdp_cases() + [c for c, _, _ in run_all()]


def _ratio_lines(cs: list[Case], rows: dict[str, dict[str, str]]) -> list[str]:
    """Measured and predicted tokens/s of each RTX 4090 row over the first row of its model (the table's order):
    what LoRA vs QLoRA, DDP vs FSDP and parameter offload change on one model, measured and modelled."""
    timed = [c for c in scored(cs, "tokens_s") if rows[c.row_id]["gpu"] == "rtx-4090"]
    first: dict[str, Case] = {}
    out = []
    for c in timed:
        model = rows[c.row_id]["model"]
        base = first.setdefault(model, c)
        if base is not c:
            out.append(f"  {c.row_id:36s} over {base.row_id:30s} measured {c.measured / base.measured:.3f} "
                       f"predicted {c.predicted / base.predicted:.3f}")
    return out


def _by_part(cs: list[Case], rows: dict[str, dict[str, str]]) -> None:
    for metric in ("tokens_s", "peak_gib"):
        g = scored(cs, metric)
        for part in dict.fromkeys(_part(rows[c.row_id]) for c in g):
            sub = [c for c in g if _part(rows[c.row_id]) == part]
            print(f"  {metric:9s} {part:22s} n={len(sub):2d} MAPE {mape(sub):5.1f}% median "
                  f"{100 * float(np.median([c.err for c in sub])):+6.1f}%")


def main() -> None:
    fq = fsdp_cases()
    rows = {r["id"]: r for r in fsdp_rows()}
    print("(1) Answer.AI FSDP+QLoRA benchmarks (train.py at 7242daa; held out, nothing fitted):")
    print_case_rows([c for c in fq if c.metric in ("tokens_s", "peak_gib")], 36, "9.2f")
    print("\nper part and figure:")
    _by_part(fq, rows)
    print("\nRTX 4090, a row over the model's first row (what the option changes, measured vs predicted):")
    print("\n".join(_ratio_lines(fq, rows)))
    refused = [c for c in fq if c.metric == "refused"]
    unfit = [c for c in fq if c.metric == "fits"]
    print(f"\nrefused rows: {len(refused)}")
    for c in refused:
        print(f"  {c.row_id}: {c.skipped}")
    print(f"rows that ran, said not to fit by the memory estimate: {len(unfit)}")
    for c in unfit:
        print(f"  {c.row_id}: {c.skipped}")
    for metric in ("tokens_s", "peak_gib"):
        g = scored(fq, metric)
        print(f"(1) {metric}: n={len(g)} MAPE {mape(g):.1f}% (median {100 * float(np.median([c.err for c in g])):+.1f}%)")

    run = run_all()
    print("\n(2) NeMo AutoModel DeepEP vs HybridEP report and (3) torchao's pre-training tutorial:")
    p28.print_rows(run)
    p28.print_summary(run, "(2) AutoModel and (3) torchao rows (nothing fitted)", 56)
    timed = {r["id"]: c for c, _, r in run if not c.skipped}
    print("HybridEP over DeepEP at one layout (measured vs predicted; HybridEP's permute inside its transport):")
    for rid, c in timed.items():
        if "hybridep" in rid:
            base = timed[rid.replace("hybridep24", "deepep").replace("hybridep", "deepep")]
            print(f"  {rid:52s} measured {c.measured / base.measured:.3f} predicted {c.predicted / base.predicted:.3f}")
    print("torchao tutorial (2025-06, loss compiled) against the README's March 2025 run of the job (loss eager):")
    for rid, m_mar, m_jun, p_mar, p_jun in march_pairs(run):
        print(f"  {rid:62s} measured {m_mar:8.2f} -> {m_jun:8.2f}  predicted {p_mar:8.2f} -> {p_jun:8.2f}")
    allc = fq + [c for c, _, _ in run]
    time_cases = [c for c in allc if not c.skipped and c.metric in ("tokens_s", "tokens_per_s_per_gpu")]
    memory = scored(allc, "peak_gib") + [c for c in allc if not c.skipped and c.metric == "peak_memory_gib"]
    print(f"\nperf_heldout40 time: n={len(time_cases)} MAPE {mape(time_cases):.1f}% (median "
          f"{100 * float(np.median([c.err for c in time_cases])):+.1f}%); peak memory: n={len(memory)} MAPE "
          f"{mape(memory):.1f}%; refused {len(refused)}, said not to fit {len(unfit)}")


if __name__ == "__main__":
    main()
