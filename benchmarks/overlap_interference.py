"""Diagnostic, nothing fitted, no estimate change (docs/known-gaps.md 335): the estimate's overlap interference
(perf_constants.yaml comm.overlap_interference 0.20: an overlapped collective still costs that share of its hidden
time) read against the one published microbenchmark that times a GEMM and an NVLink all-gather alone in sequence and
overlapped, and a what-if that charges the interference by the collective's HBM traffic instead of one share.

Why: docs/known-gaps.md 323 found the A100 / A800 sharded Hugging Face families ask for their NVLink data-parallel
collectives at about half the ring rate beside compute, with no source for it. This reads what the public sources
give for compute-communication interference on A100 / H100 NVLink and what each would move.

What it prints:
1. MICROBENCH (pytorch/pytorch PR 172714, kwen2501, 2026-01-17, benchmarks/distributed/
   bench_overlapped_matmul_allgather.py: 8 x H100, an fp16 8192^3 matmul on the default stream and an NCCL
   all-gather of 64 MiB a rank, `--ag-mb` "All-gather input size in MiB", on a side stream): sequential 2.96 ms,
   overlapped 2.02 ms, overlapped with NCCL_CTA_POLICY_ZERO (copy-engine all-gather, no SMs) 1.77 ms. The estimate's
   gather of the 512 MiB output on 8 H100 (comm.all_gather_time at the shipped intra-domain ring rate) and matmul
   (compute.gemm_time), and the interference each overlapped time implies (`implied_share`: what the overlap costs
   over the longer of the two, as a share of the shorter, the matmul's time being the measured sequential less the
   estimate's gather) against the shipped share.
2. The what-if (`hbm_share`): every multi-GPU held-out time row with the data-parallel terms' overlap interference
   (step_time._dp_comm_zero3, _dp_comm_replicated) = C x the group's ring busbw / the part's HBM rate, for C in
   HBM_BYTES (NVIDIA/nccl issue 1428, sjeaugey 2024-09-06: NCCL's traffic through HBM is "at least 2x" the NVLink
   rate, "3x" with the user buffers read or written) in place of the one shipped 0.20, per accuracy_bands class and
   per family (benchmark, series).

Run: python benchmarks/overlap_interference.py   (a few minutes: it re-times every held-out benchmark's rows)
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import ampere_dp_rate as adr
from accuracy_bands import classify, collect
from trainsizer.catalog import load_catalog
from trainsizer.estimate import comm, compute, step_time
from trainsizer.estimate.validate import shard_groups
from trainsizer.scenario import resolve_job

# pytorch/pytorch PR 172714 (2026-01-17): 8 x H100, fp16 matmul m = n = k = 8192, all-gather 64 MiB input a rank
MICROBENCH = {"gpus": 8, "accelerator": "h100-sxm-80gb", "mnk": 8192, "ag_input_mib": 64,
              "sequential_ms": 2.96, "overlap_ms": 2.02, "overlap_copy_engine_ms": 1.77}
HBM_BYTES = (2.0, 3.0)  # NCCL's HBM bytes per busbw byte (NVIDIA/nccl issue 1428): at least 2, 3 with user data


def implied_share(sequential_s: float, overlap_s: float, comm_s: float) -> float:
    """The interference an overlapped pair implies: the compute's time is the sequential pair's less `comm_s`; the
    overlap's time over the longer of the two, as a share of the shorter (0 = the shorter hides whole, 1 = no gain
    from overlap: the estimate's overlap_interference reads the same, a share of the hidden collective's time)."""
    if comm_s <= 0.0 or comm_s >= sequential_s:
        raise ValueError(f"implied_share needs 0 < comm_s < sequential_s, got {comm_s} and {sequential_s}")
    compute_s = sequential_s - comm_s
    return (overlap_s - max(compute_s, comm_s)) / min(compute_s, comm_s)


def microbench_terms(bench: dict[str, Any] = MICROBENCH) -> dict[str, float]:
    """The estimate's seconds for the microbenchmark's all-gather (`gather_s`) and matmul (`matmul_s`) on its parts, and
    the shipped overlap_interference (`shipped`)."""
    n = int(bench["gpus"])
    x = _node_step(bench)
    gathered = float(bench["ag_input_mib"]) * 2**20 * n
    k = comm.ranks_per_domain(n, 1, x.domain)
    gather_s = float(np.asarray(comm.all_gather_time(gathered, n, k, x.r, x.system)).reshape(-1)[0])
    mnk = float(bench["mnk"])
    matmul_s = float(np.asarray(compute.gemm_time(mnk, mnk, mnk, x.r)).reshape(-1)[0])
    return {"gather_s": gather_s, "matmul_s": matmul_s, "shipped": float(x.k.overlap_interference)}


def _node_step(bench: dict[str, Any]) -> Any:
    """step_time's inputs (_Step) for a bf16 job on `bench`'s GPUs of one node (its rates, system and constants)."""
    n = int(bench["gpus"])
    job = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1.0e9}, "seq_len": 1024,
           "global_batch": {"sequences": n}, "precision": "bf16",
           "hardware": {"accelerator": bench["accelerator"], "count": n},
           "strategy": {"framework": "torchtitan", "micro_batch": 1}}
    sc = resolve_job(job, load_catalog())
    return step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


def node_share(accelerator: str, hbm_bytes: float, gpus: int = 8) -> float:
    """The what-if's interference (`hbm_share`) for an FSDP group of `gpus` on one node of `accelerator`: hbm_bytes x
    the shipped intra-domain ring busbw / the part's HBM rate."""
    bench = dict(MICROBENCH, accelerator=accelerator, gpus=gpus)
    x = _node_step(bench)
    return min(hbm_bytes * float(np.asarray(x.r.intra_busbw).reshape(-1)[0]) / float(x.r.hbm_bytes_s), 1.0)


def _dp_busbw(x: Any, name: str, args: tuple) -> Any:
    """The ring busbw (bytes/s) of a data-parallel term's group: the ZeRO-3 / FSDP shard group, or the DP x CP group
    of the replicated reductions (comm._busbw, as the terms' own collectives take it)."""
    if name == "_dp_comm_zero3":
        n = shard_groups(x.a)[0]
        k = comm.ranks_per_domain(n, x.t, x.domain)
        return comm._busbw(n, k, x.link(n, x.t), x.system, comm.zone_members(n, x.t, x.system))
    g = args[0]
    return comm._busbw(g.n_dp, g.k_dp, x.link(g.n_dp, x.t), x.system, g.m_dp)


@contextlib.contextmanager
def hbm_share(hbm_bytes: float) -> Iterator[None]:
    """Within the block, step_time's data-parallel terms (ampere_dp_rate.DP_TERMS) charge as their overlap
    interference `hbm_bytes` x their group's ring busbw / the part's HBM rate (at most 1) in place of the shipped
    share; every other term as shipped. Restored on exit."""
    if hbm_bytes < 0.0:
        raise ValueError(f"hbm_share takes HBM bytes per busbw byte >= 0, got {hbm_bytes}")
    saved = {name: getattr(step_time, name) for name in adr.DP_TERMS}

    def wrap(name, fn):
        def term(x, *args, **kwargs):
            share = np.minimum(hbm_bytes * np.asarray(_dp_busbw(x, name, args), float) / x.r.hbm_bytes_s, 1.0)
            x = dataclasses.replace(x, k=dataclasses.replace(x.k, overlap_interference=share))
            return fn(x, *args, **kwargs)
        return term

    try:
        for name, fn in saved.items():
            setattr(step_time, name, wrap(name, fn))
        yield
    finally:
        for name, fn in saved.items():
            setattr(step_time, name, fn)


def whatif(rows: list, shares: Sequence[float] = HBM_BYTES) -> list:
    """(row, class keys, signed error % as shipped then under hbm_share at each of `shares`) for the rows whose job
    resolves."""
    catalogs: dict[str, Any] = {}
    base = {id(r): adr._step_s(r, catalogs) for r, _ in rows}
    steps: dict[int, list] = {id(r): [] for r, _ in rows}
    for c in shares:
        with hbm_share(c):
            for r, _ in rows:
                steps[id(r)].append(adr._step_s(r, catalogs))
    out = []
    for r, keys in rows:
        b, s = base[id(r)], steps[id(r)]
        if b is None or any(v is None for v in s):
            continue
        out.append((r, keys, [100.0 * r.err] + [100.0 * adr.scaled_error(r.err, b, v) for v in s]))
    return out


def _microbench_lines() -> list[str]:
    b, t = MICROBENCH, microbench_terms()
    seq, gather, matmul = b["sequential_ms"] / 1e3, t["gather_s"], t["matmul_s"]
    out = [f"  estimate: all-gather {1e3 * gather:.2f} ms, matmul {1e3 * matmul:.2f} ms, sequential "
           f"{1e3 * (gather + matmul):.2f} ms (measured {b['sequential_ms']:.2f})"]
    # the measured sequential split two ways: the estimate's gather taken whole, or the estimate's matmul taken whole
    for split, comm_s in (("the estimate's gather", gather), ("the estimate's matmul", seq - matmul)):
        for label, key in (("NCCL (SM kernels)", "overlap_ms"), ("copy engine (CTA zero)", "overlap_copy_engine_ms")):
            share = implied_share(seq, b[key] / 1e3, comm_s)
            out.append(f"  split by {split:22s} (gather {1e3 * comm_s:.2f} ms), overlapped {label:23s} measured "
                       f"{b[key]:.2f} ms: implied interference {share:+.2f} (shipped {t['shipped']:.2f})")
    for acc in ("h100-sxm-80gb", "a100-sxm-80gb"):
        shares = " / ".join(f"{node_share(acc, c):.2f}" for c in HBM_BYTES)
        out.append(f"  the what-if's share (2.) for 8 {acc} on one node at C = {' / '.join(f'{c:g}' for c in HBM_BYTES)}: "
                   f"{shares}")
    return out


def main() -> None:
    print("1. pytorch/pytorch PR 172714's overlapped matmul + all-gather (8 x H100, fp16 8192^3, 64 MiB a rank):")
    print("\n".join(_microbench_lines()))
    rows = [(r, k) for r, k in classify(collect())
            if r.quantity == "time" and int((r.job.get("hardware") or {}).get("count", 1)) > 1]
    res = whatif(rows)
    heads = (1.0,) + HBM_BYTES
    print(f"\n2. What-if, not applied: the data-parallel terms' overlap interference = C x busbw / HBM rate (C = "
          f"{' / '.join(f'{c:g}' for c in HBM_BYTES)}) in place of the shipped share, {len(res)} multi-GPU time rows; "
          "columns: as shipped (x1), then each C (signed % + = predicted too fast)")
    print("\nall of them:")
    print("\n".join(adr._lines(adr.summary(res, lambda r, k: ("all multi-GPU time rows",)), heads, 40)[1:]))
    print("\nper accuracy_bands class:")
    print("\n".join(adr._lines(adr.summary(res, adr.by_class), heads, 40)))
    print("\nper family (benchmark, series):")
    print("\n".join(adr._lines(adr.summary(res, adr.by_family), heads, 40)))


if __name__ == "__main__":
    sys.exit(main())
