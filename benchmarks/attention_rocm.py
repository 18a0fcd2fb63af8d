"""PyTorch SDPA on ROCm (attention_kernel sdpa on AMD Instinct): its attention rate, read from a published profile.

On ROCm, torch's scaled_dot_product_attention runs its flash backend as aten::_flash_attention_forward / _backward,
whose kernels are AOTriton's (Triton kernels compiled ahead of time and shipped in the ROCm wheel), not the
Composable Kernel / AITER ones Transformer Engine for ROCm and Primus-Turbo call. A PyTorch-native stack (torchtitan,
torchtune) on an Instinct part gets these unless it swaps in another kernel.

Data: AMD's ROCm blog "Deep Dive into Primus: High-Performance Training for Large Language Models" (2026-01-15;
ROCm/rocm-blogs blogs/software-tools-optimization/primus-deep-dive/README.md), Table 2: Llama 3.1 70B on MI325X,
Primus' TorchTitan backend "no optimizations" (PyTorch's own kernels), TraceLens kernel op summary of one node:
aten::mm 67.43%, aten::_flash_attention_backward 19.47%, aten::_flash_attention_forward 7.48%, others 5.62%; the same
blog: AITER's fmha_v3 kernels (Primus-Turbo) cut the forward's latency by 47% and the backward's by 75%. The run's
layout is Primus' MI325X config for that model (examples/torchtitan/configs/MI325X/llama3.1_70B-BF16-pretrain.yaml at
AMD-AGI/Primus 9b5a51e: seq_len 8192, local batch 3, activation_checkpoint full), so every block's forward ran twice
(forward and recompute) and its backward once.

What is derived (perf_constants.yaml attention.flash_efficiency_sdpa / flash_bwd_over_fwd_sdpa; tests/estimate/
test_attention_sdpa.py checks the shipped figures are these): the profile gives each kernel's time against the GEMMs'
in one run, so with the estimate's own FLOP counts (flops.layer_flops, causal_fraction) the attention forward and
backward rates come out as fractions of the GEMM rate that run sustained, R_gemm / R_fwd and R_gemm / R_bwd; the
share of the 16-bit peak is then the family's gemm.efficiency_max over that ratio, and the backward / forward time
of one pass 2.5 x R_fwd / R_bwd. MI300X takes the ratio measured on MI325X: the same CDNA 3 die, kernels and wheel,
its clock under load set by its 750 W limit for the GEMMs and attention alike. Nothing is fitted on a training row;
the rows that check it are perf_heldout28's TorchAO float8 runs on 8 MI300X (torchtitan, torch 2.9 nightly).

CDNA 4 (MI355X, MI350X) is MEASURED, not derived from a profile: HipKittens' PyTorch baseline on MI355X
(HazyResearch/HipKittens f09e968, analysis/attn/{fwd,bkwd}/plot.py, October 2025, torch's
F.scaled_dot_product_attention in AMD's rocm/7.0-preview pytorch_training_mi35x_beta image; arXiv 2511.08083),
benchmarks/data/sdpa_rocm_cdna4.csv: bf16, batch 16, 16 heads, d 128, causal, at 8K the forward at 630 TFLOPS and
the backward at 224 (its FLOPs 2.5x the forward's): a forward share of the part's 16-bit peak and a backward / forward
time of 2.5 x 630 / 224. MI350X: the same die, wheel and kernels, the same share of its own rated peak (its lower
clock slows attention and GEMMs alike, docs/known-gaps.md 21).

Run: python benchmarks/attention_rocm.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.flops import causal_fraction, layer_flops
from trainsizer.models import load_model

# Table 2 of the Primus deep dive (percent of the kernel time)
PROFILE = {"mm": 67.43, "flash_bwd": 19.47, "flash_fwd": 7.48, "others": 5.62}
MODEL, SEQ = "llama-3.1-70b", 8192
FORWARD_PASSES = 2.0  # full activation checkpointing: forward and recompute
BWD_FLOPS_OVER_FWD = 2.5  # FlashAttention backward FLOPs over its forward's (the attention section's convention)
FAMILIES = ("mi300x", "mi325x")  # CDNA 3: the profiled part and its same-die sibling
CDNA4_DATA = Path(__file__).resolve().parent / "data" / "sdpa_rocm_cdna4.csv"
CDNA4_MEASURED, CDNA4_FAMILIES = "mi355x", ("mi355x", "mi350x")  # the measured part, then its same-die sibling
CDNA4_AT = {"seq_len": 8192, "q_heads": 16, "causal": 1}  # the row taken: 8K causal, Llama's d 128, as on CDNA 3


def gemm_over_attention() -> tuple[float, float]:
    """(R_gemm / R_forward, R_gemm / R_backward): the attention kernels' rates as fractions of the GEMMs' in the
    profiled run, from each one's share of the time and FLOPs per token (full AC: the block GEMMs 4x forward, the LM
    head 3x; attention forward twice, backward 2.5x one forward)."""
    lf = layer_flops(load_model(MODEL))
    gemm = 4.0 * lf.gemm() + 3.0 * lf.lm_head
    fwd = lf.attn_core(SEQ) * float(causal_fraction(SEQ))
    x_fwd = PROFILE["flash_fwd"] / PROFILE["mm"] * gemm / (FORWARD_PASSES * fwd)
    x_bwd = PROFILE["flash_bwd"] / PROFILE["mm"] * gemm / (BWD_FLOPS_OVER_FWD * fwd)
    return x_fwd, x_bwd


def derived_constants() -> dict[str, dict[str, float]]:
    """{family: {"share": forward share of the 16-bit peak, "bwd_over_fwd": backward / forward time of one pass}}."""
    k = load_constants()
    x_fwd, x_bwd = gemm_over_attention()
    return {f: {"share": k.gemm_efficiency(f) / x_fwd, "bwd_over_fwd": BWD_FLOPS_OVER_FWD * x_bwd / x_fwd}
            for f in FAMILIES}


def cdna4_rates() -> dict[str, float]:
    """{"fwd": TFLOPS, "bwd": TFLOPS} of torch SDPA on MI355X at CDNA4_AT (benchmarks/data/sdpa_rocm_cdna4.csv)."""
    with CDNA4_DATA.open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if all(int(r[k]) == v for k, v in CDNA4_AT.items())]
    return {r["pass"]: float(r["tflops"]) for r in rows}


def cdna4_constants() -> dict[str, dict[str, float]]:
    """{family: {"share", "bwd_over_fwd"}} on CDNA 4: the measured forward over the MI355X's 16-bit peak, the
    backward / forward time 2.5 x forward rate / backward rate; MI350X the same (its own peak, the same die)."""
    rates = cdna4_rates()
    peak = load_catalog().accelerators[CDNA4_MEASURED].tflops_dense["bf16"]
    share = rates["fwd"] / peak
    return {f: {"share": share, "bwd_over_fwd": BWD_FLOPS_OVER_FWD * rates["fwd"] / rates["bwd"]}
            for f in CDNA4_FAMILIES}


def main() -> None:
    x_fwd, x_bwd = gemm_over_attention()
    print(f"Primus TorchTitan 'no optimizations', Llama 3.1 70B, MI325X, {SEQ} tokens, full AC:")
    print(f"  GEMM rate / SDPA forward rate  {x_fwd:.3f}   / SDPA backward rate {x_bwd:.3f}")
    k = load_constants()
    for family, c in derived_constants().items():
        print(f"  {family}: GEMM share {k.gemm_efficiency(family):.3f} -> SDPA forward share {c['share']:.4f}, "
              f"backward / forward time {c['bwd_over_fwd']:.3f} (fa2 figures: {k.flash_fraction(family, 'fa2'):.3f}, "
              f"{k.flash_bwd_ratio(family, 'fa2'):.2f}); shipped {k.flash_fraction(family, 'sdpa'):.4f}, "
              f"{k.flash_bwd_ratio(family, 'sdpa'):.3f}")

    rates = cdna4_rates()
    print(f"HipKittens' torch SDPA baseline, MI355X, bf16, 16 x 16 heads, d 128, causal 8K: forward {rates['fwd']:.0f}, "
          f"backward {rates['bwd']:.0f} TFLOPS")
    for family, c in cdna4_constants().items():
        print(f"  {family}: SDPA forward share {c['share']:.4f}, backward / forward time {c['bwd_over_fwd']:.3f} "
              f"(fa2 figures: {k.flash_fraction(family, 'fa2'):.3f}, {k.flash_bwd_ratio(family, 'fa2'):.2f}); "
              f"shipped {k.flash_fraction(family, 'sdpa'):.4f}, {k.flash_bwd_ratio(family, 'sdpa'):.3f}")


if __name__ == "__main__":
    main()
