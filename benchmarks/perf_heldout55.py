"""Held-out check on published runs added 2026-12-06 (twenty-ninth batch: Megatron-Core MoE on H800, a tuning series
of one model and cluster; nothing is fitted on them), two sources no benchmark held, one author, code and image:

(1) InternLM/xtuner docs/zh_cn/benchmark/megatron_moe_benchmark.md (added 253c42c9e, 2025-09-05; unchanged at
ab430bc6c, 2026-08-22): 'Megatron MoE训练benchmark及调优指南', Qwen3-235B-A22B pre-training on 256 H800 under
Pai-Megatron-Patch 2b201af (Megatron-LM-250624) in the pai-megatron-patch:25.04 image, BF16, sequence 4,096, forced
balanced routing: one layout changed at a time (TP 1 / 2 / 4, PP 8 / 32, VPP, EP 8 / 32, the alltoall dispatcher or
DeepEP, recompute select / moe / full, micro-batch 1 / 4 / 8, gradient-reduce and TP overlap), each with its step time
and tokens/s a GPU; and four runs of the router's own routing at expert capacity factors 1 / 2 / 3 / 5 (capacity 1 is
scored: tokens over the balanced share dropped, no expert above it; 2-5 are refused, the router's imbalance not stated).
Four of its rows were posted first in alibaba/Pai-Megatron-Patch issue 658 (2025-09-02).
(2) alibaba/Pai-Megatron-Patch issue 643 (2025-08-08): the same author's Qwen3-30B-A3B runs on 16 H800 (TP 1, PP 2 x EP 8
and PP 4 x EP 4, sequence 8,192, no recompute, capacity factor 1.0 with drop), step time and tokens/s a GPU.
(3) Added with the second increment: NousResearch/torchtitan PR 19 (2025-11-24) and its torchtitan/distributed/deepep/
README.md: torchtitan with DeepEP on B200, Qwen3-30B-A3B under FSDP2 over every GPU with EP 8 inside a host, full
activation checkpointing, model and loss compiled by the config (the loss ran compiled, the MoE blocks eager: the
graph break of the experts' FSDP hooks inside the checkpointed block, docs/known-gaps.md 345 (a)), forced balance,
4,096 x 8 a GPU; strong scaling from 1 to 16 hosts (8-128 GPUs) and local batch 10 on 16, each with torchtitan's tokens/s and max_reserved; and the README's 1-host figure
for torchtitan's own all-to-all expert parallelism. Data: benchmarks/data/heldout_2027c_titan_deepep_b200.csv in
heldout_pretrain.csv's columns (perf_heldout.job_of).

Data: benchmarks/data/heldout_2027c_megatron_h800.csv in heldout_2026s_mcore_modelzoo.csv's recipe columns (perf_heldout45
.mzoo_job builds each job, as it does the Model Zoo's H100 rows of the same model) with `accelerator` / `network`
columns for the part (the recipe systems are NVIDIA's DGX ones) and `moe_router_fusion`. Every setting a source does
not state is named in the row's `assumed` column with where its default was read (the Pai-Megatron-Patch script and
README at 2b201af: bf16, distributed optimizer, sequence parallel, TE's FlashAttention backend, alltoall dispatcher, no
TP overlap: the script builds the option but leaves it out of its command); the network is not stated (roce-400, the
catalog's H800 host NICs).

Printed: each row (published, predicted, error), MAPE by source / TP / dispatcher / recompute, the refused rows, the
pairs of rows that change one setting (measured and predicted ratio), the capacity-1 row's drop bound and its predicted
gain over the forced alltoall twin split into comm and host figure (docs/known-gaps.md 217 (a)), the intra-host alltoall
rows' layer work against what the run leaves with the all-to-alls at the link's full rate (217 (e)), the Model Zoo's H100
rows of the same layouts beside the H800 ones (the part's NVLink at 400 GB/s against 900 GB/s), memory fits.

Sign: (predicted - published) / published of tokens/s a GPU; + = predicted too fast.

Run: python benchmarks/perf_heldout55.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

import perf_heldout as ph
import perf_heldout45 as p45
from harness import (
    Case,
    Fit,
    job_fits,
    job_tokens_per_gpu,
    kept_rows,
    print_cases,
    print_fits,
    refused_rows,
    row_cases,
)
from perf_mbridge26 import print_groups

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027c_megatron_h800.csv"
TITAN = DATA / "heldout_2027c_titan_deepep_b200.csv"
NOUS = "nous_torchtitan_2025-11_b200_qwen3_30b_a3b_"
XT = "xtuner_2025-09_h800_qwen3-235b_256gpu_"
# (row, its partner): one setting changed between them, both measured by the doc's author on the same cluster
PAIRS = ((XT + "tp2_ep32_deepep_pp8_vpp4_select", XT + "tp2_ep32_pp8_vpp4_select"),  # DeepEP over alltoall at EP 32
         (XT + "tp2_ep8_pp32_vpp3_select", XT + "tp2_ep32_deepep_pp8_vpp4_select"),  # EP 8 x PP 32 over EP 32 x PP 8
         (XT + "tp2_ep8_pp32_vpp3_select", XT + "tp4_ep8_pp8_vpp4"),  # TP 2 / PP 32 over TP 4 / PP 8
         (XT + "tp2_ep8_pp32_vpp3_select", XT + "tp2_ep8_pp8_select"),  # PP 32 x VPP 3 over PP 8
         (XT + "tp2_ep8_pp8_select_zero_overlap", XT + "tp2_ep8_pp8_select"),  # gradient-reduce overlap on
         (XT + "tp2_ep8_pp8_select_zero_tp_overlap", XT + "tp2_ep8_pp8_select_zero_overlap"),  # TP overlap on
         (XT + "tp2_ep8_pp32_vpp3_mbs4_full", XT + "tp2_ep8_pp32_mbs4_full"),  # VPP 3 over none (bubble ~matched)
         (XT + "tp1_ep8_pp32_vpp3_mbs4_full", XT + "tp1_ep8_pp32_vpp3_moe"),  # full recompute at mbs 4 over moe at 1
         (XT + "tp1_ep8_pp32_vpp3_mbs8_full", XT + "tp1_ep8_pp32_vpp3_mbs4_full"),  # micro-batch 8 over 4
         (XT + "tp4_ep8_deepep_pp8_vpp4_capacity1", XT + "tp4_ep8_pp8_vpp4"),  # router's own at capacity 1 + DeepEP
         ("paiissue643_2025-08_h800_qwen3-30b-a3b_16gpu_tp1_pp4_ep4",
          "paiissue643_2025-08_h800_qwen3-30b-a3b_16gpu_tp1_pp2_ep8"))
# the Model Zoo's H100 rows (perf_heldout45) whose layout an H800 row repeats: (H800 row, H100 row)
H100_TWINS = ((XT + "tp2_ep32_deepep_pp8_vpp4_select", "mzoo_qwen3-235b_h100_bf16_256gpu_deepep_ep32"),
              (XT + "tp2_ep8_pp32_vpp3_select", "mzoo_qwen3-235b_h100_bf16_256gpu_alltoall_pp32"))


def rows() -> list[dict[str, str]]:
    """Every row of the batch, the refused ones included."""
    return list(csv.DictReader(ROWS.open(encoding="utf-8")))


def job(r: dict[str, str]) -> dict[str, Any]:
    """perf_heldout45's recipe job of the row (the Model Zoo's columns and strategy_extra) on the row's part and
    network: the recipe builder's system table holds NVIDIA's DGX parts only, so the row is built as an H100 row (no
    other field depends on it off Blackwell) and its hardware then set to the row's own."""
    out = p45.mzoo_job(dict(r, system="H100"))
    out["hardware"] |= {"accelerator": r["accelerator"], "network": r["network"]}
    return out


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of every scored row."""
    return row_cases(kept_rows(rows()), job)


def ratio_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """Measured and predicted throughput of each row of PAIRS over its partner."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    return [f"  {a.split('_gpu_')[-1].split('gpu_')[-1]:36s} over {b.split('gpu_')[-1]:34s} measured "
            f"{by[a][0] / by[b][0]:.3f} predicted {by[a][1] / by[b][1]:.3f}" for a, b in PAIRS if a in by and b in by]


def capacity_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """The refused capacity 2 / 3 / 5 runs against the scored capacity-1 twin: what the router's imbalance cost."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    base = XT + "tp4_ep8_deepep_pp8_vpp4_capacity1"
    return [f"  {r['id'].split('gpu_')[-1]:42s} measured {float(r['tokens_per_sec_per_gpu']):7.1f} tokens/s, "
            f"{float(r['tokens_per_sec_per_gpu']) / by[base][0]:.3f} of capacity 1" for r in rows() if r["refused"]]


def h100_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """Each H800 row beside the Model Zoo's H100 row of the same layout (H800 over H100, measured vs predicted); the
    runs differ in more than the part (code, image, dispatcher fusion flags), so this is context, not a check."""
    mine = {rid: (m, p) for rid, _, m, p in cs}
    zoo = {rid: (m, p) for rid, _, m, p in p45.mzoo_cases()}
    return [f"  {a.split('gpu_')[-1]:36s} H800 / H100 measured {mine[a][0] / zoo[b][0]:.3f} predicted "
            f"{mine[a][1] / zoo[b][1]:.3f}" for a, b in H100_TWINS]


def host_free_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """Each row's error as predicted and with the estimate's host terms set to zero (the per-layer-pass host floor and
    Megatron-Core's per-expert launches after the alltoall sync, perf_constants.yaml host_s_per_layer_pass /
    moe_host_s_per_expert_kernel), as perf_mbridge26.host_free_errors prints it: a diagnostic, not an estimate. Rows
    whose local expert count differs (EP 4 / 8 / 32: 32 / 16 / 4 experts a rank) differ most in that charge."""
    import dataclasses

    from trainsizer.estimate.calibration import load_constants

    k = load_constants()
    free = dataclasses.replace(k, host_s_per_layer_pass=0.0,
                               moe_host_s_per_expert_kernel=dict.fromkeys(k.moe_host_s_per_expert_kernel, 0.0))
    by = {r["id"]: r for r in rows()}
    off = dict(job_tokens_per_gpu(((rid, job(by[rid])) for rid, _, _, _ in cs), constants=free))
    return [f"  {rid.split('gpu_')[-1]:36s} {100 * (p / m - 1):+6.1f}% {100 * (off[rid] / m - 1):+6.1f}%"
            for rid, _, m, p in cs]


def capacity_bound(r: dict[str, str]) -> tuple[int, int, int, int]:
    """(tokens a source rank routes a micro-batch, the capacity of each expert from that rank, the routed tokens the
    busiest EP rank can receive, the balanced share a rank receives) under Megatron-Core's token drop without padding, as the row's code runs it
    (NVIDIA/Megatron-LM 6a6cd478 = Pai-Megatron-Patch 2b201af's Megatron-LM-250624): the router drops per source rank,
    before any dispatch (moe/router.py TopKRouter.routing -> moe_utils.topk_softmax_with_capacity: capacity =
    get_capacity(num_tokens x topk, experts, factor) over the rank's own tokens, num_tokens = its sequence shard under
    sequence parallelism), and both dispatchers send only what is left (token_dispatcher.py: alltoall's routing_map;
    flex's _DeepepManager.setup_metadata masks a dropped token's index with -1). So an expert receives at most EP x
    capacity from the EP group's ranks, a rank its local experts' worth: at factor 1 the balanced share."""
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    model = resolve_job(job(r), load_catalog()).model
    tokens = int(r["seq_len"]) * int(r["micro_batch"]) // int(r["tp"])
    factor = float(r["routing"].removeprefix("capacity"))
    cap = int(np.ceil(tokens * model.experts_per_token / model.experts * factor))
    ep = int(r["ep"])
    return tokens, cap, ep * cap * (model.experts // ep), tokens * model.experts_per_token


def dispatcher_split_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """209 (a): the capacity-1 DeepEP row over its forced-balance alltoall twin. The drop bound (capacity_bound) leaves
    the busiest rank no more routed tokens than the twin's balanced share, so the row's GPU work is at most the
    twin's; and the estimate's predicted gain splits into the flex dispatcher's one copy a rank (comm) and its
    per-kernel host figure, gemm.moe_host_s_per_expert_kernel flex 2.0e-5 (derived on GB200's Grace host) against
    alltoall 3.56e-5 (fitted on DGX-B200's x86 host): the rows' x86 host with the flex figure set to alltoall's is
    what the first factor alone gives (a diagnostic, not an estimate; docs/known-gaps.md 89 (b), 217 (a))."""
    import dataclasses

    from trainsizer.estimate.calibration import load_constants

    k = load_constants()
    x86 = dataclasses.replace(k, moe_host_s_per_expert_kernel=dict.fromkeys(k.moe_host_s_per_expert_kernel,
                                                                          k.moe_host_s_per_expert_kernel["alltoall"]))
    by = {r["id"]: r for r in rows()}
    cap1, twin = XT + "tp4_ep8_deepep_pp8_vpp4_capacity1", XT + "tp4_ep8_pp8_vpp4"
    pred = {rid: p for rid, _, _, p in cs}
    meas = {rid: m for rid, _, m, _ in cs}
    same = dict(job_tokens_per_gpu(((rid, job(by[rid])) for rid in (cap1, twin)), constants=x86))
    tokens, cap, busiest, balanced = capacity_bound(by[cap1])
    return [f"  capacity 1: {tokens} tokens a source rank, {cap} to an expert from each, the busiest rank at most "
            f"{busiest} routed tokens (the balanced share: {balanced})",
            f"  DeepEP at capacity 1 over the forced alltoall twin: measured {meas[cap1] / meas[twin]:.3f}, predicted "
            f"{pred[cap1] / pred[twin]:.3f} = comm {same[cap1] / same[twin]:.3f} x host figure "
            f"{pred[cap1] / same[cap1] * same[twin] / pred[twin]:.3f}; the row at the x86 figure "
            f"{100 * (same[cap1] / meas[cap1] - 1):+.1f}% (as predicted {100 * (pred[cap1] / meas[cap1] - 1):+.1f}%)"]


def layer_floor(r: dict[str, str]) -> tuple[float, float, float] | None:
    """(measured, at most left for the layers' own work, predicted layers' own work) in seconds a micro-batch on the
    paced stage, for a row whose EP all-to-all is the NCCL one inside one host (alltoall dispatcher, one NVLink domain):
    the measured step less the estimate's step-level terms (bubble, p2p, DP, optimizer, data) over the micro-batches,
    less its all-to-all at the link's full rate a direction (the estimate's time x nccl_alltoall_busbw_fraction: no
    all-to-all moves more than the link carries) and its TP collectives; the prediction's compute (GEMMs, attention,
    element-wise, the host's excess). The all-to-all count is the code's: Megatron-Core re-runs the dispatch and
    combine in a recompute (moe_layer.py custom_forward under tensor_parallel.checkpoint at Megatron-LM 6a6cd478), as
    charged. None for other rows. docs/known-gaps.md 217 (c)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.calibration import load_constants
    from trainsizer.estimate.step_time import step_time_arrays
    from trainsizer.scenario import resolve_job

    sc = resolve_job(job(r), load_catalog())
    a = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in
         step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()}
    if r["moe_dispatcher"] != "alltoall" or a["ep_domains"] != 1.0:
        return None
    m = a["micro_batches"]
    step_level = sum(a[k] for k in ("pp_bubble", "pp_comm", "dp_comm", "optimizer", "data_loading"))
    measured = (float(r["step_time_s"]) - step_level) / m
    fraction = float(load_constants().raw["comm"]["nccl_alltoall_busbw_fraction"])
    left = measured - (a["ep_comm"] * fraction + a["tp_comm"]) / m
    return measured, left, a["compute"] / m


def layer_floor_lines() -> list[str]:
    """Each intra-host alltoall row's layer work: what the measured step leaves for it at most and what the estimate
    holds (layer_floor): predicted over the most the run leaves, > 1 = the estimate's layer work is too slow even if
    the all-to-alls ran at the link's full rate."""
    out = []
    for r in kept_rows(rows()):
        f = layer_floor(r)
        if f is not None:
            measured, left, predicted = f
            out.append(f"  {r['id'].split('gpu_')[-1]:36s} measured {1e3 * measured:7.1f} ms a micro-batch, at most "
                       f"{1e3 * left:7.1f} left for the layers, predicted {1e3 * predicted:7.1f} ({predicted / left:.2f}x)")
    return out


TITAN_BATCH = ph.Batch((TITAN,))  # source (3), time and memory rows, in perf_heldout's columns and job path (257 (b))
titan_rows, titan_run = TITAN_BATCH.rows, TITAN_BATCH.run_all


def memory_lines(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[str]:
    """Source (3)'s reserved peaks: measured less predicted at each scale (what the estimate lacks), the fall from 8 to
    128 GPUs (what shards with FSDP), and the rise from local batch 8 to 10 on 128 GPUs (what grows with the batch)."""
    mem = {c.row_id.removesuffix("_peak_memory"): c for c, _, _ in run if c.metric == "peak_memory_gib" and not c.skipped}
    out = [f"  {rid.removeprefix(NOUS):32s} measured {c.measured:6.1f} predicted {c.predicted:6.1f} GiB, "
           f"missing {c.measured - c.predicted:5.1f}" for rid, c in mem.items()]
    one, all16, lbs10 = (mem[NOUS + k] for k in ("deepep_ep8_lbs8_8gpu", "deepep_ep8_lbs8_128gpu",
                                                "deepep_ep8_lbs10_128gpu"))
    out.append(f"  8 -> 128 GPUs: measured -{one.measured - all16.measured:.1f}, predicted "
               f"-{one.predicted - all16.predicted:.1f} GiB; local batch 8 -> 10 on 128: measured "
               f"+{lbs10.measured - all16.measured:.1f}, predicted +{lbs10.predicted - all16.predicted:.1f} GiB")
    return out


def fits() -> list[Fit]:
    return job_fits((r["id"], job(r)) for r in kept_rows(rows()))


def errors() -> np.ndarray:
    """Signed (predicted - measured) / measured of every scored row of sources (1) and (2)."""
    return np.array([p / m - 1.0 for _, _, m, p in cases()])


def batch_errors() -> tuple[np.ndarray, np.ndarray]:
    """Signed errors of every scored time row of the batch (sources 1-3) and of its memory rows (source 3)."""
    run = [c for c, _, _ in titan_run() if not c.skipped]
    time = [c.err for c in run if c.metric not in ph.MEMORY_METRICS]
    memory = np.array([c.err for c in run if c.metric in ph.MEMORY_METRICS])
    return np.concatenate([errors(), np.array(time)]), memory


def main() -> None:
    cs = cases()
    print("Megatron-Core MoE on H800 (held out; tokens/s a GPU):")
    errs = print_cases(cs)
    signed = errors()
    print(f"\nperf_heldout55: time n={len(cs)} MAPE {100 * errs.mean():.1f}% (median {100 * np.median(signed):+.1f}%)")
    by = {r["id"]: dict(r, source_key=r["id"].split("_")[0], recompute=r["recompute_modules"] or
                        ("full" if "recompute=full" in r["strategy_extra"] else "none")) for r in kept_rows(rows())}
    print_groups(cs, by, ("source_key", "model", "tp", "moe_dispatcher", "recompute"))
    for rid, why in refused_rows(rows()):
        print(f"  refused {rid}: {why}")
    print("\none setting changed, a row over its partner (measured vs predicted):")
    print("\n".join(ratio_lines(cs)))
    print("the router's own routing at capacity 2 / 3 / 5 (refused) against capacity 1:")
    print("\n".join(capacity_lines(cs)))
    print("the drop bound and the predicted DeepEP gain at EP 8, split (a diagnostic):")
    print("\n".join(dispatcher_split_lines(cs)))
    print("the layers' own work a micro-batch with the all-to-alls at the link's full rate (intra-host alltoall rows):")
    print("\n".join(layer_floor_lines()))
    print("the same layouts on H100 (perf_heldout45, the Model Zoo's Megatron-LM runs):")
    print("\n".join(h100_lines(cs)))
    print("error as predicted and with the host terms off (a diagnostic):")
    print("\n".join(host_free_lines(cs)))
    print_fits(fits(), "perf_heldout55")
    run = titan_run()
    print("\n(3) torchtitan with DeepEP on B200, Qwen3-30B-A3B (held out):")
    for c, _, _ in run:
        shown = f"{c.predicted:9.1f} {100 * c.err:+7.1f}" if not c.skipped else f"refused: {c.skipped}"
        print(f"{c.row_id.removeprefix(NOUS):46s} {c.metric:22s} {c.measured:9.1f} {shown}")
    print("reserved peaks (GiB):")
    print("\n".join(memory_lines(run)))
    time, memory = batch_errors()
    print(f"\nperf_heldout55, the batch: time n={len(time)} MAPE {100 * np.abs(time).mean():.1f}% (median "
          f"{100 * np.median(time):+.1f}%); memory n={len(memory)} MAPE {100 * np.abs(memory).mean():.1f}% (median "
          f"{100 * np.median(memory):+.1f}%)")


if __name__ == "__main__":
    main()
