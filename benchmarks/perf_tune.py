"""How the tuned efficiency constants were chosen: a coarse grid scored on throughput.csv (+ vTrain MAPE).

Only four constants are tuned (GEMM efficiency_max for A100 and H100, FlashAttention-2 efficiency for A100, the
FP8 GEMM ratio of the delayed / tensorwise / MXFP8 recipes, scored with the NeMo and torchtitan rows of
perf_modern.py as well); everything else is counted or taken from a measurement quoted in
perf_constants.yaml (H100's FA2 figure and the Triton kernel's since 2026-12-02). Run: python benchmarks/perf_tune.py
"""

from __future__ import annotations

import dataclasses
import itertools

import perf_modern as pm
import perf_validation as pv
import perf_vtrain as pvt
import trainsizer.estimate.step_time as st
from trainsizer.estimate.calibration import load_constants

GRID = {
    "a100_gemm": (0.70, 0.74, 0.78),
    "h100_gemm": (0.58, 0.61, 0.64),
    "a100_flash": (0.45, 0.55),
    "fp8_ratio": (0.80, 0.85, 0.90, 0.95),
}


def score(a100_gemm, h100_gemm, a100_flash, fp8_ratio, vt=None):
    k0 = load_constants()
    k = dataclasses.replace(
        k0,
        gemm_efficiency_max={**k0.gemm_efficiency_max, "a100": a100_gemm, "h100": h100_gemm},
        flash_efficiency={**k0.flash_efficiency, "a100": a100_flash},
        # rowwise follows: its GEMMs are the tensorwise kernels (perf_constants.yaml fp8.recipes.rowwise)
        fp8_recipes={n: {**r, "gemm_efficiency_ratio": fp8_ratio} for n, r in k0.fp8_recipes.items()},
    )
    original = st.load_constants
    st.load_constants = lambda: k
    try:
        s = pv.summary(pv.throughput_cases())
        modern = pm.summary(pm.cases())
        s["by_source"].update(modern["by_source"])
        v = pvt.evaluate(vt)
    finally:
        st.load_constants = original
    return s, v


def main() -> None:
    vt = pvt.load()
    rows = []
    for values in itertools.product(*GRID.values()):
        s, v = score(*values, vt=vt)
        worst_src = max(e for _, e in s["by_source"].values())
        rows.append((s["mape"], worst_src, abs(s["worst"][4]), v["mape"], values))
    rows.sort()
    print("throughput MAPE, worst source MAPE, worst row |err|, vTrain MAPE, (" + ", ".join(GRID) + ")")
    for r in rows[:10]:
        print(f"{r[0]:6.2f} {r[1]:6.1f} {r[2]:6.1f} {r[3]:6.2f}  {r[4]}")


if __name__ == "__main__":
    main()
