"""Attention at head dim 64 on Blackwell: the softmax's exponentials against the MMAs, per score, from each part's
own figures, and how much of MLPerf v6.0's GPT-OSS 20B miss at EP 1 attention at head dim 64 can hold
(docs/known-gaps.md 277).

Per score element the forward runs 4 d tensor FLOPs (QK^T and PV) and one exponential (MUFU ex2); the backward
2.5x the MMA work and the exponential once more (recomputed P). Resources per SM and clock (RESOURCES): dense BF16
MMA FLOPs (H100 4,096: 989.4 TFLOPS / 132 SMs / 1.83 GHz, NVIDIA H100 whitepaper; B200 / B300 8,192, the
FlashAttention-4 paper, arXiv 2603.05451, 2026-03, section 2: "8192 ops/clock/SM", 2.25 PFLOPS) and MUFU ex2 results
(16 on Hopper and Blackwell, the same paper: "16 ops/clock/SM", unchanged from Hopper; Blackwell Ultra 32,
perf_constants.yaml attention.sfu_ex2_speedup). So at head dim 128 a B200 score's exponential takes as long as its
MMAs and at 64 twice as long; on H100 half as long at 128, as long at 64.

What the measured kernels say (benchmarks/data/cudnn_sdpa_blackwell.csv, cudnn_sdpa_hopper.csv; nothing fitted):
- The exchange: at head dim d / 2 in BF16 a score runs the MMA clocks of FP8 at d (half the FLOPs at the same rate
  against twice the rate), reads the same shared-memory bytes a key (d / 2 x 2 bytes = d x 1) and the same one
  exponential. FP8 adds work BF16 does not (P / dS quantisation, amax, the O(L d) scaling passes), so BF16 at 64 is
  no slower per score than FP8 at 128: the narrow-head factor (time per FLOP at 64 over 128) <= 2 x rate_bf16 /
  rate_fp8 at 128, on the same part, release and shape (exchange_bounds). The FP8 rows' O(L d) passes fade with the
  length, so the longest length bounds tightest.
- The MUFU roofline: a forward at 64 cannot beat one exponential per score at the SFU rate:
  factor >= 2 x (F / (4 x 128 x X)) x (the part's measured efficiency at 128) (mufu_floor).
- Monotone: a score at 64 does less of everything than one at 128, so the factor <= 2.
- The one measured Blackwell rate at 64 (cuDNN 9.19.1's GPT-OSS heads on GB200 in a 1,024-token band, 8-9 key tiles
  a query block, benchmarks/data/cudnn_sdpa_band_919.csv, read through the block model as
  tests/estimate/test_attention_window.py reads it: band_implied) must lie between the floor and the bound.
Then the Blackwell GPT-OSS 20B rows of perf_mlperf6 are rescored at each figure (ceilings): how much of their miss
attention at head dim 64 can hold.

Run: python benchmarks/attention_head_dim.py
"""

from __future__ import annotations

import csv
import dataclasses

import attention_blackwell as ab
from trainsizer.estimate.calibration import load_constants

# (dense BF16 MMA FLOP a clock an SM, MUFU ex2 results a clock an SM): sources in the module docstring, checked
# 2026-12-07
RESOURCES = {"h100": (4096.0, 16.0), "h200": (4096.0, 16.0), "b200": (8192.0, 16.0), "gb200": (8192.0, 16.0),
             "b300": (8192.0, 32.0), "gb300": (8192.0, 32.0)}
EXCHANGE_CUDNN = {"gb200": "9.22.0", "gb300": "9.22.0", "h200": ab.HOPPER_CUDNN}
LENGTHS = {"gb200": (4096, 8192, 16384, 32768), "gb300": (4096, 8192, 16384, 32768), "h200": (4096, 8192)}
# the die whose exchange each family takes (B200 / B300 are GB200's / GB300's dies, as attention.fp8_attention_speedup)
DIE = {"b200": "gb200", "gb200": "gb200", "b300": "gb300", "gb300": "gb300"}
CATALOG_NAME = {"h200": "h200-sxm-141gb"}  # the csv's part as the catalog names it
ROW_MODEL = "gpt-oss-20b"
BAND = ab.DATA.parent / "cudnn_sdpa_band_919.csv"


def per_score_clocks(part: str, d: float) -> tuple[float, float, float]:
    """(forward MMA, backward MMA, one exponential) SM clocks a score element at head dim d, at the peak rates."""
    mma, ex2 = RESOURCES[part]
    return 4.0 * d / mma, 10.0 * d / mma, 1.0 / ex2


def _data(part: str) -> list[dict[str, str]]:
    return ab.rows() if part.startswith("gb") else list(csv.DictReader(ab.HOPPER.open(encoding="utf-8")))


def exchange_bounds(part: str) -> dict[int, tuple[float, float]]:
    """{length: (forward, backward) upper bound of the narrow-head factor at head dim 64}: 2 x BF16 / FP8 throughput
    at head dim 128 (64 / 8 heads, causal) on one part and release."""
    data, cudnn = _data(part), EXCHANGE_CUDNN[part]
    return {s: tuple(2.0 * ab.tflops(data, part, cudnn, s, p, "64") / ab.tflops(data, part, cudnn, s, p, "64", "fp8")
                     for p in ("fwd", "bwd")) for s in LENGTHS[part]}


def mufu_floor(part: str, seq: int = ab.BASE_SEQ) -> float:
    """Lower bound of the forward narrow-head factor at head dim 64: one exponential a score at the SFU rate against
    the part's measured forward time a score at 128 (BF16, 64 / 8 heads)."""
    from trainsizer.catalog import load_catalog

    data, cudnn = _data(part), EXCHANGE_CUDNN[part]
    eff = ab.tflops(data, part, cudnn, seq, "fwd", "64") / load_catalog([]).accelerators[
        CATALOG_NAME.get(part, part)].tflops_dense["bf16"]
    fwd_mma, _, ex2 = per_score_clocks(part, 128.0)
    return 2.0 * ex2 / (fwd_mma / eff)


def band_implied(pass_: str) -> dict[int, float]:
    """{length: the narrow-head factor at head dim 64 that cuDNN 9.19.1's GPT-OSS heads on GB200 imply} (64 / 8 heads,
    d 64, a 1,024-token band: 8-9 key tiles a query block; benchmarks/data/cudnn_sdpa_band_919.csv): the Llama rows'
    full-row rate at the length (8K below it) and the fixed work a query block (4K / 8K) as
    tests/estimate/test_attention_window.py takes them, over the measured d 64 rate (docs/known-gaps.md 218 (c))."""
    from trainsizer.estimate import compute
    from trainsizer.estimate.calibration import block_tiles

    band = list(csv.DictReader(BAND.open(encoding="utf-8")))
    rate = {(int(r["d_qk"]), int(r["seq_len"])): float(r["tflops"]) for r in band if r["pass"] == pass_}
    c = block_tiles(4096, 8192, rate[(128, 4096)] / rate[(128, 8192)])
    out = {}
    for (d, s), measured in sorted(rate.items()):
        if d == 64:
            at = max(s, 8192)
            counted = float(compute.window_keys(1024, s))
            full = rate[(128, at)] * float(compute.window_block_rate(counted + 128.0, at, c)) * counted / (counted + 128)
            out[s] = full / measured
    return out


def shares_at(factors: tuple[float, float]) -> tuple[float, float]:
    """attention.narrow_head (fwd_share, bwd_share) that give these factors at head dim 64 (factor = 1 + s)."""
    return factors[0] - 1.0, factors[1] - 1.0


def gpt_oss_rows() -> list[dict[str, str]]:
    import perf_mlperf6

    return [r for r in perf_mlperf6.rows() if r["model"] == ROW_MODEL and r["accelerator"] in DIE and not r["refused"]]


def rescored(rows: list[dict[str, str]], factors: dict[str, tuple[float, float]]) -> list[tuple[str, float, float,
                                                                                                 float]]:
    """(row id, measured, shipped, counterfactual tokens/s/GPU) with the narrow-head factors at head dim 64 set per
    family (its die's) to `factors`."""
    import perf_mlperf6
    from harness import job_tokens_per_gpu

    k = load_constants()
    out = []
    for r in rows:
        j = perf_mlperf6.job(r)
        k2 = dataclasses.replace(k, narrow_head_share=shares_at(factors[DIE[r["accelerator"]]]))
        out.append((r["id"], float(r["tokens_per_sec_per_gpu"]), job_tokens_per_gpu([(r["id"], j)])[0][1],
                    job_tokens_per_gpu([(r["id"], j)], constants=k2)[0][1]))
    return out


def ceilings() -> list[tuple[str, float, tuple[float, ...]]]:
    """(row id, measured tokens/s/GPU, (shipped, band, exchange, monotone) predictions) of the Blackwell GPT-OSS
    20B rows: the narrow-head factors at head dim 64 shipped, GB200's band-implied ones at 8K (B200 its die; the
    Ultra parts, unmeasured at 64, shipped), each die's exchange bound at its longest length, and 2.0 (a score at
    64 as slow as one at 128)."""
    rows = gpt_oss_rows()
    shipped = load_constants().narrow_head(64, 64)
    band = {"gb200": (band_implied("fwd")[ab.BASE_SEQ], band_implied("bwd")[ab.BASE_SEQ]), "gb300": shipped}
    bound = {p: exchange_bounds(p)[max(LENGTHS[p])] for p in ("gb200", "gb300")}
    monotone = {p: (2.0, 2.0) for p in ("gb200", "gb300")}
    runs = [rescored(rows, f) for f in (band, bound, monotone)]
    return [(rid, measured, (base, *(run[i][3] for run in runs)))
            for i, (rid, measured, base, _) in enumerate(runs[0])]


def main() -> None:
    k = load_constants()
    shipped = k.narrow_head(64, 64)
    print("per score element, SM clocks at the peak rates (forward MMA / backward MMA / one ex2):")
    for part in ("h100", "b200", "b300"):
        for d in (64.0, 128.0):
            f, b, e = per_score_clocks(part, d)
            print(f"  {part:5s} d={d:3.0f}: fwd MMA {f:.4f} bwd MMA {b:.4f} ex2 {e:.4f}  ex2 / fwd MMA {e / f:.2f}")
    print(f"\nnarrow-head factor at head dim 64 (time per FLOP over 128), shipped (H100 FA3 paper): "
          f"fwd {shipped[0]:.3f} bwd {shipped[1]:.3f}")
    print("exchange upper bound (2 x BF16 / FP8 rate at 128) by length, fwd / bwd; MUFU floor (fwd, 8K):")
    for part in ("h200", "gb200", "gb300"):
        cells = " ".join(f"{s // 1024}K {f:.3f}/{b:.3f}" for s, (f, b) in exchange_bounds(part).items())
        print(f"  {part:5s} {cells}   floor {mufu_floor(part):.3f}")
    for p in ("fwd", "bwd"):
        cells = " ".join(f"{n // 1024}K {x:.3f}" for n, x in band_implied(p).items())
        print(f"  gb200 {p} implied by cuDNN 9.19.1's d 64 band (1,024 tokens): {cells}")
    print("\nMLPerf v6.0 GPT-OSS 20B on Blackwell, tokens/s/GPU error (+ = predicted too fast): shipped / GB200's "
          "band-implied 8K factors (B200 its die; the Ultra parts shipped) / each die's exchange bound at 32K / the "
          "monotone bound (2.0 both passes):")
    for rid, measured, cells in ceilings():
        print(f"  {rid:52s} " + " ".join(f"{x / measured - 1:+7.1%}" for x in cells))


if __name__ == "__main__":
    main()
