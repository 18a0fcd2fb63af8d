"""Check 3b: HBM bandwidth per GPU from a device-to-device copy (bytes read + bytes written per second).

Method: docs/acceptance.md section 3 check #5 (torch `copy_` on large buffers, count read + write).
"""

from __future__ import annotations

import time

from trainsizer.accept.context import Context
from trainsizer.accept.gemm import per_gpu_verdict, sync
from trainsizer.accept.results import CheckResult
from trainsizer.messages import msg


def measure_copy_gb_s(torch, device, size_bytes: int, iters: int = 20, warmup: int = 3) -> float:
    src = torch.empty(size_bytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)

    for _ in range(warmup):
        dst.copy_(src)
    sync(torch, device)
    t0 = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src)
    sync(torch, device)
    return 2 * src.numel() * 4 * iters / (time.perf_counter() - t0) / 1e9


def run(ctx: Context) -> list[CheckResult]:
    limit = ctx.criteria.hbm_gb_s_min
    try:
        import torch
    except ImportError:
        return [ctx.skipped("hbm.bandwidth", msg("acc_why_no_torch"))]
    if not torch.cuda.is_available():
        return [ctx.skipped("hbm.bandwidth", msg("acc_why_no_cuda"), limit=limit, unit="GB/s")]
    per_gpu = {i: round(measure_copy_gb_s(torch, torch.device("cuda", i), ctx.options.hbm_bytes), 1)
               for i in range(torch.cuda.device_count())}
    return [per_gpu_verdict(ctx, "hbm.bandwidth", per_gpu, limit, "GB/s",
                            msg("acc_what_hbm", gib=f"{ctx.options.hbm_bytes / 2**30:.3g}"))]
