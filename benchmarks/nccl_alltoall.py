"""The estimator's NCCL all-to-all against published measurements of it across 1-16 nodes of 8 Hopper GPUs.

Rows: benchmarks/data/nccl_alltoall.csv -- perplexityai/pplx-kernels' README table ('Torch AtA': one
torch.distributed.all_to_all_single of 242 MB a rank, 1.9-30 MB a peer, at EP 8-128) and the nccl-tests alltoall_perf
plateau on 2 DGX-H100 nodes with NVLink off (deepseek-ai/DeepEP issue 3). Each row's algorithm bandwidth (nccl-tests'
algbw: the bytes a rank holds over the time) against comm.all_to_all_time, which charges the off-node share
(n - k) / n of a rank's bytes at the NIC's ring rate (catalog ib-ndr400: 47 GB/s) and the rest over NVLink. A check
of that charge at the sizes of the held-out MoE rows' dispatches (3.7 MB a peer at EP 64, known-gaps 87 (b)); no
constant was read from these rows (docs/known-gaps.md 93).

Run: python benchmarks/nccl_alltoall.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from harness import Case, mape
from trainsizer.catalog import load_catalog
from trainsizer.estimate import comm
from trainsizer.estimate.calibration import rates
from trainsizer.scenario import resolve_job

ROWS = Path(__file__).resolve().parent / "data" / "nccl_alltoall.csv"
PLATEAU_BYTES = float(2**30)  # a row published as a plateau busbw: the estimate read at 1 GiB a rank


def system_of(row: dict[str, str], catalog):
    """The row's GPUs through the public job path (the model and batch only make the job valid)."""
    gpus = int(row["ranks"])
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": gpus}, "precision": "bf16",
           "hardware": {"accelerator": row["accelerator"], "count": gpus, "network": row["network"]},
           "strategy": {"tp": 1, "pp": 1}}
    return resolve_job(job, catalog).system


def ranks_on_nvlink(row: dict[str, str]) -> int:
    """Ranks a GPU reaches over NVLink: its node's, or itself alone where the run disabled NVLink (every peer
    through the NIC)."""
    return int(row["gpus_per_node"]) if row["nvlink"] == "on" else 1


def bytes_of(row: dict[str, str]) -> float:
    return float(row["bytes_per_rank"]) if row["bytes_per_rank"] else PLATEAU_BYTES


def measured_algbw(row: dict[str, str]) -> float:
    """GB/s a rank: bytes over time, or nccl-tests' busbw x n / (n - 1) (nccl-tests issue 130, sjeaugey)."""
    n = int(row["ranks"])
    if row["metric"] == "time_us":
        return bytes_of(row) / (float(row["value"]) * 1e-6) / 1e9
    return float(row["value"]) * n / (n - 1)


def estimate_algbw(row: dict[str, str], catalog) -> float:
    system = system_of(row, catalog)
    s, n = bytes_of(row), int(row["ranks"])
    return s / float(comm.all_to_all_time(s, n, ranks_on_nvlink(row), rates(system, "bf16"), system)) / 1e9


def off_node_gb_s(row: dict[str, str], algbw: float) -> float:
    """What each GPU's NIC carries at `algbw`: the off-node share of its bytes over the time (0 inside a node)."""
    n = int(row["ranks"])
    return (n - ranks_on_nvlink(row)) / n * algbw


def cases() -> list[Case]:
    catalog = load_catalog()
    out = []
    for row in csv.DictReader(ROWS.open(encoding="utf-8")):
        source = "pplx-kernels Torch AtA" if row["id"].startswith("pplx") else "DeepEP issue 3 nccl-tests"
        case = Case(row["id"], source, "algbw_gb_s", measured_algbw(row))
        case.predicted = estimate_algbw(row, catalog)
        out.append(case)
    return out


def main() -> None:
    cs = cases()
    rows = list(csv.DictReader(ROWS.open(encoding="utf-8")))
    print(f"{'row':26s} {'nodes':>5s} {'measured':>9s} {'estimate':>9s} {'error':>7s}   off-node GB/s a NIC "
          "(measured / charged)")
    for c, row in zip(cs, rows, strict=True):
        nodes = int(row["ranks"]) // int(row["gpus_per_node"])
        print(f"{c.row_id:26s} {nodes:5d} {c.measured:9.1f} {c.predicted:9.1f} {c.err * 100:+6.1f}%   "
              f"{off_node_gb_s(row, c.measured):5.1f} / {off_node_gb_s(row, c.predicted):5.1f}")
    for source in sorted({c.source for c in cs}):
        group = [c for c in cs if c.source == source]
        print(f"  {source:26s} n={len(group):2d} MAPE {mape(group):5.1f}%")
    print(f"  all                        n={len(cs):2d} MAPE {mape(cs):5.1f}%")


if __name__ == "__main__":
    main()
