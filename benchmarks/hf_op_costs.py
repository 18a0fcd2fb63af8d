"""Two HF per-op costs the estimate charges about half of on ms-swift's A100 table (a diagnostic; it moves no figure).

ms-swift's December table (swift_first_table.py: modelscope/ms-swift cfcb67265, one A100 80GB, Qwen-7B-Chat LoRA rank 8
at batch 1, 1,000 samples cut at 2,048 tokens from the left) times two settings against the default row (c_attn
adapter, flash-attn 2.3.4, recompute on). A setting's cost is the difference of two whole runs on the same samples, so
the model loading and the lengths' unstated shape cancel (docs/known-gaps.md 149 and 156):

1. LoRA on every linear (swift 1.5's lora_target_modules ALL: c_attn, attn.c_proj, w1, w2, mlp.c_proj): four more
   adapters a layer. swift 1.5's tuner_backend 'swift' runs PEFT 0.7.1's lora.Linear (swift/tuners/lora_layers.py
   Linear(LoRAActivationMixin, _Linear)) in the base dtype (bf16: update_layer's `self.to(weight.device,
   dtype=weight.dtype)`), dropout 0.05 (argument.py lora_dropout_p). Its kernels, counted from peft/tuners/lora/
   layer.py Linear.forward at v0.7.1 (`result += lora_B(lora_A(dropout(x))) * scaling`) and their autograd backward,
   are PEFT_071 below; the bytes each moves are per element of the adapter's input (d_in) or output (d_out).
2. use_flash_attn false: Qwen-1's remote code without flash-attn. ATTENTION_PATHS counts the HBM bytes each candidate
   path moves a score element (one of heads x q x k), against what the estimate charges a non-flash layer
   (compute._attention_core: Megatron's fused scale-mask-softmax, Korthikanti 2022 s4.1: 4.5 / 5.5 elements of 2 B).

Printed: the measured cost a sample, the estimate's, the counted HBM floor at the estimate's A100 rates, and what
rate or per-kernel cost the measured needs. Nothing here is fitted or scored.

Run: python benchmarks/hf_op_costs.py
"""

from __future__ import annotations

import numpy as np

import swift_first_table as ft
import swift_lengths as sl
from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants

CUTOFF = 2048
BASE, ALL_LINEAR, EAGER = "swift_lora_qwen-7b_2048", "swift_lora_qwen-7b_2048_r8_all", "swift_lora_qwen-7b_2048_nofa"
# Qwen-7B (config.json: 32 layers x 4096, 32 heads of 128, FFN 11008 for each of w1 / w2, c_proj back to 4096)
LAYERS, HIDDEN, HEADS, FFN = 32, 4096, 32, 11008
# the four adapters ALL adds to the default c_attn one: (d_in, d_out) of attn.c_proj, w1, w2, mlp.c_proj
ADDED = ((HIDDEN, HIDDEN), (HIDDEN, FFN), (HIDDEN, FFN), (FFN, HIDDEN))
# PEFT 0.7.1 lora.Linear in bf16, dropout > 0: (pass, kernel, B per d_in element, B per d_out element). Forward runs
# twice under recompute (Qwen-1's torch.utils.checkpoint per block); the GEMMs of rank 8 stream their wide operand
PEFT_071 = (
    ("fwd", "native_dropout: read x, write x' and a 1-byte mask", 5.0, 0.0),
    ("fwd", "lora_A GEMM (N = r): read x'", 2.0, 0.0),
    ("fwd", "lora_B GEMM (K = r): write its output", 0.0, 2.0),
    ("fwd", "* scaling: read, write", 0.0, 4.0),
    ("fwd", "result += : read both, write", 0.0, 6.0),
    ("bwd", "mul backward (scaling): read, write", 0.0, 4.0),
    ("bwd", "lora_B dgrad (N = r): read dy", 0.0, 2.0),
    ("bwd", "lora_B wgrad (K = tokens): read dy", 0.0, 2.0),
    ("bwd", "lora_A dgrad (K = r): write dx'", 2.0, 0.0),
    ("bwd", "lora_A wgrad (K = tokens): read x'", 2.0, 0.0),
    ("bwd", "native_dropout_backward: read dx', mask, write", 5.0, 0.0),
    ("bwd", "autograd sum into the base layer's dx: read 2, write", 6.0, 0.0),
)
# bytes a score element, (forward, backward), each path's element-wise kernels and its batched GEMMs' score operands
# (the QK^T write, the PV read; in the backward the dP write, the dV read of P, the dQ / dK reads of dS)
ATTENTION_PATHS = {
    "charged: Megatron fused scale-mask-softmax + dropout (4.5 / 5.5 x 2 B)": (9.0, 11.0),
    "torch 2.1 SDPA math backend, bf16 (mask add_ in place, softmax, no dropout)": (12.0, 14.0),
    "transformers eager (4.36-5.x Llama family: scale, mask add, fp32 softmax, cast back)": (24.0, 28.0),
    "Qwen-1 _attn (divide, where(causal), + attention_mask, .float(), softmax, .type)": (36.0, 40.0),
}


def length_moments(shape: str, cutoff: float = CUTOFF) -> tuple[float, float]:
    """(E[min(L, c)], E[min(L, c)^2]) of the page's lengths under `shape` (swift_lengths.SHAPES): truncation_left keeps
    min(L, c) tokens of each sample; E[X^k] = integral of k x^(k-1) (1 - F(x)) over [0, c]."""
    x = np.linspace(0.0, cutoff, sl.GRID)
    tail = 1.0 - sl.cdf(shape, x)
    return float(np.trapezoid(tail, x)), float(np.trapezoid(2.0 * x * tail, x))


def measured_costs() -> dict[str, float]:
    """Seconds a sample each setting adds to the default row in the December table (its whole-run minutes)."""
    minutes = {r["row"]: float(r["minutes"]) for r in ft.rows()}
    return {k: (minutes[rid] - minutes[BASE]) * 60.0 / ft.SAMPLES for k, rid in (("lora", ALL_LINEAR), ("eager", EAGER))}


def estimated_costs(compared=None) -> dict[str, float]:
    """The same differences of the estimate's training minutes (swift_first_table.compare, the lognormal's lengths)."""
    est = {r[0]: r[5] for r in (compared or ft.compare())}
    return {k: (est[rid] - est[BASE]) * 60.0 / ft.SAMPLES for k, rid in (("lora", ALL_LINEAR), ("eager", EAGER))}


def a100_rates() -> tuple[float, float]:
    """(HBM bytes/s, seconds a kernel) the estimate streams at on the A100 80GB: its rated bandwidth x
    perf_constants.yaml memory.hbm_efficiency, gemm.kernel_fixed_s."""
    k = load_constants()
    return load_catalog().accelerator("a100-sxm-80gb").memory_bw_tb_s * 1e12 * k.hbm_efficiency, k.kernel_fixed_s


def lora_bytes_per_token() -> float:
    """HBM bytes a token of the four added adapters a layer move over the whole model (forward twice, backward)."""
    fwd_in = sum(b for p, _, b, _ in PEFT_071 if p == "fwd")
    fwd_out = sum(b for p, _, _, b in PEFT_071 if p == "fwd")
    bwd_in = sum(b for p, _, b, _ in PEFT_071 if p == "bwd")
    bwd_out = sum(b for p, _, _, b in PEFT_071 if p == "bwd")
    per_in, per_out = 2.0 * fwd_in + bwd_in, 2.0 * fwd_out + bwd_out
    return LAYERS * sum(per_in * i + per_out * o for i, o in ADDED)


def lora_kernels_per_sample() -> float:
    """Kernels the added adapters launch a sample (forward twice, backward once)."""
    fwd = sum(1 for p, *_ in PEFT_071 if p == "fwd")
    bwd = sum(1 for p, *_ in PEFT_071 if p == "bwd")
    return LAYERS * len(ADDED) * (2.0 * fwd + bwd)


def skinny_gemms_per_sample() -> float:
    """Rank-r GEMM launches of the added adapters a sample: lora_A and lora_B in each forward (twice), their dgrad
    and wgrad in the backward (PEFT_071's four GEMM rows of the backward)."""
    return LAYERS * len(ADDED) * (2.0 * 2.0 + 4.0)


def published_over_first() -> dict[str, float]:
    """A setting's cost a sample in the published table (perf_heldout35, 'delete', shorter kept samples) over the
    December one's (swift_lengths.DIFFERENCES and the eager pair): a cost a token gives the ratio of the two tables'
    mean lengths, a cost a sample 1, a cost a squared token less than the length ratio."""
    import perf_heldout35 as p35

    sps = {r["id"]: float(r["samples_per_s"]) for r in p35.rows()}
    minutes = {r["row"]: float(r["minutes"]) for r in ft.rows()}
    pairs = {"recompute": (BASE, "swift_lora_qwen-7b_2048_nogc"), "lora": (ALL_LINEAR, BASE), "eager": (EAGER, BASE)}
    return {k: (1.0 / sps[slow] - 1.0 / sps[fast]) / ((minutes[slow] - minutes[fast]) * 60.0 / ft.SAMPLES)
            for k, (slow, fast) in pairs.items()}


def attention_extra_s(path_bytes: tuple[float, float], mean_sq_tokens: float, hbm_bytes_s: float) -> float:
    """Seconds a sample a path's score bytes take beyond the charged path's, at the HBM rate (the batched GEMMs are
    the same in every eager path; forward twice under recompute)."""
    charged = next(iter(ATTENTION_PATHS.values()))
    extra = 2.0 * (path_bytes[0] - charged[0]) + (path_bytes[1] - charged[1])
    return extra * LAYERS * HEADS * mean_sq_tokens / hbm_bytes_s


def main() -> None:
    hbm, fixed = a100_rates()
    meas, est = measured_costs(), estimated_costs()
    print(f"A100 80GB at the estimate's rates: HBM {hbm / 1e12:.2f} TB/s, {fixed * 1e6:.0f} us a kernel")
    print("the December table's lengths (min(L, 2,048)) under three shapes of the page's mean and spread:")
    moments = {s: length_moments(s) for s in sl.SHAPES}
    for s, (m1, m2) in moments.items():
        print(f"  {s:10s} E[T] {m1:6.0f}  E[T^2] {m2 / 1e6:5.2f} M")
    m1, m2 = moments["lognormal"]

    print("\n1. LoRA on every linear (PEFT 0.7.1 lora.Linear, bf16, dropout 0.05): the kernels of one adapter")
    for p, name, bi, bo in PEFT_071:
        print(f"  {p} {name:58s} {bi:4.1f} B/d_in {bo:4.1f} B/d_out")
    per_tok, kernels = lora_bytes_per_token(), lora_kernels_per_sample()
    floor = per_tok * m1 / hbm + kernels * fixed
    print(f"  the four added adapters: {per_tok / 1e6:.1f} MB a token, {kernels:.0f} kernels a sample")
    print(f"  s a sample: measured {meas['lora']:.4f}, estimate {est['lora']:.4f}, counted floor {floor:.4f} (E[T] "
          f"{m1:.0f})")
    need_rate = per_tok * m1 / (meas["lora"] - kernels * fixed)
    need_kernel = (meas["lora"] - per_tok * m1 / hbm) / kernels
    print(f"  the measured needs an HBM rate of {need_rate / 1e12:.2f} TB/s ({need_rate / hbm:.2f} of the estimate's), "
          f"or {need_kernel * 1e6:.0f} us a kernel, or {(meas['lora'] - floor) / skinny_gemms_per_sample() * 1e6:.0f} us "
          f"more for each of its {skinny_gemms_per_sample():.0f} rank-8 GEMMs")
    ratios = published_over_first()
    print("  a cost in the published table over the December one (a token's cost: the length ratio; a sample's: 1): "
          + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))

    print("\n2. use_flash_attn false: bytes a score element by path, and the seconds a sample over the charged path")
    for name, (f, b) in ATTENTION_PATHS.items():
        extra = attention_extra_s((f, b), m2, hbm)
        print(f"  {name:84s} {2 * f + b:5.0f} B  {est['eager'] + extra:.4f} s")
    print(f"  measured {meas['eager']:.4f} s a sample over flash-attn (the estimate {est['eager']:.4f}; E[T^2] "
          f"{m2 / 1e6:.2f} M)")


if __name__ == "__main__":
    main()
