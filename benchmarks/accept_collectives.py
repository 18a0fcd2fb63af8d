"""Acceptance harness figures on this machine: collective busbw (torchrun) and storage/checkpoint speed.

Prints nccl-tests-style rows (size, time, algbw, busbw, #wrong) for all-reduce / all-gather /
reduce-scatter, with NCCL on GPUs or gloo on CPU, then storage write/read and checkpoint save/restore.
On CPU the figures measure the harness (gloo over loopback, local disk), not a GPU fabric.

    python benchmarks/accept_collectives.py [--nproc 2] [--max-size 16MiB] [--storage-size 256MiB]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from trainsizer.accept import checkpoint, collectives, storage
from trainsizer.accept.context import Context, Options
from trainsizer.accept.criteria import generic
from trainsizer.accept.units import parse_size_bytes


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--backend", default=None, choices=["gloo", "nccl"])
    ap.add_argument("--max-size", default="16MiB")
    ap.add_argument("--storage-size", default="256MiB")
    args = ap.parse_args()
    try:
        import torch

        backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    except ImportError:
        backend = None
    with tempfile.TemporaryDirectory() as tmp:
        opts = Options(nproc=args.nproc, backend=backend or "gloo", storage_path=Path(tmp),
                       collective_max_bytes=parse_size_bytes(args.max_size, "--max-size"), collective_iters=10,
                       storage_size_bytes=parse_size_bytes(args.storage_size, "--storage-size"),
                       checkpoint_size_bytes=parse_size_bytes(args.storage_size, "--storage-size"))
        ctx = Context(criteria=generic(), telemetry=None, telemetry_why="benchmark", options=opts)
        if backend:
            print(f"collectives: {args.nproc} ranks, backend {backend}")
            print(f"{'op':>15} {'size (B)':>12} {'time (us)':>11} {'algbw GB/s':>11} {'busbw GB/s':>11} {'#wrong':>7}")
            for res in collectives.run(ctx):
                for row in res.details.get("rows", []):
                    print(f"{res.name.split('.')[1]:>15} {row['size_bytes']:>12} {row['time_us']:>11.1f} "
                          f"{row['algbw_gb_s']:>11.3f} {row['busbw_gb_s']:>11.3f} {row['wrong']:>7}")
                if not res.details.get("rows"):
                    print(f"{res.name}: {res.status}: {res.why}")
        else:
            print("collectives: torch not installed, skipped")
        for res in [*storage.run(ctx), *checkpoint.run(ctx)]:
            print(f"{res.name:>20}: {res.measured} {res.unit or ''}  ({res.why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
