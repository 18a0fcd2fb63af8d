"""Fat-tree sizing by switch radix: 1 tier (one switch), 2 tiers (leaf/spine) or 3 tiers (leaf/spine/core).

Folded-Clos / fat-tree construction (Al-Fares et al. 2008; NVIDIA DGX SuperPOD RA-11333 s"Network Fabrics"):
- a leaf with radix R and down:up oversubscription o gives d = floor(R o / (1 + o)) ports to endpoints;
- rail-optimised: NIC k of every node of a scalable unit (SU) goes to leaf k, so there are `rails` leaves per SU
  of d nodes (RA-11333: 8 leaves per 32-node SU at R = 64);
- every leaf has u = ceil(D / o) uplinks (D = endpoints on the busiest leaf); 2 tiers while the leaves fit the
  spine radix (L <= R): S = ceil(L u / R) spines, each leaf reaching every spine (S <= u);
- 3 tiers: pods of R/2 leaves and u spines (spines R/2 down, R/2 up), C = ceil(S R/2 / R) core switches;
  at most R pods (R^3/4 endpoints at o = 1).
Checked against RA-11333 Table 3 (1,024 / 2,048 / 4,096 GPUs -> 32/16, 64/32, 128/128/64 leaf/spine/core).
- rail groups (one tier on a few switches): when every node's NVLink domain holds a GPU on every rail, NCCL's PXN
  (NCCL env docs, NCCL_PXN_DISABLE / NCCL_P2P_PXN_LEVEL) moves cross-rail data over NVLink to the GPU on the
  destination's rail, so the fabric needs only same-rail paths ("rail-only" network, Wang et al. 2023,
  arXiv:2307.12169): each rail whole on one switch, floor(R / nodes) rails per switch, no spine -- taken while
  it needs at most `max_groups` switches (fabric.yaml rail_groups_max_switches); above, leaf/spine as RA-11333.
  The estimate does not charge PXN's NVLink hop on cross-node all-to-all (docs/known-gaps.md 27).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.plan.buildout.common import ceil_div


@dataclass(frozen=True)
class FatTree:
    tiers: int
    radix: int
    oversubscription: float
    rail_optimised: bool
    nodes: int
    rails: int  # ports per node on this fabric
    leaves: int
    spines: int
    cores: int
    leaf_down_ports: int  # d: ports a leaf may give to endpoints
    leaf_down_used: int  # D: endpoints on the busiest leaf
    leaf_up: int  # u: uplinks per leaf
    spine_down: int  # ports per spine towards leaves (used)
    spine_up: int  # ports per spine towards cores (used)
    pods: int
    nodes_per_su: int  # nodes one set of rail leaves serves
    oversubscribed_at: str = "leaf"  # the tier whose uplinks carry `oversubscription`: leaf, or spine (`size_zoned_tree`)

    @property
    def endpoints(self) -> int:
        return self.nodes * self.rails

    @property
    def switches(self) -> int:
        return self.leaves + self.spines + self.cores

    @property
    def node_leaf_links(self) -> int:
        return self.endpoints

    @property
    def leaf_spine_links(self) -> int:
        return self.leaves * self.leaf_up if self.tiers >= 2 else 0

    @property
    def spine_core_links(self) -> int:
        return self.spines * self.spine_up if self.tiers == 3 else 0

    @property
    def rail_groups(self) -> bool:
        """One tier over several switches, each holding whole rails (no switch-to-switch links)."""
        return self.tiers == 1 and self.leaves > 1

    def max_nodes_same_switches(self) -> int:
        """Nodes this fabric takes before another leaf (or SU) is needed: filling the leaves already bought."""
        if self.tiers == 1:
            return self.radix // max(1, ceil_div(self.rails, self.leaves))
        per_rail_leaves = self.leaves // self.rails if self.rail_optimised else self.leaves
        return per_rail_leaves * self.leaf_down_ports if self.rail_optimised else \
            self.leaves * self.leaf_down_ports // self.rails


def leaf_down_ports(radix: int, oversubscription: float) -> int:
    """Ports of a leaf facing endpoints at down:up = o (R/2 for a non-blocking leaf)."""
    return int(math.floor(radix * oversubscription / (1.0 + oversubscription) + 1e-9))


def rail_group_switches(nodes: int, rails: int, radix: int) -> int | None:
    """Switches of a one-tier rail-group fabric (each rail whole on one switch, floor(R / nodes) rails a switch,
    spread evenly), or None when one rail's nodes exceed a switch."""
    per_switch = radix // nodes if nodes else 0
    return ceil_div(rails, per_switch) if per_switch >= 1 else None


def size_fat_tree(nodes: int, rails: int, radix: int, oversubscription: float = 1.0,
                  rail_optimised: bool | None = None, leaf_nodes: int | None = None,
                  rail_groups_max: int = 0) -> FatTree:
    """The smallest fat tree (fewest tiers, then fewest switches) for `nodes` x `rails` endpoint ports
    (`leaf_nodes`: at most this many nodes under one leaf, or one set of rail leaves: whole zones, `size_zoned_tree`;
    `rail_groups_max`: one tier on up to this many rail-group switches when NVLink carries cross-rail traffic,
    0 = never)."""
    if nodes < 1 or rails < 1:
        raise SpecError("fabric", msg("fab_no_ports"), value=(nodes, rails))
    if radix < 4:
        raise SpecError("fabric", msg("fab_radix_small"), value=radix, allowed=">= 4")
    if oversubscription < 1.0:
        raise SpecError("fabric.oversubscription", msg("fab_oversubscription_below_one"), value=oversubscription,
                        allowed=">= 1.0")
    endpoints = nodes * rails
    rail = rails >= 2 if rail_optimised is None else rail_optimised
    if endpoints <= radix:
        return FatTree(1, radix, oversubscription, False, nodes, rails, 1, 0, 0, radix, endpoints, 0, 0, 0, 0,
                       radix // rails)
    groups = rail_group_switches(nodes, rails, radix) if rail and rails >= 2 and leaf_nodes is None else None
    if groups is not None and groups <= rail_groups_max:
        per_switch = ceil_div(rails, groups)  # rails on the busiest switch
        return FatTree(1, radix, oversubscription, True, nodes, rails, groups, 0, 0, radix, nodes * per_switch,
                       0, 0, 0, 0, radix // per_switch)
    d = leaf_down_ports(radix, oversubscription)
    if leaf_nodes is not None:
        d = min(d, leaf_nodes if rail else leaf_nodes * rails)
    if rail:
        per_rail = ceil_div(nodes, d)
        leaves = rails * per_rail
        busiest = ceil_div(nodes, per_rail)
        nodes_per_su = d
    else:
        leaves = ceil_div(endpoints, d)
        busiest = ceil_div(endpoints, leaves)
        nodes_per_su = d // rails
    up = ceil_div(busiest, oversubscription) if oversubscription != 1.0 else busiest
    if leaves <= radix:
        spines = ceil_div(leaves * up, radix)
        return FatTree(2, radix, oversubscription, rail, nodes, rails, leaves, spines, 0, d, busiest, up,
                       ceil_div(leaves * up, spines), 0, 1, nodes_per_su)
    half = radix // 2
    pods = ceil_div(leaves, half)
    if pods > radix:
        raise SpecError("fabric", msg("fab_over_three_tiers", endpoints=endpoints, radix=radix,
                                      limit=radix * half * d), value=nodes,
                        allowed=msg("fab_allowed_nodes", nodes=radix * half * d // rails))
    spines = pods * up
    spine_down = ceil_div(leaves, pods)
    cores = ceil_div(spines * spine_down, radix)
    return FatTree(3, radix, oversubscription, rail, nodes, rails, leaves, spines, cores, d, busiest, up,
                   spine_down, spine_down, pods, nodes_per_su)


def size_zoned_tree(nodes: int, rails: int, radix: int, zone_nodes: int, oversubscription: float,
                    rail_optimised: bool | None = None) -> FatTree:
    """The fat tree of a job's oversubscribed fabric (hardware.fabric: full bisection inside zones of `zone_nodes`
    nodes, o:1 above them, as Llama 3's 3,072-GPU pods under a 1:7 aggregation layer, Llama 3 paper s3.3.1): the
    lowest tier whose switches serve whole zones carries the oversubscription --
    - the leaves, when a zone fits under one leaf (one set of rail leaves): each leaf takes up to R o / (1 + o)
      nodes' ports, whole zones only, and ceil(D / o) uplinks (fewer leaves, spines and leaf-spine cables);
    - the spines, when a zone fits in a pod of a 3-tier tree (R/2 leaves): leaves and spines as non-blocking,
      each spine ceil(down / o) uplinks, so fewer cores and spine-core cables;
    - none (the non-blocking tree, `oversubscribed_at` "none") when zones span more than a pod or the tree is one
      switch: no tier has whole zones below it to thin (the estimate still charges o:1 between zones)."""
    full = size_fat_tree(nodes, rails, radix, 1.0, rail_optimised)
    o = oversubscription
    if o <= 1.0 or zone_nodes >= nodes or full.tiers == 1:
        return replace(full, oversubscribed_at="none")
    rail = full.rail_optimised
    under_leaf = leaf_down_ports(radix, o) // (1 if rail else rails)  # nodes under one leaf (set) at down:up o
    if zone_nodes <= under_leaf:
        try:
            thin = size_fat_tree(nodes, rails, radix, o, rail, leaf_nodes=under_leaf // zone_nodes * zone_nodes)
        except SpecError:  # whole zones per leaf leave ports idle: more leaves than three tiers hold
            thin = full
        # ... and may need more leaves than the non-blocking tree: keep that one where it is no larger
        if thin is not full and thin.switches <= full.switches and \
                thin.leaf_spine_links + thin.spine_core_links <= full.leaf_spine_links + full.spine_core_links:
            return thin
    half = radix // 2
    pod_nodes = (half // rails) * full.nodes_per_su if rail else half * (full.leaf_down_ports // rails)
    if full.tiers == 3 and zone_nodes <= pod_nodes:
        spine_up = ceil_div(full.spine_down, o)
        return replace(full, oversubscription=o, spine_up=spine_up, cores=ceil_div(full.spines * spine_up, radix),
                       oversubscribed_at="spine")
    return replace(full, oversubscribed_at="none")


def port_violations(t: FatTree) -> list[str]:
    """The topology's port equations; an empty list means the tree is wired consistently."""
    bad = []
    if t.leaves * (t.leaf_down_used if t.tiers > 1 else t.radix) < t.endpoints:
        bad.append("endpoint ports exceed leaf down ports")
    if t.tiers == 1:
        if t.leaves == 1:
            return bad + (["single switch over its radix"] if t.endpoints > t.radix else [])
        # rail groups: every rail whole on one switch, the busiest switch within its radix
        if t.leaf_down_used > t.radix or t.leaf_down_used != t.nodes * ceil_div(t.rails, t.leaves):
            bad.append("a rail-group switch over its radix or a rail split across switches")
        if ceil_div(t.rails, ceil_div(t.rails, t.leaves)) != t.leaves:
            bad.append("rail groups on more switches than the rails need")
        return bad
    if t.leaf_down_used > t.leaf_down_ports or t.leaf_down_used + t.leaf_up > t.radix:
        bad.append("leaf uses more ports than it has")
    if t.leaf_up * t.oversubscription + 1e-9 < t.leaf_down_used:
        bad.append("leaf uplinks below the oversubscription")
    if t.tiers == 2:
        if t.spines * t.radix < t.leaves * t.leaf_up:
            bad.append("spine ports fewer than leaf uplinks")
        if t.spines > t.leaf_up:
            bad.append("a leaf cannot reach every spine")
        if t.spines > 1 and (t.spines - 1) * t.radix >= t.leaves * t.leaf_up:
            bad.append("one spine too many")
    else:
        if t.spine_down + t.spine_up > t.radix or t.spine_down > t.radix // 2:
            bad.append("spine uses more ports than it has")
        if t.pods * t.spine_down < t.leaves:
            bad.append("pods hold fewer leaves than there are")
        if t.cores * t.radix < t.spines * t.spine_up:
            bad.append("core ports fewer than spine uplinks")
        if t.spines != t.pods * t.leaf_up:
            bad.append("each leaf needs one link to every spine of its pod")
    return bad
