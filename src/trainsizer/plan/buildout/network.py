"""The `network` block: compute fabric, NVLink domain, storage and management fabrics, and the all-reduce the
strategy needs on them. Switch counts from fabric.size_fat_tree (catalog radix), cables/optics from links.py."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block, Cited, cited
from trainsizer.plan.buildout.fabric import FatTree, size_fat_tree, size_zoned_tree
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.links import PartCount, link_parts
from trainsizer.plan.texts import MessageRef
from trainsizer.scenario import domain_job_gpus, job_domain_gpus

PROVIDER_KINDS = ("efa",)


class PartLine(Block):
    part: str | None
    quantity: int
    role: str
    role_msg: MessageRef | None = None
    medium: str
    note: str = ""
    note_msg: MessageRef | None = None


class Fabric(Block):
    purpose: str  # compute | storage | inband | oob | converged
    kind: str  # ib | roce | ethernet | provider
    topology: str
    topology_msg: MessageRef | None = None
    ports_per_node: int
    gbps_per_port: float
    switch: str | None
    radix: int | None
    oversubscription: float
    # switch counts; None on the provider's fabric of a rented cluster (`provided`), whose switches are not the plan's
    tiers: int | None
    leaves: int | None
    spines: int | None
    cores: int | None
    nodes_per_su: int | None
    links: dict[str, int]
    parts: list[PartLine]
    max_nodes_without_new_leaf: int | None
    source: str
    notes: list[str] = []
    notes_msg: list[MessageRef | None] | None = None
    # the job's oversubscribed fabric (hardware.fabric): nodes per full-bisection zone, and the tier whose uplinks
    # carry `oversubscription` (leaf | spine | none: no tier serves whole zones, non-blocking); None: not asked
    zone_nodes: int | None = None
    oversubscribed_at: str | None = None
    # the provider's fabric of a rented cluster (plan.buildout.rented): described, nothing of it to buy
    provided: bool = False


class NvlinkDomain(Block):
    tech: str
    gpus_per_domain: int
    domains: int
    gb_s_per_gpu_bidir: float
    nvls: bool
    nvlink_switch_trays: int
    source: str
    # GeForce: the driver refuses PCIe peer-to-peer, so GPU-to-GPU copies go through host memory at this rate (the
    # catalog's host_staged_gb_s_per_dir, what the estimate times), not at the link's gb_s_per_gpu_bidir
    host_staged_gb_s_per_dir: float | None = None
    # a rack-scale domain (NVL72): its own size, where gpus_per_domain is the job's share when the job fits one
    # domain; and the job's GPUs in each domain (scenario.job_domain_gpus, the placement the estimate times: 128
    # GB200 are 64 in each of 2 racks of 72). None where the domain is one host (schema 1.6)
    domain_size_gpus: int | None = None
    job_gpus_per_domain: int | None = None
    # the job's GPUs in each rack it takes, the racks the plan buys (scenario.domain_shares: 200 GB200 are 72 + 64 +
    # 64 in 3 racks, timed at the smallest share, job_gpus_per_domain). None where the domain is one host (schema 1.7)
    job_gpus_by_domain: list[int] | None = None


class AllReduce(Block):
    group: str
    group_msg: MessageRef | None = None
    ranks: int
    ranks_per_domain: int
    bytes_per_rank_gb: float
    algorithm: str
    algorithm_msg: MessageRef | None = None
    busbw_gb_s: float
    time_s: float = Field(description="the gradient all-reduce alone, s (ring alpha-beta at busbw_gb_s)")
    exposed_s_per_step: float = Field(description="the step model's whole exposed data-parallel term (time "
                                      "breakdown_s.dp_comm), s: ZeRO-3 / FSDP gathers included, so it may exceed time_s")
    step_s: float
    exposed_share_of_step: float
    formula: str
    formula_msg: MessageRef | None = None


class SwitchTier(Block):
    tier: str
    count: int
    gbps: float
    radix: int | None
    model: str


class LinkGroup(Block):
    from_: str = Field(alias="from", serialization_alias="from")
    to: str
    count: int
    gbps: float

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NetworkBlock(Block):
    # summary of the compute fabric (what diagrams and reports draw)
    topology: str
    topology_msg: MessageRef | None = None
    nics_per_node: int
    gbps_per_nic: float
    rails: int | None
    nvlink_domain_gpus: int
    switches: list[SwitchTier]
    links: list[LinkGroup]
    storage_fabric: dict[str, Any] | None
    management_fabric: dict[str, Any] | None
    # the fabrics in full
    compute: Fabric | None
    storage: Fabric | None
    inband: Fabric | None
    oob: Fabric | None
    nvlink: NvlinkDomain
    allreduce: AllReduce | None
    gpudirect_rdma: bool
    sharp: str | None
    lossless: Cited | None
    subnet_manager: str | None
    subnet_manager_msg: MessageRef | None = None
    notes: list[str]
    notes_msg: list[MessageRef | None] | None = None


def pick_switch(catalog: Any, kind: str, gbps: float, preferred: str | None = None) -> Any:
    """The preferred switch when it has ports at `gbps`, else the catalog's first switch of the fabric's kind
    with ports at that speed (announced parts last), else None."""
    if preferred is not None:
        sw = catalog.switch(preferred)
        if int(gbps) in sw.radix_by_gbps:
            return sw
    want = "ib" if kind == "ib" else "ethernet"
    found = [s for s in catalog.switches.values() if s.kind == want and int(gbps) in s.radix_by_gbps]
    found.sort(key=lambda s: (s.status == "announced", s.role is not None))
    return found[0] if found else None


def _parts(counts: list[PartCount]) -> list[PartLine]:
    return [PartLine(part=c.part, quantity=c.quantity, role=c.role, medium=c.medium, note=c.note) for c in counts]


def fabric_parts(catalog: Any, tree: FatTree, gbps: float, one_rack: bool) -> list[PartLine]:
    node_leaf = rules.value("fabric", "distance_node_leaf_one_rack_m" if one_rack else "distance_node_leaf_m")
    out = link_parts(catalog, tree.node_leaf_links, gbps, node_leaf, "node-leaf", False)
    out += link_parts(catalog, tree.leaf_spine_links, gbps, rules.value("fabric", "distance_leaf_spine_m"),
                      "leaf-spine", True)
    out += link_parts(catalog, tree.spine_core_links, gbps, rules.value("fabric", "distance_spine_core_m"),
                      "spine-core", True)
    return _parts(out)


def _topology(tree: FatTree) -> Any:
    if tree.rail_groups:
        return msg("net_topology_rail_groups", switches=tree.leaves)
    if tree.tiers == 1:
        return msg("net_topology_single")
    return msg("net_topology_rail_fat_tree" if tree.rail_optimised else "net_topology_fat_tree", tiers=tree.tiers)


def switched_fabric(catalog: Any, purpose: str, kind: str, nodes: int, ports: int, gbps: float, switch: Any,
                    oversub: float, source: str, extra_ports: int = 0, rail: bool | None = None,
                    notes: tuple[Any, ...] = (), zone_nodes: int | None = None, zone_gpus: int = 0,
                    rail_groups_max: int = 0, one_rack: bool = False) -> Fabric:
    """A fabric for `nodes` x `ports` endpoints (+ `extra_ports` single-port endpoints, e.g. storage servers);
    `zone_nodes`: the job's full-bisection zones, `oversub` above them (`fabric.size_zoned_tree`);
    `rail_groups_max`: one tier on up to this many rail-group switches (NVLink forwards cross-rail traffic)."""
    radix = switch.radix(gbps)
    extra_nodes = -(-extra_ports // ports) if extra_ports else 0
    if zone_nodes is not None:
        tree = size_zoned_tree(nodes + extra_nodes, ports, radix, zone_nodes, oversub, rail_optimised=rail)
        full = size_fat_tree(nodes + extra_nodes, ports, radix, 1.0, rail_optimised=rail)
        notes = (*notes, _zoned_note(tree, full, zone_gpus or zone_nodes, oversub))
    else:
        tree = size_fat_tree(nodes + extra_nodes, ports, radix, oversub, rail_optimised=rail,
                             rail_groups_max=rail_groups_max)
    if tree.rail_groups:
        full = size_fat_tree(nodes + extra_nodes, ports, radix, oversub, rail_optimised=rail)
        notes = (*notes, msg("net_note_rail_groups", switches=tree.leaves, rails=ports,
                             per_switch=-(-ports // tree.leaves), nodes=tree.max_nodes_same_switches(),
                             full_leaves=full.leaves, full_spines=full.spines, links=full.leaf_spine_links))
    notes = [*notes, *([msg("net_note_storage_servers", extra=extra_nodes, ports=ports)] if extra_nodes else [])]
    return Fabric(
        purpose=purpose, kind=kind, topology=_topology(tree), ports_per_node=ports, gbps_per_port=gbps,
        switch=switch.id, radix=radix, oversubscription=oversub, tiers=tree.tiers, leaves=tree.leaves,
        spines=tree.spines, cores=tree.cores, nodes_per_su=tree.nodes_per_su if tree.tiers > 1 else None,
        links={"node_leaf": tree.node_leaf_links, "leaf_spine": tree.leaf_spine_links,
               "spine_core": tree.spine_core_links},
        # one switch sits beside its nodes; rail-group switches reach a row unless the nodes are one rack
        parts=fabric_parts(catalog, tree, gbps, one_rack=tree.tiers == 1 and (tree.leaves == 1 or one_rack)),
        max_nodes_without_new_leaf=tree.max_nodes_same_switches(), source=source, notes=notes,
        zone_nodes=zone_nodes, oversubscribed_at=tree.oversubscribed_at if zone_nodes is not None else None)


def _zoned_note(tree: FatTree, full: FatTree, zone_gpus: int, o: float) -> Any:
    """What the job's oversubscribed fabric saves against the non-blocking tree of the same nodes, or why not."""
    counts = {"leaves": tree.leaves, "spines": tree.spines, "cores": tree.cores,
              "full_leaves": full.leaves, "full_spines": full.spines, "full_cores": full.cores}
    if tree.oversubscribed_at == "none":
        return msg("net_note_zoned_none", o=f"{o:g}", zone=zone_gpus, tiers=full.tiers)
    return msg(f"net_note_zoned_{tree.oversubscribed_at}", o=f"{o:g}", zone=zone_gpus,
               links=tree.leaf_spine_links + tree.spine_core_links,
               full_links=full.leaf_spine_links + full.spine_core_links, **counts)


def compute_fabric(b: BuildInput) -> Fabric | None:
    """The compute (scale-out) fabric; None on one node and for a job inside one rack-scale NVLink domain that
    names no network (scenario.spans_scaleout)."""
    if (b.nodes <= 1 and not b.nvl72) or b.scenario.network is None:
        return None
    kind = b.network_kind or "ib"
    nics, gbps = b.nics_per_node, b.gbps_per_nic
    if kind in PROVIDER_KINDS or (b.network is not None and b.network.switch is None and kind != "roce"):
        return Fabric(purpose="compute", kind="provider", topology=msg("net_topology_provider"), ports_per_node=nics,
                      gbps_per_port=gbps, switch=None, radix=None, oversubscription=1.0, tiers=0, leaves=0,
                      spines=0, cores=0, nodes_per_su=None, links={"node_leaf": b.nodes * nics}, parts=[],
                      max_nodes_without_new_leaf=None, source=(b.network.sources[0] if b.network else "convention"),
                      notes=[msg("net_note_provider")])
    switch = pick_switch(b.catalog, kind, gbps, b.network.switch if b.network else None)
    if switch is None:
        return unsized(b, kind, nics, gbps)
    min_rails = rules.value("fabric", "rail_optimised_min_nics")
    zone, o = _job_fabric(b)
    if zone is not None:  # the job's oversubscribed fabric, which the estimate ran on: sized as it is
        return switched_fabric(b.catalog, "compute", kind, b.nodes, nics, gbps, switch, o, "superpod_h100_ra",
                               rail=nics >= min_rails, zone_nodes=zone, zone_gpus=zone * b.per_node)
    return switched_fabric(b.catalog, "compute", kind, b.nodes, nics, gbps, switch,
                           rules.value("fabric", "oversubscription_compute"), "superpod_h100_ra",
                           rail=nics >= min_rails, rail_groups_max=rail_groups_max(b),
                           one_rack=b.nvl72 and b.racks == 1)


def rail_groups_max(b: BuildInput) -> int:
    """Rail-group switches a one-tier compute fabric may take (fabric.yaml rail_groups_max_switches), 0 unless
    every node's NVLink domain holds a GPU on each of its rails (one NIC per GPU on an NVSwitch node, or a
    rack-scale domain), so NCCL PXN can carry cross-rail traffic over NVLink."""
    acc = b.accelerator
    domain = int(acc.scaleup_domain) if b.nvl72 else b.per_node
    if acc.scaleup_tech != "nvlink" or b.nics_per_node < 2 or domain < b.nics_per_node:
        return 0
    return int(rules.value("fabric", "rail_groups_max_switches"))


def _job_fabric(b: BuildInput) -> tuple[int | None, float]:
    """(nodes per zone, oversubscription) of the job's hardware.fabric, or (None, 1.0) for a non-blocking one."""
    zone, o = int(getattr(b.system, "zone_gpus", 0) or 0), float(getattr(b.system, "oversubscription", 1.0))
    if zone <= 0 or o <= 1.0 or zone >= b.gpus:
        return None, 1.0
    return max(1, zone // max(b.per_node, 1)), o


def unsized(b: BuildInput, kind: str, nics: int, gbps: float) -> Fabric:
    """A fabric the catalog has no switch for: named, with its port count, and no switch counts invented."""
    speeds = sorted({g for s in b.catalog.switches.values() for g in s.radix_by_gbps})
    return Fabric(purpose="compute", kind=kind, topology=msg("net_topology_unsized"), ports_per_node=nics, gbps_per_port=gbps,
                  switch=None, radix=None, oversubscription=1.0, tiers=0, leaves=0, spines=0, cores=0,
                  nodes_per_su=None, links={"node_leaf": b.nodes * nics}, parts=[], max_nodes_without_new_leaf=None,
                  source="convention", notes=[msg("net_note_unsized", kind=kind, gbps=f"{gbps:g}", speeds=str(speeds))])


def nvlink_domain(b: BuildInput) -> NvlinkDomain:
    acc = b.accelerator
    domain = int(acc.scaleup_domain) if b.nvl72 else b.per_node
    domains = b.racks if b.nvl72 else -(-b.gpus // domain)
    trays = rules.value("fabric", "nvl72_switch_trays") * domains if b.nvl72 else 0
    placed = job_domain_gpus(domain_job_gpus(acc, b.per_node), b.per_node, b.gpus) if b.nvl72 else None
    return NvlinkDomain(tech=acc.scaleup_tech, gpus_per_domain=min(domain, b.gpus), domains=domains,
                        gb_s_per_gpu_bidir=float(acc.scaleup_bw_bidir_gb_s), nvls=bool(acc.nvls),
                        nvlink_switch_trays=trays, source=", ".join(acc.sources),
                        host_staged_gb_s_per_dir=acc.host_staged_gb_s_per_dir,
                        domain_size_gpus=domain if b.nvl72 else None, job_gpus_per_domain=placed,
                        job_gpus_by_domain=list(b.rack_shares) if b.nvl72 else None)


def network_block(b: BuildInput, storage_servers: int = 0, pdus: int = 0) -> NetworkBlock:
    """The network block; `storage_servers` and `pdus` add their ports to the storage and OOB fabrics."""
    from trainsizer.plan.buildout.collective import allreduce
    from trainsizer.plan.buildout.mgmt import mgmt_fabrics

    compute = compute_fabric(b)
    storage, inband, oob = mgmt_fabrics(b, compute, storage_servers, pdus)
    kind = b.network_kind
    notes = []
    if compute is not None and compute.tiers > 1 and compute.nodes_per_su:
        notes.append(msg("net_note_scalable_units", nodes=compute.nodes_per_su))
    sharp = None
    if compute is not None and compute.switch:
        sharp = b.catalog.switch(compute.switch).sharp
    sm = None
    if kind == "ib" and compute is not None:
        groups = compute.topology_msg is not None and compute.topology_msg.key == "net_topology_rail_groups"
        sm = (msg("net_sm_rail_groups", switches=compute.leaves) if groups else msg("net_sm_embedded")
              if compute.leaves + compute.spines < rules.value("fabric", "subnet_manager_min_switches")
              else msg("net_sm_ufm"))
    lossless = None
    if kind == "roce":
        r = rules.rule("fabric", "roce_lossless")
        lossless = cited(r.value, msg("net_roce_lossless"), r.source)
    return NetworkBlock(**summary(b, compute, storage, inband or oob), compute=compute, storage=storage,
                        inband=inband, oob=oob, nvlink=nvlink_domain(b),
                        allreduce=allreduce(b), gpudirect_rdma=kind in ("ib", "roce", "efa"), sharp=sharp,
                        lossless=lossless, subnet_manager=sm, notes=notes)


def summary(b: BuildInput, compute: Fabric | None, storage: Fabric | None, mgmt: Fabric | None) -> dict[str, Any]:
    """The compute fabric in the terms diagrams use: switch tiers, link groups, the other fabrics by name."""
    switches, links = [], []
    if compute is not None and compute.switch is not None:
        for tier, n in (("leaf", compute.leaves), ("spine", compute.spines), ("core", compute.cores)):
            if n:
                switches.append(SwitchTier(tier=tier, count=n, gbps=compute.gbps_per_port, radix=compute.radix,
                                           model=compute.switch))
        for a, z, key in (("node", "leaf", "node_leaf"), ("leaf", "spine", "leaf_spine"), ("spine", "core", "spine_core")):
            if compute.links.get(key):
                links.append(LinkGroup(from_=a, to=z, count=compute.links[key], gbps=compute.gbps_per_port))

    def named(f: Fabric | None) -> dict[str, Any] | None:
        if f is None:
            return None
        out = {"kind": f.kind, "tier": f.purpose, "name": f.switch or f.topology,
               "gbps_per_node": f.ports_per_node * f.gbps_per_port}  # Gb/s, as named (never GB/s)
        if f.switch is None and f.topology_msg is not None:  # a sentence: kept as its message (plan.texts)
            out["name_msg"] = f.topology_msg.model_dump()
        return out

    rail = compute is not None and compute.topology_msg is not None and \
        compute.topology_msg.key in ("net_topology_rail_fat_tree", "net_topology_rail_groups")
    return {"topology": compute.topology if compute is not None else msg("net_topology_none"),
            "topology_msg": compute.topology_msg if compute is not None else None,
            "nics_per_node": b.nics_per_node, "gbps_per_nic": b.gbps_per_nic,
            "rails": b.nics_per_node if rail else None,
            "nvlink_domain_gpus": min(int(b.accelerator.scaleup_domain) if b.nvl72 else b.per_node, b.gpus),
            "switches": switches, "links": links, "storage_fabric": named(storage), "management_fabric": named(mgmt)}
