"""Network payload per GPU of the validation sources' fabrics: what `System.inter_node_gb_s` holds.

NIC line rate per GPU x the catalog network's measured NCCL efficiency (catalog networks.yaml: ib-hdr200 0.96
from 2x DGX A100 all-reduce busbw 192 GB/s, nccl#812; ib-ndr400 0.94, nccl-tests#290), or the shipped
fallback for a fabric the catalog does not hold (perf_constants.yaml comm.nic_efficiency_fallback). The same
single efficiency factor the planner applies to a catalog network (scenario.NetworkView).
"""

from __future__ import annotations

from functools import cache

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants


@cache
def payload_gb_s(line_gb_s_per_gpu: float, network_id: str | None) -> float:
    """Achieved GB/s per GPU, one direction, of `line_gb_s_per_gpu` of NIC line rate on `network_id`
    (None: a fabric outside the catalog, e.g. Jean Zay's Omni-Path)."""
    if network_id is None:
        return line_gb_s_per_gpu * float(load_constants().raw["comm"]["nic_efficiency_fallback"])
    return line_gb_s_per_gpu * float(load_catalog().network(network_id).efficiency_planning)


def hdr200() -> float:
    """One HDR 200 Gb/s NIC per GPU (DGX A100 / Selene): 25 GB/s line."""
    return payload_gb_s(25.0, "ib-hdr200")


def ndr400() -> float:
    """One NDR 400 Gb/s NIC per GPU (DGX H100): 50 GB/s line (RoCE 400G of the same NIC generation alike)."""
    return payload_gb_s(50.0, "ib-ndr400")
