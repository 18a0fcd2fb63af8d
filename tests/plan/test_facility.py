import pytest

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
    assert f.ups_modules == -(-f.it_kw_max // rules.value("facility", "ups_module_kw")) + 1


def test_cny_job_prices_energy_in_cny(build, catalog):
    f = _fac(build(goal={"budget": {"amount": 1e7, "currency": "CNY"}}))
    assert f.currency == "CNY"
    assert f.annual_energy_cost["typical"] == pytest.approx(f.annual_kwh * catalog.facility.electricity_per_kwh("CNY").mid)


def test_power_unit_says_whose_power_the_node_figures_are(build):
    """An NVL72 server is the whole rack: its power is the rack's, not a tray's; other servers are nodes."""
    assert _fac(build()).power_unit == "node"
    f = _fac(build(hardware={"accelerator": "gb200", "count": 64, "per_node": 4}, constraints={"cooling": "liquid"}))
    assert f.power_unit == "rack" and f.node_kw_max == f.rack_kw_max
