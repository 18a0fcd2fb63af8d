"""Does a GEMM-shape mechanism explain why small models come out too fast? (issue #13, `gemmshape` lead)

Small models and small per-GPU GEMMs are predicted too fast in several sources (llm-foundry 125M / 760M, Pythia
70M-410M, SmolLM3 3B, torchtitan Llama 3 8B at TP 8). This benchmark swaps three kernel mechanisms, one at a time,
into compute.gemm_time (which times each linear layer's forward, dgrad and wgrad on its own shape:
compute.linear_gemms), refits the large-GEMM share of peak (perf_constants.yaml gemm.efficiency_max) of the A100
and H100 families on the DEVELOPMENT rows only (perf_validation.py + perf_modern.py, MAPE over all their rows),
and prints the development MAPE per source and the small-model rows of the development and held-out sets:

- `shipped`: compute.gemm_time as it ships (soft roofline + a fixed cost per kernel).
- `waves`: tile and wave quantisation (NVIDIA "Matrix Multiplication Background User's Guide": a partial output tile
  costs a whole one; a partial last wave of one tile per SM costs a whole wave), output tiles of 128 x 256, the
  default of CUTLASS's Ampere / Ada tensor-op GEMM (include/cutlass/gemm/device/default_gemm_configuration.h,
  DefaultGemmConfiguration<OpClassTensorOp, Sm80>: ThreadblockShape 128 x 256 x 64, 3 stages), over the part's SMs.
  The wgrad of a narrow layer (a hidden x hidden output over the tokens) fills few waves: 1536 x 1536 is 72 tiles
  for 132 SMs. No split-K: cuBLAS may split such a k loop, which would take the loss away.
- `waves_128x128`: the same with 128 x 128 tiles (half the quantisation step).
- `tile_overhead`: each output tile pays a fixed prologue + epilogue time (the first k-block's load latency, the
  C tile's write) beside its k loop: TILE_OVERHEAD_S per tile, in k-loop steps at the part's per-SM rate.
- `store_serial`: a non-persistent kernel writes each C tile after its k loop, the whole wave at once, so the
  output write is not hidden behind the math: soft roofline of the math and the A / B loads, plus the C write.

The other families' shares follow the family they were derived from when refitted (perf_constants.yaml: B200 /
GB200 / GB300 "assumed H100-like", the consumer and AMD parts through the A100's tuned / MAMF ratio). The
mechanism is not shipped: see docs/known-gaps.md 5.8 ("GEMM shape") for what this prints and why.

Run: python benchmarks/gemm_shape.py   (about 4-5 minutes: 4 refit grids of 16 development runs)
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_heldout  # noqa: E402
import perf_modern  # noqa: E402
import perf_validation  # noqa: E402
from harness import mape  # noqa: E402
from trainsizer.estimate import calibration, compute, step_time  # noqa: E402

# Streaming multiprocessors (AMD: compute units) per part, the count a GEMM's tiles spread over. NVIDIA A100
# Tensor Core GPU Architecture whitepaper (2020): 108 SMs; NVIDIA H100 Tensor Core GPU Architecture whitepaper
# (2022): H100 SXM5 132, H100 PCIe 114 (H800 / H200: the SXM5 die, 132); NVIDIA Blackwell: B200 148 SMs
# (2 dies x 74, NVIDIA Blackwell architecture technical brief 2024), Blackwell Ultra B300 160 (NVIDIA technical blog
# "Inside NVIDIA Blackwell Ultra", 2025-08); AMD CDNA 3 white paper (2023): MI300X 304 CUs,
# CDNA 4 (2025): MI355X / MI350X 256 CUs. Read 2026-12-02. Parts not listed: no wave quantisation.
# A10G (AWS-only GA102; NVIDIA publishes no count): 80, the count the catalog's a10g entry derives its 70 TFLOPS from
# (80 x 512 FLOP/clk x 1.71 GHz; the measured 69.5 TFLOPS at 10240^2, zzc0721_a10g, is more than 72 SMs reach at
# 1.71 GHz). Low confidence: GCP's FP32 31.52 TFLOPS fits the A10's 72 (benchmarks/litgpt_twins.py prints both;
# 2026-12-06).
SM_COUNT = {"a100": 108, "a800": 108, "h100-pcie": 114, "h100": 132, "h800": 132, "h200": 132,
            "b200": 148, "b300": 160, "gb200": 148, "gb300": 160, "mi300x": 304, "mi325x": 304,
            "mi350x": 256, "mi355x": 256, "a10g": 80}
TILE_M, TILE_N = 128.0, 256.0  # CUTLASS Sm80 default threadblock tile (docstring); `waves_128x128`: 128 x 128
# Per-tile prologue + epilogue: ~1 us of HBM load latency before the first MMA and ~1 us to write a 64 KiB C tile
# at one SM's share of the HBM bandwidth; an assumption of this experiment, not a measured figure.
TILE_OVERHEAD_S = 2.0e-6

SHIPPED_GEMM = compute.gemm_time
SHIPPED_RATES = step_time.rates
SHIPPED_EFFICIENCY = calibration.PerfConstants.gemm_efficiency


@dataclass(frozen=True)
class ShapeRates(calibration.Rates):
    """Rates plus the part's SM count (0: unknown)."""

    sm_count: int = 0


def _sm_count(accelerator: str) -> int:
    acc = accelerator.lower()
    keys = [key for key in SM_COUNT if acc.startswith(key)]
    return SM_COUNT[max(keys, key=len)] if keys else 0


def _rates_with_sms(system, *args, **kwargs):
    r = SHIPPED_RATES(system, *args, **kwargs)
    return ShapeRates(**{f.name: getattr(r, f.name) for f in fields(calibration.Rates)},
                      sm_count=_sm_count(system.accelerator))


def _soft(t_flop, t_mem, rates, fixed):
    return np.sqrt(t_flop * t_flop + t_mem * t_mem) + (rates.kernel_fixed_s if fixed else 0.0)


def _rate(rates, linear, flops):
    return flops or (rates.gemm_flops if linear else rates.gemm16_flops)


def _waves(tile_m: float, tile_n: float):
    def gemm_waves(m, n, k, rates, batch=1.0, fixed=True, linear=True, flops=0.0, out_bytes=0.0):
        """Tile and wave quantisation: whole tile_m x tile_n tiles in whole waves of one tile per SM."""
        sms = getattr(rates, "sm_count", 0)
        if not sms:
            return SHIPPED_GEMM(m, n, k, rates, batch, fixed, linear, flops, out_bytes)
        m, n, k = np.asarray(m, float), np.asarray(n, float), np.asarray(k, float)
        tiles = batch * np.ceil(m / tile_m) * np.ceil(n / tile_n)
        t_flop = 2.0 * np.ceil(tiles / sms) * sms * tile_m * tile_n * k / _rate(rates, linear, flops)
        t_mem = batch * _bytes(rates, m, n, k, out_bytes) / rates.hbm_bytes_s
        return _soft(t_flop, t_mem, rates, fixed)

    return gemm_waves


gemm_waves = _waves(TILE_M, TILE_N)


def gemm_tile_overhead(m, n, k, rates, batch=1.0, fixed=True, linear=True, flops=0.0, out_bytes=0.0):
    """A fixed prologue + epilogue time per output tile, as k-loop steps at the per-SM rate."""
    sms = getattr(rates, "sm_count", 0)
    if not sms:
        return SHIPPED_GEMM(m, n, k, rates, batch, fixed, linear, flops, out_bytes)
    m, n, k = np.asarray(m, float), np.asarray(n, float), np.asarray(k, float)
    rate = _rate(rates, linear, flops)
    k0 = TILE_OVERHEAD_S * rate / sms / (2.0 * TILE_M * TILE_N)
    t_flop = 2.0 * batch * m * n * (k + k0) / rate
    t_mem = batch * _bytes(rates, m, n, k, out_bytes) / rates.hbm_bytes_s
    return _soft(t_flop, t_mem, rates, fixed)


def gemm_store_serial(m, n, k, rates, batch=1.0, fixed=True, linear=True, flops=0.0, out_bytes=0.0):
    """The C write after the k loop, not overlapped: soft roofline of math and A / B loads, plus the C write."""
    m, n, k = np.asarray(m, float), np.asarray(n, float), np.asarray(k, float)
    t_flop = 2.0 * batch * m * n * k / _rate(rates, linear, flops)
    t_load = batch * rates.act_bytes * (m * k + k * n) / rates.hbm_bytes_s
    c_bytes = _bytes(rates, m, n, k, out_bytes) - rates.act_bytes * (m * k + k * n)
    return _soft(t_flop, t_load, rates, fixed) + batch * c_bytes / rates.hbm_bytes_s


def _bytes(rates, m, n, k, out_bytes):
    """HBM bytes of a GEMM's operands and output as compute.gemm_time counts them (out_bytes: the output's per
    element where not act_bytes, a weight gradient accumulated into the main gradient)."""
    out = np.where(np.asarray(out_bytes, float) > 0, out_bytes, rates.act_bytes)
    return rates.act_bytes * (m * k + k * n) + out * m * n


VARIANTS = {"shipped": SHIPPED_GEMM, "waves": gemm_waves, "waves_128x128": _waves(128.0, 128.0),
            "tile_overhead": gemm_tile_overhead, "store_serial": gemm_store_serial}
SCALE = {"a100": 1.0, "h100": 1.0}  # refit multipliers of gemm.efficiency_max


def _family(accelerator: str) -> str:
    """The refitted family a part's share follows (H100 for Hopper and Blackwell, else A100)."""
    return "h100" if accelerator.lower().startswith(("h100", "h800", "h200", "b200", "b300", "gb200", "gb300")) \
        else "a100"


def _scaled_efficiency(self, accelerator: str) -> float:
    return SHIPPED_EFFICIENCY(self, accelerator) * SCALE[_family(accelerator)]


def use(variant: str, a100: float = 1.0, h100: float = 1.0) -> None:
    """Swap `variant` in, with the A100 / H100 efficiency_max multiplied by `a100` / `h100`."""
    compute.gemm_time = VARIANTS[variant]
    step_time.rates = _rates_with_sms
    calibration.PerfConstants.gemm_efficiency = _scaled_efficiency
    SCALE.update(a100=a100, h100=h100)


def development() -> tuple[float, dict[str, float], list]:
    """(MAPE over every development row, MAPE per source, the cases)."""
    cases = [c for c in perf_validation.throughput_cases() if not c.skipped] + perf_modern.cases()
    by: dict[str, list] = {}
    for c in cases:
        by.setdefault(c.source, []).append(c)
    return mape(cases), {s: mape(cs) for s, cs in sorted(by.items())}, cases


def refit(variant: str) -> tuple[float, float]:
    """Coordinate grid over the A100 and H100 multipliers (0.99-1.095), development MAPE."""
    a, h = 1.0, 1.0
    if variant == "shipped":
        return a, h
    for which in ("a100", "h100"):
        best = (math.inf, 1.0)
        for step in range(8):
            f = 0.99 + 0.015 * step
            use(variant, f if which == "a100" else a, f if which == "h100" else h)
            best = min(best, (development()[0], f))
        a, h = (best[1], h) if which == "a100" else (a, best[1])
    return a, h


SMALL_DEV = ("125m", "350m", "760m", "_1b_s2048_g8", "_3b_s2048_g8")
SMALL_HELD = ("pythia_70m", "pythia_160m", "pythia_410m", "smollm3", "torchtitan_2025-06_8b_bf16")


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print("variant          A100 x  H100 x   dev MAPE  per source")
    rows: dict[str, dict[str, float]] = {}
    for variant in VARIANTS:
        a, h = refit(variant)
        use(variant, a, h)
        total, by, cases = development()
        print(f"{variant:15s} {a:7.3f} {h:7.3f} {total:8.2f}%  "
              + ", ".join(f"{s} {e:.1f}" for s, e in by.items()))
        small = {c.row_id: 100.0 * c.err for c in cases if c.metric in ("tokens_per_sec_per_gpu",)
                 and any(k in c.row_id for k in SMALL_DEV)}
        held = {case.row_id: 100.0 * case.err for case, _, _ in perf_heldout.run_all()
                if any(case.row_id.startswith(k) for k in SMALL_HELD) and not case.skipped}
        rows[variant] = {**small, **held}
    use("shipped")
    print("\nsmall-model rows (error %, + = predicted too fast; Pythia is GPU-hours: - = too fast):")
    names = list(rows["shipped"])
    print(f"{'row':46s}" + "".join(f"{v[:13]:>14s}" for v in VARIANTS))
    for name in names:
        print(f"{name[:46]:46s}" + "".join(f"{rows[v].get(name, math.nan):+14.1f}" for v in VARIANTS))


if __name__ == "__main__":
    main()
