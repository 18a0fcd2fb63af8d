"""The estimator's NCCL all-to-all against published measurements of it: 1-16 nodes of 8 Hopper GPUs, one tray to
three NVL72 racks of GB200 / GB300, one and two HGX B300 nodes, and RCCL's on one node of 8 MI355X (xGMI mesh).

Rows: benchmarks/data/nccl_alltoall.csv -- perplexityai/pplx-kernels' README table ('Torch AtA': one
torch.distributed.all_to_all_single of 242 MB a rank, 1.9-30 MB a peer, at EP 8-128), the nccl-tests alltoall_perf
plateau on 2 DGX-H100 nodes with NVLink off (deepseek-ai/DeepEP issue 3), Oracle's OCI GPU quick-start guides
(nccl-tests alltoall_perf at 8-16 GiB a rank: GB200 on NDR400 IB, GB300 and B300 on 2 x 400G RoCE a GPU) and UCCL's
B300 native NCCL baseline at 256 MB; Oracle's MI355X guide (rccl-tests alltoall_perf at 8 / 16 GiB a rank). Each row's algorithm bandwidth (nccl-tests' algbw: the bytes a rank holds over
the time) against comm.all_to_all_time at the rates of the NCCL EP dispatchers (step_time.nccl_alltoall_rates): the
off-domain share (n - k) / n of a rank's bytes at the network's all-to-all payload (NDR400: 0.92 x 47 GB/s), the rest
over NVLink at NCCL's all-to-all busbw (0.72 of the link on NVSwitch, 0.672 on the xGMI mesh). Those three
constants were read from the rows tagged FIT-NVLINK / FIT-NIC / FIT-MESH (docs/known-gaps.md 95, 113); the others are
scored only.

Run: python benchmarks/nccl_alltoall.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from harness import Case, gpus_system, mape
from trainsizer.catalog import load_catalog
from trainsizer.estimate import comm
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.step_time import nccl_alltoall_rates

ROWS = Path(__file__).resolve().parent / "data" / "nccl_alltoall.csv"
# rows a constant was read from (docs/known-gaps.md 95): the NVLink rows at 8-16 GiB a rank -> perf_constants.yaml
# comm.nccl_alltoall_busbw_fraction (their mean); the NDR400 rows across nodes / racks -> networks.yaml ib-ndr400
# alltoall_payload_share (their median). The rest are scored only.
FITTED_NVLINK = ("oci_gb200_1tray", "oci_gb200_2trays", "oci_gb200_16trays", "oci_gb300_1tray", "oci_gb300_2trays",
                 "oci_gb300_16trays", "oci_b300_1node")
FITTED_NIC = ("pplx_ep16_torch_ata", "pplx_ep32_torch_ata", "pplx_ep64_torch_ata", "pplx_ep128_torch_ata",
              "deepep3_2node_nvlink_off", "oci_gb200_2racks", "oci_gb200_3racks")
# the xGMI mesh rows -> perf_constants.yaml comm.rccl_alltoall_busbw_fraction_mesh (their mean; docs/known-gaps.md 113)
FITTED_MESH = ("oci_mi355x_1node_8g", "oci_mi355x_1node_16g")
# a RoCE run that moved half of one 400G port a GPU across racks where the same racks' GB200 IB twin moved 0.96 of
# its NIC (known-gaps 95): printed beside the others, and the MAPE without it
SUSPECT = ("oci_gb300_2racks",)
PLATEAU_BYTES = float(2**30)  # a row published as a plateau busbw: the estimate read at 1 GiB a rank


def system_of(row: dict[str, str], catalog):
    """The row's GPUs through the public job path."""
    return gpus_system(int(row["ranks"]), row["accelerator"], row["network"], catalog)


def ranks_on_nvlink(row: dict[str, str]) -> int:
    """Ranks a GPU reaches over NVLink: the job's ranks in its NVLink domain (its node's on HGX, the trays used of a
    rack on NVL72 with MNNVL), or itself alone where the run disabled NVLink (every peer through the NIC)."""
    return int(row["domain_ranks"]) if row["nvlink"] == "on" else 1


def bytes_of(row: dict[str, str]) -> float:
    return float(row["bytes_per_rank"]) if row["bytes_per_rank"] else PLATEAU_BYTES


def measured_algbw(row: dict[str, str]) -> float:
    """GB/s a rank: bytes over time, or nccl-tests' busbw x n / (n - 1) (nccl-tests issue 130, sjeaugey)."""
    n = int(row["ranks"])
    if row["metric"] == "time_us":
        return bytes_of(row) / (float(row["value"]) * 1e-6) / 1e9
    return float(row["value"]) * n / (n - 1)


def estimate_algbw(row: dict[str, str], catalog) -> float:
    """GB/s a rank as the estimate charges NCCL's all-to-all (the rates of the NCCL EP dispatchers)."""
    system = system_of(row, catalog)
    s, n = bytes_of(row), int(row["ranks"])
    r = nccl_alltoall_rates(rates(system, "bf16"), system, load_constants())
    return s / float(comm.all_to_all_time(s, n, ranks_on_nvlink(row), r, system)) / 1e9


def off_node_gb_s(row: dict[str, str], algbw: float) -> float:
    """What each GPU's NICs carry at `algbw`: the off-domain share of its bytes over the time (0 inside a domain)."""
    n = int(row["ranks"])
    return (n - ranks_on_nvlink(row)) / n * algbw


def cases() -> list[Case]:
    catalog = load_catalog()
    out = []
    for row in csv.DictReader(ROWS.open(encoding="utf-8")):
        case = Case(row["id"], row["group"], "algbw_gb_s", measured_algbw(row))
        case.predicted = estimate_algbw(row, catalog)
        out.append(case)
    return out


def main() -> None:
    cs = cases()
    rows = list(csv.DictReader(ROWS.open(encoding="utf-8")))
    print(f"{'row':26s} {'domains':>7s} {'measured':>9s} {'estimate':>9s} {'error':>7s}   off-domain GB/s a GPU "
          "(measured / charged)")
    for c, row in zip(cs, rows, strict=True):
        domains = int(row["ranks"]) // ranks_on_nvlink(row)
        tag = (" FIT-NVLINK" if c.row_id in FITTED_NVLINK else " FIT-NIC" if c.row_id in FITTED_NIC
               else " FIT-MESH" if c.row_id in FITTED_MESH else "")
        print(f"{c.row_id:26s} {domains:7d} {c.measured:9.1f} {c.predicted:9.1f} {c.err * 100:+6.1f}%   "
              f"{off_node_gb_s(row, c.measured):5.1f} / {off_node_gb_s(row, c.predicted):5.1f}{tag}")
    for source in sorted({c.source for c in cs}):
        group = [c for c in cs if c.source == source]
        print(f"  {source:30s} n={len(group):2d} MAPE {mape(group):5.1f}%")
    kept = [c for c in cs if c.row_id not in SUSPECT]
    scored = [c for c in cs if c.row_id not in FITTED_NVLINK + FITTED_NIC + FITTED_MESH]
    print(f"  {'all':30s} n={len(cs):2d} MAPE {mape(cs):5.1f}%")
    print(f"  {'all but ' + SUSPECT[0]:30s} n={len(kept):2d} MAPE {mape(kept):5.1f}%")
    print(f"  {'rows nothing was read from':30s} n={len(scored):2d} MAPE {mape(scored):5.1f}%")


if __name__ == "__main__":
    main()
