"""Collective benchmark run by torchrun on every rank: all-reduce / all-gather / reduce-scatter.

Same method as Stas Bekman's all_reduce_bench.py (ml-engineering, network/benchmarks): warmup, barrier,
timed loop, slowest rank's time; reported nccl-tests style (busbw.py). Checks correctness too: every
element must equal the value the collective implies. `python -m torch.distributed.run ... -m
trainsizer.accept.collective_bench --out result.json`; every node's local rank 0 writes the same JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from datetime import timedelta
from pathlib import Path

from trainsizer.accept.busbw import algbw_gb_s, busbw_gb_s
from trainsizer.accept.results import write_atomic


def _sync(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _bench(torch, dist, op: str, size_bytes: int, iters: int, warmup: int, device, rank: int, world: int,
           group=None) -> dict:
    """One collective over `world` ranks (of `group`, else all), `rank` this process's rank in it; the time is the
    slowest rank's of the whole job, so with groups it is the slowest group's."""
    elems = max(world, size_bytes // 4 // world * world)  # float32, divisible by the world size
    size = elems * 4
    chunk = elems // world
    if op == "all_reduce":
        buf = torch.full((elems,), float(rank + 1), dtype=torch.float32, device=device)

        def step():
            dist.all_reduce(buf, group=group)

        def check() -> int:
            buf.fill_(float(rank + 1))
            step()
            return int((buf != world * (world + 1) / 2).sum().item())
    elif op == "all_gather":
        src = torch.full((chunk,), float(rank + 1), dtype=torch.float32, device=device)
        buf = torch.empty((elems,), dtype=torch.float32, device=device)
        expected = torch.arange(1, world + 1, dtype=torch.float32, device=device).repeat_interleave(chunk)

        def step():
            dist.all_gather_into_tensor(buf, src, group=group)

        def check() -> int:
            step()
            return int((buf != expected).sum().item())
    elif op == "reduce_scatter":
        src = torch.full((elems,), float(rank + 1), dtype=torch.float32, device=device)
        buf = torch.empty((chunk,), dtype=torch.float32, device=device)

        def step():
            dist.reduce_scatter_tensor(buf, src, group=group)

        def check() -> int:
            step()
            return int((buf != world * (world + 1) / 2).sum().item())
    else:
        raise ValueError(op)
    wrong = check()
    for _ in range(warmup):
        step()
    _sync(torch, device)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    _sync(torch, device)
    elapsed = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    wrong_t = torch.tensor([wrong], dtype=torch.int64, device=device)
    dist.all_reduce(wrong_t)
    t = float(elapsed.item())
    return {"op": op, "size_bytes": size, "time_us": t * 1e6, "algbw_gb_s": algbw_gb_s(size, t),
            "busbw_gb_s": busbw_gb_s(op, size, t, world), "wrong": int(wrong_t.item())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="trainsizer.accept.collective_bench")
    ap.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    ap.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter")
    ap.add_argument("--min-bytes", type=int, default=2**16)
    ap.add_argument("--max-bytes", type=int, default=4 * 2**20)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--timeout-s", type=float, default=120)
    ap.add_argument("--group-size", type=int, default=0,
                    help="run in groups of this many consecutive ranks, all at once (a scale-up domain smaller than "
                         "the node: NVLink-bridged pairs); 0 = one group of all ranks")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    import warnings

    import torch
    import torch.distributed as dist

    warnings.filterwarnings("ignore", category=FutureWarning)  # reduce_scatter_tensor rename in torch 2.13

    dist.init_process_group(args.backend, timeout=timedelta(seconds=args.timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    group, group_rank, group_world = None, rank, world
    if 0 < args.group_size < world:
        if world % args.group_size:
            raise SystemExit(f"--group-size {args.group_size} does not divide the {world} ranks")
        # every rank creates every group (torch.distributed.new_group is collective over the job)
        groups = [dist.new_group(list(range(first, first + args.group_size)))
                  for first in range(0, world, args.group_size)]
        group, group_rank, group_world = groups[rank // args.group_size], rank % args.group_size, args.group_size
    hosts: list = [None] * world
    dist.all_gather_object(hosts, socket.gethostname().split(".")[0])
    sizes, s = [], args.min_bytes
    while s < args.max_bytes:
        sizes.append(s)
        s *= 4
    sizes.append(args.max_bytes)
    results, unsupported = [], {}
    for op in [o for o in args.ops.split(",") if o]:
        for size in sizes:
            try:
                results.append(_bench(torch, dist, op, size, args.iters, args.warmup, device, group_rank,
                                      group_world, group))
            except (RuntimeError, NotImplementedError) as err:
                if "not supported" in str(err).lower() or "not implemented" in str(err).lower() \
                        or isinstance(err, NotImplementedError):
                    unsupported[op] = str(err).splitlines()[0][:200]
                    break
                raise
    dist.barrier()
    if local_rank == 0:
        doc = {"backend": args.backend, "world_size": world, "group_size": group_world,
               "nnodes": len(set(hosts)) if hosts else 1,
               "local_world_size": int(os.environ.get("LOCAL_WORLD_SIZE", world)),
               "group_world_size": int(os.environ.get("GROUP_WORLD_SIZE", 1)),
               "hosts": sorted(set(hosts)), "results": results, "unsupported": unsupported,
               "torch": torch.__version__}
        out = args.out.replace("{group_rank}", os.environ.get("GROUP_RANK", "0"))
        write_atomic(Path(out), json.dumps(doc, indent=2))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
