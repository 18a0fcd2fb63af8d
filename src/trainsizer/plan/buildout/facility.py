"""The `facility` block: power per node and rack, racks at the site's kW budget, air vs liquid, PDUs and UPS,
floor space, and a year of energy and its cost, sized to the site the plan needs (`site_scale`):
- rented: the provider's data centre (no racks, PDUs or UPS of one's own, no rack budget; the power and energy
  figures are what owning the same servers would draw, for the buy-vs-rent comparison: whole NVL72 racks);
- workstation: one node on one ordinary circuit (facility.yaml workstation_max_kw, its budget instead of a rack's):
  no rack, a standalone UPS;
- node: one rack server in a shared rack: its rack position, A + B PDUs, its share of the site UPS;
- cluster: nodes per rack = min(floor(rack kW / node max kW), floor(usable U / node U)) at the budget the job
  states (constraints.rack_kw, constraints.cooling) or the vendor layout (air with containment, facility.yaml
  default_cooling); NVL72 racks are the unit itself. Network and storage racks hold the switches and appliances
  by rack units. UPS: ceil(IT kW / module) + 1 (N+1) modules of the smallest size that carries the load in a few.
Energy per year = typical IT kW x 8,760 h x PUE (catalog pue), priced at the catalog electricity range.
"""

from __future__ import annotations

from typing import Literal

from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block, Cited, ceil_div, cited, from_rule
from trainsizer.plan.buildout.inputs import BuildInput, acquisition
from trainsizer.plan.buildout.network import NetworkBlock
from trainsizer.plan.texts import MessageRef


class FacilityBlock(Block):
    # what node_kw_* are the power of: one node, or (NVL72) the whole rack system, the unit its trays come in
    power_unit: Literal["node", "rack"] = "node"
    site: str = "cluster"  # "rented" | "workstation" | "node" | "cluster" (`site_scale`)
    node_kw_max: float
    node_kw_typical: Cited
    rack_kw_budget: Cited | None  # None where the plan has no rack of its own (rented, workstation)
    circuit_kw_budget: Cited | None = None  # a workstation's one ordinary circuit (facility.yaml workstation_max_kw)
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
    # rear-door heat exchangers (chosen, or one of the two options): the facility water they need per rack
    water_supply_c: Cited | None = None
    water_flow_l_min_per_rack: Cited | None = None
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
    """The node's max power: its server's (the NVL72 rack for a rack-scale part); a job using part of a bigger
    box, or no catalog server, scales the GPUs' TDP by the GPUs' share of a server's power."""
    if b.server is not None and (b.server.gpus == b.per_node or b.nvl72):
        return b.server.power_max_w / 1000.0
    return b.per_node * b.accelerator.tdp_w / rules.value("facility", "gpu_share_of_server_power") / 1000.0


def site_scale(b: BuildInput) -> str:
    """'rented' (the provider's data centre), 'workstation' (one node on one circuit), 'node' (one rack server in
    a shared rack) or 'cluster'."""
    if acquisition(b) == "rent":
        return "rented"
    if b.nodes == 1 and not b.nvl72:
        return "workstation" if node_kw_max(b) <= rules.value("facility", "workstation_max_kw") else "node"
    return "cluster"


def rack_budget(b: BuildInput) -> Cited:
    """kW per rack: the site's (constraints.rack_kw), liquid (NVL72 or constraints.cooling liquid), a room
    without containment (constraints.cooling air), else the vendor layout (air with hot/cold aisle containment)."""
    c = b.job.constraints
    if c.rack_kw is not None:
        return cited(c.rack_kw, msg("facility_rule_site_rack_kw"), "job")
    if c.cooling == "rear-door" and not b.nvl72:
        r = rules.rule("facility", "rear_door_rack_kw")
        return cited(r.value, msg("facility_rule_rear_door", kw=f"{r.value:g}", note=r.note), r.source)
    if b.nvl72 or c.cooling == "liquid":
        fig = b.catalog.facility.rack_kw_liquid
        return cited(fig.high, msg("facility_rule_liquid_rack"), ", ".join(fig.sources))
    if c.cooling == "air":
        return from_rule(rules.rule("facility", "default_rack_kw_air"))
    vendor = rules.rule("facility", "air_rack_kw_limit_vendor")
    return cited(vendor.value, msg("facility_rule_vendor_layout", kw=f"{vendor.value:g}",
                                   note=rules.rule("facility", "default_cooling").note), vendor.source)


def ups_module_kw(it_kw: float) -> float:
    """The smallest modular-UPS power module that carries the IT load in at most a few working modules."""
    most = rules.value("facility", "ups_max_working_modules")
    sizes = rules.value("facility", "ups_module_kw_options")
    return next((float(m) for m in sizes if ceil_div(it_kw, m) <= most), float(sizes[-1]))


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
                "rear-door heat exchanger": "cooling_rear_door_only",
                "air with hot/cold aisle containment": "cooling_containment", "air": "cooling_air",
                "room air": "cooling_room", "the provider's": "cooling_provider"}


def _cooling(b: BuildInput, rack_kw: float) -> Cited:
    guide = rules.rule("facility", "air_rack_kw_limit_guides")
    vendor = rules.rule("facility", "air_rack_kw_limit_vendor")
    if b.server is not None and b.server.cooling_kind == "liquid":
        return cited("liquid", msg("cooling_rule_server", cooling=msg("server_cooling_liquid")), "servers_yaml")
    if b.job.constraints.cooling == "liquid":  # the site's choice, not the server's: say so
        return cited("liquid", msg("cooling_rule_job"), "job")
    kw = f"{rack_kw:.1f}"
    door = rules.rule("facility", "rear_door_rack_kw")
    if b.job.constraints.cooling == "rear-door":
        return cited("rear-door heat exchanger", msg("cooling_rule_rear_door_job", rack_kw=kw, limit=f"{door.value:g}"),
                     door.source)
    if rack_kw > vendor.value:
        return cited("liquid or rear-door heat exchanger", msg("cooling_rule_vendor", rack_kw=kw, vendor=vendor.value,
                                                               limit=f"{door.value:g}"), vendor.source)
    if rack_kw > guide.value:
        return cited("air with hot/cold aisle containment", msg("cooling_rule_containment", rack_kw=kw,
                                                                guide=guide.value, vendor=vendor.value), guide.source)
    return cited("air", msg("cooling_rule_air", rack_kw=kw, guide=guide.value), guide.source)


def door_water(cooling: Cited, rack_kw: float) -> tuple[Cited | None, Cited | None]:
    """(supply water C, flow L/min per rack) of rear-door heat exchangers carrying `rack_kw`, when the cooling is or
    may be rear doors: supply above the room's dew point from a CDU loop (IBM RDHx spec), flow from the heat
    balance Q = m c dT (water 4.186 kJ/(kg K), ~1 kg/L) at the door's rated water rise."""
    if "rear-door" not in str(cooling.value) or rack_kw <= 0:
        return None, None
    supply, rise = rules.rule("facility", "rear_door_water_supply_c"), rules.rule("facility", "rear_door_water_rise_k")
    flow = rack_kw / (4.186 * rise.value) * 60.0
    return (cited(supply.value, supply.note, supply.source),
            cited(round(flow, 1), msg("facility_rule_water_flow", kw=f"{rack_kw:.1f}", rise=f"{rise.value:g}",
                                      flow=f"{flow:.0f}"), rise.source))


def facility_block(b: BuildInput, net: NetworkBlock, storage_appliances: int, storage_u: float) -> FacilityBlock:
    scale = site_scale(b)
    if scale != "cluster":
        return _small_site(b, net, scale, storage_u)
    node_kw = node_kw_max(b)
    frac = rules.rule("facility", "typical_draw_fraction")
    budget = rack_budget(b)
    usable_u = rules.value("facility", "rack_usable_u")
    notes: list[str] = []
    if b.nvl72:  # the rack is the unit: its power shelves are the rack's max power; nodes are its trays
        # a rack's trays, whole trays whatever share of each the job uses (scenario.domain_job_gpus)
        domain = int(b.accelerator.scaleup_domain)
        per_rack, node_racks, rack_kw = max(1, domain // b.accelerator.gpus_per_host), b.racks, node_kw
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
    module = ups_module_kw(it_max)
    return _assemble(b, dict(node_kw=node_kw, frac=frac, budget=budget, per_rack=per_rack, node_racks=node_racks,
                             net_racks=net_racks, storage_racks=storage_racks, racks=racks, rack_kw=rack_kw,
                             net_kw=net_kw, it_max=it_max, it_typ=it_typ, over=over, notes=notes,
                             unit="rack" if b.nvl72 else "node",
                             cooling=_cooling(b, rack_kw), pdus=racks * rules.value("facility", "pdus_per_rack"),
                             ups=from_rule(rules.rule("facility", "ups_redundancy")),
                             ups_modules=ceil_div(it_max, module) + 1, site="cluster",
                             ups_note=msg("facility_note_ups_modules", n=ceil_div(it_max, module), kw=f"{module:g}"),
                             floor=None))


def _small_site(b: BuildInput, net: NetworkBlock, scale: str, storage_u: float) -> FacilityBlock:
    """A rented cluster, a workstation or one rack server: only what such a site needs of its own."""
    node_kw = node_kw_max(b)
    frac = rules.rule("facility", "typical_draw_fraction")
    net_kw, net_u = network_power_kw(b, net)
    # what owning these servers would draw: whole NVL72 racks (node_kw is the rack's), else the nodes
    units = b.racks if b.nvl72 else b.nodes
    it_max, it_typ = units * node_kw + net_kw, units * node_kw * frac.value + net_kw
    m2 = rules.rule("facility", "workstation_floor_m2")
    budget = rack_budget(b) if scale == "node" else None
    v = dict(node_kw=node_kw, frac=frac, budget=budget, per_rack=0, node_racks=0, net_racks=0,
             storage_racks=0, racks=0, rack_kw=0.0, net_kw=net_kw, it_max=it_max, it_typ=it_typ, over=False,
             pdus=0, ups_modules=0, site=scale, ups_note=None, unit="rack" if b.nvl72 else "node",
             floor=cited(0.0, msg("facility_floor_provider"), "convention"))
    if scale == "rented":
        return _assemble(b, {**v, "notes": [msg("facility_note_rented")],
                             "cooling": cited("the provider's", msg("cooling_rule_provider"), "convention"),
                             "ups": cited(msg("ups_value_provider"), msg("facility_ups_provider"), "convention")})
    if scale == "workstation":
        kw = f"{node_kw:.2f}"
        circuit = rules.rule("facility", "workstation_max_kw")
        return _assemble(b, {**v, "notes": [msg("facility_note_workstation", kw=kw, limit=f"{circuit.value:g}")],
                             "circuit": cited(circuit.value, msg("facility_rule_circuit", kw=kw), circuit.source),
                             "cooling": cited("room air", msg("cooling_rule_room", kw=kw), "convention"),
                             "ups": cited(msg("ups_value_standalone"), msg("facility_ups_standalone"), "convention"),
                             "floor": cited(m2.value, m2.note, m2.source)})
    # one rack server: a rack position in a shared rack (the node, its OOB switch, the NFS server if it fits)
    node_u = b.server.rack_units if b.server is not None else 8
    usable_u = rules.value("facility", "rack_usable_u")
    racks = ceil_div(node_u + net_u + storage_u, usable_u)
    m2 = rules.rule("facility", "floor_m2_per_rack")
    over = node_kw > budget.value  # the shared rack's budget (constraints.rack_kw, cooling, or the vendor layout)
    notes = [msg("facility_note_one_node", kw=f"{it_max:.1f}")] + (
        [msg("facility_note_node_over_budget", node_kw=f"{node_kw:.1f}", budget=f"{budget.value:g}")] if over else [])
    return _assemble(b, {**v, "per_rack": 1, "node_racks": racks, "racks": racks, "rack_kw": it_max, "over": over,
                         "notes": notes,
                         "cooling": _cooling(b, it_max), "pdus": rules.value("facility", "pdus_per_rack"),
                         "ups": cited(msg("ups_value_site_share"), msg("facility_ups_share"), "uptime_tiers"),
                         "floor": cited(racks * m2.value, msg("facility_floor_rule", racks=racks, m2=m2.value,
                                                              note=m2.note), m2.source)})


def _assemble(b: BuildInput, v: dict) -> FacilityBlock:
    racks, it_max, it_typ = v["racks"], v["it_max"], v["it_typ"]
    pf = rules.value("facility", "power_factor")
    pue_fig = b.catalog.facility.pue
    kwh = it_typ * rules.value("facility", "hours_per_year") * pue_fig.mid
    price = b.catalog.facility.electricity_per_kwh(b.currency)
    m2 = rules.rule("facility", "floor_m2_per_rack")
    floor = v["floor"] or cited(racks * m2.value, msg("facility_floor_rule", racks=racks, m2=m2.value, note=m2.note),
                                m2.source)
    notes = v["notes"] + ([v["ups_note"]] if v["ups_note"] is not None else [])
    supply, flow = door_water(v["cooling"], v["rack_kw"])
    return FacilityBlock(
        power_unit=v["unit"], site=v["site"], node_kw_max=v["node_kw"],
        node_kw_typical=cited(v["node_kw"] * v["frac"].value, v["frac"].note, v["frac"].source),
        rack_kw_budget=v["budget"], circuit_kw_budget=v.get("circuit"), nodes_per_rack=v["per_rack"], node_racks=v["node_racks"],
        network_racks=v["net_racks"], storage_racks=v["storage_racks"], racks=racks, rack_kw_max=v["rack_kw"],
        network_kw=v["net_kw"], storage_kw_note=msg("facility_storage_kw_unknown"),
        it_kw_max=it_max, it_kw_typical=it_typ, cooling=v["cooling"], over_rack_budget=v["over"],
        water_supply_c=supply, water_flow_l_min_per_rack=flow,
        pdus=v["pdus"], pdu_kw_each=max(v["rack_kw"], v["budget"].value) if v["pdus"] else 0.0,
        ups_redundancy=v["ups"], ups_modules=v["ups_modules"], ups_kva=0.0 if v["site"] == "rented" else it_max / pf,
        floor_m2=floor, pue=pue_fig.mid, annual_kwh=kwh,
        annual_energy_cost={"low": kwh * price.low, "typical": kwh * price.mid, "high": kwh * price.high},
        currency=b.currency, electricity_source=", ".join(price.sources), notes=notes)
