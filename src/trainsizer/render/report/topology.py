"""The physical layout a diagram draws, read from the plan: nodes and racks, GPUs and NVLink domains, NICs
and rails, switch tiers with their link counts and speeds, storage and management networks.

Only what the plan states is kept: a part the plan does not hold stays None and the diagram says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trainsizer.render.report.facts import blocks, recommended
from trainsizer.render.report.i18n import has, t


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
    scaleup_tech: str = "nvlink"   # the GPUs' scale-up link the domain is built from (SCALEUP_DOMAINS)
    provided: bool = False         # a rented cluster: the fabrics are the provider's, no switch of the plan's
    domain_size_gpus: int | None = None  # a rack-scale domain's own size (72 on NVL72); None: nvlink_domain_gpus
    job_gpus_per_domain: int | None = None  # the job's GPUs in each such domain (64 of 72 for 128 GB200)
    job_gpus_by_domain: tuple[int, ...] = ()  # where they differ: each rack's (72, 64, 64 for 200 GB200)


# Scale-up links whose domain the diagram draws (a whole node or more): NVLink, AMD's xGMI mesh, Huawei's HCCS.
# An NVLink bridge pairs two cards and PCIe is no domain: neither is drawn.
SCALEUP_DOMAINS = {"nvlink": "NVLink", "xgmi": "xGMI", "hccs": "HCCS"}


def _int(v: object) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _float(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _fabric_label(block: Mapping | None) -> str | None:
    if not isinstance(block, Mapping):
        return None
    return " ".join(str(block[k]) for k in ("kind", "tier", "name") if block.get(k)) or None


def _tiers_of(compute: Mapping) -> tuple[tuple[Tier, ...], tuple[Link, ...]]:
    """Switch tiers and link bundles of a fabric block (plan.build.network.compute)."""
    gbps, radix, model = _float(compute.get("gbps_per_port")), _int(compute.get("radix")), str(compute.get("switch") or "")
    tiers = tuple(Tier(name, _int(compute.get(key)) or 0, gbps, radix, model)
                  for name, key in (("leaf", "leaves"), ("spine", "spines"), ("core", "cores")) if _int(compute.get(key)))
    links_in = compute.get("links") if isinstance(compute.get("links"), Mapping) else {}
    links = tuple(Link(a, b, _int(links_in.get(key)) or 0, gbps)
                  for a, b, key in (("node", "leaf", "node_leaf"), ("leaf", "spine", "leaf_spine"),
                                    ("spine", "core", "spine_core")) if _int(links_in.get(key)))
    return tiers, links


def _word(value: object, lang: str) -> str:
    """An enumerated value (a fabric kind or purpose) in the reader's language (report catalogue `v.*`)."""
    return t(f"v.{value}", lang) if has(f"v.{value}") else str(value)


def _fabric_text(block: object, lang: str = "en") -> str | None:
    """'ethernet converged · 2 × 400 Gb/s per node · sn5600 × 1' for a storage or management fabric."""
    if not isinstance(block, Mapping):
        return None
    parts = [" ".join(_word(block[k], lang) for k in ("kind", "purpose") if block.get(k))]
    if block.get("ports_per_node") and block.get("gbps_per_port"):
        parts.append(f"{block['ports_per_node']} × {block['gbps_per_port']:g} Gb/s")
    if block.get("switch"):
        parts.append(f"{block['switch']} × {block.get('leaves') or 1}")
    elif block.get("provided"):
        parts.append(t("dg.provided", lang))
    return " · ".join(p for p in parts if p) or None


def _compute_fabric_text(compute: Mapping, topo: str, lang: str) -> str:
    """'InfiniBand rail-optimised fat tree'; a rented fabric as one phrase ('RoCE fabric run by the provider
    (rented)'), not its kind glued to the table's topology sentence."""
    kind = _word(compute.get("kind") or "", lang)
    if compute.get("provided") and kind:
        return t("dg.fabric_provided", lang, kind=kind)
    return " ".join(x for x in (kind, topo) if x)


def _from_build(net: Mapping, sto: Mapping, lang: str = "en") -> dict:
    """Topology fields from the build-out's network block (compute / storage / inband / oob / nvlink)."""
    compute = net.get("compute") if isinstance(net.get("compute"), Mapping) else {}
    nvlink = net.get("nvlink") if isinstance(net.get("nvlink"), Mapping) else {}
    tiers, links = _tiers_of(compute)
    topo = str(compute.get("topology") or "")
    # rail-optimised: said by the stored message (the text may be in either language); older plans: the text
    rail = "rail" in str((compute.get("topology_msg") or {}).get("key", "")) or "rail" in topo
    storage = " · ".join(x for x in (str(sto.get("tier") or ""), f"{sto['appliances']} × {sto['appliance']}"
                                     if sto.get("appliance") else "", _fabric_text(net.get("storage"), lang) or "")
                         if x)
    mgmt = " | ".join(x for x in (_fabric_text(net.get("inband"), lang), _fabric_text(net.get("oob"), lang)) if x)
    return dict(
        nvlink_domain_gpus=_int(nvlink.get("gpus_per_domain")) if nvlink.get("tech") in SCALEUP_DOMAINS else None,
        scaleup_tech=str(nvlink.get("tech")) if nvlink.get("tech") in SCALEUP_DOMAINS else "nvlink",
        nics_per_node=_int(compute.get("ports_per_node")), nic_gbps=_float(compute.get("gbps_per_port")),
        fabric=_compute_fabric_text(compute, topo, lang),
        rails=_int(compute.get("ports_per_node")) if rail else None, tiers=tiers, links=links,
        storage=storage or None, storage_gbps_per_node=None, management=mgmt or None,
        provided=bool(compute.get("provided")), domain_size_gpus=_int(nvlink.get("domain_size_gpus")),
        job_gpus_per_domain=_int(nvlink.get("job_gpus_per_domain")),
        job_gpus_by_domain=tuple(int(g) for g in nvlink.get("job_gpus_by_domain") or ()))


def _from_flat(net: Mapping, sto: Mapping, hw_net: Mapping, hw: Mapping) -> dict:
    """Topology fields from a flat network block (switches[] and links[] lists)."""
    tiers = tuple(Tier(str(s.get("tier", "?")), _int(s.get("count")) or 0, _float(s.get("gbps")),
                       _int(s.get("radix")), str(s.get("model") or "")) for s in net.get("switches") or [])
    links = tuple(Link(str(ln.get("from")), str(ln.get("to")), _int(ln.get("count")) or 0, _float(ln.get("gbps")))
                  for ln in net.get("links") or [])
    sfab = net.get("storage_fabric") if isinstance(net.get("storage_fabric"), Mapping) else {}
    return dict(
        nvlink_domain_gpus=_int(net.get("nvlink_domain_gpus")),
        nics_per_node=_int(net.get("nics_per_node", hw_net.get("nics_per_node"))),
        nic_gbps=_float(net.get("gbps_per_nic", hw_net.get("gbps_per_nic"))),
        fabric=str(net.get("topology") or hw_net.get("id") or hw.get("network") or ""),
        rails=_int(net.get("rails")), tiers=tiers, links=links,
        storage=" · ".join(str(x) for x in (sto.get("tier"), _fabric_label(sfab)) if x) or None,
        storage_gbps_per_node=_float(sfab.get("gbps_per_node")),
        management=_fabric_label(net.get("management_fabric")))


def topology(plan: Mapping, lang: str = "en") -> Topology | None:
    """The recommended option's topology (None when the plan recommends nothing)."""
    rec = recommended(plan)
    if rec is None:
        return None
    hw = plan["options"][rec].get("hardware") or {}
    b = blocks(plan)
    net, fac, sto = (b.get(k) if isinstance(b.get(k), Mapping) else {} for k in ("network", "facility", "storage"))
    hw_net = hw.get("network") if isinstance(hw.get("network"), Mapping) else {}
    if "compute" in net or "nvlink" in net:
        fields = _from_build(net, sto, lang)
        fields["nics_per_node"] = fields["nics_per_node"] or _int(hw_net.get("nics_per_node"))
        fields["nic_gbps"] = fields["nic_gbps"] or _float(hw_net.get("gbps_per_nic"))
        fields["fabric"] = fields["fabric"] or str(hw_net.get("id") or "")
    else:
        fields = _from_flat(net, sto, hw_net, hw)
    per_node = _int(hw.get("per_node")) or _int(hw.get("count")) or 1
    racks = _int(fac.get("node_racks") or fac.get("racks"))
    nvlink = net.get("nvlink") if isinstance(net.get("nvlink"), Mapping) else {}
    if not fields["fabric"] and net.get("compute") is None and (fields.get("nvlink_domain_gpus") or 0) > per_node:
        fields["fabric"] = t("dg.nvlink_only", lang)  # hosts of one rack-scale NVLink domain: no compute network
    if not racks and (fields.get("nvlink_domain_gpus") or 0) > per_node:
        # a rack-scale NVLink domain (NVL72) with no rack of the plan's own (rented): its racks are the domains
        racks = _int(nvlink.get("domains"))
    return Topology(
        accelerator=str(hw.get("accelerator") or "?"), nodes=_int(hw.get("nodes")) or 1, gpus_per_node=per_node,
        nodes_per_rack=_int(fac.get("nodes_per_rack")), racks=racks, **fields)
