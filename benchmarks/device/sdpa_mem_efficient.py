# Settles (not run yet: written 2026-12-06 for a lent NVIDIA card; no device was lent that session; docs/known-gaps.md
# 202 (a)-(d), 191 (f), 181 (e), 216 (a), (b), (g)): the rate of PyTorch SDPA's memory-efficient (CUTLASS) backend, the kernel a masked
# HF call runs, against FlashAttention-2's (SDPA's flash backend) on the same card, by head dim; what the additive mask
# itself costs (its reads: broadcast over heads as transformers passes it, or one copy a head); and the head dims
# between the kernels' tiles (80, 96) that the estimate now runs at the whole tile (attention.mem_efficient_tiles).
# Run: python benchmarks/device/sdpa_mem_efficient.py [--tiny]   (--tiny: the math backend on a CPU, a smoke test)
"""Times forward and backward (CUDA events, median of N after warm-up) of torch.nn.functional.scaled_dot_product_attention
at batch 2, 8,192 positions (2,048 with --short), 4,096 / d heads of head dim d in 64, 80, 96, 128, 256, bf16:

- flash_causal: SDPBackend.FLASH_ATTENTION, is_causal (the unmasked HF call);
- flash_full: the flash backend, no mask, not causal (the whole square: FA2's rate on the work a masked call does);
- eff_nomask: SDPBackend.EFFICIENT_ATTENTION, no mask, not causal (the kernel alone over the whole square);
- eff_mask: the same with an additive bf16 mask of shape (2, 1, s, s), broadcast over heads (transformers 4.49's);
- eff_mask_heads: with the mask expanded to one contiguous copy a head (2, h, s, s) (the reads not shared in L2);
- eff_nomask_fp32 / eff_mask_fp32 (head dim 128 only): the same kernels on fp32 inputs, the QLoRA rows' attention
  (3xTF32 on the tensor cores on sm_80+, its backward always accumulating dK / dV in a global workspace: known-gaps
  216 (b)); eff_mask_fp32 / eff_mask is the fp32 kernel's rate against the 16-bit one's.

Each case prints one JSON line: ms and TFLOPS counted over the whole square (4 b h s^2 d forward, 2.5x backward),
so eff / flash_full is the mem_efficient_over_fa2 figure at that head dim and eff_mask / eff_nomask the mask's cost.
The card's name, its SM count and its sharedMemPerBlockOptin are printed first (sm_86 / 89 / 120 hold 99 KB a block:
the backward's 64x64 fallback; on such a card eff_mask's bwd at head dim 128 against an A100's is the rate
attention.mem_efficient_small_smem takes as the kMaxK 64 kernels', known-gaps 216 (a)). At 8,192 positions a batch
element's mask (128 MB) is the reuse distance of a mask tile between consecutive heads, past every catalog part's L2;
at 2,048 (--short) it is 8 MB (known-gaps 216 (g)): eff_mask / eff_nomask at the two lengths tests that. Deterministic mode (torch.use_deterministic_algorithms(True, warn_only=True), the
universal-llm-trainer rows' setting) is timed once at head dim 128. Budget on an H100: about two minutes.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F
from _timing import median_ms
from torch.nn.attention import SDPBackend, sdpa_kernel

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
DTYPE = torch.bfloat16 if CUDA else torch.float32
BATCH = 2
SEQ = 64 if TINY else (2048 if "--short" in sys.argv else 8192)
WIDTH = 256 if TINY else 4096
HEAD_DIMS = (64, 128) if TINY else (64, 80, 96, 128, 256)
WARM, N = (1, 2) if TINY else (2, 5)


def _inputs(d: int, dtype=DTYPE):
    h = WIDTH // d
    q, k, v = (torch.randn(BATCH, h, SEQ, d, device=DEV, dtype=dtype, requires_grad=True) for _ in range(3))
    causal = torch.full((SEQ, SEQ), float("-inf"), device=DEV, dtype=dtype).triu(1)
    mask = causal.expand(BATCH, 1, SEQ, SEQ).contiguous()
    return h, q, k, v, mask


def _case(name: str, d: int, backend, mask=None, causal: bool = False, dtype=DTYPE) -> dict:
    h, q, k, v, _ = _inputs(d, dtype)
    flops = 4.0 * BATCH * h * SEQ * SEQ * d
    chosen = backend if CUDA else SDPBackend.MATH

    def fwd():
        with sdpa_kernel([chosen]):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    out = fwd()
    grad = torch.randn_like(out)

    def bwd():
        o = fwd()
        o.backward(grad)

    f_ms = median_ms(fwd, DEV, WARM, N)
    fb_ms = median_ms(bwd, DEV, WARM, N)
    b_ms = max(fb_ms - f_ms, 1e-9)
    return {"case": name, "d": d, "heads": h, "seq": SEQ, "fwd_ms": round(f_ms, 3), "bwd_ms": round(b_ms, 3),
            "fwd_tflops": round(flops / f_ms / 1e9, 1), "bwd_tflops": round(2.5 * flops / b_ms / 1e9, 1)}


def main() -> None:
    if CUDA:
        p = torch.cuda.get_device_properties(0)
        print(json.dumps({"device": p.name, "cc": f"{p.major}.{p.minor}", "sms": p.multi_processor_count,
                          "smem_per_block_optin": getattr(p, "shared_memory_per_block_optin", None),
                          "torch": torch.__version__}))
    for d in HEAD_DIMS:
        h, _, _, _, mask = _inputs(d)
        cases = [("eff_nomask", SDPBackend.EFFICIENT_ATTENTION, None, False),
                 ("eff_mask", SDPBackend.EFFICIENT_ATTENTION, mask, False),
                 ("eff_mask_heads", SDPBackend.EFFICIENT_ATTENTION, mask.expand(BATCH, h, SEQ, SEQ).contiguous(), False)]
        if d in (64, 96, 128, 256):  # FA2's compiled head dims among these (80 runs as 96)
            cases = [("flash_causal", SDPBackend.FLASH_ATTENTION, None, True),
                     ("flash_full", SDPBackend.FLASH_ATTENTION, None, False)] + cases
        for name, backend, m, causal in cases:
            try:
                print(json.dumps(_case(name, d, backend, m, causal)), flush=True)
            except RuntimeError as e:  # a backend that refuses the shape or runs out of memory
                print(json.dumps({"case": name, "d": d, "error": str(e).splitlines()[0][:160]}), flush=True)
            if CUDA:
                torch.cuda.empty_cache()
    _fp32_cases()
    torch.use_deterministic_algorithms(True, warn_only=True)
    d = HEAD_DIMS[-1] if TINY else 128
    _, _, _, _, mask = _inputs(d)
    print(json.dumps({**_case("eff_mask_deterministic", d, SDPBackend.EFFICIENT_ATTENTION, mask), "deterministic": True}))


def _fp32_cases() -> None:
    """The memory-efficient kernels on fp32 inputs at head dim 128 (the largest of HEAD_DIMS under --tiny)."""
    d = 128 if not TINY else HEAD_DIMS[-1]
    _, _, _, _, mask = _inputs(d, torch.float32)
    for name, m in (("eff_nomask_fp32", None), ("eff_mask_fp32", mask)):
        try:
            print(json.dumps({**_case(name, d, SDPBackend.EFFICIENT_ATTENTION, m, dtype=torch.float32), "fp32": True}),
                  flush=True)
        except RuntimeError as e:
            print(json.dumps({"case": name, "d": d, "error": str(e).splitlines()[0][:160]}), flush=True)
        if CUDA:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
