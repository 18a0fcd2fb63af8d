# Settles (not run yet: written 2026-12-07, no GPU lent that session; docs/known-gaps.md 299 (e)) what a communicator
# holds on the device: the estimate charges NCCL's connection buffers (estimate/communicators.py: 12 MiB a channel's
# send and receive connections; a ring's channels by fabric, p2pnChannelsPerPeer channels a point-to-point peer) and a
# fixed 0.53 GiB of CUDA context and cuBLAS workspace (memory_constants.yaml framework_overhead), and the whole-device
# rows (mem_get_info, nvidia-smi) are predicted low (known-gaps 292 (a), 299 (d)).
# Run: python benchmarks/device/nccl_comm_memory.py (needs torch; one GPU or more; --tiny on a CPU with gloo)
"""Device bytes in use (torch.cuda.mem_get_info: total less free) around the CUDA context and each communicator's first
collective, each case in a fresh process so NCCL's environment applies from its first call.

Cases:
- context: after CUDA's initialisation and a one-element tensor; after a bf16 4,096^3 matmul (cuBLAS's handle and
  workspace); the estimate's cuda_context_gib + cublas_workspace_gib beside it.
- one_rank: a one-rank NCCL group (world size 1) at NCCL_MAX_NCHANNELS 1, 2, 4, 8, 16, 32 and unset: the rise at its first
  all-reduce (1 MiB) and at a second one-rank group's (torch.distributed.new_group([0])): channels x bytes a channel
  where a one-rank ring connects to itself (sglang PR 35538: +388 MiB a further group on an RTX 3060, 10 MiB at one
  channel), the slope the bytes a channel.
- ranks (two GPUs or more, torch.multiprocessing over every visible GPU): on rank 0, the rise at the world group's first
  all-reduce (a ring), at a new group's first all_to_all_single (n - 1 point-to-point peers) and at a new group's first
  send / recv with the next rank (one peer, both directions).

One JSON line a case and setting: case, setting, device, and the GiB / MiB read. About a minute on one H100 (7
processes); --tiny: the CPU, gloo, two ranks for the ranks case, every reading 0 (a smoke test of the script).
"""

import json
import os
import subprocess
import sys

import torch
import torch.distributed as dist

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
BACKEND = "nccl" if CUDA else "gloo"
MIB = 2**20
ESTIMATE_CONTEXT_GIB = 0.5 + 0.03125  # memory_constants.yaml framework_overhead cuda_context_gib + cublas_workspace_gib
CHANNELS = (1, 2, 4, 8, 16, 32, None)


def used_bytes(device: int = 0) -> int:
    """Bytes in use on the device (mem_get_info's total less free; 0 on the CPU)."""
    if not CUDA:
        return 0
    torch.cuda.synchronize(device)
    free, total = torch.cuda.mem_get_info(device)
    return total - free


def context_case() -> dict:
    torch.zeros(1, device=DEV)
    first = used_bytes()
    n = 64 if TINY else 4096
    dt = torch.bfloat16 if CUDA else torch.float32
    a = torch.randn(n, n, device=DEV, dtype=dt)
    (a @ a).sum().item()
    del a
    if CUDA:
        torch.cuda.empty_cache()
    return {"case": "context", "setting": None, "device": DEV, "context_gib": first / 2**30,
            "after_matmul_gib": used_bytes() / 2**30, "estimate_gib": ESTIMATE_CONTEXT_GIB}


def _init(rank: int, world: int, store: str) -> None:
    """The process group through a file store (no fixed port: other jobs on the host may hold one)."""
    if CUDA:
        torch.cuda.set_device(rank)
    dist.init_process_group(BACKEND, init_method=f"file://{store}", rank=rank, world_size=world)


def _rise(fn, rank: int = 0) -> float:
    """MiB the device gains across fn() (its first collective on a group)."""
    before = used_bytes(rank)
    fn()
    return (used_bytes(rank) - before) / MIB


def one_rank_case(channels, store: str) -> dict:
    if channels is not None:
        os.environ["NCCL_MAX_NCHANNELS"] = str(channels)
    _init(0, 1, store)
    x = torch.ones(MIB // 4, device=DEV)
    torch.zeros(1, device=DEV)
    first = _rise(lambda: dist.all_reduce(x))
    group = dist.new_group([0])
    further = _rise(lambda: dist.all_reduce(x, group=group))
    dist.destroy_process_group()
    return {"case": "one_rank", "setting": channels, "device": DEV, "first_comm_mib": first,
            "further_comm_mib": further}


def _ranks_worker(rank: int, world: int, store: str, out: str) -> None:
    _init(rank, world, store)
    x = torch.ones(MIB // 4, device=DEV)
    torch.zeros(1, device=DEV)
    ring = _rise(lambda: dist.all_reduce(x), rank)
    a2a_group = dist.new_group(list(range(world)))
    buf = torch.ones(world * 1024, device=DEV)
    a2a = _rise(lambda: dist.all_to_all_single(torch.empty_like(buf), buf, group=a2a_group), rank)
    pair_group = dist.new_group(list(range(world)))

    def pair() -> None:
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x, nxt, group=pair_group),
                                       dist.P2POp(dist.irecv, torch.empty_like(x), prv, group=pair_group)])
        for r in reqs:
            r.wait()

    p2p = _rise(pair, rank)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"case": "ranks", "setting": world, "device": DEV, "ring_mib": ring, "all_to_all_mib": a2a,
                       "send_recv_mib": p2p}, f)
    dist.barrier()
    dist.destroy_process_group()


def ranks_case(world: int, d: str) -> dict:
    import torch.multiprocessing as mp

    out = os.path.join(d, "ranks.json")
    mp.spawn(_ranks_worker, args=(world, os.path.join(d, "store"), out), nprocs=world, join=True)
    with open(out) as f:
        return json.load(f)


def run_case(name: str, setting: str) -> None:
    """One case in this process (the child's entry point), its store in a temporary directory."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        if name == "context":
            row = context_case()
        elif name == "one_rank":
            row = one_rank_case(None if setting == "None" else int(setting), os.path.join(d, "store"))
        else:
            row = ranks_case(int(setting), d)
    print(json.dumps(row), flush=True)


def main() -> None:
    if "--case" in sys.argv:
        at = sys.argv.index("--case")
        run_case(sys.argv[at + 1], sys.argv[at + 2])
        return
    world = 2 if TINY else (torch.cuda.device_count() if CUDA else 0)
    cases = [("context", "None")] + [("one_rank", str(c)) for c in CHANNELS]
    if world >= 2:
        cases.append(("ranks", str(world)))
    extra = ["--tiny"] if TINY else []
    for name, setting in cases:
        out = subprocess.run([sys.executable, __file__, "--case", name, setting, *extra], capture_output=True,
                             text=True, check=True, timeout=600).stdout
        print(out.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
