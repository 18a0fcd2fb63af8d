# Settles (not run yet: written 2026-12-07 for whichever GPU a later session is lent; docs/known-gaps.md 315 (b)): the
# host time of Megatron-Core's unfused THD RoPE loop on a CUDA host, forward (Python ops after two host syncs) and
# backward (autograd's engine, one node at a time), per packed sample and per kernel, beside torch.mm 64^3 bf16 back to
# back (the method of host_sync launch_bound_op_s). The estimate now charges each of the loop's kernels at host_sync
# elementwise_op_s (7.1 us, read) plus eager_loop_glue rope_thd_s_per_kernel (3.5 us, measured on CPU): 10.6 us
# (docs/known-gaps.md 325 (a)); this run's per-kernel figure on one CUDA host would replace both.
# Run: python benchmarks/device/thd_rope_host.py [--tiny]   (--tiny: tiny tensors on the CPU, a smoke test; about a
# minute on an H100). It takes the loop and its count from benchmarks/thd_rope_backward.py, which reads the package
# (src/ is put on the path; numpy and PyYAML needed beside torch).
"""One JSON line: the device, torch and the mm figure; then one a (shape, samples a pack) with the forward and backward
host milliseconds of one call (medians); then one a shape with the per-sample slope and its per-kernel figure."""

import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "src")]
from thd_rope_backward import counted, thd_rope  # noqa: E402 (after the path: the benchmark beside this folder)

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
# (name, tokens a pack, heads this GPU holds, head dim): q and k of Qwen3-8B at TP 4 and TP 1 on 2,048-token packs
SHAPES = [("tiny-q", 64, 2, 16)] if TINY else [("qwen3-8b-tp4-q", 2048, 8, 128), ("qwen3-8b-tp4-k", 2048, 2, 128),
                                               ("qwen3-8b-tp1-q", 2048, 32, 128)]
PACKS = (2, 4) if TINY else (2, 5, 12, 21)
WARM, N = (1, 3) if TINY else (10, 50)


def sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def mm_op_s() -> float:
    """Seconds a bf16 torch.mm at 64 x 64 x 64 takes back to back, the host-bound op (median of 20 runs of 200; fp32 on
    the CPU smoke run, whose bf16 matmul has no fast path)."""
    a = torch.randn(64, 64, dtype=torch.bfloat16 if CUDA else torch.float32, device=DEV)
    runs = []
    for _ in range(5 if TINY else 20):
        sync()
        t = time.perf_counter()
        for _ in range(200):
            torch.mm(a, a)
        sync()
        runs.append((time.perf_counter() - t) / 200)
    return statistics.median(runs)


def call_s(tokens: int, heads: int, dim: int, samples: int) -> tuple[float, float]:
    """Median host seconds (forward, backward) of one loop call over a pack of `samples` equal samples: each timed
    from a drained queue to the call's return (the forward's own syncs drain it again; backward() returns once the
    engine has issued every node)."""
    per = tokens // samples
    cu = (torch.arange(samples + 1, dtype=torch.int32) * per).to(DEV)
    freqs = torch.randn(tokens, 1, 1, dim, device=DEV)
    fwd, bwd = [], []
    for i in range(WARM + N):
        t = torch.randn(per * samples, heads, dim, dtype=torch.bfloat16, device=DEV, requires_grad=True)
        grad = torch.randn_like(t)
        sync()
        t0 = time.perf_counter()
        out = thd_rope(t, cu, freqs)
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        out.backward(grad)
        t3 = time.perf_counter()
        sync()
        if i >= WARM:
            fwd.append(t1 - t0)
            bwd.append(t3 - t2)
    return statistics.median(fwd), statistics.median(bwd)


def main() -> None:
    mm = mm_op_s()
    (f0, b0, _), (f1, b1, _) = counted(PACKS[0]), counted(PACKS[-1])
    kf, kb = (f1 - f0) / (PACKS[-1] - PACKS[0]), (b1 - b0) / (PACKS[-1] - PACKS[0])
    name = torch.cuda.get_device_name() if CUDA else "cpu"
    print(json.dumps({"device": name, "torch": torch.__version__, "mm_op_us": round(mm * 1e6, 3),
                      "kernels_a_sample": [kf, kb]}))
    for shape, tokens, heads, dim in SHAPES:
        got = {}
        for samples in PACKS:
            f, b = call_s(tokens, heads, dim, samples)
            got[samples] = (f, b)
            print(json.dumps({"shape": shape, "samples": samples, "forward_ms": round(f * 1e3, 4),
                              "backward_ms": round(b * 1e3, 4)}))
        lo, hi = got[PACKS[0]], got[PACKS[-1]]
        span = PACKS[-1] - PACKS[0]
        sf, sb = (hi[0] - lo[0]) / span, (hi[1] - lo[1]) / span
        print(json.dumps({"shape": shape, "forward_us_a_sample": round(sf * 1e6, 2),
                          "backward_us_a_sample": round(sb * 1e6, 2), "forward_us_a_kernel": round(sf * 1e6 / kf, 2),
                          "backward_us_a_kernel": round(sb * 1e6 / kb, 2),
                          "kernel_over_mm": [round(sf / kf / mm, 3), round(sb / kb / mm, 3)]}))


if __name__ == "__main__":
    main()
