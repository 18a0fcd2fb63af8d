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
