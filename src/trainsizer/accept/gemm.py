"""Check 3a: dense GEMM throughput per GPU, bf16 and fp8 (where the GPU has fp8 tensor cores).

FLOPs of an (m,k)x(k,n) matmul = 2mnk (standard count; Stas Bekman's mamf-finder uses the same).
Gate: >= 0.9 x platform MAMF reference, and every GPU >= fleet ratio x the node median.
"""

from __future__ import annotations

import statistics
import time

from trainsizer.accept.context import Context
from trainsizer.accept.criteria import fleet_ratio
from trainsizer.accept.results import CheckResult
from trainsizer.messages import msg


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def sync(torch, device) -> None:
    """Wait for the device's queued kernels (timing with perf_counter needs it; CPU runs synchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_tflops(torch, device, dtype, n: int, iters: int = 20, warmup: int = 5) -> float:
    """Best sustained TFLOP/s of an n x n x n matmul in `dtype` on `device` (CPU works at small n); an fp8 dtype
    (fp8_dtype: e4m3fn, or e4m3fnuz on MI300X / MI325X) runs as torch._scaled_mm with a bf16 output."""
    if dtype in _fp8_types(torch):
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype).t()
        one = torch.tensor(1.0, device=device)

        def step():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)

        def step():
            return a @ b

    for _ in range(warmup):
        step()
    sync(torch, device)
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    sync(torch, device)
    return gemm_flops(n, n, n) * iters / (time.perf_counter() - t0) / 1e12


def _fp8_types(torch) -> tuple:
    return tuple(getattr(torch, name) for name in ("float8_e4m3fn", "float8_e4m3fnuz") if hasattr(torch, name))


def fp8_dtype(torch, device):
    """The e4m3 fp8 type this GPU's matmuls take, or None where it has no fp8 matrix units. NVIDIA sm_89 and later take
    OCP e4m3fn; on ROCm (torch.version.hip), PyTorch runs fp8 on gfx94x, gfx95x and gfx120x
    (torch/testing/_internal/common_cuda.py evaluate_platform_supports_fp8, read 2026-12-04), and gfx94x (MI300X,
    MI325X) implements the FNUZ variant, which PyTorch's ROCm fp8 tests and TransformerEngine pass it (e4m3fnuz);
    MI350X / MI355X (gfx950) take OCP e4m3fn."""
    if getattr(torch.version, "hip", None):
        arch = str(getattr(torch.cuda.get_device_properties(device), "gcnArchName", ""))
        if "gfx94" in arch:
            return getattr(torch, "float8_e4m3fnuz", None)
        return getattr(torch, "float8_e4m3fn", None) if ("gfx95" in arch or "gfx120" in arch) else None
    if torch.cuda.get_device_capability(device) < (8, 9):
        return None
    return getattr(torch, "float8_e4m3fn", None)


def fp8_supported(torch, device) -> bool:
    return fp8_dtype(torch, device) is not None


def per_gpu_verdict(ctx: Context, name: str, per_gpu: dict[int, float], limit, unit: str, what: str) -> CheckResult:
    """Slowest GPU vs the threshold, and every GPU vs fleet ratio x node median (stragglers)."""
    low = min(per_gpu.values())
    res = ctx.at_least(name, round(low, 2), limit, unit, what, details={"per_gpu": per_gpu})
    med = statistics.median(per_gpu.values())
    ratio, _ = fleet_ratio(ctx.criteria)
    slow = [i for i, v in per_gpu.items() if v < ratio * med]
    if slow:
        res.status = "fail"
        ctx.add_why(res, msg("acc_why_stragglers", gpus=str(slow), ratio=ratio, median=f"{med:.4g}", unit=unit))
    return res


def run(ctx: Context) -> list[CheckResult]:
    names = ["gemm.bf16", "gemm.fp8"]
    limits = ctx.criteria.gemm_tflops_min
    try:
        import torch
    except ImportError:
        return [ctx.skipped(n, msg("acc_why_no_torch")) for n in names]
    if not torch.cuda.is_available():
        return [ctx.skipped(n, msg("acc_why_no_cuda"), limit=limits.get(n.split(".")[1]), unit="TFLOP/s")
                for n in names]
    out = []
    n = ctx.options.gemm_size
    for dtype_name in ("bf16", "fp8"):
        name = f"gemm.{dtype_name}"
        per_gpu: dict[int, float] = {}
        try:
            for i in range(torch.cuda.device_count()):
                dev = torch.device("cuda", i)
                if dtype_name == "fp8" and not fp8_supported(torch, dev):
                    break
                dtype = torch.bfloat16 if dtype_name == "bf16" else fp8_dtype(torch, dev)
                per_gpu[i] = round(measure_tflops(torch, dev, dtype, n), 2)
        except Exception as err:  # e.g. out of memory, or an fp8 kernel this torch lacks: bf16 still counts
            out.append(ctx.result(name, "error", why=f"GPU {len(per_gpu)}: {type(err).__name__}: {err}"[:400],
                                  details={"per_gpu": per_gpu}))
            continue
        if not per_gpu:
            out.append(ctx.skipped(name, msg("acc_why_no_fp8"),
                                   limit=limits.get(dtype_name)))
            continue
        out.append(per_gpu_verdict(ctx, name, per_gpu, limits.get(dtype_name), "TFLOP/s",
                                   msg("acc_what_gemm", dtype=dtype_name, n=n)))
    return out
