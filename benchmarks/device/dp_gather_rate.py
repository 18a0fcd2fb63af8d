# Settles (not run yet: written 2026-12-07, no GPU lent that session; docs/known-gaps.md 323 (c)) whether a
# data-parallel collective on one A100 node runs at the ring rate the estimate gives its NVLink (comm
# intra_busbw_fraction 0.80 of 300 GB/s: 240 GB/s) when FSDP / ZeRO-3 issue it on a side stream beside the compute:
# the Ampere sharded held-out families read as about half that rate (benchmarks/ampere_dp_rate.py), Megatron's serial
# TP all-reduces on DGX A100 as the full rate.
# Run: python benchmarks/device/dp_gather_rate.py (needs torch and two GPUs or more on one host; --tiny on a CPU
# with gloo, two ranks)
"""Bus bandwidth (GB/s, nccl-tests' definition) of the collectives the held-out families' data-parallel terms time, over
every visible GPU of one host, alone and beside a GEMM stream.

Per op (all_gather_into_tensor, reduce_scatter_tensor, all_reduce) and full buffer size (the families' own: a
Mistral-7B decoder layer's FSDP1 flat parameter in 16-bit, 436 MB; a Llama-3-8B MLP projection, 117 MB, and a q / o
projection, 33.5 MB, DeepSpeed ZeRO-3's module gathers; one 1 GiB point on nccl-tests' plateau), two modes:
- alone: the collective on the current stream, nothing else queued (what nccl-tests times);
- beside_gemm: the collective on a side stream while the default stream runs back-to-back bf16 8,192^3 matmuls (the
  way FSDP's unshard / post-backward streams and DeepSpeed's all-gather stream run beside the layer's compute),
  the collective timed by CUDA events on its own stream.
busbw = (n - 1) / n x S / t for the gather and the reduce-scatter, 2 (n - 1) / n x S / t for the all-reduce (nccl-tests
PERFORMANCE.md), S the full buffer's bytes. Also the GEMM's own TFLOP/s alone and beside the gather (the compute side of
the interference, perf_constants overlap_interference).

One JSON line a case, from rank 0: op, size_mb, mode, ranks, device, busbw_gb_s, ms. About a minute on 8 A100.
--tiny: the CPU, gloo, two ranks, 64 KiB buffers and a 64^3 matmul, every figure a positive number (a smoke test).
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from _timing import median_ms

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
BACKEND = "nccl" if CUDA else "gloo"
SIZES_MB = (0.0625,) if TINY else (33.5, 117.4, 436.2, 1073.7)  # full buffers, 1e6 bytes
GEMM_N = 64 if TINY else 8192
WARM, ITERS = (1, 2) if TINY else (3, 10)
OPS = ("all_gather", "reduce_scatter", "all_reduce")


def _factor(op: str, n: int) -> float:
    """nccl-tests' busbw factor over the algorithm bandwidth S / t."""
    return (2.0 if op == "all_reduce" else 1.0) * (n - 1) / n


def _collective(op: str, full: torch.Tensor, n: int):
    """A callable running one `op` on a buffer of `full`'s size (the full gathered / reduced buffer)."""
    shard = full[: full.numel() // n].clone()
    if op == "all_gather":
        return lambda: dist.all_gather_into_tensor(full, shard)
    if op == "reduce_scatter":
        return lambda: dist.reduce_scatter_tensor(shard, full)
    return lambda: dist.all_reduce(full)


def _gemm(dt):
    a = torch.randn(GEMM_N, GEMM_N, device=DEV, dtype=dt)
    return lambda: a @ a


def _beside_ms(coll, gemm) -> float:
    """Median ms of `coll` on a side stream while the default stream runs matmuls (CUDA); on the CPU, the matmul then
    the collective."""
    if not CUDA:
        return median_ms(lambda: (gemm(), coll()), DEV, WARM, ITERS)
    side = torch.cuda.Stream()
    out = []
    for i in range(WARM + ITERS):
        for _ in range(4):
            gemm()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(side):
            start.record(side)
            coll()
            end.record(side)
        for _ in range(4):
            gemm()
        torch.cuda.synchronize()
        if i >= WARM:
            out.append(start.elapsed_time(end))
    out.sort()
    return out[len(out) // 2]


def _gemm_tflops(gemm, coll=None) -> float:
    """TFLOP/s of the matmul alone, or while `coll` runs on a side stream (CUDA)."""
    if coll is not None and CUDA:
        side = torch.cuda.Stream()

        def both():
            with torch.cuda.stream(side):
                coll()
            gemm()
        ms = median_ms(both, DEV, WARM, ITERS)
    else:
        ms = median_ms(gemm, DEV, WARM, ITERS)
    return 2.0 * GEMM_N**3 / (ms * 1e-3) / 1e12


def _worker(rank: int, world: int, store: str) -> None:
    if CUDA:
        torch.cuda.set_device(rank)
    dist.init_process_group(BACKEND, init_method=f"file://{store}", rank=rank, world_size=world)
    dt = torch.bfloat16 if CUDA else torch.float32
    gemm = _gemm(dt)
    rows = []
    for size_mb in SIZES_MB:
        numel = int(size_mb * 1e6 / 2) // world * world
        full = torch.ones(numel, device=DEV, dtype=dt)
        for op in OPS:
            coll = _collective(op, full, world)
            for mode in ("alone", "beside_gemm"):
                dist.barrier()
                ms = median_ms(coll, DEV, WARM, ITERS) if mode == "alone" else _beside_ms(coll, gemm)
                busbw = _factor(op, world) * numel * full.element_size() / (ms * 1e-3) / 1e9
                rows.append({"op": op, "size_mb": size_mb, "mode": mode, "ranks": world, "device": DEV,
                             "busbw_gb_s": busbw, "ms": ms})
        if size_mb == SIZES_MB[-1]:
            ag = _collective("all_gather", full, world)
            rows.append({"op": "gemm", "size_mb": size_mb, "mode": "alone", "ranks": world, "device": DEV,
                         "tflops": _gemm_tflops(gemm)})
            rows.append({"op": "gemm", "size_mb": size_mb, "mode": "beside_all_gather", "ranks": world,
                         "device": DEV, "tflops": _gemm_tflops(gemm, ag)})
    if rank == 0:
        for r in rows:
            print(json.dumps(r), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import tempfile

    import torch.multiprocessing as mp

    world = 2 if TINY else torch.cuda.device_count()
    if world < 2:
        raise SystemExit("dp_gather_rate needs two GPUs or more on one host (or --tiny on the CPU)")
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(_worker, args=(world, os.path.join(d, "store")), nprocs=world, join=True)


if __name__ == "__main__":
    main()
