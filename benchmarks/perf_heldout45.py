"""Held-out check on published runs added 2026-12-05 (nineteenth batch: pre-training and MoE at scale; nothing is fitted
on them), two sources no benchmark held:

(1) The Megatron MoE Model Zoo (yanring/Megatron-MoE-ModelZoo, the Megatron-Core MoE team's benchmarking scripts),
best_practice/qwen3/readme.md: Qwen3 235B-A22B pre-training on Megatron-LM. Its H100 table (first at 78930f0,
2025-11-01, unchanged to e8650517, 2026-05-16): 256 H100, BF16, sequence 4,096, five layouts (EP 32 across nodes with
and without the EP all-to-all overlapped with the other micro-batch, EP 8 in a node under Megatron-FSDP, under a PP 32
pipeline with the NCCL all-to-all dispatcher, and at TP 4 without recompute), each with its step time; its long-context
table: TP 4 x PP 8 x EP 8 at 16K-128K with CP 1-8, TFLOP/s a GPU under forced balance and dropless routing; its GB200
table (NVL72 trays of 4, HybridEP): BF16 at TP 1 x PP 8 x EP 8 on 256 GPUs, MXFP8 at EP 64 with fine-grained activation
offload, MXFP8 at 128K with CP 4 on 128 GPUs; its GB300 table: MXFP8 at EP 64 on 64 GPUs (798dfb5, 2026-05-13) and
the PP 4 x EP 32 line on 256 GPUs it replaced (020b813, 2026-03-10). Data: benchmarks/data/heldout_2026s_mcore_modelzoo.csv
in perf_heldout38's recipe columns (its recipe_job builds each job) plus `strategy_extra` (perf_heldout's
key=value;... strategy fields: Megatron-FSDP, full recompute, TP comm overlap, the optimizer's bf16 moments),
`step_time_s` and `routing`. The H100 4,096 rows' commands are best-practice/qwen3/run_235b.sh before d95e6e5
(2025-08-20), the others the run_*_235b.sh lines the readme prints. tokens/s a GPU: the step time's where the table gives
one, else the TFLOP/s over Megatron's model FLOPs a token (flops_per_token: 148.04 GFLOPs at 4,096, the value
perf_heldout38's recipe rows use, which the H100 rows' own TFLOP/s and step times give within 0.6%, plus the
causal-halved attention term for longer sequences). Refused, with the reason in the row: Qwen3-Next-80B-A3B (Gated
DeltaNet layers: no model), the GB200 MXFP8 EP 64 run (fine-grained activation offload: no job field), the four dropless
long-context figures (the router's imbalance on real data is not stated; their forced-balance twins are scored and the
measured ratio printed).

(2) The NeMo 24.07 performance page (NVIDIA/NeMo docs/source/performance/performance_summary.md, Pretraining, DGX-H100,
FP8): its final revision (8e3d65dcfe, 2024-09-09) holds the figures perf_heldout's "NeMo 24.09" rows score (the same
numbers) and three lines those rows leave out: GPT-3 175B on 128 GPUs, Nemotron-8B and Nemotron-22B (the launcher's
Nemotron-3 shapes, benchmarks/data/heldout_models.yaml). Data: benchmarks/data/heldout_2026s_nemo2407_h100.csv in
heldout_pretrain.csv's columns (perf_heldout.job_of; settings as the 24.09 rows state them). The page's two earlier
revisions (4c73f77670, 2024-08-14; 3a8081fef6, 2024-08-22, "vboost numbers") measured every line again:
benchmarks/data/heldout_2026s_nemo2407_revisions.csv, printed beside the estimate of the row that scores each line (how
far one release's own figures move against the estimate's error), not scored.

Printed: each row (measured, predicted, error), per-source / system MAPE, the refused rows, the EP-overlap and TP / FSDP
layout ratios at one model and GPU count (measured vs predicted), the forced / dropless ratios, the NeMo revisions, rows
predicted not to fit.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout45.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

import perf_heldout as ph
import perf_heldout38 as p38
from harness import job_fits, kept_rows, mape, print_cases, print_fits, refused_rows, row_cases
from perf_mbridge26 import print_groups

DATA = Path(__file__).resolve().parent / "data"
MZOO = DATA / "heldout_2026s_mcore_modelzoo.csv"
NEMO = DATA / "heldout_2026s_nemo2407_h100.csv"
REVISIONS = DATA / "heldout_2026s_nemo2407_revisions.csv"
# Qwen3 235B-A22B (preset qwen3-235b-a22b): NVIDIA's model FLOPs a token at 4,096 (perf_heldout38's recipe rows'
# gflops_per_token, from the Megatron-Bridge 26.08 table), and the shape of the attention term that grows with the
# sequence
QWEN3_235B_GFLOPS_4096 = 148.04
QWEN3_235B_LAYERS, QWEN3_235B_QUERY_PROJ = 94, 64 * 128


def flops_per_token(seq: int) -> float:
    """Megatron's model FLOPs a token of Qwen3 235B-A22B at `seq`: the 4,096 figure plus the attention score and
    context matmuls' growth, 3 x 2 x query projection x sequence a layer, causal-halved (Megatron-LM
    megatron/training/training.py num_floating_point_operations, the convention the table's H100 rows follow)."""
    extra = 6.0 * QWEN3_235B_QUERY_PROJ * QWEN3_235B_LAYERS * (seq - 4096)
    return QWEN3_235B_GFLOPS_4096 * 1e9 + extra


def mzoo_rows() -> list[dict[str, str]]:
    """Every Model Zoo row, the refused ones included."""
    return list(csv.DictReader(MZOO.open(encoding="utf-8")))


def mzoo_job(r: dict[str, str]) -> dict[str, Any]:
    """perf_heldout38's recipe job of the row, with its `strategy_extra` fields (full recompute drops the modules)."""
    out = p38.recipe_job(r)
    out["strategy"] |= ph._extra(r["strategy_extra"])
    if out["strategy"]["recompute"] == "full":
        out["strategy"]["recompute_modules"] = None
    return out


def mzoo_cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of every scored Model Zoo row."""
    return row_cases(kept_rows(mzoo_rows()), mzoo_job)


NEMO_BATCH = ph.Batch((NEMO,))  # the NeMo 24.07 rows, in perf_heldout's columns and job path (known-gaps 257 (b))
nemo_rows, nemo_run = NEMO_BATCH.rows, NEMO_BATCH.run_all


def cases() -> list[tuple[str, str, float, float]]:
    """Every scored figure of both sources as (row id, group, measured, predicted tokens/s/GPU)."""
    nemo = [(c.row_id, "H100 (NeMo 24.07)", c.measured, c.predicted) for c, _, _ in nemo_run() if not c.skipped]
    return mzoo_cases() + nemo


def ratio_lines(cs: list[tuple[str, str, float, float]], pairs: tuple[tuple[str, str], ...]) -> list[str]:
    """Measured and predicted throughput of each row over its partner (one setting or layout changed)."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    return [f"  {a:58s} over {b.split('256gpu_')[-1]:24s} measured {by[a][0] / by[b][0]:.3f} "
            f"predicted {by[a][1] / by[b][1]:.3f}" for a, b in pairs if a in by and b in by]


H100 = "mzoo_qwen3-235b_h100_bf16_256gpu_"
# one model on 256 H100 at 4,096: EP overlap on / off, and each intra-node layout over the cross-node EP 32 one
LAYOUT_PAIRS = ((H100 + "deepep_ep32_a2a_overlap", H100 + "deepep_ep32"),
                (H100 + "deepep_ep8_fsdp", H100 + "deepep_ep32"),
                (H100 + "alltoall_pp32", H100 + "deepep_ep32"),
                (H100 + "deepep_tp4_norecompute", H100 + "deepep_ep32"))


def one_queue_probe_line() -> str:
    """The EP-overlap row again with strategy.cuda_device_max_connections 1, the model config's active value, which
    the row does not state (the team edited the environment per run: known-gaps 173 (a)): not scored."""
    row = next(r for r in mzoo_rows() if r["id"] == H100 + "deepep_ep32_a2a_overlap")
    probe = dict(row, strategy_extra=row["strategy_extra"] + ";cuda_device_max_connections=1")
    (_, _, measured, predicted), = row_cases([probe], mzoo_job)
    return (f"  {row['id']:58s} at CUDA_DEVICE_MAX_CONNECTIONS 1 (probe, not scored): predicted {predicted:.0f} "
            f"({100 * (predicted / measured - 1):+.1f}%)")


def dropless_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """Each long-context line: the forced-balance figure over the dropless one (measured), and the estimate (forced
    balance, the default routing) against each: what the router's imbalance cost the run."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    out = []
    for r in mzoo_rows():
        forced = r["id"].removesuffix("_dropless")
        if r["routing"] == "dropless" and forced in by:
            m, p = by[forced]
            drop = float(r["tokens_per_sec_per_gpu"])
            out.append(f"  {forced:50s} forced / dropless measured {m / drop:.3f}; estimate vs forced "
                       f"{100 * (p / m - 1):+6.1f}%, vs dropless {100 * (p / drop - 1):+6.1f}%")
    return out


def revision_lines() -> list[str]:
    """Each NeMo 24.07 line's three page revisions beside the estimate of the row that scores it."""
    pred = {c.row_id: c.predicted for c, _, _ in ph.run_all() if not c.skipped}
    pred |= {c.row_id: c.predicted for c, _, _ in nemo_run() if not c.skipped}
    out = []
    for r in csv.DictReader(REVISIONS.open(encoding="utf-8")):
        figs = [float(r[k]) for k in ("tokens_s_4c73f77670", "tokens_s_3a8081fef6", "tokens_s_8e3d65dcfe")]
        p = pred[r["row_id"]]
        errs = " / ".join(f"{100 * (p / f - 1):+5.1f}" for f in figs)
        out.append(f"  {r['line']:22s} {' / '.join(f'{f:6.0f}' for f in figs)}  spread "
                   f"{100 * (max(figs) / min(figs) - 1):4.1f}%  estimate {p:6.0f} ({errs}%)")
    return out


def main() -> None:
    mc = mzoo_cases()
    print("(1) Megatron MoE Model Zoo, Qwen3 235B-A22B (held out; tokens/s a GPU):")
    merrs = print_cases(mc)
    print(f"\nperf_heldout45 (Model Zoo): time n={len(mc)} MAPE {100 * merrs.mean():.1f}%")
    print_groups(mc, {r["id"]: r for r in kept_rows(mzoo_rows())}, ("system", "precision", "seq_len"))
    for rid, why in refused_rows(mzoo_rows()):
        print(f"  refused {rid}: {why}")
    print("\none model on 256 H100 at 4,096, a row over its partner (measured vs predicted):")
    print("\n".join(ratio_lines(mc, LAYOUT_PAIRS)))
    print(one_queue_probe_line())
    print("long context, forced balance over dropless:")
    print("\n".join(dropless_lines(mc)))
    print_fits(job_fits((r["id"], mzoo_job(r)) for r in kept_rows(mzoo_rows())), "perf_heldout45 Model Zoo")
    run = nemo_run()
    nc = [(c.row_id, "H100", c.measured, c.predicted) for c, _, _ in run if not c.skipped]
    print("\n(2) NeMo 24.07 performance page, the lines no benchmark held (held out):")
    nerrs = print_cases(nc)
    for c, _, _ in run:
        if c.skipped:
            print(f"  refused {c.row_id}: {c.skipped}")
    print(f"\nperf_heldout45 (NeMo 24.07): time n={len(nc)} MAPE {mape([c for c, _, _ in run]):.1f}%")
    print("the page's three revisions of each line (tokens/s a GPU; the 24.09 rows of perf_heldout score the last) and "
          "the estimate's error against each:")
    print("\n".join(revision_lines()))
    every = np.concatenate([merrs, nerrs])
    worst = max(cases(), key=lambda c: abs(c[3] / c[2] - 1))
    print(f"\nperf_heldout45: time n={len(every)} MAPE {100 * every.mean():.1f}%, worst {worst[0]} "
          f"{100 * (worst[3] / worst[2] - 1):+.1f}%")


if __name__ == "__main__":
    main()
