"""Median milliseconds of a callable, for the device scripts here (run as `python benchmarks/device/X.py`, so this
folder is on sys.path): CUDA events on a GPU, perf_counter on the CPU (the --tiny smoke runs)."""

from __future__ import annotations

import statistics
import time

import torch


def median_ms(fn, dev: str, warm: int, n: int) -> float:
    """Median milliseconds of fn() over n runs after `warm` unmeasured ones, on device `dev` ("cuda" or "cpu")."""
    for _ in range(warm):
        fn()
    out = []
    for _ in range(n):
        if dev == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            out.append(a.elapsed_time(b))
        else:
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1e3)
    return statistics.median(out)



def kernel_ms(fn, dev: str, warm: int, n: int) -> float:
    """Mean milliseconds a call of fn() keeps the GPU busy: its kernels' own device time summed by torch.profiler (CUDA
    activity) over n runs after `warm` unmeasured ones. Unlike median_ms's CUDA events, which span the idle gaps while
    the host issues each kernel after a sync inside fn, this counts kernel time only, so wall minus it is the host's
    exposed time. On the CPU (the --tiny smoke runs) median_ms's perf_counter time."""
    if dev != "cuda":
        return median_ms(fn, dev, warm, n)
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    us = sum(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0)) for e in prof.key_averages())
    return us / 1e3 / n

def checkpointed_backward(blocks, h) -> None:
    """Forward `h` through `blocks`, each under torch.utils.checkpoint(use_reentrant=True) as transformers 4.x's
    gradient checkpointing runs a layer, then backward from a scalar of the output: forward, re-forward and backward."""
    from torch.utils.checkpoint import checkpoint

    x = h
    for blk in blocks:
        x = checkpoint(blk, x, use_reentrant=True)
    x.float().pow(2).mean().backward()
