# Settles (not run yet: written 2026-12-06 for a lent NVIDIA card; no device was lent that session; docs/known-gaps.md
# 219 (a), 205 (a), 199): which of PyTorch SDPA's backends torchtitan's attention runs on this card and wheel, and at
# what rate. Its held-out rows on HGX B200 fit FlashAttention-2's rate and its GB200 rows cuDNN's, while its code asks
# for cuDNN on both (benchmarks/titan_blackwell_split.py). Run it on an HGX B200 under each row's wheel.
# Run: python benchmarks/device/titan_sdpa_backend.py [--tiny]   (--tiny: a CPU smoke test, math backend, small shapes)
"""torchtitan's call, rebuilt: q / k / v made as (batch, seq, heads, head dim) and transposed to (b, h, s, d) (its
wq / wk / wv views), K / V either at the KV heads' width with enable_gqa (torchtitan from ff0829c10, 2026-01-27) or
expanded to the query heads (repeat_kv, before), is_causal, bf16, under the backend list torchtitan's
ScaledDotProductAttention passes on sm_100: sdpa_kernel([CUDNN_ATTENTION, FLASH_ATTENTION, MATH], set_priority=True)
(models/attention.py at 6fc499f6 / models/common/attention.py at 1690e0ae). Shapes: the rows' Llama 3 8B (32 / 8
heads, 1 x 8,192) and Qwen3-30B-A3B (32 / 4 heads, 2 x 4,096 and 1 x 8,192), head dim 128.

Prints one JSON line of the environment (card, compute capability, SMs, torch, CUDA, cuDNN, the host's machine: x86_64
HGX or aarch64 Grace), then for each shape and K / V form:
- can_use: torch.backends.cuda.can_use_{cudnn,flash,efficient}_attention(SDPAParams(...), debug=True), each with the
  warnings it gives (the reason a backend is refused);
- ops: the aten SDPA ops and attention kernels the profiler records for one forward + backward, eagerly and under
  torch.compile of the call inside the context (as torchtitan compiles its blocks; not with --tiny):
  _scaled_dot_product_cudnn_attention, _flash_attention, _efficient_attention or the math path;
- ms and TFLOPS (causal work: 2 b h s^2 d forward, 2.5x that backward) of forward and backward for the priority list
  eager, compiled, and cuDNN alone and FLASH alone: the rows' attention figures are cuDNN's 0.403 and FA2's 0.145 of
  B200's 2,250 TFLOPS (perf_constants.yaml attention.flash_efficiency_native / flash_efficiency).
Budget on a B200: about three minutes (the two compiles the most).
"""

from __future__ import annotations

import json
import platform
import sys
import warnings

import torch
import torch.nn.functional as F
from _timing import median_ms
from torch.backends.cuda import SDPAParams
from torch.nn.attention import SDPBackend, sdpa_kernel

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
DTYPE = torch.bfloat16 if CUDA else torch.float32
# (name, batch, seq, q heads, kv heads); head dim 128
SHAPES = ((("tiny", 1, 64, 4, 2),) if TINY else
          (("llama3_8b", 1, 8192, 32, 8), ("qwen3_30b_a3b", 2, 4096, 32, 4), ("qwen3_30b_a3b", 1, 8192, 32, 4)))
HEAD_DIM = 16 if TINY else 128
WARM, N = (1, 2) if TINY else (2, 5)
TITAN = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
OPS = ("cudnn", "flash", "efficient", "math")  # the aten SDPA ops' distinguishing words


def _qkv(b: int, s: int, hq: int, hkv: int, gqa: bool):
    """torchtitan's q / k / v: (b, s, h, d) memory seen as (b, h, s, d); K / V expanded to hq heads unless gqa."""
    q = torch.randn(b, s, hq, HEAD_DIM, device=DEV, dtype=DTYPE).transpose(1, 2).requires_grad_()
    kv = [torch.randn(b, s, hkv, HEAD_DIM, device=DEV, dtype=DTYPE) for _ in range(2)]
    if not gqa:  # repeat_kv: (b, s, hkv, d) -> (b, s, hkv x rep, d), then the transpose
        kv = [t[:, :, :, None, :].expand(b, s, hkv, hq // hkv, HEAD_DIM).reshape(b, s, hq, HEAD_DIM) for t in kv]
    k, v = (t.transpose(1, 2).requires_grad_() for t in kv)
    return q, k, v


def _context(backends):
    try:
        return sdpa_kernel(backends, set_priority=True)
    except TypeError:  # a torch without set_priority: the list as given
        return sdpa_kernel(backends)


def can_use(q, k, v, gqa: bool) -> dict:
    """Each backend's verdict on the call and the warnings it gives when it refuses."""
    params = SDPAParams(q, k, v, None, 0.0, True, gqa)
    out = {}
    for name in ("cudnn", "flash", "efficient"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok = bool(getattr(torch.backends.cuda, f"can_use_{name}_attention")(params, True))
        out[name] = {"ok": ok, "why": [str(w.message)[:200] for w in caught]}
    return out


def _step(q, k, v, gqa: bool, backends, compiled: bool):
    def call(q, k, v):
        with _context(backends):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    fn = torch.compile(call, fullgraph=True) if compiled else call
    grad = torch.randn(q.shape, device=DEV, dtype=DTYPE)

    def fwd():
        return fn(q, k, v)

    def fwd_bwd():
        fwd().backward(grad)
    return fwd, fwd_bwd


def picked(fwd_bwd) -> list[str]:
    """The aten SDPA ops and attention kernels one forward + backward records (cuDNN's kernels are named
    cudnn_generated_fort_native_sdpa_sm100*, FlashAttention-2's flash_fwd_* / flash_bwd_*, the CUTLASS
    memory-efficient ones fmha_cutlass*)."""
    fwd_bwd()  # warm-up (a compile happens here)
    with torch.profiler.profile() as prof:
        fwd_bwd()
    words = ("scaled_dot_product", "sdpa", "flash", "fmha", "_efficient_attention")
    return sorted({e.key[:100] for e in prof.key_averages() if any(w in e.key.lower() for w in words)})


def timed(q, k, v, gqa: bool, backends, compiled: bool) -> dict:
    b, hq, s, d = q.shape
    flops = 2.0 * b * hq * s * s * d  # causal forward
    try:
        fwd, fwd_bwd = _step(q, k, v, gqa, backends, compiled)
        ops = picked(fwd_bwd)
        f_ms, fb_ms = median_ms(fwd, DEV, WARM, N), median_ms(fwd_bwd, DEV, WARM, N)
    except (RuntimeError, AssertionError) as e:  # a backend that refuses the call
        return {"error": str(e).splitlines()[0][:200]}
    b_ms = max(fb_ms - f_ms, 1e-9)
    return {"ops": ops, "fwd_ms": round(f_ms, 3), "bwd_ms": round(b_ms, 3),
            "fwd_tflops": round(flops / f_ms / 1e9, 1), "bwd_tflops": round(2.5 * flops / b_ms / 1e9, 1)}


def environment() -> dict:
    env = {"device": "cpu", "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "machine": platform.machine()}
    if CUDA:
        p = torch.cuda.get_device_properties(0)
        env |= {"device": p.name, "cc": f"{p.major}.{p.minor}", "sms": p.multi_processor_count}
    return env


def main() -> None:
    print(json.dumps(environment()), flush=True)
    backends = TITAN if CUDA else [SDPBackend.MATH]
    for name, b, s, hq, hkv in SHAPES:
        for gqa in (True, False):
            q, k, v = _qkv(b, s, hq, hkv, gqa)
            row = {"shape": name, "batch": b, "seq": s, "heads": hq, "kv_heads": hkv, "enable_gqa": gqa,
                   "can_use": can_use(q, k, v, gqa)}
            row["titan_eager"] = timed(q, k, v, gqa, backends, compiled=False)
            row["titan_compiled"] = timed(q, k, v, gqa, backends, compiled=not TINY)
            if CUDA:
                row["cudnn_only"] = timed(q, k, v, gqa, [SDPBackend.CUDNN_ATTENTION], compiled=False)
                row["flash_only"] = timed(q, k, v, gqa, [SDPBackend.FLASH_ATTENTION], compiled=False)
                torch.cuda.empty_cache()
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
