"""PyTorch's grouped GEMM (torch._grouped_mm) on Blackwell: TorchAO's measured tables against the estimator's constants.

Data: benchmarks/data/grouped_mm_blackwell.csv, the B200 tables of pytorch/ao torchao/prototype/moe_training/README.md
(read at 0b1bb1172): torch._grouped_mm in bf16, forward + backward (the forward, dgrad and wgrad grouped GEMMs and an
MSE loss on the output; benchmark_scaled_grouped_mm_dq.py --compile, jagged group sizes from generate_jagged_offs) at
total M 128,000 split over 1-8 groups (16,000-128,000 rows a group) at Llama 4 Scout's (N 8,192, K 5,120) and
DeepSeek-V3's (N 2,048, K 7,168) expert shapes, torch 2.10.0a0; and TorchAO's MXFP8 kernel breakdown at DeepSeek-V3's
shapes (8 groups of 16,384 rows; torch 2.11.0.dev20251216): the scaled grouped GEMMs alone, quantisation kernels
apart. FLOPs counted as 2 M N K a GEMM, 6 M N K forward + backward.

What is derived from it (perf_constants.yaml gemm.grouped_mm_over_dense;
tests/estimate/test_grouped_mm.py checks that the shipped figures are these):
- grouped_mm_over_dense (Blackwell): the mean bf16 forward + backward rate of the eight rows over B200's BF16 MAMF
  (1,745 TFLOPS, Stas Bekman's table; attention_blackwell.MAMF_BF16): torch._grouped_mm's rate as a share of what a
  dense cuBLAS GEMM sustains on the same part. The estimate multiplies its dense GEMM rate by it for the routed
  experts of a style that runs torch._grouped_mm (PerfStyle.moe_torch_grouped_mm), so the part's training derate,
  power cap and GB200 / GB300 clocks apply as they do to its dense GEMMs. The table shows no trend in rows a group
  (Scout's shape rises 747 -> 854 TFLOPS from 1 to 8 groups, DeepSeek-V3's falls 863 -> 753): one figure, its
  spread printed.
- FP8 takes the same share of the recipe's dense FP8 rate, its casts charged as for any FP8 GEMM. The check: the
  model's MXFP8 / bf16 forward + backward time at each of the table's shapes (compute.linear_gemms at the grouped
  rates, compute._fp8_casts with the weights cast once) against TorchAO's measured speedup of its MXFP8 grouped GEMMs
  with their quantisation, same table and build (1.64-1.81x at Scout's shapes, 1.19-1.60x at DeepSeek-V3's).
  TorchAO's MXFP8 GEMMs alone (its kernel breakdown, a torch build a month later) run 2.52x the bf16 rate at
  DeepSeek-V3's shape, printed, not used: beside them its quantisation kernels (separate dim0 / dim1 passes, scale
  swizzles) cost more than the casts the estimate counts (docs/known-gaps.md 61).
Nothing here is fitted on a training row; the rows it moves are perf_heldout28's torchtitan GPT-OSS 20B / Llama 4
Scout on GB200 and perf_heldout29's Nebius DeepSeek-V3 on B200 (docs/known-gaps.md 61).

Run: python benchmarks/grouped_mm.py
"""

from __future__ import annotations

import csv
import dataclasses
import statistics
from pathlib import Path

from attention_blackwell import MAMF_BF16
from trainsizer.catalog import load_catalog
from trainsizer.estimate import compute
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "grouped_mm_blackwell.csv"
BLACKWELL = ("b200", "b300", "gb200", "gb300")  # the sm100 / sm103 parts: GroupMM.cu's one sm10x CUTLASS kernel


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def _flops(r: dict[str, str]) -> float:
    return 2.0 * float(r["total_m"]) * float(r["n"]) * float(r["k"]) * (3.0 if r["pass"] == "fwd_bwd" else 1.0)


def bf16_rates(data: list[dict[str, str]]) -> list[tuple[dict[str, str], float]]:
    """(row, TFLOPS) of every bf16 torch._grouped_mm forward + backward row."""
    return [(r, _flops(r) / float(r["us"]) / 1e6) for r in data if r["kernel"] == "torch._grouped_mm bf16"]


def mxfp8_gemms_over_bf16(data: list[dict[str, str]]) -> float:
    """TorchAO's MXFP8 scaled grouped GEMMs alone (its kernel breakdown) over the bf16 grouped rate at the same expert
    shape and groups: printed, not used (a later torch build; the quantisation kernels apart)."""
    mx = [r for r in data if r["kernel"].startswith("torch._scaled_grouped_mm mxfp8")]
    mx_rate = sum(_flops(r) for r in mx) / sum(float(r["us"]) for r in mx) / 1e6
    shape = {(r["n"], r["k"], r["groups"]) for r in mx if r["pass"] == "fwd"}
    same = [t for r, t in bf16_rates(data) if (r["n"], r["k"], r["groups"]) in shape]
    return mx_rate / same[0]


def derived_constants(data: list[dict[str, str]]) -> dict[str, float]:
    """Blackwell family -> grouped_mm_over_dense."""
    over_dense = statistics.mean(t for _, t in bf16_rates(data)) / MAMF_BF16["b200"]
    return dict.fromkeys(BLACKWELL, over_dense)


def _b200():
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 8}, "precision": "bf16",
           "hardware": {"accelerator": "b200", "count": 8, "network": "ib-ndr400"}, "strategy": {"tp": 1, "pp": 1}}
    return resolve_job(job, load_catalog()).system


def _grouped_time(r: dict[str, str], rt) -> float:
    """Seconds of one grouped forward + backward at the row's shape at rates `rt` (the grouped share applied), its
    FP8 casts included where `rt` has them (the experts' weights cast once)."""
    rt = dataclasses.replace(rt, gemm_flops=rt.gemm_flops * load_constants().grouped_mm_over_dense("b200"))
    g, m, n, k = float(r["groups"]), float(r["total_m"]), float(r["n"]), float(r["k"])
    fwd, bwd = compute.linear_gemms(m / g, n, k, rt, batch=g)
    c_fwd, c_bwd = compute._fp8_casts(m, k, n, g * n * k, rt, 1.0, (1.0, 1.0, g))
    return float(fwd + bwd + c_fwd + c_bwd)


def mxfp8_speedups(data: list[dict[str, str]]) -> list[tuple[dict[str, str], float, float]]:
    """(bf16 row, measured, modelled MXFP8 / bf16 forward + backward speedup) at each of the table's shapes."""
    system = _b200()
    bf16, mx = rates(system, "bf16"), rates(system, "fp8", fp8_recipe="mxfp8")
    key = ("n", "k", "groups")
    quant = {tuple(r[c] for c in key): float(r["us"]) for r in data if r["kernel"].startswith("torchao _to_mxfp8")}
    return [(r, float(r["us"]) / quant[tuple(r[c] for c in key)], _grouped_time(r, bf16) / _grouped_time(r, mx))
            for r, _ in bf16_rates(data)]


def main() -> None:
    data = rows()
    k = load_constants()
    print("torch._grouped_mm bf16, B200, forward + backward (TorchAO moe_training README):")
    for r, t in bf16_rates(data):
        rows_a_group = float(r["total_m"]) / float(r["groups"])
        print(f"  N {r['n']:>5} K {r['k']:>5} G {r['groups']}  {rows_a_group:>9,.0f} rows a group  {t:7.1f} TFLOPS"
              f"  {t / MAMF_BF16['b200']:.3f} of B200's MAMF")
    rates = [t for _, t in bf16_rates(data)]
    print(f"  mean {statistics.mean(rates):.1f} TFLOPS (range {min(rates):.1f}-{max(rates):.1f}), over MAMF "
          f"{MAMF_BF16['b200']:.0f}: {statistics.mean(rates) / MAMF_BF16['b200']:.3f} "
          f"({min(rates) / MAMF_BF16['b200']:.3f}-{max(rates) / MAMF_BF16['b200']:.3f})")
    print("MXFP8 / bf16 grouped forward + backward, quantisation included: TorchAO measured vs the model")
    for r, measured, model in mxfp8_speedups(data):
        print(f"  N {r['n']:>5} K {r['k']:>5} G {r['groups']}  measured {measured:.3f}  model {model:.3f}")
    print(f"  (TorchAO's MXFP8 GEMMs alone over bf16 at DeepSeek-V3's shape: {mxfp8_gemms_over_bf16(data):.3f}, "
          "not used)")
    print("family  derived   shipped grouped_mm_over_dense")
    for family, od in derived_constants(data).items():
        print(f"  {family:6} {od:.3f}   {k.grouped_mm_over_dense(family):.3f}")
    for family in ("h100", "h200"):
        print(f"  {family:6} no figure at training shapes: {k.grouped_mm_over_dense(family):.3f} (the dense rate)")


if __name__ == "__main__":
    main()
