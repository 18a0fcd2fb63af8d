"""The `facility` block: power per node and rack, racks at the site's kW budget, air vs liquid, PDUs and UPS,
floor space, and a year of energy and its cost.

Nodes per rack = min(floor(rack kW / node max kW), floor(usable U / node U)); NVL72 racks are the unit itself.
Network and storage racks hold the switches and appliances by rack units. UPS modules: ceil(IT kW / module) + 1
(N+1). Energy per year = typical IT kW x 8,760 h x PUE (catalog pue), priced at the catalog electricity range.
"""

from __future__ import annotations

from typing import Literal

from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block, Cited, ceil_div, cited, from_rule
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.network import NetworkBlock
from trainsizer.plan.texts import MessageRef


class FacilityBlock(Block):
    # what node_kw_* are the power of: one node, or (NVL72) the whole rack system, the unit its trays come in
    power_unit: Literal["node", "rack"] = "node"
    node_kw_max: float
    node_kw_typical: Cited
    rack_kw_budget: Cited
    nodes_per_rack: int
    node_racks: int
    network_racks: int
    storage_racks: int
    racks: int
    rack_kw_max: float
    network_kw: float
    storage_kw_note: str
    storage_kw_note_msg: MessageRef | None = None
    it_kw_max: float
    it_kw_typical: float
    cooling: Cited
    over_rack_budget: bool
    pdus: int
    pdu_kw_each: float
    ups_redundancy: Cited
    ups_modules: int
    ups_kva: float
    floor_m2: Cited
    pue: float
    annual_kwh: float
    annual_energy_cost: dict[str, float]
    currency: str
    electricity_source: str
    notes: list[str]
    notes_msg: list[MessageRef | None] | None = None


def node_kw_max(b: BuildInput) -> float:
    if b.server is not None:
        return b.server.power_max_w / 1000.0
    return b.per_node * b.accelerator.tdp_w / rules.value("facility", "gpu_share_of_server_power") / 1000.0


def rack_budget(b: BuildInput) -> Cited:
    c = b.job.constraints
    if c.rack_kw is not None:
        return cited(c.rack_kw, msg("facility_rule_site_rack_kw"), "job")
    if b.nvl72 or c.cooling == "liquid":
        fig = b.catalog.facility.rack_kw_liquid
        return cited(fig.high, msg("facility_rule_liquid_rack"), ", ".join(fig.sources))
    return from_rule(rules.rule("facility", "default_rack_kw_air"))


def network_power_kw(b: BuildInput, net: NetworkBlock) -> tuple[float, float]:
    """(kW, rack units) of every switch and optical transceiver of the plan's fabrics."""
    power = rules.value("facility", "switch_power_w")
    default_u = rules.value("facility", "switch_rack_units_default")
    watts = units = 0.0
    for fab in (net.compute, net.storage, net.inband, net.oob):
        if fab is None or fab.switch is None:
            continue
        sw = b.catalog.switch(fab.switch)
        n = fab.leaves + fab.spines + fab.cores
        watts += n * power.get(sw.id, 0.0)
        units += n * (sw.rack_units or default_u)
        for line in fab.parts:
            if line.part:
                watts += line.quantity * (b.catalog.part(line.part).power_w or 0.0)
    return watts / 1000.0, units


# The cooling a rack needs (the block's `cooling.value`, compared by the risks) -> its catalogue message.
COOLING_KEYS = {"liquid": "cooling_liquid", "liquid or rear-door heat exchanger": "cooling_rear_door",
                "air with hot/cold aisle containment": "cooling_containment", "air": "cooling_air"}


def _cooling(b: BuildInput, rack_kw: float) -> Cited:
    guide = rules.rule("facility", "air_rack_kw_limit_guides")
    vendor = rules.rule("facility", "air_rack_kw_limit_vendor")
    if b.server is not None and b.server.cooling_kind == "liquid":
        return cited("liquid", msg("cooling_rule_server", cooling=msg("server_cooling_liquid")), "servers_yaml")
    if b.job.constraints.cooling == "liquid":  # the site's choice, not the server's: say so
        return cited("liquid", msg("cooling_rule_job"), "job")
    kw = f"{rack_kw:.1f}"
    if rack_kw > vendor.value:
        return cited("liquid or rear-door heat exchanger", msg("cooling_rule_vendor", rack_kw=kw, vendor=vendor.value),
                     vendor.source)
    if rack_kw > guide.value:
        return cited("air with hot/cold aisle containment", msg("cooling_rule_containment", rack_kw=kw,
                                                                guide=guide.value, vendor=vendor.value), guide.source)
    return cited("air", msg("cooling_rule_air", rack_kw=kw, guide=guide.value), guide.source)


def facility_block(b: BuildInput, net: NetworkBlock, storage_appliances: int, storage_u: float) -> FacilityBlock:
    node_kw = node_kw_max(b)
    frac = rules.rule("facility", "typical_draw_fraction")
    budget = rack_budget(b)
    usable_u = rules.value("facility", "rack_usable_u")
    notes: list[str] = []
    if b.nvl72:  # the rack is the unit: its power shelves are the rack's max power; nodes are its trays
        domain = int(b.accelerator.scaleup_domain)
        per_rack, node_racks, rack_kw = max(1, domain // b.per_node), ceil_div(b.gpus, domain), node_kw
        over = node_kw > budget.value
        units_nodes = node_racks
    else:
        node_u = b.server.rack_units if b.server is not None else 8
        per_rack = max(0, min(int(budget.value // node_kw), int(usable_u // node_u)))
        over = per_rack == 0
        if over:
            per_rack = 1
            notes.append(msg("facility_note_node_over_budget", node_kw=f"{node_kw:.1f}", budget=f"{budget.value:g}"))
        node_racks = ceil_div(b.nodes, per_rack)
        rack_kw = min(b.nodes, per_rack) * node_kw
        units_nodes = b.nodes
    net_kw, net_u = network_power_kw(b, net)
    net_racks = ceil_div(net_u, usable_u) if net_u else 0
    storage_racks = ceil_div(storage_u, usable_u) if storage_u else 0
    racks = node_racks + net_racks + storage_racks
    it_max = units_nodes * node_kw + net_kw
    it_typ = units_nodes * node_kw * frac.value + net_kw
    return _assemble(b, dict(node_kw=node_kw, frac=frac, budget=budget, per_rack=per_rack, node_racks=node_racks,
                             net_racks=net_racks, storage_racks=storage_racks, racks=racks, rack_kw=rack_kw,
                             net_kw=net_kw, it_max=it_max, it_typ=it_typ, over=over, notes=notes,
                             unit="rack" if b.nvl72 else "node"))


def _assemble(b: BuildInput, v: dict) -> FacilityBlock:
    racks, it_max, it_typ = v["racks"], v["it_max"], v["it_typ"]
    module = rules.value("facility", "ups_module_kw")
    pf = rules.value("facility", "power_factor")
    pue_fig = b.catalog.facility.pue
    kwh = it_typ * rules.value("facility", "hours_per_year") * pue_fig.mid
    price = b.catalog.facility.electricity_per_kwh(b.currency)
    m2 = rules.rule("facility", "floor_m2_per_rack")
    return FacilityBlock(
        power_unit=v["unit"], node_kw_max=v["node_kw"], node_kw_typical=cited(v["node_kw"] * v["frac"].value, v["frac"].note,
                                                        v["frac"].source),
        rack_kw_budget=v["budget"], nodes_per_rack=v["per_rack"], node_racks=v["node_racks"],
        network_racks=v["net_racks"], storage_racks=v["storage_racks"], racks=racks, rack_kw_max=v["rack_kw"],
        network_kw=v["net_kw"], storage_kw_note=msg("facility_storage_kw_unknown"),
        it_kw_max=it_max, it_kw_typical=it_typ, cooling=_cooling(b, v["rack_kw"]), over_rack_budget=v["over"],
        pdus=racks * rules.value("facility", "pdus_per_rack"), pdu_kw_each=max(v["rack_kw"], v["budget"].value),
        ups_redundancy=from_rule(rules.rule("facility", "ups_redundancy")),
        ups_modules=ceil_div(it_max, module) + 1, ups_kva=it_max / pf,
        floor_m2=cited(racks * m2.value, msg("facility_floor_rule", racks=racks, m2=m2.value, note=m2.note), m2.source),
        pue=pue_fig.mid, annual_kwh=kwh,
        annual_energy_cost={"low": kwh * price.low, "typical": kwh * price.mid, "high": kwh * price.high},
        currency=b.currency, electricity_source=", ".join(price.sources), notes=v["notes"])
