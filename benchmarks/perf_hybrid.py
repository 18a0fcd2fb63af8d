"""Held-out check on hybrid Mamba-2 / attention models: published pre-training throughput of Nemotron 3 Nano 30B-A3B
(23 Mamba-2, 6 attention, 23 MoE layers) on DGX-GB300, -GB200, -B300, -B200 and -H100 from the Megatron-Bridge
performance tables (26.02.01 to 26.08 NeMo containers), and two Nemotron-H 56B runs from NVIDIA's DGX Cloud
benchmarking recipe (256 H100, release 25.07; 128 GB200, release 25.10: each README's example step time). Nothing is fitted on these rows: the Mamba-2 mixer is costed from its shapes
(trainsizer.estimate.mamba) on the same roofline and rates as every other kernel.

Data: benchmarks/data/hybrid_perf.csv -- one row per table line, each stated from the workload base config the
release's performance scripts load (scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py at
v0.4.0 for 26.02.01 to 26.04.01, v0.5.0 for 26.06 / 26.06.01 -- the same layouts --, the perf_recipes of 067f987d for
26.08): EP 8, MXFP8 on Blackwell with no recompute, FP8 current scaling on H100 with recompute_modules moe, layernorm,
core_attn, moe_act; the HybridEP flex dispatcher; bf16 gradient reduce (set_nemotron_3_nano_common_configs). What the
rows cannot state is in the `assumed` column (partial CUDA graphs, forced load balancing, the DGX-B300 network). The
Blackwell rows state cuDNN 9.17 for the fused attention, as perf_mbridge26's rows of the same releases do (CUDNN_26: the
images v0.3.0 to v0.5.0 build on ship 9.17 or later); a row's `cudnn_release` / `cuda_graphs` cells, where set, state
its own (the GB200 56B run: NeMo 25.09's container, cuDNN 9.13, per-layer graphs).

Also a cross-GPU check of the Mamba-2 mixer alone (nothing fitted, not in the MAPE): a pure Mamba-2 1.4B trained on one
A100, H200 and GB200 (state-spaces/mamba issue #904; benchmarks/data/mamba2_arch_ratio.csv): the issue's FLOP count is
not stated, so each GPU's throughput is compared as a ratio to the H200's.

Run: python benchmarks/perf_hybrid.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from harness import Fit, job_fits, job_tokens_per_gpu, pretrain_job, print_cases, print_fits, row_cases
from perf_mbridge26 import BLACKWELL, CUDNN_26

DATA = Path(__file__).resolve().parent / "data" / "hybrid_perf.csv"
RATIO_DATA = Path(__file__).resolve().parent / "data" / "mamba2_arch_ratio.csv"
# state-spaces/mamba issue #904's model: d_model 2048, 48 Mamba-2 layers, with the mamba_ssm Mamba2 defaults of the
# released mamba2-1.3b config (d_state 128, headdim 64, expand 2 -> 64 heads, ngroups 1, chunk 256, tied embeddings,
# vocab 50,277 padded to a multiple of 16)
MAMBA2_1P4B = {"name": "mamba2-1.4b", "family": "custom", "layers": 48, "hidden": 2048, "heads": 16, "vocab": 50288,
               "tied_embeddings": True, "layer_pattern": "M" * 48, "ssm_heads": 64, "ssm_head_dim": 64,
               "ssm_state": 128, "ssm_groups": 1, "ssm_chunk": 256}
# DGX systems as perf_blackwell.py / perf_mbridge26.py write them (DGX-B300: eight 800 Gb/s SuperNICs, assumed)
SYSTEMS = {"GB300": ("gb300", "ib-xdr800"), "GB200": ("gb200", "ib-ndr400"), "B200": ("b200", "ib-ndr400"),
           "B300": ("b300", "ib-xdr800"), "H100": ("h100-sxm-80gb", "ib-ndr400")}
PRECISION = {"BF16": ("bf16", "auto"), "FP8-CS": ("fp8", "tensorwise"), "FP8-DS": ("fp8", "delayed"),
             "MXFP8": ("fp8", "mxfp8")}


def job(r: dict[str, str]) -> dict:
    """The row as a job, with what its recipe sets."""
    acc, net = SYSTEMS[r["system"]]
    precision, recipe = PRECISION[r["precision"]]
    modules = tuple(r["recompute_modules"].split())
    tp = int(r["tp"])
    strategy = {
        "tp": tp, "pp": int(r["pp"]), "cp": int(r["cp"]), "ep": int(r["ep"]), "micro_batch": int(r["micro_batch"]),
        "recompute": "selective" if modules else "none", "recompute_modules": modules or None,
        "distributed_optimizer": True, "framework": "megatron-core", "sequence_parallel": tp > 1,
        "grad_reduce_in_fp32": False, "fp8_param_allgather": precision == "fp8", "loss_impl": "te",
        "cudnn_release": r["cudnn_release"] or (CUDNN_26 if r["system"] in BLACKWELL else None),
    }
    if r["cuda_graphs"]:
        strategy["cuda_graphs"] = r["cuda_graphs"]
    if r["moe_dispatcher"]:
        strategy["moe_dispatcher"] = r["moe_dispatcher"]
    return pretrain_job(r, r["model"], precision, recipe, acc, net, strategy)


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU)."""
    return row_cases(rows(), job)


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    return job_fits((r["id"], job(r)) for r in rows())


def ratio_cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted) throughput of each mamba2_arch_ratio.csv row relative to its H200 row:
    one GPU, batch 4 x 4,096, bf16, no recompute."""
    rs = list(csv.DictReader(RATIO_DATA.open(encoding="utf-8")))
    jobs = ((r["id"], {"model": MAMBA2_1P4B, "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
                       "global_batch": {"sequences": 4}, "precision": "bf16",
                       "hardware": {"accelerator": r["accelerator"], "count": 1},
                       "strategy": {"tp": 1, "pp": 1, "micro_batch": 4, "framework": "fsdp", "recompute": "none"}})
            for r in rs)
    pred = dict(job_tokens_per_gpu(jobs))
    ref = next(r for r in rs if r["system"] == "H200")
    m0, p0 = float(ref["model_tflops_per_gpu"]), pred[ref["id"]]
    return [(r["id"], r["system"], float(r["model_tflops_per_gpu"]) / m0, pred[r["id"]] / p0) for r in rs]


def main() -> None:
    cs = cases()
    errs = print_cases(cs)
    print(f"\nhybrid Mamba-2 / attention (held out, nothing fitted): n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    groups: dict[str, list[float]] = {}
    for _rid, system, m, p in cs:
        groups.setdefault(system, []).append(abs(p - m) / m)
    for g, e in groups.items():
        print(f"  system {g:6s} n={len(e):2d} MAPE {100 * float(np.mean(e)):5.1f}%")
    print_fits(fits(), "hybrid Mamba-2 / attention")
    print("\nMamba-2 1.4B on one GPU, throughput relative to H200 (state-spaces/mamba #904; not in the MAPE):")
    print(f"{'row':56s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for rid, _system, m, p in ratio_cases():
        print(f"{rid:56s} {m:9.3f} {p:9.3f} {100 * (p - m) / m:+7.1f}")


if __name__ == "__main__":
    main()
