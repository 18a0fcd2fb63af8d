"""Held-out check on published runs no other benchmark holds (added 2026-12-02; nothing is fitted on them):

- Megatron-Bridge 26.02 pre-training tables (benchmarks/data/heldout_2026b.csv): every line of the 26.02 NeMo
  Container section of docs/performance-summary-archive.md at Megatron-Bridge commit 067f987d whose model has a
  preset -- Llama 3 70B, Llama 3.1 405B, DeepSeek-V3, GPT-OSS 120B, Qwen3 30B-A3B / 235B-A22B on DGX-GB300, -GB200,
  -B300, -B200 and -H100 in BF16, FP8 current scaling, MXFP8 and NVFP4 (33 rows). The release is v0.3.0
  (tagged 2026-02-26, the day the 26.02 table was committed, c0b9a0003). Each row is stated from the workload base
  config v0.3.0's scripts/performance loads for it (configs/*/*_workload_base_configs.py, the V2 variant else V1, as
  utils.get_workload_base_config picks: every table layout, batch and GPU count equals its config's), with the same
  reading of the config as perf_mbridge26.py (its `job` builds these rows): Megatron-FSDP and
  cpu_offloading_num_layers, recompute_modules, CUDA graphs (cuda_graph_impl local with scope full_iteration =
  full_iteration; Transformer Engine graphs of parts of a layer written none; no graphs where the config sets none:
  v0.3.0's recipes leave Megatron-Core's default, none), the MoE dispatcher (flex where moe_flex_dispatcher_backend
  is set, else alltoall) and moe_a2a_overlap. v0.3.0 has no FP8 attention option (fp8_attention 0). Its image is
  nvcr.io/nvidia/pytorch:25.11-py3 (docker/Dockerfile.ci), whose cuDNN is 9.17.0: the Blackwell rows state cuDNN
  9.17 as perf_mbridge26 does, here read, not assumed. What the rows cannot state is in their `assumed` column.
  Kimi-K2 and Nemotron 3 are not in the 26.02 table; the 26.02.01 and 26.04.01 tables are left for later.
- NeMo AutoModel (benchmarks/data/heldout_2026b_automodel.csv, the columns of heldout_pretrain.csv plus method /
  lora_rank / lora_targets, built by perf_heldout.job_of): the Nemotron V3 Nano 30B pre-training row (8 H100, EP 8,
  added at bb0c0bfb0; perf_heldout holds the table's other rows) and every row of
  docs/performance-summary.md 'Fine-Tuning (LoRA) Performance' as printed at Automodel commit e45812012 (DGX-H100,
  BF16, PyTorch FSDP2: Llama 3.1 8B and Qwen2.5 7B on 1 GPU, Llama 3.3 70B and Qwen2.5 32B at TP 2 on 8 and 16 GPUs),
  each stated from the config of the commit that added the row (507bfb751 for the 1-GPU rows, 2013a4dd6 for the
  others): LoRA dim 16 on every linear layer, AutoModel's eager LinearLoRA (lora.impl automodel; use_triton is
  dropped where Transformer Engine imports) with the dropout each config sets (0.1 on the 8B, else 0), local batch 2,
  activation checkpointing, async TP, compile and sequence parallelism as each config sets; the `framework` is `torchtitan` (FSDP2 style) as perf_heldout's AutoModel
  pre-training rows.
- MLPerf Training v5.0 / v5.1, MangoBoost's closed Llama 2 70B LoRA submissions on AMD Instinct
  (benchmarks/data/heldout_2026b_mlperf.csv, the columns of amd_mlperf.csv plus `network`, built by perf_amd.job):
  MI300X on 1, 2 and 4 nodes (v5.0), MI300X and MI325X on 1 and 2 nodes (v5.1), context parallel = the node count;
  each row the median of the result logs' per-block samples/s (MLLOG tracked_stats throughput, as perf_amd's rows),
  the layout and recompute from the submission's config_*.sh. The multi-node rows ran over each node's 8 GPUBoost
  RDMA NICs (RoCEv2) of unstated speed: 400 Gb/s assumed.
- MLPerf Training v5.0, IBM+CoreWeave+NVIDIA's closed Llama 3.1 405B pre-training on GB200 NVL72 (512, 1,024, 1,536,
  2,048 and 2,496 GPUs; benchmarks/data/heldout_2026b_mlperf_nvidia.csv, the columns of nvidia_mlperf.csv, built by
  perf_mlperf.job): NVIDIA's GB200 405B implementation of the same release (TP 4 PP 8 VPP 8 CP 2, full-iteration
  CUDA graph), each row the median per-step train_step_time of the result logs as perf_mlperf's rows; every column
  stated as perf_mlperf's NVIDIA GB200 512-GPU row states it (its 19.474 s against this cluster's 19.314 s); and
  Oracle's Llama 2 70B LoRA on H200 (1 and 64 nodes; NVIDIA's v4.1 LoRA implementation, NeMo 24.09-alpha: TP 4 with
  sequence parallel and userbuffers overlap, CP 1 / 2, FP8 with fp8_params, no CUDA graphs), each row the median of the
  logs' per-block samples/s (custom_callbacks.py: samples over the summed train-batch times); and Dell's runs of the
  same code on one node of H200 SXM (two chassis) and H200 NVL (8 and 4 GPUs), TP 1 CP 2, and Cisco's (v5.1) on 1 and 2
  H200 SXM nodes, each read from the resolved config its logs print; and SCITIX's run of Oracle's 64-GPU layout (TP 4,
  CP 2, one micro-batch a GPU per step) on 8 H100 nodes with per-layer CUDA graphs (LAYER_CUDA_GRAPH: custom_callbacks.py
  wraps each decoder layer in Transformer Engine make_graphed_callables), which splits Oracle's 512-GPU gap into what
  graphs remove and what stays. The v4.1 code sets disable_parameter_transpose_cache: those rows state fp8_transpose_cache 0.

The MLPerf rows on NVIDIA's code also print perf_mlperf's step lines (step = a x micro-batches + b over the rows of one
benchmark, system and layout at several scales): IBM+CoreWeave's per-step b is where its per-GPU rate goes at scale.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout26.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from harness import Fit, job_fits, job_tokens_per_gpu, print_cases, print_fits, row_cases
from perf_amd import job as amd_job
from perf_blackwell import DATA as BLACKWELL_ROWS
from perf_blackwell import job as blackwell_job
from perf_heldout import job_of
from perf_mbridge26 import group_mape, print_groups, print_missing_per_token_layer, print_worst
from perf_mbridge26 import job as mbridge_job
from perf_mlperf import job as nvidia_mlperf_job
from perf_mlperf import print_step_lines

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026b.csv"
AUTOMODEL = Path(__file__).resolve().parent / "data" / "heldout_2026b_automodel.csv"
MLPERF = Path(__file__).resolve().parent / "data" / "heldout_2026b_mlperf.csv"
MLPERF_NVIDIA = Path(__file__).resolve().parent / "data" / "heldout_2026b_mlperf_nvidia.csv"


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def automodel_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(AUTOMODEL.open(encoding="utf-8")))


def automodel_job(r: dict[str, str]) -> dict:
    """An AutoModel row as a job: perf_heldout's row job (no inline models here) with the row's method and LoRA."""
    job = job_of(r, {})
    job["method"] = r["method"]
    if r["method"] == "lora":
        job["lora"] = {"rank": int(r["lora_rank"]), "targets": r["lora_targets"].split(),
                       "dropout": float(r["lora_dropout"] or 0.0), "impl": r["lora_impl"] or None}
    return job


def automodel_cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of the AutoModel rows."""
    return row_cases(automodel_rows(), automodel_job, "source_key", "value")


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU)."""
    return row_cases(rows(), mbridge_job)


def mlperf_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(MLPERF.open(encoding="utf-8")))


def mlperf_job(r: dict[str, str]) -> dict:
    """An MLPerf AMD row as a job: perf_amd's row job, with the row's network where it spans nodes."""
    job = amd_job(r)
    if r["network"]:
        job["hardware"]["network"] = r["network"]
    return job


def mlperf_cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of the MLPerf rows."""
    return row_cases(mlperf_rows(), mlperf_job, "source_key")


def mlperf_nvidia_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(MLPERF_NVIDIA.open(encoding="utf-8")))


def mlperf_nvidia_job(r: dict[str, str]) -> dict:
    """An MLPerf row on NVIDIA's code as a job: perf_mlperf's row job, with the FP8 weight-transpose cache the run's
    config states where it says (`fp8_transpose_cache`, blank: perf_mlperf's default)."""
    job = nvidia_mlperf_job(r)
    if r["fp8_transpose_cache"]:
        job["strategy"]["fp8_transpose_cache"] = r["fp8_transpose_cache"] == "1"
    return job


def mlperf_nvidia_cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of the MLPerf rows on NVIDIA's implementation."""
    return row_cases(mlperf_nvidia_rows(), mlperf_nvidia_job, "source_key")


# One layout under two dispatchers (docs/known-gaps.md 89): Qwen3-30B-A3B on 16 H100 in FP8 current scaling at PP 2,
# VPP 12, EP 8, micro-batch 1 with moe_a2a_overlap, run by the 25.11 recipe with the alltoall dispatcher
# (perf_blackwell's development row at its RECIPE_LAYOUT) and by 26.02's with flex / DeepEP (this file's row)
DISPATCHER_PAIR = ("mbridge_25.11_h100_qwen3_30b_a3b_fp8-cs_16gpu", "mbridge_26.02_h100_qwen3_30b_a3b_fp8-cs_16gpu")


def print_dispatcher_pair(cs: list[tuple[str, str, float, float]]) -> None:
    """The 26.02 flex row's tokens/s/GPU over the 25.11 alltoall row's, measured and predicted: the estimate's
    dispatcher difference on H100 is its per-expert host constant (gemm.moe_host_s_per_expert_kernel flex against
    alltoall), which the two runs do not show."""
    old_id, new_id = DISPATCHER_PAIR
    old = next(r for r in csv.DictReader(BLACKWELL_ROWS.open(encoding="utf-8")) if r["id"] == old_id)
    ((_, p_old),) = job_tokens_per_gpu([(old_id, blackwell_job(old))])
    m_new, p_new = next((m, p) for rid, _, m, p in cs if rid == new_id)
    m_old = float(old["tokens_per_sec_per_gpu"])
    print(f"H100 Qwen3-30B-A3B, one layout, alltoall (25.11, development) -> flex (26.02): measured "
          f"{m_new / m_old:.3f} predicted {p_new / p_old:.3f}")


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    jobs = [(r["id"], mbridge_job(r)) for r in rows()] + [(r["id"], automodel_job(r)) for r in automodel_rows()]
    jobs += [(r["id"], mlperf_job(r)) for r in mlperf_rows()]
    return job_fits(jobs + [(r["id"], mlperf_nvidia_job(r)) for r in mlperf_nvidia_rows()])


def main() -> None:
    cs = cases()
    errs = print_cases(cs)
    print(f"\nMegatron-Bridge 26.02 (held out, nothing fitted): n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    print_groups(cs, {r["id"]: r for r in rows()}, ("system", "precision", "model"))
    print_worst(cs, 8)
    print_missing_per_token_layer(cs, {r["id"]: r for r in rows()})
    print_dispatcher_pair(cs)
    pc = automodel_cases()
    print_cases(pc, blank_line=True)
    for title, keep in (("LoRA", lambda rid: "_lora_" in rid), ("pre-training", lambda rid: "_lora_" not in rid)):
        perr = np.array([abs(p - m) / m for rid, _, m, p in pc if keep(rid)])
        print(f"NeMo AutoModel {title}, H100 (held out, nothing fitted): n={len(perr)} MAPE {100 * perr.mean():.1f}%")
    mc = mlperf_cases()
    mc_errs = print_cases(mc, blank_line=True)
    print(f"MLPerf MangoBoost LoRA, AMD Instinct (held out, nothing fitted): n={len(mc)} MAPE {100 * mc_errs.mean():.1f}%")
    by_id = {rid: (m, p) for rid, _, m, p in mc}
    for rid, (m, p) in by_id.items():  # the same submitter, release and GPU on one node
        one = by_id.get(rid.rsplit("_", 1)[0] + "_8gpu")
        if one and not rid.endswith("_8gpu"):
            print(f"  per-GPU rate over one node: {rid:50s} measured {m / one[0]:.3f} predicted {p / one[1]:.3f}")
    nc = mlperf_nvidia_cases()
    print_cases(nc, blank_line=True)
    for g, (n, mape) in group_mape(nc, lambda rid, key: key).items():
        print(f"{g} (held out, nothing fitted): n={n} MAPE {mape:.1f}%")
    ibm = [(int(r["gpu_count"]), m, p) for r, (_, _, m, p) in zip(mlperf_nvidia_rows(), nc, strict=True) if "_ibm_" in r["id"]]
    (g0, m0, p0), (g1, m1, p1) = ibm[0], ibm[-1]
    print(f"  IBM+CoreWeave per-GPU rate at {g1} over {g0} GPUs: measured {m1 / m0:.3f} predicted {p1 / p0:.3f}")
    print_step_lines(mlperf_nvidia_rows(), {rid: (m, p) for rid, _, m, p in nc}, mlperf_nvidia_job)
    print_fits(fits(), "perf_heldout26")


if __name__ == "__main__":
    main()
