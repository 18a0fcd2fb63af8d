"""Held-out check on published runs added 2026-12-05 (twelfth batch; nothing is fitted on them): the Megatron-Bridge 25.09
NeMo Container pre-training tables, the one release of docs/performance-summary-archive.md that no benchmark held
(perf_blackwell's development rows are 25.11's; perf_mbridge26, perf_heldout27 / 29 hold 26.02-26.08).

Data: benchmarks/data/heldout_2026m_mbridge2509.csv, one row per tokens/s figure: Llama 3 8B / 70B, Llama 3.1 405B,
DeepSeek-V3 (with its MTP layer), Qwen3 30B-A3B and 235B-A22B on DGX-GB200 (8-256 GPUs), DGX-B200 (8-256) and DGX-H100
(8-1,024), sequence 8,192 (Llama) or 4,096 (MoE). The table (first committed at fa0315ae2, 2025-10-10; in the archive
unchanged at 067f987d) prints no precision column; its footnote names the figure in parentheses the finer quantisation
granularity (MXFP8's 32x32 blocks on Blackwell), so a line gives an FP8 per-tensor (current scaling) row and, where it
has one, an MXFP8 row; the 25.11 table labels its same-layout lines FP8-CS (FP8-MX). Each row states the table's
layout and batch (all 27 are consistent: GBS = DP x MBS x GA) and, for the rest, the release's performance scripts:
scripts/performance/configs/*/*_llm_pretrain.yaml perf_matrix and run_script.py at v0.1.0rc4 (whose matrix equals
47ff48829 of 2025-10-13, three days after the table), or at f5a691dd1 (2025-10-08) for the two lines whose layout only
that earlier state sets (GB200 Qwen3 235B-A22B at TP 2 x EP 64, H100 Qwen3 30B-A3B at VP 24). From them: Megatron-FSDP
and cpu_offloading_num_layers, per-layer CUDA graphs (`cuda_graphs: true` = model.enable_cuda_graph, Megatron-Core's
graphs of whole layers: the estimator's `layer`), DeepSeek-V3's recompute_modules, dispatcher and pipeline layout, and
token drop. run_script.py applies apply_moe_token_drop (capacity factor 1.0, padded to capacity, alltoall dispatcher)
to every Qwen3 run and to DeepSeek-V3 on GB200 / B200: those rows state strategy.moe_sync_free (the padded split sizes
are host constants; docs/known-gaps.md 87 (a)) at the default capacity factor 1.0; DeepSeek-V3 on H100 runs dropless
with DeepEP (flex), a2a overlap and the layout Et|(tt|)*30mL. Each job is perf_mbridge26.job's (the columns read as
its 26.x rows), with the 25.09 image's cuDNN (the base release: perf_mbridge26.CUDNN_BY_RELEASE's None). Refused, with
the reason in the row: GB200 DeepSeek-V3 MXFP8 (PP 8 x VP 2: no config state of the release sets it, so the run's
settings at that layout are not stated).

Printed: each row (measured, predicted, error), MAPE by system / model / precision, the refused rows, the worst rows,
what 25.11 (perf_blackwell's development rows) measured over 25.09 at one system, model, precision and layout against
what the estimate gives the two releases' stated options, the MXFP8 / FP8-CS ratio per line, the token-drop rows' error
as stated and as if dropless (bounds on what token drop removed), and rows predicted not to fit.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout38.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import perf_mbridge26 as mb
from harness import Fit, job_fits, layout_stage_layers, print_cases, print_fits, row_cases
from perf_blackwell import DATA as DEV_2511
from perf_blackwell import cases as dev_cases
from perf_mbridge26 import print_groups, print_worst

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026m_mbridge2509.csv"
# the layout of the 25.11 table's lines, to pair a 25.09 row with the development row of the same job
PAIR_KEY = ("system", "model", "precision", "gpu_count", "global_batch_seqs", "micro_batch", "seq_len", "tp", "pp",
            "cp", "ep")


def rows() -> list[dict[str, str]]:
    """Every row of the csv, the refused ones included."""
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def scored_rows() -> list[dict[str, str]]:
    return [r for r in rows() if not r["refused"]]


def refused() -> list[tuple[str, str]]:
    """(row id, why it is not estimated) of the refused rows."""
    return [(r["id"], r["refused"]) for r in rows() if r["refused"]]


def job(r: dict[str, str]) -> dict:
    """perf_mbridge26's job of the row, with what the 25.09 scripts set beyond its columns: the image's cuDNN (the base
    release), token drop (moe_sync_free: the padded alltoall dispatch issues no per-expert launches after a host sync)
    and a pipeline layout the recipe map does not give (H100 DeepSeek-V3's run_script.py layout)."""
    out = mb.job(r)
    strategy = out["strategy"]
    strategy["cudnn_release"] = None
    if r["moe_token_drop"] == "1":
        strategy["moe_sync_free"] = True
    if r["pp_layout"]:
        strategy |= layout_stage_layers(r["pp_layout"], int(r["pp"]))
    return out


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of every scored row."""
    return row_cases(scored_rows(), job)


def fits() -> list[Fit]:
    """Each scored row's predicted peak memory against the card's usable memory (every run was made)."""
    return job_fits((r["id"], job(r)) for r in scored_rows())


def release_pairs(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted 25.11 / 25.09 throughput) where the 25.11 table (perf_blackwell's development rows)
    lists the same system, model, precision, GPUs, batch and layout: what the release gained, against what the estimate
    gives the options each release's rows state (CUDA graphs, token drop, Megatron-FSDP, offload)."""
    def key(r: dict[str, str]) -> tuple:
        return tuple(r[k] for k in PAIR_KEY)

    def layout(r: dict[str, str]) -> tuple:
        return tuple(r[k] for k in PAIR_KEY if k != "precision")

    dev_rows = list(csv.DictReader(DEV_2511.open(encoding="utf-8")))
    dev = {key(r): r["id"] for r in dev_rows}
    # a 25.09 line with no same-precision twin pairs with the one 25.11 line of its layout (B200 Qwen3 30B-A3B:
    # 25.09's FP8 token-drop line, 25.11's dropless MXFP8 one)
    layouts: dict[tuple, list[str]] = {}
    for r in dev_rows:
        layouts.setdefault(layout(r), []).append(r["id"])
    dev_pred = {rid: (m, p) for rid, _, m, p in dev_cases()}
    by = {r["id"]: r for r in scored_rows()}
    out = []
    for rid, _, m, p in cs:
        only = layouts.get(layout(by[rid]), [])
        twin = dev.get(key(by[rid])) or (only[0] if len(only) == 1 else None)
        if twin:
            out.append((f"{rid} / {twin.split('_')[-2]}", dev_pred[twin][0] / m, dev_pred[twin][1] / p))
    return out


def precision_pairs(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(FP8-MX row, measured, predicted MXFP8 / FP8-CS throughput) for the lines that give both figures (some at
    another layout: GB200 Llama 3 70B and 3.1 405B run MXFP8 without Megatron-FSDP)."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    return [(rid, by[rid][0] / by[cs_id][0], by[rid][1] / by[cs_id][1]) for rid in by
            if "_fp8-mx_" in rid and (cs_id := rid.replace("_fp8-mx_", "_fp8-cs_")) in by]


def drop_bounds(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(token-drop row, signed error as stated, signed error with moe_sync_free left out): the rows estimated as the
    dropless dispatch they did not run, charged Megatron-Core's per-expert host launches after the sync
    (perf_constants.yaml gemm.moe_host_s_per_expert_kernel, tuned on the 25.11 B200 dropless rows). A diagnostic, not
    an estimate: where the measured rate lies between the two, token drop removed part of that charge, not all of it
    (docs/known-gaps.md 108 (a))."""
    drop = [r for r in scored_rows() if r["moe_token_drop"] == "1"]

    def dropless(r: dict[str, str]) -> dict:
        out = job(r)
        out["strategy"].pop("moe_sync_free")
        return out

    stated = {rid: p / m - 1 for rid, _, m, p in cs}
    return [(rid, stated[rid], p / m - 1) for rid, _, m, p in row_cases(drop, dropless)]


def main() -> None:
    cs = cases()
    print("Megatron-Bridge 25.09 pre-training tables (held out):")
    errs = print_cases(cs)
    print(f"\nperf_heldout38: time n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    print_groups(cs, {r["id"]: r for r in scored_rows()}, ("system", "model", "precision"))
    for kind, mine in (("dense", [c for c in cs if "_llama3" in c[0]]), ("MoE", [c for c in cs if "_llama3" not in c[0]])):
        print(f"  kind      {kind:16s} n={len(mine):2d} MAPE {100 * np.mean([abs(p / m - 1) for _, _, m, p in mine]):5.1f}%")
    for rid, why in refused():
        print(f"  refused {rid}: {why}")
    print_worst(cs, 6)
    print("\n25.11 (development rows) over 25.09 at one system, model, precision and layout (measured vs predicted):")
    for rid, meas, pred in release_pairs(cs):
        print(f"  {rid:50s} measured {meas:.3f} predicted {pred:.3f}")
    print("MXFP8 / FP8-CS per line (measured vs predicted):")
    for rid, meas, pred in precision_pairs(cs):
        print(f"  {rid:50s} measured {meas:.3f} predicted {pred:.3f}")
    print("token-drop rows: error as stated (sync-free) and as if dropless (per-expert host launches charged):")
    for rid, err, dropless in drop_bounds(cs):
        print(f"  {rid:50s} {100 * err:+6.1f}% {100 * dropless:+6.1f}%")
    print_fits(fits(), "perf_heldout38")
    worst = max(cs, key=lambda c: abs(c[3] - c[2]) / c[2])
    print(f"\nperf_heldout38 (all rows): time n={len(cs)} MAPE {100 * np.mean(errs):.1f}%, worst {worst[0]} "
          f"{100 * (worst[3] - worst[2]) / worst[2]:+.1f}%")


if __name__ == "__main__":
    main()
