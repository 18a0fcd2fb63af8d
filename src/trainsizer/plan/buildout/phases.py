"""The `phases` block: roll-out with planning durations from phases.yaml, by how the cluster is had: bought
(validate, design, order, deploy, bring-up, acceptance, production), a bought workstation (validate, order,
set up, acceptance, production: no rack, fabric or scheduler) or rented (validate, reserve, onboard,
acceptance of the rented nodes, production: nothing to order, rack or cable); and the scale-out path (what
doubling needs, what the fabric takes without re-cabling; for a rented cluster, more nodes from the provider)."""

from __future__ import annotations

from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block
from trainsizer.plan.buildout.fabric import size_fat_tree, size_zoned_tree
from trainsizer.plan.buildout.inputs import BuildInput, acquisition
from trainsizer.plan.buildout.network import NetworkBlock, rail_groups_max
from trainsizer.plan.texts import MessageRef


class Phase(Block):
    id: str
    weeks_low: float
    weeks_high: float
    what: str
    what_msg: MessageRef | None = None
    source: str


class ScaleOut(Block):
    nodes_now: int
    nodes_without_new_leaf: int | None
    double_nodes: int
    double_leaves: int | None
    double_spines: int | None
    double_cores: int | None
    double_tiers: int | None
    recabling: str
    recabling_msg: MessageRef | None = None


class PhasesBlock(Block):
    acquisition: str = "buy"  # "rent" | "buy": which roll-out (`acquisition`)
    rollout: list[Phase]
    total_weeks: tuple[float, float]
    burn_in_hours: float
    scale_out: ScaleOut


def phases_block(b: BuildInput, net: NetworkBlock) -> PhasesBlock:
    data = rules.raw("phases")
    how = acquisition(b)
    from trainsizer.plan.buildout.facility import site_scale

    which = ("rent_phases" if how == "rent" else
             "workstation_phases" if site_scale(b) == "workstation" else "phases")
    roll = [Phase(id=p["id"], weeks_low=p["weeks"][0], weeks_high=p["weeks"][1], what=msg(f"phase_what_{p['id']}"),
                  source=p["source"]) for p in data[which]]
    total = (sum(p.weeks_low for p in roll), sum(p.weeks_high for p in roll))
    return PhasesBlock(acquisition=how, rollout=roll, total_weeks=total,
                       burn_in_hours=rules.value("phases", "burn_in_hours"), scale_out=scale_out(b, net, how == "rent"))


def scale_out(b: BuildInput, net: NetworkBlock, rented: bool = False) -> ScaleOut:
    fab = net.compute
    double = b.nodes * 2
    if rented:  # the provider's fabric: no switches of one's own to add or re-cable
        return ScaleOut(nodes_now=b.nodes, nodes_without_new_leaf=None, double_nodes=double, double_leaves=None,
                        double_spines=None, double_cores=None, double_tiers=None, recabling=msg("phase_scale_rent"))
    if fab is None or fab.radix is None:
        return ScaleOut(nodes_now=b.nodes, nodes_without_new_leaf=None, double_nodes=double, double_leaves=None,
                        double_spines=None, double_cores=None, double_tiers=None,
                        recabling=msg("phase_scale_none") if fab is None else msg("phase_scale_provider"))
    rail = bool(fab.topology_msg and fab.topology_msg.key in ("net_topology_rail_fat_tree", "net_topology_rail_groups"))
    if fab.tiers == 1 and fab.leaves == 1:  # one switch has no rails; the grown fabric has them as compute_fabric sizes
        rail = fab.ports_per_node >= rules.value("fabric", "rail_optimised_min_nics")
    if fab.zone_nodes is not None:  # the job's oversubscribed fabric grows as it was sized (fabric.size_zoned_tree)
        t = size_zoned_tree(double, fab.ports_per_node, fab.radix, fab.zone_nodes, fab.oversubscription,
                            rail_optimised=rail)
    else:
        t = size_fat_tree(double, fab.ports_per_node, fab.radix, fab.oversubscription, rail_optimised=rail,
                          rail_groups_max=rail_groups_max(b))
    if t.tiers > fab.tiers:
        how = msg("phase_scale_tiers", now=fab.tiers, then=t.tiers)
    elif t.rail_groups and t.leaves > fab.leaves:  # whole rails move to the new switches: their node cables move
        how = msg("phase_scale_rail_groups", added=t.leaves - fab.leaves, switches=t.leaves)
    elif t.spines > fab.spines or t.leaves > fab.leaves:
        how = msg("phase_scale_add", leaves=t.leaves - fab.leaves, spines=t.spines - fab.spines)
    else:
        how = msg("phase_scale_fits")
    return ScaleOut(nodes_now=b.nodes, nodes_without_new_leaf=fab.max_nodes_without_new_leaf, double_nodes=double,
                    double_leaves=t.leaves, double_spines=t.spines, double_cores=t.cores, double_tiers=t.tiers,
                    recabling=how)
