# Settles (not run yet: written 2026-12-06; no GPU is lent here; docs/known-gaps.md 260 (c)): how the host time of
# Megatron-Core's dropless MoE expert block grows with the local experts a GPU holds. The estimate charges it linearly
# (perf_constants.yaml gemm.moe_host_s_per_expert_kernel x the kernels a local expert); the held-out rows want less of
# it per expert as the local experts grow (benchmarks/moe_host_share.py: 1.14 at <= 8, 0.37 at 64). Run it on one
# B200 / B300 (x86 host) and one GB200 / GB300 (Grace host), once with NVTE_GROUPED_LINEAR_USE_FUSED_GROUPED_GEMM=0
# (TE's multi-stream cuBLAS loop, the default) and once with 1 (the single-launch cuBLASLt grouped GEMM): each line's
# exposed ms over the local experts gives the per-call floor (intercept) and the per-expert slope the form needs.
# Run: python benchmarks/device/te_grouped_host.py (--tiny on a CPU as a smoke test)
"""One MoE layer's routed experts on one rank at a fixed routed-token count, split over 8, 16, 32 and 64 local experts
(forced balance), forward and backward, as Megatron-Core's TEGroupedMLP runs them: the token counts copied to the host
first (tokens_per_expert.tolist(), the sync that drains the queue), then fc1, the activation and fc2 through TE's
GroupedLinear (MXFP8 where the part supports it, else bf16), or a per-expert torch.mm loop where TE does not import.
Shapes: Nemotron 3 Super's LatentMoE expert (1,024 -> 2,688, squared ReLU, -> 1,024; EP 8's 64 x 2,816 routed rows)
and DeepSeek-V3's (7,168 -> 2 x 2,048 gated, 2,048 -> 7,168; EP 32's 8 x 4,096). Per (shape, local experts) one JSON
line: the synced wall ms a layer (sync to sync), the GPU ms (the kernels' own time, _timing.kernel_ms) and their difference,
the exposed host ms; then per shape a line with the least-squares intercept and slope of exposed ms over the local
experts."""

import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import kernel_ms  # noqa: E402

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
LOCAL = (2, 4) if TINY else (8, 16, 32, 64)
# (name, input width, FFN width, gated, routed rows a rank and layer)
SHAPES = ([("tiny", 32, 24, False, 64)] if TINY else
          [("nemotron-3-super", 1024, 2688, False, 64 * 2816), ("deepseek-v3", 7168, 2048, True, 8 * 4096)])
WARM, N = (1, 3) if TINY else (3, 10)
ENV = ("NVTE_GROUPED_LINEAR_USE_FUSED_GROUPED_GEMM", "NVTE_CUTEDSL_FUSED_GROUPED_MLP", "CUDA_DEVICE_MAX_CONNECTIONS")


def synchronize() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def te_block(experts: int, width: int, ffn: int, gated: bool):
    """fc1 / fc2 as TE GroupedLinear modules under the part's MXFP8 recipe where supported; None without TE."""
    try:
        import transformer_engine.pytorch as te  # noqa: PLC0415 (optional: absent on most hosts)
    except ImportError:
        return None
    fc1 = te.GroupedLinear(experts, width, (2 if gated else 1) * ffn, bias=False, params_dtype=torch.bfloat16)
    fc2 = te.GroupedLinear(experts, ffn, width, bias=False, params_dtype=torch.bfloat16)
    return te, fc1, fc2


def mxfp8_available(te) -> bool:
    """Whether TE runs MXFP8 on this part (te.is_mxfp8_available in newer TE, fp8.check_mxfp8_support before)."""
    if hasattr(te, "is_mxfp8_available"):
        return bool(te.is_mxfp8_available())
    from transformer_engine.pytorch.fp8 import check_mxfp8_support  # noqa: PLC0415

    return bool(check_mxfp8_support()[0])


def _act(h: torch.Tensor, ffn: int, gated: bool) -> torch.Tensor:
    return torch.nn.functional.silu(h[:, :ffn]) * h[:, ffn:] if gated else torch.relu(h).square()


def layer_fn(experts: int, width: int, ffn: int, gated: bool, rows: int):
    """A callable running one layer's routed experts forward and backward after the host sync on the token counts;
    and the path's name."""
    x = torch.randn(rows, width, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    counts = torch.full((experts,), rows // experts, dtype=torch.int64, device=DEV)
    return experts_fn(experts, width, ffn, gated, x, counts.tolist)  # TEGroupedMLP's host list: the D2H copy waits


def experts_fn(experts: int, width: int, ffn: int, gated: bool, x: torch.Tensor, host_splits):
    """A callable running the routed experts on `x` forward and backward, each call's splits from host_splits() (the
    host copy of the token counts, which drains the queue first); and the path's name."""
    block = te_block(experts, width, ffn, gated) if DEV == "cuda" else None
    if block is not None:
        te, fc1, fc2 = block
        mxfp8 = mxfp8_available(te)

        def run() -> None:
            splits = host_splits()
            from transformer_engine.common.recipe import MXFP8BlockScaling  # noqa: PLC0415

            with te.fp8_autocast(enabled=mxfp8, fp8_recipe=MXFP8BlockScaling() if mxfp8 else None):
                out = fc2(_act(fc1(x, splits), ffn, gated), splits)
            out.sum().backward()
        return run, "te.GroupedLinear " + ("mxfp8" if mxfp8 else "bf16")
    w1 = torch.randn(experts, width, (2 if gated else 1) * ffn, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    w2 = torch.randn(experts, ffn, width, dtype=torch.bfloat16, device=DEV, requires_grad=True)

    def loop() -> None:
        splits = host_splits()
        outs = [_act(xe @ w1[e], ffn, gated) @ w2[e] for e, xe in enumerate(x.split(splits))]
        torch.cat(outs).sum().backward()
    return loop, "torch.mm loop"


def wall_ms(fn) -> float:
    """Median synced wall milliseconds of fn() (sync to sync: the host's exposed time included)."""
    out = []
    for _ in range(WARM):
        fn()
    synchronize()
    for _ in range(N):
        t = time.perf_counter()
        fn()
        synchronize()
        out.append((time.perf_counter() - t) * 1e3)
    return sorted(out)[len(out) // 2]


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y over x."""
    n = len(points)
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    slope = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx
    return my - slope * mx, slope


def main() -> None:
    name = torch.cuda.get_device_name(0) if DEV == "cuda" else DEV
    print(json.dumps({"torch": torch.__version__, "device": name, "env": {k: os.environ.get(k) for k in ENV}}))
    for shape, width, ffn, gated, rows in SHAPES:
        points = []
        for experts in LOCAL:
            fn, path = layer_fn(experts, width, ffn, gated, rows)
            wall, gpu = wall_ms(fn), kernel_ms(fn, DEV, WARM, N)  # kernel time, not events (305 (d))
            exposed = max(wall - gpu, 0.0)
            points.append((experts, exposed))
            print(json.dumps({"shape": shape, "path": path, "local_experts": experts, "rows_per_expert": rows // experts,
                              "wall_ms": round(wall, 4), "gpu_ms": round(gpu, 4), "exposed_ms": round(exposed, 4)}))
        intercept, slope = fit(points)
        print(json.dumps({"shape": shape, "exposed_ms_intercept": round(intercept, 4),
                          "exposed_ms_per_local_expert": round(slope, 5)}))


if __name__ == "__main__":
    main()
