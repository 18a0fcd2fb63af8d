"""Held-out check on published runs added 2026-12-05 (eleventh batch; nothing is fitted on them): multi-node
pre-training and LoRA runs of MLPerf Training v4.1 (2024-11-13), v4.0 (2024-06-12) and v3.1 (2023-11-08) that no benchmark
held (no row of these rounds was in our data), read from mlcommons/training_results_v4.1 at b87b9e3, training_results_v4.0
at 6fe9543 and training_results_v3.1 at d06288b:
each row's layout from the config its submission names (config_<system>_<nodes>x<gpus>x<minibs>x<tp>x<pp>... .sh with
its config_common.sh), its global batch from the log, its rate the median of the logs' own timing lines. One csv,
benchmarks/data/heldout_2026l_mlperf4.csv, in heldout_2026b_mlperf_nvidia.csv's columns plus `per_node` and `refused`;
each job built by perf_heldout26.mlperf_nvidia_job (perf_mlperf's row job).

(1) GPT-3 175B pre-training on NVIDIA's v4.1 code (NeMo 24.09-alpha.rc0 / Megatron-Core, FP8 delayed scaling with FP8
weights, distributed optimizer, userbuffers TP overlap, TP 4 x PP 8 interleaved, sequence 2,048): NVIDIA on 256 / 512
H100 (Eos, 8 x NDR 400 a node) and on 64 B200 (a preview system, per-layer CUDA graphs), Oracle on 1,536 / 3,072 H100
(BM.GPU.H100.8 over RoCE, VP 4, global batch 3,072); each the median per-step train_step_timing of the logs.
(2) Llama 2 70B LoRA on NVIDIA's v4.1 code (the code perf_heldout26 / 27 read from later rounds' H200 runs): NVIDIA's own
runs on 8 / 64 / 1,024 H100 and 8 H200, Oracle's on 64 / 128 / 512 H100, Dell's on 64 H100 and Azure's on 512 H200 (ND
H200 v5); the multi-node configs are NVIDIA's files (TP 4 x CP 2, one sequence a data-parallel rank, per-layer CUDA
graphs), so those rows are one job on four hosts and at four scales.
(3) Llama 2 70B LoRA on NVIDIA's v4.0 code (NeMo v2.0.0.rc0.beta, Megatron-Core 0.7.0 beta; no CUDA graphs, FP8 attention):
NVIDIA on 8 / 64 / 1,024 H100, 8 H200, and 64 / 384 L40S (4-GPU PCIe nodes, TP 4 inside a node, CP 2 across two, two
BlueField-3 400 Gb/s NICs a node). (2) and (3) are each the median per-block throughput (samples/s) of the logs.
(4) GPT-3 175B pre-training on NVIDIA's v3.1 code (NeMo 23.09: FP8 without FP8 weights, TP 4 x PP 8 x VP 12, micro-batch 1)
on NVIDIA's 512-10,752 H100 (Eos) and Azure's 10,752 H100 (ND H100 v5), and on the v4.0 code (FP8 weights; 512 H100 at
VP 4, 10,752 / 11,616 H100 at PP 6 x VP 8 with per-layer CUDA graphs). Their logs print no per-step time: each row is the
median of the blocks' time (block_start to block_stop, evaluation outside) over the block's steps, the first block of
each log left out (on v4.1's 256-H100 run, which prints both, the block figure is 0.2% above the per-step one).

Networks: NVIDIA's and Azure's H100 / H200 system files state 8 x ConnectX-7 NDR 400 a node (ib-ndr400); Dell's states
none (ib-ndr400 assumed); Oracle's states RoCEv2 but no NIC count (OCI's 16 x 200 Gb/s a node assumed) and the L40S
systems two 400 Gb/s BlueField-3 NICs: both written as inline networks (the row's `network` column as `key=value;...`,
as perf_heldout34's Krai rows) and named as assumptions in the row.

Refused (kept in the csv with the reason): NVIDIA's 11,616-H100 GPT-3 run (LOG_METRICS OFF: its logs print no step
time), Dell's 16 / 32-H100 LoRA runs (no config of those sizes in the submission, none printed), Clemson's 56-H100 LoRA
run (its logs print no throughput). Left out: the v3.0 round's GPT-3 runs (NeMo v1.17: its config_common.sh's micro-batch 2 and TP overlap off
contradict the configs' names), the
single-node LoRA runs of other submitters in both rounds (the same 8-GPU jobs on other hosts:
the vendor spread perf_heldout34 (3) measures), Juniper's v4.0 DeepSpeed LoRA runs, Intel's Gaudi2 and Google's TPU
runs (no such part in the catalog) (docs/known-gaps.md 99).

Deferred LM-head weight gradients (the `wgrad_deferral_limit` column, perf_mlperf.job: strategy.defer_embedding_wgrad):
v4.1's 256 / 512-H100 GPT-3 configs set DEFER_EMBEDDING_WGRAD_COMPUTE True with WGRAD_DEFERRAL_LIMIT 65; v4.0's
micro-batch-1 runs (10,752 / 11,616 H100) take custom.yaml's default (pipelined, MINIBS <= 256, micro-batch 1: on) with no
limit (0: all); the micro-batch-2 configs (v4.0's 512, v4.1's B200 and Oracle's) set neither, so the default leaves it off,
and v3.1's NeMo 23.09 predates the option (NeMo 3baa24cb, 2024-04-03).

Printed: each row (measured, predicted, error), the MAPE per source and task, refused rows, the worst rows, each scale
series' per-GPU rate over its smallest run's (measured and predicted), the line step = a m + b through each GPT-3 series
(perf_mlperf.print_step_lines: a the per-micro-batch time, b what a step costs whatever its micro-batch count, the
predicted b by term; known-gaps 106), the same LoRA job on other hosts against NVIDIA's
run, NVIDIA's v4.1 code over its v4.0 code at one part and GPU count (the H200 pair changes layout too: TP 2 -> TP 1 x
CP 2), each LoRA row's measured - predicted step with its micro-batches a step and graphs, the 512-H200 pair of the
v4.1 code with and without per-layer CUDA graphs (docs/known-gaps.md 105), and rows predicted not to fit.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout36.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import perf_heldout as ph
from harness import Fit, job_fits, job_tokens_per_gpu, kept_rows, print_cases, print_fits, refused_rows
from perf_heldout26 import mlperf_nvidia_job, mlperf_nvidia_rows
from perf_heldout34 import scale_series
from perf_mbridge26 import print_keyed_groups, print_worst
from perf_mlperf import micro_batches, print_step_lines

DATA = Path(__file__).resolve().parent / "data"
MLPERF4 = DATA / "heldout_2026l_mlperf4.csv"
# the LoRA job every multi-node row of (2) runs (NVIDIA's config_DGXH100_8x8x1xtp4pp1cp2.sh): the other hosts' rows of
# it, each against NVIDIA's own run of the same file
LORA_BASE = "mlperf4.1_nvidia_h100_llama2_70b_lora_fp8_64gpu"
LORA_SAME_JOB = ("mlperf4.1_oracle_h100_llama2_70b_lora_fp8_64gpu", "mlperf4.1_dell_h100_llama2_70b_lora_fp8_64gpu")
# NVIDIA's v4.1 LoRA code on 512 H200 with per-layer CUDA graphs (Azure, this file) and without them (Oracle's MLPerf
# v5.0 run, perf_heldout26's csv: LAYER_CUDA_GRAPH unset): one code, part, size and layout, the graphs apart (and
# MC_TP_OVERLAP_RS_DGRAD, False in Azure's file, True in Oracle's), so their ratio is what the graphs take off the
# eager step (docs/known-gaps.md 105)
GRAPHS_PAIR = ("mlperf4.1_azure_h200_llama2_70b_lora_fp8_512gpu", "mlperf5.0_oracle_h200_llama2_70b_lora_fp8_512gpu")


def rows() -> list[dict[str, str]]:
    """Every row of the csv, the refused ones included."""
    return list(csv.DictReader(MLPERF4.open(encoding="utf-8")))


def scored_rows() -> list[dict[str, str]]:
    return kept_rows(rows())


def refused() -> list[tuple[str, str]]:
    """(row id, why it is not estimated) of the refused rows."""
    return refused_rows(rows())


def job(r: dict[str, str]) -> dict:
    """perf_heldout26's MLPerf job of the row (perf_mlperf's, with the FP8 transpose cache the config states), its
    network the row's inline one where the column holds `key=value;...` (nics_per_node, gbps_per_nic, kind), its host
    size the row's `per_node` where the run's hosts are not the catalog part's (4-GPU L40S nodes)."""
    out = mlperf_nvidia_job(r)
    if "=" in r["network"]:
        out["hardware"]["network"] = ph._extra(r["network"])
    if r["per_node"]:
        out["hardware"]["per_node"] = int(r["per_node"])
    return out


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of every scored row."""
    rs = scored_rows()
    predicted = job_tokens_per_gpu((r["id"], job(r)) for r in rs)
    return [(r["id"], r["source_key"], float(r["tokens_per_sec_per_gpu"]), p)
            for r, (_, p) in zip(rs, predicted, strict=True)]


def fits() -> list[Fit]:
    """Each scored row's predicted peak memory against the card's usable memory (every run was made)."""
    return job_fits((r["id"], job(r)) for r in scored_rows())


def task_of(row_id: str) -> str:
    """'gpt3 175b' or 'llama2 70b lora' from 'mlperf4.1_nvidia_h100_gpt3_175b_fp8_256gpu'."""
    return "gpt3 175b" if "_gpt3_" in row_id else "llama2 70b lora"


def series_id(row_id: str) -> str:
    """The id less its submitter, so one job's runs by several submitters sort into one series by part and task."""
    head, submitter, rest = row_id.split("_", 2)
    return f"{head}_{rest}"


def same_job_ratios(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted per-GPU rate over NVIDIA's run of the same config) for the other hosts' runs of it."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    m0, p0 = by[LORA_BASE]
    return [(rid, by[rid][0] / m0, by[rid][1] / p0) for rid in LORA_SAME_JOB]


def release_pairs(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(v4.1 row, measured, predicted per-GPU rate over NVIDIA's v4.0 run of the same part and GPU count): what the v4.1
    code gained at one layout (the multi-node runs added per-layer CUDA graphs, dropped FP8 attention and the amax
    all-reduce; the one-node runs changed little), against what the estimate gives those options."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    out = []
    for rid in by:
        twin = rid.replace("mlperf4.1_", "mlperf4.0_")
        if rid.startswith("mlperf4.1_nvidia_") and "_lora_" in rid and twin in by:
            out.append((rid, by[rid][0] / by[twin][0], by[rid][1] / by[twin][1]))
    return out


def lora_step_gaps(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, int, str, float]]:
    """(row, micro-batches a step, cuda_graph, measured - predicted step in ms) of the LoRA rows: the predicted step
    is the logged one times measured over predicted rate. A cost paid once a step shows as one gap at every
    micro-batch count; one paid each layer and micro-batch grows with the micro-batches (docs/known-gaps.md 105)."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    out = []
    for r in scored_rows():
        if r["task"] == "lora":
            m, p = by[r["id"]]
            out.append((r["id"], round(micro_batches(r)), r["cuda_graph"], 1e3 * float(r["step_s"]) * (1.0 - m / p)))
    return out


def graphs_pair(cs: list[tuple[str, str, float, float]]) -> tuple[float, float]:
    """(measured, predicted) per-GPU rate of GRAPHS_PAIR's graphed run over its eager one."""
    graphed, eager = GRAPHS_PAIR
    row = next(r for r in mlperf_nvidia_rows() if r["id"] == eager)
    ((_, p_eager),) = job_tokens_per_gpu([(eager, mlperf_nvidia_job(row))])
    m_graphed, p_graphed = next((m, p) for rid, _, m, p in cs if rid == graphed)
    return m_graphed / float(row["tokens_per_sec_per_gpu"]), p_graphed / p_eager


def main() -> None:
    cs = cases()
    print("MLPerf Training v4.1 / v4.0 / v3.1 GPT-3 175B and Llama 2 70B LoRA on NVIDIA's code (held out):")
    errs = print_cases(cs)
    print(f"\nperf_heldout36: time n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    print_keyed_groups(cs, (("source", lambda rid, s: s), ("task", lambda rid, s: task_of(rid))), 86)
    for rid, why in refused():
        print(f"  refused {rid}: {why}")
    print_worst(cs, 6)
    print("\neach scale series' per-GPU rate over its smallest run's (measured vs predicted; submitters pooled by part):")
    pooled = [(series_id(rid), s, m, p) for rid, s, m, p in cs]
    for rid, meas, pred in scale_series(pooled):
        print(f"  {rid:58s} measured {meas:.3f} predicted {pred:.3f}")
    print_step_lines(scored_rows(), {rid: (m, p) for rid, _, m, p in cs}, job_of=job)
    print(f"the same LoRA job on other hosts, per-GPU rate over NVIDIA's run ({LORA_BASE}):")
    for rid, meas, pred in same_job_ratios(cs):
        print(f"  {rid:58s} measured {meas:.3f} predicted {pred:.3f}")
    print("NVIDIA's v4.1 LoRA code over its v4.0 code at one part and GPU count (measured vs predicted):")
    for rid, meas, pred in release_pairs(cs):
        print(f"  {rid:58s} measured {meas:.3f} predicted {pred:.3f}")
    print("LoRA rows, measured - predicted step (ms; micro-batches a step, CUDA graphs):")
    for rid, micro, graphs, gap in lora_step_gaps(cs):
        print(f"  {rid:58s} {micro} mb, graphs {graphs:5s} {gap:+7.1f} ms")
    meas, pred = graphs_pair(cs)
    print(f"per-layer CUDA graphs alone, {GRAPHS_PAIR[0]} over {GRAPHS_PAIR[1]}: measured {meas:.3f} predicted {pred:.3f}")
    print_fits(fits(), "perf_heldout36")
    worst = max(cs, key=lambda c: abs(c[3] - c[2]) / c[2])
    print(f"\nperf_heldout36 (all rows): time n={len(cs)} MAPE {100 * np.mean(errs):.1f}%, worst {worst[0]} "
          f"{100 * (worst[3] - worst[2]) / worst[2]:+.1f}%")


if __name__ == "__main__":
    main()
