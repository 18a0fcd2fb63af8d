# Settles (not run yet: written 2026-12-06 for whichever GPU a later session is lent; docs/known-gaps.md 231 (c)): what
# cuBLAS runs for the skinny bf16 GEMMs of a short fine-tuning micro-batch (M = 256-1,024 tokens against LitGPT's Llama
# 3.2 1B / 3B and Llama 3.1 8B linears) and for square n^3 GEMMs: its time, TFLOP/s and kernel (the kernel's name
# carries its tile, e.g. ..._128x128_..., and a split-K / stream-K variant), beside the part's SM count, so the
# whole-wave model of benchmarks/gemm_shape.py (waves_128x128) can be set against the tiles and times that run.
# Run: python benchmarks/device/small_gemms.py [--tiny]   (--tiny: tiny shapes on the CPU, a smoke test; about 30 s
# on an H100)
"""bf16 torch.matmul (M x K) @ (K x N) at each listed shape: median of 20 CUDA-event timings after 5 warm-ups, the
kernel names torch.profiler sees for one call, one JSON line a shape, then the device's name and SM count."""

import json
import sys

import torch

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
# (K, N) of a decoder layer's linears, forward (dgrad runs (N, K)): LitGPT's fused qkv, proj, fc_1 / fc_2, MLP proj
LINEARS = {
    "llama-3.2-1b": [(2048, 3072), (2048, 2048), (2048, 8192), (8192, 2048)],
    "llama-3.2-3b": [(3072, 5120), (3072, 3072), (3072, 8192), (8192, 3072)],
    "llama-3.1-8b": [(4096, 6144), (4096, 4096), (4096, 14336), (14336, 4096)],
}
TOKENS = (256, 512, 1024)  # a micro-batch of 1 / 2 / 4 Alpaca2k samples, padded
SQUARES = (1024, 2048, 4096, 8192)
WARM, N = (1, 2) if TINY else (5, 20)


def shapes():
    if TINY:
        return [("tiny", 16, 32, 64), ("square", 64, 64, 64)]
    out = [(name, m, k, n) for name, lins in LINEARS.items() for m in TOKENS for k, n in lins]
    out += [(name, m, n, k) for name, lins in LINEARS.items() for m in TOKENS for k, n in lins]  # dgrad
    return out + [("square", s, s, s) for s in SQUARES]


def timed(a, b):
    for _ in range(WARM):
        a @ b
    if not CUDA:
        return 0.0
    times = []
    for _ in range(N):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[len(times) // 2]


def kernels(a, b):
    if not CUDA:
        return []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        a @ b
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def main():
    dtype = torch.bfloat16 if CUDA else torch.float32
    for name, m, k, n in shapes():
        a = torch.randn(m, k, device=DEV, dtype=dtype)
        b = torch.randn(k, n, device=DEV, dtype=dtype)
        ms = timed(a, b)
        tflops = 2.0 * m * k * n / (ms * 1e-3) / 1e12 if ms else 0.0
        print(json.dumps(dict(model=name, m=m, k=k, n=n, ms=round(ms, 5), tflops=round(tflops, 1),
                              kernels=kernels(a, b))), flush=True)
    if CUDA:
        p = torch.cuda.get_device_properties(0)
        print(json.dumps(dict(device=p.name, sms=p.multi_processor_count, torch=torch.__version__,
                              cuda=torch.version.cuda)))


if __name__ == "__main__":
    main()
