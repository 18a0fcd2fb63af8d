import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.facility import facility_block
from trainsizer.plan.buildout.network import network_block


def _fac(b):
    return facility_block(b, network_block(b), 1, 2)


def test_racks_hold_the_nodes_within_the_budget(build):
    b = build(hardware={"count": 64}, constraints={"rack_kw": 25})
    f = _fac(b)
    assert f.nodes_per_rack == 2  # 25 kW // 10.2 kW per DGX H100
    assert f.node_racks * f.nodes_per_rack >= b.nodes
    assert f.rack_kw_max <= 25 and not f.over_rack_budget
    assert f.racks == f.node_racks + f.network_racks + f.storage_racks
    assert f.pdus == f.racks * 2


def test_node_over_rack_budget_is_flagged(build):
    f = _fac(build(constraints={"rack_kw": 8}))
    assert f.over_rack_budget and f.nodes_per_rack == 1 and f.notes


def test_cooling_follows_rack_power(build):
    assert _fac(build(constraints={"rack_kw": 15})).cooling.value == "air"
    assert "containment" in _fac(build(constraints={"rack_kw": 32})).cooling.value
    assert "liquid" in _fac(build(hardware={"count": 64}, constraints={"rack_kw": 60})).cooling.value


def test_liquid_asked_by_the_job_says_so_not_the_air_cooled_server(build):
    cooling = _fac(build(constraints={"rack_kw": 15, "cooling": "liquid"})).cooling
    assert cooling.value == "liquid" and cooling.source == "job"
    assert "constraints.cooling" in cooling.rule and "air" not in cooling.rule


def test_energy_year_is_typical_kw_times_hours_times_pue(build, catalog):
    f = _fac(build())
    assert f.annual_kwh == pytest.approx(f.it_kw_typical * 8760 * catalog.facility.pue.mid)
    price = catalog.facility.electricity_per_kwh("USD")
    assert f.annual_energy_cost["typical"] == pytest.approx(f.annual_kwh * price.mid)
    module = min(m for m in rules.value("facility", "ups_module_kw_options")
                 if -(-f.it_kw_max // m) <= rules.value("facility", "ups_max_working_modules"))
    assert f.ups_modules == -(-f.it_kw_max // module) + 1


def test_cny_job_prices_energy_in_cny(build, catalog):
    f = _fac(build(goal={"budget": {"amount": 1e7, "currency": "CNY"}}))
    assert f.currency == "CNY"
    assert f.annual_energy_cost["typical"] == pytest.approx(f.annual_kwh * catalog.facility.electricity_per_kwh("CNY").mid)


def test_power_unit_says_whose_power_the_node_figures_are(build):
    """An NVL72 server is the whole rack: its power is the rack's, not a tray's; other servers are nodes."""
    assert _fac(build()).power_unit == "node"
    f = _fac(build(hardware={"accelerator": "gb200", "count": 64, "per_node": 4}, constraints={"cooling": "liquid"}))
    assert f.power_unit == "rack" and f.node_kw_max == f.rack_kw_max


def test_one_gpu_workstation_has_no_rack_pdu_or_storage_server(blocks):
    """A bought 1 x L40S job is a workstation: its power is the GPU's share of a server (not the 8-GPU chassis the
    catalog has), no rack, PDU, UPS module or NFS server; a standalone UPS of its kVA is optional."""
    out = blocks(model="llama-3.1-8b", method="lora", goal={"procurement": "buy"},
                 hardware={"accelerator": "l40s", "count": 1, "per_node": 1, "network": None},
                 strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"},
                 global_batch={"sequences": 8})
    f, st = out.facility, out.storage
    assert f.site == "workstation" and f.node_kw_max < rules.value("facility", "workstation_max_kw")
    assert (f.racks, f.pdus, f.ups_modules) == (0, 0, 0) and f.ups_kva > 0
    assert st.appliance is None and st.appliances == 0
    items = [ln.part for ln in out.bom.lines]
    assert "rack-42u" not in items and "pdu-rack-3ph" not in items and "nfs-server-nvme" not in items


def test_one_rack_server_shares_a_rack_and_the_site_ups(blocks):
    """One DGX H100 bought: a position in a shared rack (the NFS server in it too), A + B PDUs, the node's share
    of the site UPS in kVA, not N+1 250 kW modules or a storage rack of its own."""
    f = blocks(hardware={"count": 8, "network": None}).facility
    assert f.site == "node" and f.racks == 1 and f.storage_racks == 0 and f.pdus == 2
    assert f.ups_modules == 0 and f.ups_kva == pytest.approx(f.it_kw_max / rules.value("facility", "power_factor"))


def test_rented_cluster_buys_no_power_and_lists_what_is_rented(blocks):
    out = blocks(goal={"procurement": "rent"})
    f, bom = out.facility, out.bom
    assert f.site == "rented" and (f.racks, f.pdus, f.ups_modules, f.ups_kva) == (0, 0, 0, 0)
    assert bom.acquisition == "rent"
    gpus = bom.lines[0]
    assert gpus.part == "h100-sxm-80gb" and gpus.unit == "per_gpu_hour" and gpus.total is not None
    assert not {"rack-42u", "pdu-rack-3ph", "ups-module", "pfs-appliance-ai400x2"} & {ln.part for ln in bom.lines}
    assert [ln.unit for ln in bom.lines[1:]] == ["per_tb_month", "per_gb", "per_unit"]  # storage, egress, scheduler
    assert bom.buy_vs_rent.capex["typical"] > 0  # the purchase it replaces, priced for the comparison only


def test_sites_without_racks_have_no_rack_budget(blocks):
    """Rented and workstation plans own no rack: no rack budget (not a budget of 0 kW); the workstation's budget
    is its one wall circuit (facility.yaml workstation_max_kw, with its source)."""
    assert blocks(goal={"procurement": "rent"}).facility.rack_kw_budget is None
    ws = blocks(model="llama-3.1-8b", method="lora", goal={"procurement": "buy"},
                hardware={"accelerator": "l40s", "count": 1, "per_node": 1, "network": None},
                strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"},
                global_batch={"sequences": 8}).facility
    circuit = rules.rule("facility", "workstation_max_kw")
    assert ws.rack_kw_budget is None and ws.circuit_kw_budget.value == circuit.value
    assert ws.circuit_kw_budget.source == circuit.source and ws.node_kw_max <= ws.circuit_kw_budget.value
    assert blocks(hardware={"count": 8, "network": None}).facility.circuit_kw_budget is None


def test_rented_nvl72_draws_whole_racks_not_a_rack_per_tray(blocks):
    """A rented NVL72 plan's power (what owning it would draw, for buy vs rent) is its racks', each the rack
    system's power: 128 GPUs are 2 racks, not 32 trays of 120 kW each (it read 3,853 kW)."""
    out = blocks(goal={"procurement": "rent"}, constraints={"cooling": "liquid"}, global_batch={"sequences": 128},
                 hardware={"accelerator": "gb200", "count": 128, "per_node": 4})
    f = out.facility
    assert f.site == "rented" and f.power_unit == "rack"
    assert f.it_kw_max == pytest.approx(2 * f.node_kw_max + f.network_kw)
    assert f.it_kw_typical == pytest.approx(2 * f.node_kw_typical.value + f.network_kw)


def test_one_rack_server_over_the_rack_budget_is_flagged(blocks):
    """One rack server in a shared rack whose budget (constraints.rack_kw) is below the node's power: flagged,
    with a note and the risk, as a cluster's node would be."""
    out = blocks(hardware={"count": 8, "network": None}, constraints={"rack_kw": 8})
    assert out.facility.site == "node" and out.facility.over_rack_budget
    assert "rack_power_over_site_limit" in {r.id for r in out.risks}
    assert not blocks(hardware={"count": 8, "network": None}, constraints={"rack_kw": 20}).facility.over_rack_budget


def test_rack_density_follows_the_stated_cooling(blocks):
    """No cooling stated: the vendor layout, 4 DGX H100 (10.2 kW) per rack with containment (SuperPOD H100); the
    job saying air (a room without containment) gets 15 kW racks: 1 per rack."""
    vendor = blocks(hardware={"count": 64}).facility
    assert vendor.nodes_per_rack == 4 and vendor.rack_kw_budget.value == pytest.approx(40.8)
    assert "containment" in vendor.cooling.value
    air = blocks(hardware={"count": 64}, constraints={"cooling": "air"}).facility
    assert air.nodes_per_rack == 1 and air.rack_kw_budget.value == 15


def test_ups_modules_are_sized_to_the_load(blocks):
    """2 DGX H100 (~21 kW IT): 10 kW modules, 3 + 1, not two 250 kW modules."""
    f = blocks().facility
    assert f.site == "cluster" and f.ups_modules == -(-f.it_kw_max // 10) + 1 <= 5


@given(st.floats(min_value=0.1, max_value=20000))
def test_ups_module_carries_the_load_in_a_few_unless_the_largest(it_kw):
    from trainsizer.plan.buildout.facility import ups_module_kw

    m = ups_module_kw(it_kw)
    sizes = rules.value("facility", "ups_module_kw_options")
    assert -(-it_kw // m) <= rules.value("facility", "ups_max_working_modules") or m == sizes[-1]
    smaller = [s for s in sizes if s < m]
    assert all(-(-it_kw // s) > rules.value("facility", "ups_max_working_modules") for s in smaller)


def test_rear_door_cooling_sets_the_rack_density_and_the_water_it_needs(blocks):
    """constraints.cooling rear-door: air-cooled servers, rear-door heat exchangers at 50 kW a rack (HPE/Motivair's
    35-55 kW door family): 4 DGX H100 (40.8 kW) a rack, not the 15 kW of a room without containment; the doors'
    water is >= 18 C from a CDU loop (IBM RDHx spec: above the room's dew point) at the heat-balance flow
    (40.8 kW / (4.186 kJ/(kg K) x 10 K) = 58.5 L/min); no air-cooling risk is raised for a rack they carry."""
    out = blocks(hardware={"count": 128}, global_batch={"sequences": 128}, constraints={"cooling": "rear-door"})
    f = out.facility
    assert f.rack_kw_budget.value == 50 and f.nodes_per_rack == 4 and f.rack_kw_max == pytest.approx(40.8)
    assert f.cooling.value == "rear-door heat exchanger" and "constraints.cooling" in f.cooling.rule
    assert f.water_supply_c.value == 18 and f.water_supply_c.source == "ibm_rdhx"
    assert f.water_flow_l_min_per_rack.value == pytest.approx(40.8 / (4.186 * 10) * 60, abs=0.1)
    assert not any(r.id == "air_cooling_limit" for r in out.risks)
    air = blocks(hardware={"count": 128}, global_batch={"sequences": 128}, constraints={"cooling": "air"}).facility
    assert air.water_supply_c is None and air.water_flow_l_min_per_rack is None
    # the vendor's other option above its air layout names the doors' limit and their water
    dense = blocks(hardware={"count": 64}, constraints={"rack_kw": 60}).facility  # 5 DGX: 51 kW
    assert dense.cooling.value == "liquid or rear-door heat exchanger" and dense.water_supply_c is not None


def test_rear_door_cooling_keeps_liquid_only_systems_out_of_the_search(catalog):
    """Rear doors cool the air leaving air-cooled servers: a liquid-only NVL72 rack is refused, as under air."""
    from types import SimpleNamespace

    from trainsizer.search.candidates import _server_reason

    nvl72 = catalog.servers["gb200-nvl72"]
    for cooling, refused in (("rear-door", True), ("air", True), ("liquid", False)):
        scenario = SimpleNamespace(job=SimpleNamespace(constraints=SimpleNamespace(cooling=cooling, rack_kw=None)))
        reason = _server_reason(nvl72, scenario)
        assert (reason is not None) == refused
        if refused:  # the refusal names the cooling the job asked for (it said 'air' for rear-door too)
            assert dict(reason.fields)["asked"].key == f"job_cooling_{cooling}"
