"""Blackwell fused attention: NVIDIA's measured cuDNN SDPA against the estimator's attention constants.

Data: benchmarks/data/cudnn_sdpa_blackwell.csv, the benchmark artifacts NVIDIA publishes in NVIDIA/cudnn-frontend
(benchmark/sdpa_benchmark_training, each row with its file, commit and container): B200 with cuDNN 9.10.2
(nvcr.io/nvidia/pytorch:25.05-py3) and 9.13.1 (25.09-py3), GB300 with 9.13.1, 9.17.0 (25.11-py3) and 9.22.0,
GB200 with 9.17.0 and 9.22.0. Causal attention (cuDNN top-left mask), sequence lengths 4K-32K, TFLOPS counted over
the unmasked half (2 s^2 h (d_qk + d_v) / 2 forward, 2.5x that backward for d_qk = d_v), the estimator's count.

What is derived from it (perf_constants.yaml `attention:`; tests/estimate/test_attention_blackwell.py checks that
the shipped figures are these):
- flash_efficiency_native for B200 / B300: cuDNN 9.13.1's forward at 8K on B200 (pytorch:25.09-py3, the image
  Megatron-Bridge 25.11 builds on: docker/Dockerfile.ci at 00b7660) as a share of the rated BF16 peak, x the B200
  GEMM derate (gemm.efficiency_max / measured MAMF share), the step that turns a microbenchmark into sustained
  training throughput for the GEMMs too;
- GB200 / GB300: the same kernel at each part's measured sustained matmul rate over B200's (GB200 its MAMF 1822,
  GB300 cuBLAS at its 1,400 W limit 2174, against B200's 1745 TFLOPS), as a share of 2,500. cuDNN's benchmark times
  one kernel at a time between profiler set-ups, short of the ~5 ms of back-to-back work after which a Blackwell
  part's SM clock falls to its power limit (flashinfer PR #2899: B200 1,965 -> ~1,580 MHz, attention -15%), so its
  rates are at the maximum clock (the check at the end: GB300 / B200 measured 1.22, as clocks x SMs x the SFU, not
  as the sustained rates); a training step runs attention among its GEMMs at the power limit, at the part's
  sustained rate, which the Grace parts hold higher than B200 by what their power allows (known-gaps 33, 53);
- softmax_share_fwd: the GB300 / GB200 forward + backward time ratio at one cuDNN release (BF16, 4K and 8K) against
  the model's (1 + B) / (1 + B - s) for GB300's doubled SFU ex2 rate.
- fp8_attention_speedup (strategy.fp8_attention): FP8 / BF16 forward and backward throughput on one part at one
  release, at 8K: GB200 / GB300 from the cuDNN 9.22.0 Llama 3.1 rows, H200 from benchmarks/data/cudnn_sdpa_hopper.csv
  (cuDNN 9.19.1, NVIDIA/cudnn-frontend results/h200_919_only_cudnn).
- cudnn_release_speedup (strategy.cudnn_release 9.17): cuDNN 9.17.0 over 9.13.1 forward and backward on GB300 at 8K
  (128 / 8 heads), the one part with both releases at one shape, for every Blackwell family.
Nothing here is fitted on a training row; the training rows that check it are perf_blackwell.py (Megatron-Bridge
25.11) and perf_heldout.py (NeMo 25.02 / 25.04).

Run: python benchmarks/attention_blackwell.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants

DATA = Path(__file__).resolve().parent / "data" / "cudnn_sdpa_blackwell.csv"
# H200, cuDNN 9.19.1, BF16 and FP8 at one release (cudnn-frontend results/h200_919_only_cudnn): the Hopper FP8 ratios
HOPPER = Path(__file__).resolve().parent / "data" / "cudnn_sdpa_hopper.csv"
HOPPER_CUDNN = "9.19.1"
# BF16 MAMF (maximum achievable matmul TFLOPS): Stas Bekman, ml-engineering compute/accelerator/README.md at 744d01e
# (2026-08): B200 SXM 1745.0 (torch 2.7.1+cu128), GB200 1822.0 (2.10.0.dev20250916+cu130); GB300 is not in that
# table: 2174.0, the top of the cuBLAS GEMM rates on a GB300 at its 1,400 W limit with the SM clock locked at its
# 2,070 MHz maximum (facebookexperimental/triton PR #2023, 2026-07-14), the figure gemm.efficiency_max gb300 is
# derived from (tests/estimate/test_calibration.py)
MAMF_BF16 = {"b200": 1745.0, "gb200": 1822.0, "gb300": 2174.0}
# Maximum SM clocks (MHz) and SMs: B200 148 at 1,965, GB200 152 at 2,062 (ByteDance-Seed/VeOmni PR #986), GB300 152
# at 2,070 (triton PR #2023 / #2768): what a single unthrottled kernel runs at
MAX_CLOCK_SMS = {"b200": 1965.0 * 148, "gb200": 2062.0 * 152, "gb300": 2070.0 * 152}
BASE_CUDNN = "9.13.1"  # pytorch:25.09-py3, Megatron-Bridge 25.11's base image
BASE_SEQ = 8192
LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)  # the lengths every B200 / GB300 release row was run at
FP8_CUDNN = "9.22.0"  # the one release with FP8 and BF16 rows at one head layout (cudnn-frontend fb682ce)
SHARE_PAIRS = (("9.17.0", "128"), ("9.22.0", "64"), ("9.22.0", "128"))  # (cuDNN, q heads) with GB200 and GB300
SHARE_SEQS = (4096, 8192)


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def tflops(data: list[dict[str, str]], gpu: str, cudnn: str, seq: int, pass_: str, heads: str,
           dtype: str = "bf16") -> float:
    hits = [float(r["tflops"]) for r in data if r["gpu"] == gpu and r["cudnn"] == cudnn and r["seq_len"] == str(seq)
            and r["pass"] == pass_ and r["q_heads"] == heads and r["data_type"] == dtype]
    if len(hits) != 1:
        raise ValueError(f"{gpu} cuDNN {cudnn} {dtype} s={seq} {pass_} heads={heads}: {len(hits)} rows")
    return hits[0]


def bwd_flops_ratio(data: list[dict[str, str]], cudnn: str, heads: str) -> float:
    """Backward / forward FLOPs of the rows' head dims: 5 and 2 matmuls, (3 d_qk + 2 d_v) / (d_qk + d_v)."""
    r = next(r for r in data if r["cudnn"] == cudnn and r["q_heads"] == heads)
    d_qk, d_v = float(r["d_qk"]), float(r["d_v"])
    return (3.0 * d_qk + 2.0 * d_v) / (d_qk + d_v)


def share_of_pair(data: list[dict[str, str]], cudnn: str, heads: str, seq: int) -> tuple[float, float, float, float]:
    """(forward ratio, backward ratio, forward + backward time ratio R, exponential share s) of GB300 over GB200:
    with B = GB200's backward / forward time and 2x SFU, R = (1 + B) / (1 + B - s)."""
    bf = bwd_flops_ratio(data, cudnn, heads)
    f2, b2 = tflops(data, "gb200", cudnn, seq, "fwd", heads), tflops(data, "gb200", cudnn, seq, "bwd", heads)
    f3, b3 = tflops(data, "gb300", cudnn, seq, "fwd", heads), tflops(data, "gb300", cudnn, seq, "bwd", heads)
    big_r = (1.0 / f2 + bf / b2) / (1.0 / f3 + bf / b3)
    b = bf * f2 / b2
    return f3 / f2, b3 / b2, big_r, (1.0 + b) * (1.0 - 1.0 / big_r)


def derived_constants(data: list[dict[str, str]] | None = None) -> dict[str, float]:
    """The Blackwell attention constants as this data and the catalog / GEMM constants give them."""
    data = data if data is not None else rows()
    cat = load_catalog([])
    k = load_constants()
    peak_b200 = cat.accelerators["b200"].tflops_dense["bf16"]
    fwd = tflops(data, "b200", BASE_CUDNN, BASE_SEQ, "fwd", "128")
    derate = k.gemm_efficiency("b200") / (MAMF_BF16["b200"] / peak_b200)
    b200 = fwd / peak_b200 * derate
    grace = {g: b200 * peak_b200 * (MAMF_BF16[g] / MAMF_BF16["b200"]) / cat.accelerators[g].tflops_dense["bf16"]
             for g in ("gb200", "gb300")}
    shares = [share_of_pair(data, c, h, s)[3] for c, h in SHARE_PAIRS for s in SHARE_SEQS]
    return {"b100": b200, "b200": b200, "b300": b200, "gb200": grace["gb200"], "gb300": grace["gb300"],
            "softmax_share_fwd": sum(shares) / len(shares)}


def burst_and_sustained(sfu_ratio: float) -> tuple[float, float]:
    """GB300 / B200 attention throughput as single unthrottled kernels run it (maximum clock x SMs) and as a
    power-limited step runs it (the sustained matmul rates), each times GB300's SFU gain `sfu_ratio`."""
    return (sfu_ratio * MAX_CLOCK_SMS["gb300"] / MAX_CLOCK_SMS["b200"],
            sfu_ratio * MAMF_BF16["gb300"] / MAMF_BF16["b200"])


def mxfp8_speedups(data: list[dict[str, str]] | None = None, heads: str = "64") -> dict[str, tuple[float, float]]:
    """(forward, backward) MXFP8 / BF16 throughput of cuDNN's causal attention, as fp8_speedups (heads "64": Llama
    3.1's d 128, perf_constants.yaml attention.mxfp8_attention_speedup; "128": DeepSeek-V3's MLA, its "192" entry):
    GB200 / GB300 at cuDNN 9.22.0 (batch 2) at BASE_SEQ, B200 / B300 their dies. Blackwell only (MXFP8 is sm100's)."""
    data = data if data is not None else rows()
    out = {gpu: tuple(tflops(data, gpu, FP8_CUDNN, BASE_SEQ, p, heads, "mxfp8") / tflops(data, gpu, FP8_CUDNN, BASE_SEQ,
                                                                                         p, heads) for p in ("fwd", "bwd"))
           for gpu in ("gb200", "gb300")}
    return {"b100": out["gb200"], "b200": out["gb200"], "gb200": out["gb200"], "b300": out["gb300"],
            "gb300": out["gb300"]}


def fp8_speedups(data: list[dict[str, str]] | None = None) -> dict[str, tuple[float, float]]:
    """(forward, backward) FP8 / BF16 throughput of cuDNN's causal attention on one part at one release, Llama 3.1
    heads (64 q / 8 kv, d 128), at BASE_SEQ (the length the BF16 rates are taken at): GB200 / GB300 at cuDNN 9.22.0
    (batch 2), H200 at 9.19.1 (batch 1; its FP8 causal backward is slower than BF16's). B200 / B300 are GB200's /
    GB300's dies and H100 / H800 H200's SMs (no FP8 rows of their own)."""
    data = data if data is not None else rows()
    hopper = list(csv.DictReader(HOPPER.open(encoding="utf-8")))
    out = {}
    for gpu, rows_, cudnn in (("gb200", data, FP8_CUDNN), ("gb300", data, FP8_CUDNN), ("h200", hopper, HOPPER_CUDNN)):
        out[gpu] = tuple(tflops(rows_, gpu, cudnn, BASE_SEQ, p, "64", "fp8") / tflops(rows_, gpu, cudnn, BASE_SEQ, p, "64")
                         for p in ("fwd", "bwd"))
    return {"b100": out["gb200"], "b200": out["gb200"], "gb200": out["gb200"], "b300": out["gb300"], "gb300": out["gb300"],
            "h100": out["h200"], "h800": out["h200"], "h200": out["h200"]}


def length_curve(data: list[dict[str, str]] | None = None, gpu: str = "b200",
                 cudnn: str = BASE_CUDNN) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """(lengths, forward TFLOPS, backward TFLOPS) of cuDNN's causal BF16 attention against the sequence length on
    one part at one release (128 q / 8 kv heads, d 128, batch 1): perf_constants.yaml
    attention.native_length_scaling's Blackwell entry, read relative to BASE_SEQ."""
    data = [r for r in (data if data is not None else rows()) if r["batch"] == "1"]
    return (LENGTHS, tuple(tflops(data, gpu, cudnn, s, "fwd", "128") for s in LENGTHS),
            tuple(tflops(data, gpu, cudnn, s, "bwd", "128") for s in LENGTHS))


RELEASE_CUDNN = "9.17.0"  # pytorch:25.11-py3; strategy.cudnn_release "9.17"
# the part whose measured curve each family's attention.native_length_scaling entry is, by cuDNN release: its own where
# NVIDIA measured it, else its sibling die's (GB200 = B200's dies at 9.13.1, B200 = GB200's at 9.17.0; B300 = GB300's;
# B100 = B200's die at a lower clock, docs/known-gaps.md 205 (c))
CURVE_PART = {BASE_CUDNN: {"b100": "b200", "b200": "b200", "gb200": "b200", "b300": "gb300", "gb300": "gb300"},
              RELEASE_CUDNN: {"b100": "gb200", "b200": "gb200", "gb200": "gb200", "b300": "gb300", "gb300": "gb300"}}


def fp8_speedups_mla(data: list[dict[str, str]] | None = None) -> dict[str, tuple[float, float]]:
    """fp8_speedups at DeepSeek-V3's MLA heads (128 q / 128 kv, d_qk 192, d_v 128; cuDNN 9.22.0, batch 2, BASE_SEQ):
    perf_constants.yaml attention.fp8_attention_speedup_by_head_dim["192"]."""
    data = data if data is not None else rows()
    out = {gpu: tuple(tflops(data, gpu, FP8_CUDNN, BASE_SEQ, p, "128", "fp8") / tflops(data, gpu, FP8_CUDNN, BASE_SEQ,
                                                                                       p, "128") for p in ("fwd", "bwd"))
           for gpu in ("gb200", "gb300")}
    return {"b100": out["gb200"], "b200": out["gb200"], "gb200": out["gb200"], "b300": out["gb300"],
            "gb300": out["gb300"]}


def cudnn_release_speedups(data: list[dict[str, str]] | None = None) -> dict[str, tuple[float, float]]:
    """(forward, backward) throughput of cuDNN RELEASE_CUDNN's causal BF16 attention over BASE_CUDNN's on GB300, the
    one part with both releases at one shape (128 q / 8 kv heads, d 128, batch 1), at BASE_SEQ: the same SM100
    kernels' gain, taken for B200 / B300 / GB200 too (perf_constants.yaml attention.cudnn_release_speedup)."""
    data = data if data is not None else rows()
    gb300 = tuple(tflops(data, "gb300", RELEASE_CUDNN, BASE_SEQ, p, "128") / tflops(data, "gb300", BASE_CUDNN, BASE_SEQ,
                                                                                    p, "128") for p in ("fwd", "bwd"))
    return {"b100": gb300, "b200": gb300, "b300": gb300, "gb200": gb300, "gb300": gb300}


def main() -> None:
    data = rows()
    k = load_constants()
    cat = load_catalog([])
    print("cuDNN SDPA, causal BF16 forward / backward TFLOPS (share of the rated dense BF16 peak):")
    print(f"  {'gpu':6s} {'cuDNN':7s} {'heads':>7s} {'d':>7s} " + " ".join(f"{s:>15d}" for s in (4096, 8192, 16384)))
    keys = sorted({(r["gpu"], r["cudnn"], r["q_heads"], r["kv_heads"], r["d_qk"], r["d_v"]) for r in data
                   if r["data_type"] == "bf16"}, key=lambda x: (x[1], x[0], x[2]))
    for gpu, cudnn, qh, kvh, dqk, dv in keys:
        peak = cat.accelerators[gpu].tflops_dense["bf16"]
        cells = []
        for s in (4096, 8192, 16384):
            f, b = tflops(data, gpu, cudnn, s, "fwd", qh), tflops(data, gpu, cudnn, s, "bwd", qh)
            cells.append(f"{f:5.0f}/{b:5.0f} {f / peak:.2f}")
        print(f"  {gpu:6s} {cudnn:7s} {qh + '/' + kvh:>7s} {dqk + '/' + dv:>7s} " + " ".join(f"{c:>15s}" for c in cells))
    d = derived_constants(data)
    print("\nderived vs shipped (perf_constants.yaml attention):")
    for name in ("b200", "b300", "gb200", "gb300"):
        print(f"  flash_efficiency_native.{name:6s} derived {d[name]:.3f} shipped {k.flash_fraction(name, 'native'):.3f}")
    print(f"  softmax_share_fwd             derived {d['softmax_share_fwd']:.3f} shipped {k.softmax_share_fwd:.3f}")
    fwd_m, bwd_over = k.attention_sfu("gb300")
    model_r = (1.0 + k.flash_bwd_over_fwd) / (fwd_m + fwd_m * bwd_over)
    print(f"\nGB300 / GB200 at one cuDNN release (model: forward {1 / fwd_m:.3f}, backward "
          f"{k.flash_bwd_over_fwd / (fwd_m * bwd_over):.3f}, forward + backward {model_r:.3f}):")
    for cudnn, heads in SHARE_PAIRS:
        for s in (4096, 8192, 16384, 32768):
            f, b, big_r, sh = share_of_pair(data, cudnn, heads, s)
            used = "" if s in SHARE_SEQS else "  (not used: the Blackwell rows run 4K-8K)"
            print(f"  cuDNN {cudnn} heads {heads:>3s} s={s:5d}: bf16 fwd {f:.3f} bwd {b:.3f} fwd+bwd {big_r:.3f} "
                  f"share {sh:.3f}{used}")
    print(f"\nFP8 / BF16 attention on one part (cuDNN {FP8_CUDNN}, 64 / 8 heads; strategy.fp8_attention, "
          "perf_constants.yaml attention.fp8_attention_speedup):")
    for gpu in ("gb200", "gb300"):
        cells = [f"s={s}: fwd {tflops(data, gpu, FP8_CUDNN, s, 'fwd', '64', 'fp8') / tflops(data, gpu, FP8_CUDNN, s, 'fwd', '64'):.3f}"
                 f" bwd {tflops(data, gpu, FP8_CUDNN, s, 'bwd', '64', 'fp8') / tflops(data, gpu, FP8_CUDNN, s, 'bwd', '64'):.3f}"
                 for s in (4096, 8192, 16384, 32768)]
        print(f"  {gpu}: " + "; ".join(cells))
    for name, (f, b) in fp8_speedups(data).items():
        print(f"  fp8_attention_speedup.{name:6s} derived fwd {f:.3f} bwd {b:.3f}, shipped "
              f"{k.fp8_attention(name)[0]:.3f} / {k.fp8_attention(name)[1]:.3f}")
    print(f"\ncuDNN {RELEASE_CUDNN} over {BASE_CUDNN}, GB300, 128 / 8 heads, s={BASE_SEQ} (strategy.cudnn_release 9.17):")
    for name, (f, b) in cudnn_release_speedups(data).items():
        shipped = k.cudnn_release(name, "9.17")
        print(f"  cudnn_release_speedup.9.17.{name:6s} derived fwd {f:.3f} bwd {b:.3f}, shipped "
              f"{shipped[0]:.3f} / {shipped[1]:.3f}")
    for name, (f, b) in fp8_speedups_mla(data).items():
        print(f"  fp8_attention_speedup_by_head_dim.192.{name:6s} derived fwd {f:.3f} bwd {b:.3f}, shipped "
              f"{k.fp8_attention(name, 192)[0]:.3f} / {k.fp8_attention(name, 192)[1]:.3f}")
    print("FP8 attention forward, GB300 / GB200 (NVIDIA's ~1.35x is this):")
    for heads in ("64", "128"):
        ratios = [tflops(data, "gb300", "9.22.0", s, "fwd", heads, "fp8")
                  / tflops(data, "gb200", "9.22.0", s, "fwd", heads, "fp8") for s in (4096, 8192, 16384, 32768)]
        print(f"  cuDNN 9.22.0 heads {heads:>3s}: " + " ".join(f"{x:.3f}" for x in ratios))
    print(f"\nrate against sequence length, relative to {BASE_SEQ} (perf_constants.yaml attention.native_length_scaling;"
          " the estimate keeps the 8K rate below 8K):")
    for gpu, cudnn in (("b200", "9.10.2"), ("b200", BASE_CUDNN), ("gb300", BASE_CUDNN), ("gb300", "9.17.0"),
                       ("gb200", "9.17.0")):
        lengths, f, b = length_curve(data, gpu, cudnn)
        i = lengths.index(BASE_SEQ)
        cells = " ".join(f"{n // 1024}K {x / f[i]:.2f}/{y / b[i]:.2f}" for n, x, y in zip(lengths, f, b, strict=True))
        print(f"  {gpu:6s} cuDNN {cudnn:7s} fwd/bwd: {cells}")
    # held-out checks: what the derivation did not use
    t = {g: 1.0 / tflops(data, g, BASE_CUDNN, BASE_SEQ, "fwd", "128") + 2.5 / tflops(data, g, BASE_CUDNN, BASE_SEQ,
                                                                                    "bwd", "128")
         for g in ("b200", "gb300")}
    rate = {g: k.flash_fraction(g, "native") * cat.accelerators[g].tflops_dense["bf16"] for g in ("b200", "gb300")}
    model_b = (1.0 + k.flash_bwd_over_fwd) / rate["b200"]
    model_g = (fwd_m + fwd_m * bwd_over) / rate["gb300"]
    burst, sustained = burst_and_sustained(model_r)
    print(f"\ncheck, cuDNN {BASE_CUDNN} at 8K: GB300 / B200 forward + backward measured {t['b200'] / t['gb300']:.3f}; "
          f"at the maximum clocks x SMs x the SFU's {model_r:.3f}: {burst:.3f}; at the sustained matmul rates x the "
          f"SFU's: {sustained:.3f} (the model's training rates, {model_b / model_g:.3f})")
    for s in (4096, 8192, 16384, 32768):
        old = tflops(data, "b200", "9.10.2", s, "fwd", "128")
        new = tflops(data, "b200", BASE_CUDNN, s, "fwd", "128")
        print(f"check, B200 forward cuDNN 9.10.2 -> {BASE_CUDNN} s={s:5d}: {old:.0f} -> {new:.0f} ({new / old - 1:+.1%})")


if __name__ == "__main__":
    main()
