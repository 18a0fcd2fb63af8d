"""Storage, in-band and out-of-band management fabrics (DGX SuperPOD RA-11333 four-fabric design; the
enterprise RA's converged storage + in-band Ethernet for clusters below one scalable unit, and the DGX SuperPOD
GB200 RA's converged Storage and In-band Ethernet Fabric for NVL72 racks at any size)."""

from __future__ import annotations

from typing import Any

from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import ceil_div
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.links import link_parts
from trainsizer.plan.buildout.network import Fabric, PartLine, pick_switch, switched_fabric


def storage_ports(b: BuildInput) -> tuple[int, float]:
    """Storage NICs per node and their speed: the server's, else the rule's. A rack-scale server record (GB200
    NVL72: 36 BlueField-3 for 18 trays) is shared out over its nodes (trays of `per_node` GPUs: 2 per tray)."""
    nics = b.server.storage_nics if b.server is not None else None
    if nics is not None and nics.count > 0:
        return max(1, round(nics.count * b.per_node / b.server.gpus)), float(nics.gbps)
    return int(rules.value("fabric", "storage_nics_per_node")), float(rules.value("fabric", "storage_nic_gbps"))


def _switch_count(f: Fabric | None) -> int:
    return 0 if f is None else f.leaves + f.spines + f.cores


def mgmt_fabrics(b: BuildInput, compute: Fabric | None, storage_servers: int,
                 pdus: int) -> tuple[Fabric | None, Fabric | None, Fabric | None]:
    nodes = b.nodes
    ports, gbps = storage_ports(b)
    if nodes <= 1 and not b.nvl72:
        storage = inband = None
    elif nodes < rules.value("fabric", "separate_storage_fabric_min_nodes") or b.nvl72:
        # GB200 NVL72 at any size: storage and in-band share one Ethernet fabric (DGX SuperPOD GB200 RA, "Storage
        # and In-band Ethernet Fabric"; its trays' BlueField-3 ports are Ethernet)
        switch = pick_switch(b.catalog, "ethernet", gbps)
        storage = switched_fabric(b.catalog, "converged", "ethernet", nodes, ports, gbps, switch, 1.0,
                                  "superpod_gb200_ra" if b.nvl72 else "nv_enterprise_ra",
                                  extra_ports=storage_servers * ports, rail=False,
                                  notes=(msg("net_note_converged_gb200" if b.nvl72 else "net_note_converged"),))
        inband = None
    else:
        kind = "ib" if b.network_kind == "ib" else "ethernet"
        preferred = compute.switch if compute is not None and kind == compute.kind else None
        switch = pick_switch(b.catalog, kind, gbps, preferred)
        storage = switched_fabric(b.catalog, "storage", kind, nodes, ports, gbps, switch,
                                  rules.value("fabric", "oversubscription_storage"), "superpod_h100_ra",
                                  extra_ports=storage_servers * ports, rail=False)
        ib_ports, ib_gbps = rules.value("fabric", "inband_nics_per_node"), rules.value("fabric", "inband_gbps")
        inband = switched_fabric(b.catalog, "inband", "ethernet", nodes, ib_ports, ib_gbps,
                                 b.catalog.switch(rules.value("fabric", "inband_switch")), 1.0,
                                 "superpod_h100_ra", rail=False)
    if storage is None:  # one node: its BMC joins the site's existing management network
        return None, None, None
    switches = _switch_count(compute) + _switch_count(storage) + _switch_count(inband)
    return storage, inband, oob_fabric(b.catalog, nodes + switches + storage_servers + pdus)


def oob_fabric(catalog: Any, ports: int) -> Fabric:
    """1 GbE out-of-band: one port per BMC, switch, storage server and PDU; leaf switches with 100G uplinks."""
    switch = catalog.switch(rules.value("fabric", "oob_switch"))
    gbps = rules.value("fabric", "oob_gbps")
    radix = switch.radix(gbps)
    count = ceil_div(ports, radix)
    up = rules.value("fabric", "oob_uplinks_per_switch") * count
    parts = link_parts(catalog, ports, gbps, rules.value("fabric", "distance_node_leaf_m"), "oob", False)
    parts += link_parts(catalog, up, rules.value("fabric", "inband_gbps"),
                        rules.value("fabric", "distance_leaf_spine_m"), "oob uplink", False)
    return Fabric(purpose="oob", kind="ethernet", topology=msg("net_topology_oob"),
                  ports_per_node=1, gbps_per_port=gbps, switch=switch.id, radix=radix, oversubscription=1.0,
                  tiers=1, leaves=count, spines=0, cores=0, nodes_per_su=None,
                  links={"node_leaf": ports, "uplinks": up},
                  parts=[PartLine(part=p.part, quantity=p.quantity, role=p.role, medium=p.medium, note=p.note)
                         for p in parts],  # role and note are catalogue messages: PartLine stores them
                  max_nodes_without_new_leaf=None, source="superpod_h100_ra",
                  notes=[msg("net_note_oob_ports", ports=ports)])
