# Settles (not run yet: written 2026-12-06 for whichever H100 a later session is lent; docs/known-gaps.md 252 (b)):
# whether Grok-1's small measured FP8 gain (FP8 / BF16 step 0.785-0.843 on H100, predicted 0.69-0.76) is its routed
# experts' GEMM kernels or what runs around them. (1) The kernels alone: bf16 torch.matmul against FP8 torch._scaled_mm
# (E4M3 x E4M3, per-tensor scales, bf16 out, fast accumulation off: what Transformer Engine's delayed scaling runs) at
# the experts' forward, dgrad and wgrad shapes on one GPU; the estimate's FP8 / BF16 GEMM time there is 0.62-0.69
# (benchmarks/fp8_gemm_shapes.py). (2) Sustained: each precision's up-projection back to back for about 2 s, the first
# and last 20 timings and the SM clock after (a power cap that costs FP8 more shows as a later slowdown). (3) Where
# transformer_engine imports: the host (CPU) time to issue one te.Linear forward + backward at the expert shapes, bf16
# and under fp8_autocast (delayed scaling), the per-module cost Megatron-Core 0.9's SequentialMLP pays per local expert.
# Run: python benchmarks/device/fp8_expert_gemms.py [--tiny]   (--tiny: tiny shapes on the CPU, FP8 and TE skipped,
# a smoke test; about 1 minute on an H100)
"""One JSON line a (case, shape, pass) with its milliseconds (and FP8 / BF16 ratio), then the sustained runs, the
host issue times where Transformer Engine imports, and the device."""

import json
import sys
import time

import torch
from _timing import median_ms

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
HIDDEN, FFN = 6144, 32768  # Grok-1 (NeMo's grok1_314b.yaml): hidden 6,144, expert FFN 32,768 (gate + up fused: 2x)
# (case, rows a local expert, expert TP): perf_heldout62's v24.11 rows (ETP = TP 4) at EP 2 and EP 8 with CP 2, and
# perf_heldout34's v25.05 H100 row (TP 4, ETP 1, CP 2): fp8_gemm_shapes.GROK_EXPERTS
CASES = (("v24.11 EP 2", 2048, 4), ("v24.11 EP 8", 8192, 4), ("v25.05 ETP 1", 2048, 1))
WARM, N = (1, 2) if TINY else (5, 20)
SUSTAIN_S = 0.05 if TINY else 2.0


def linears(rows: int, etp: int) -> list[tuple[str, int, int]]:
    """(name, K, N) of an expert's two linears on one GPU."""
    if TINY:
        return [("up", 32, 64), ("down", 32, 32)]
    return [("up", HIDDEN, 2 * FFN // etp), ("down", FFN // etp, HIDDEN)]


def passes(m: int, k: int, n: int) -> list[tuple[str, int, int, int]]:
    """(pass, M, K, N) of a linear's forward, dgrad (K and N swapped) and wgrad (the rows on the contraction axis)."""
    return [("fprop", m, k, n), ("dgrad", m, n, k), ("wgrad", k, m, n)]


def bf16_fn(m: int, k: int, n: int):
    dtype = torch.bfloat16 if CUDA else torch.float32
    a, b = torch.randn(m, k, device=DEV, dtype=dtype), torch.randn(k, n, device=DEV, dtype=dtype)
    return lambda: a @ b


def fp8_fn(m: int, k: int, n: int):
    """torch._scaled_mm on E4M3 operands, mat2 column-major (cuBLASLt's TN layout); None on the CPU."""
    if not CUDA:
        return None
    a = torch.randn(m, k, device=DEV).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device=DEV).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=DEV)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def sustained(fn) -> dict:
    """Back-to-back calls for SUSTAIN_S seconds: the median of the first and of the last 20 (milliseconds)."""
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < SUSTAIN_S or len(times) < 40:
        times.append(median_ms(fn, DEV, 0, 1))
    clock = None
    if CUDA:
        try:
            clock = torch.cuda.clock_rate()
        except Exception:  # pynvml missing: no clock reading
            clock = None
    first, last = sorted(times[:20]), sorted(times[-20:])
    return dict(calls=len(times), first_ms=round(first[10], 5), last_ms=round(last[10], 5), sm_clock_mhz=clock)


def host_issue_ms(module, x, fp8: bool) -> float:
    """CPU milliseconds to issue one forward + backward of `module` (no synchronize inside the timed part)."""
    import transformer_engine.pytorch as te
    from transformer_engine.common.recipe import DelayedScaling

    def step():
        with te.fp8_autocast(enabled=fp8, fp8_recipe=DelayedScaling()):
            y = module(x)
        y.sum().backward()

    for _ in range(WARM):
        step()
    torch.cuda.synchronize()
    out = []
    for _ in range(N):
        t = time.perf_counter()
        step()
        out.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
    return sorted(out)[len(out) // 2]


def te_lines() -> None:
    try:
        import transformer_engine.pytorch as te
    except ImportError:
        print(json.dumps(dict(transformer_engine=None)))
        return
    for case, rows, etp in CASES:
        for name, k, n in linears(rows, etp):
            module = te.Linear(k, n, bias=False, params_dtype=torch.bfloat16, device="cuda")
            x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            print(json.dumps(dict(case=case, linear=name, m=rows, k=k, n=n,
                                  host_bf16_ms=round(host_issue_ms(module, x, False), 4),
                                  host_fp8_ms=round(host_issue_ms(module, x, True), 4))), flush=True)


def main():
    for case, rows, etp in CASES:
        m = 16 if TINY else rows
        for name, k, n in linears(rows, etp):
            for p, pm, pk, pn in passes(m, k, n):
                bf16 = median_ms(bf16_fn(pm, pk, pn), DEV, WARM, N)
                f8 = fp8_fn(pm, pk, pn)
                fp8 = median_ms(f8, DEV, WARM, N) if f8 else None
                print(json.dumps(dict(case=case, linear=name, gemm=p, m=pm, k=pk, n=pn, bf16_ms=round(bf16, 5),
                                      fp8_ms=None if fp8 is None else round(fp8, 5),
                                      fp8_over_bf16=None if fp8 is None else round(fp8 / bf16, 4))), flush=True)
    _, rows, etp = CASES[1]
    _, k, n = linears(rows, etp)[0]
    m = 16 if TINY else rows
    for precision, fn in (("bf16", bf16_fn(m, k, n)), ("fp8", fp8_fn(m, k, n))):
        if fn is not None:
            print(json.dumps(dict(sustained=precision, m=m, k=k, n=n, **sustained(fn))), flush=True)
    if CUDA:
        te_lines()
        p = torch.cuda.get_device_properties(0)
        print(json.dumps(dict(device=p.name, sms=p.multi_processor_count, torch=torch.__version__,
                              cuda=torch.version.cuda)))


if __name__ == "__main__":
    main()
