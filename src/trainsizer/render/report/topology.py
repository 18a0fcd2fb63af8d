"""The physical layout a diagram draws, read from the plan: nodes and racks, GPUs and NVLink domains, NICs
and rails, switch tiers with their link counts and speeds, storage and management networks.

Only what the plan states is kept: a part the plan does not hold stays None and the diagram says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trainsizer.render.report.facts import blocks, recommended


@dataclass(frozen=True)
class Tier:
    name: str            # leaf | spine | core | ...
    count: int
    gbps: float | None
    radix: int | None
    model: str


@dataclass(frozen=True)
class Link:
    src: str             # node | leaf | spine | ...
    dst: str
    count: int
    gbps: float | None


@dataclass(frozen=True)
class Topology:
    accelerator: str
    nodes: int
    gpus_per_node: int
    nvlink_domain_gpus: int | None
    nics_per_node: int | None
    nic_gbps: float | None
    fabric: str              # e.g. "ib-ndr400", "rail-optimised fat-tree"
    rails: int | None
    tiers: tuple[Tier, ...]
    links: tuple[Link, ...]
    nodes_per_rack: int | None
    racks: int | None
    storage: str | None
    storage_gbps_per_node: float | None
    management: str | None


def _int(v: object) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _float(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _fabric_label(block: Mapping | None) -> str | None:
    if not isinstance(block, Mapping):
        return None
    return " ".join(str(block[k]) for k in ("kind", "tier", "name") if block.get(k)) or None


def topology(plan: Mapping) -> Topology | None:
    """The recommended option's topology (None when the plan recommends nothing)."""
    rec = recommended(plan)
    if rec is None:
        return None
    hw = plan["options"][rec].get("hardware") or {}
    b = blocks(plan)
    net = b.get("network") if isinstance(b.get("network"), Mapping) else {}
    hw_net = hw.get("network") if isinstance(hw.get("network"), Mapping) else {}
    fac = b.get("facility") if isinstance(b.get("facility"), Mapping) else {}
    sto = b.get("storage") if isinstance(b.get("storage"), Mapping) else {}
    tiers = tuple(Tier(str(s.get("tier", "?")), _int(s.get("count")) or 0, _float(s.get("gbps")),
                       _int(s.get("radix")), str(s.get("model") or "")) for s in net.get("switches") or [])
    links = tuple(Link(str(ln.get("from")), str(ln.get("to")), _int(ln.get("count")) or 0, _float(ln.get("gbps")))
                  for ln in net.get("links") or [])
    sfab = net.get("storage_fabric") if isinstance(net.get("storage_fabric"), Mapping) else {}
    storage = " · ".join(str(x) for x in (sto.get("tier"), _fabric_label(sfab)) if x) or None
    return Topology(
        accelerator=str(hw.get("accelerator") or "?"),
        nodes=_int(hw.get("nodes")) or 1,
        gpus_per_node=_int(hw.get("per_node")) or _int(hw.get("count")) or 1,
        nvlink_domain_gpus=_int(net.get("nvlink_domain_gpus")),
        nics_per_node=_int(net.get("nics_per_node", hw_net.get("nics_per_node"))),
        nic_gbps=_float(net.get("gbps_per_nic", hw_net.get("gbps_per_nic"))),
        fabric=str(net.get("topology") or hw_net.get("id") or hw.get("network") or ""),
        rails=_int(net.get("rails")),
        tiers=tiers, links=links,
        nodes_per_rack=_int(fac.get("nodes_per_rack")), racks=_int(fac.get("racks")),
        storage=storage, storage_gbps_per_node=_float(sfab.get("gbps_per_node")),
        management=_fabric_label(net.get("management_fabric")),
    )
