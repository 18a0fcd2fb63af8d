"""Primus-Turbo's grouped GEMM on MI355X: its published table against the estimator's constants.

Data: AMD-AGI/Primus-Turbo PR 252 ("update triton impl for mi300 & mi355", merged 2026-03-19 as a4488f6c), its table
"Grouped GEMM Benchmark Results on MI355X (gfx950)": DeepSeek-V3's routed experts (256, EP 8 / 16 / 32: 32 / 16 / 8
local experts), M 4,096 tokens a group, GateUP (N 4,096, K 7,168) and Down (N 7,168, K 2,048); the average forward
and backward TFLOPS of the op over those six cases, "full pipeline overhead: FP8 quantization (for FP8 dtype), kernel
launch, and autograd backward" included. FLOPs counted as 2 M N K a GEMM forward, twice that backward (dgrad, wgrad).

What is derived from it (perf_constants.yaml gemm.turbo_grouped_gemm_over_dense; tests/estimate/test_turbo_grouped_gemm.py
checks that the shipped figures are these): for the Triton backend (Primus-Turbo's default grouped GEMM since PR 320,
2026-04-29, and what Primus's MLPerf GPT-OSS 20B config pins), by precision, the share s of the part's dense GEMM rate
at which the estimate's own time for the table's six cases (compute.linear_gemms at s x the dense rate of the
precision; FP8: plus compute._fp8_casts of the tokens, the output gradients and the weights, which Primus-Turbo
quantises on every call, at the row's recipe, tensorwise) equals the measured time (each case taken at the table's
average rates). The hipBLASLt backend's rows are printed beside it, not used (no run here states that backend).
Nothing here is fitted on a training row; the row it moves is perf_heldout30's GPT-OSS 20B FP8 on 8 MI355X (docs/
known-gaps.md 264 (a)).

Run: python benchmarks/turbo_grouped_gemm.py
"""

from __future__ import annotations

import dataclasses

from trainsizer.catalog import load_catalog
from trainsizer.estimate import compute
from trainsizer.estimate.calibration import Rates, load_constants, rates
from trainsizer.scenario import resolve_job

# (backend, precision) -> (forward, backward) TFLOPS, the table's averages (PR 252, MI355X)
TABLE = {("triton", "bf16"): (1164.77, 1091.87), ("triton", "fp8"): (1571.34, 1557.13),
         ("hipblaslt", "bf16"): (1320.14, 625.67), ("hipblaslt", "fp8"): (1589.42, 941.87)}
# DeepSeek-V3's expert shapes: (N, K) of GateUP and Down; local experts at EP 8 / 16 / 32; tokens a group
SHAPES = ((4096, 7168), (7168, 2048))
GROUPS = (32, 16, 8)
M_A_GROUP = 4096
FP8_RECIPE = "tensorwise"  # the GPT-OSS row's (Primus fp8_recipe tensorwise); Primus-Turbo's per-tensor scaling


def mi355x_rates(precision: str) -> Rates:
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 8}, "precision": "bf16",
           "hardware": {"accelerator": "mi355x", "count": 8, "network": "roce-400"}, "strategy": {"tp": 1, "pp": 1}}
    system = resolve_job(job, load_catalog()).system
    return rates(system, precision, fp8_recipe=FP8_RECIPE) if precision == "fp8" else rates(system, precision)


def op_seconds(share: float, rt: Rates, precision: str) -> float:
    """The estimate's seconds for the table's six cases, forward and backward, with the experts' GEMMs at `share` of
    the dense rate `rt`; FP8: the casts of the tokens, the output gradients and the weights charged as for any FP8 GEMM."""
    r = dataclasses.replace(rt, gemm_flops=rt.gemm_flops * share)
    total = 0.0
    for g in GROUPS:
        for n, k in SHAPES:
            fwd, bwd = compute.linear_gemms(M_A_GROUP, n, k, r, batch=g)
            total += float(fwd + bwd)
            if precision == "fp8":
                c_fwd, c_bwd = compute._fp8_casts(M_A_GROUP * g, k, n, g * n * k, r, 1.0, (1.0, 1.0, 1.0))
                total += float(c_fwd + c_bwd)
    return total


def measured_seconds(backend: str, precision: str) -> float:
    """The table's time for its six cases: each at the average forward and backward rates."""
    fwd_tf, bwd_tf = TABLE[(backend, precision)]
    flops = sum(2.0 * M_A_GROUP * n * k * g for g in GROUPS for n, k in SHAPES)
    return flops / (fwd_tf * 1e12) + 2.0 * flops / (bwd_tf * 1e12)


def derived_share(backend: str, precision: str) -> float:
    """The share at which op_seconds equals measured_seconds (bisection: op_seconds falls as the share rises)."""
    rt, target = mi355x_rates(precision), measured_seconds(backend, precision)
    lo, hi = 0.05, 4.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if op_seconds(mid, rt, precision) > target else (lo, mid)
    return 0.5 * (lo + hi)


def main() -> None:
    k = load_constants()
    print("Primus-Turbo grouped GEMM on MI355X (PR 252's table, DeepSeek-V3 expert shapes, M 4,096 a group):")
    for (backend, precision), (fwd, bwd) in TABLE.items():
        rt = mi355x_rates(precision)
        share = derived_share(backend, precision)
        print(f"  {backend:9} {precision:4}  forward {fwd:7.1f} backward {bwd:7.1f} TFLOPS  dense rate "
              f"{float(rt.gemm_flops) / 1e12:6.0f}  share {share:.3f}")
    print("precision  derived (triton)  shipped turbo_grouped_gemm_over_dense (mi355x)")
    for precision in ("bf16", "fp8"):
        print(f"  {precision:4}     {derived_share('triton', precision):.3f}            "
              f"{k.turbo_grouped_gemm_over_dense('mi355x', precision):.3f}")
    for part in ("mi350x", "mi325x", "mi300x"):
        print(f"  {part}: no table read, {k.turbo_grouped_gemm_over_dense(part, 'fp8'):.3f} (the dense rate)")


if __name__ == "__main__":
    main()
