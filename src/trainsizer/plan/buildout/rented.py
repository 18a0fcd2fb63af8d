"""What a rented cluster's network and storage blocks show: the provider's fabrics and file system, described by
what to ask for (kind, ports and line rate per node, one non-blocking placement, the read and write bandwidth),
with no switch, cable, optic or storage appliance to buy.

The fabrics and appliances sized as if owned stay behind the plan's buy-vs-rent comparison (the BOM's capex and
the facility's power if owned) and the node layout files handed to the provider (the software block); the BOM of
a rented plan lists what is rented (`bom_lines.rent_lines`)."""

from __future__ import annotations

from trainsizer.messages import msg
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.network import Fabric, NetworkBlock, summary
from trainsizer.plan.buildout.storage import StorageBlock


def _rebuilt(model, **updates):
    """`model` with `updates`, validated again so a text given as a catalogue message gets its `_msg` sibling
    (model_copy would keep the old sibling, or none)."""
    data = {k: getattr(model, k) for k in type(model).model_fields}
    data.update({f"{k}_msg": None for k in updates if f"{k}_msg" in data})
    data.update(updates)
    return type(model)(**data)


def _kind_word(kind: str) -> object:
    return msg(f"fabric_kind_{kind}") if kind in ("ib", "roce", "ethernet") else kind


def provided_fabric(b: BuildInput, f: Fabric | None) -> Fabric | None:
    """A sized fabric as the provider's: its ports per node and line rate kept, its switches, links beyond the
    nodes' own ports, cables and optics dropped, and a note with what to ask for and what owning it would take."""
    if f is None or f.kind == "provider":  # a cloud fabric (EFA) is described as the provider's already
        return f
    owned = {"leaves": f.leaves, "spines": f.spines, "cores": f.cores}
    if f.purpose == "compute":
        note = msg("net_note_rented_compute", nodes=b.nodes, kind=_kind_word(f.kind), ports=f.ports_per_node,
                   gbps=f"{f.gbps_per_port:g}", **owned)
    else:
        note = msg("net_note_rented_other", **owned)
    return _rebuilt(f, topology=msg("net_topology_rented"), switch=None, radix=None, tiers=None, leaves=None,
                    spines=None, cores=None, nodes_per_su=None, links={}, parts=[], max_nodes_without_new_leaf=None,
                    notes=[note], zone_nodes=None, oversubscribed_at=None, provided=True)


def rented_network(b: BuildInput, net: NetworkBlock) -> NetworkBlock:
    """The network block of a rented cluster: every fabric the provider's (`provided_fabric`), the NVLink domain
    and the all-reduce the strategy needs unchanged, SHARP and the subnet manager the provider's to state."""
    compute, storage, inband, oob = (provided_fabric(b, f) for f in (net.compute, net.storage, net.inband, net.oob))
    rented = summary(b, compute, storage, inband or oob)
    if compute is None:
        rented.update(topology=net.topology, topology_msg=net.topology_msg)
    notes = [msg("net_note_rented")] if compute is not None else []
    return _rebuilt(net, **rented, compute=compute, storage=storage, inband=inband, oob=oob, sharp=None,
                    subnet_manager=msg("net_sm_provider") if net.subnet_manager else None, notes=notes)


def rented_storage(st: StorageBlock) -> StorageBlock:
    """The storage block of a rented cluster: the tier, capacity and bandwidth to ask the provider for; no
    appliance or file server to buy (a rented single node keeps its own NVMe and needs no file server)."""
    if st.appliance is None:
        return st
    note = msg("storage_note_rented", tb=f"{st.capacity_tb.value:g}", read=f"{st.loader_read_gb_s.value:g}",
               write=f"{st.write_gb_s_sync.value:.3g}")
    return _rebuilt(st, appliance=None, appliances=0, notes=[note])
