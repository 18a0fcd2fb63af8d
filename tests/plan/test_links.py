import pytest

from trainsizer.plan.buildout.links import choose_medium, link_parts


@pytest.mark.parametrize("distance, medium", [(2, "dac"), (4, "acc"), (30, "mmf"), (90, "smf"), (400, "smf"),
                                             (1500, "smf_long")])
def test_medium_by_distance_at_400g(catalog, distance, medium):
    got, _ = choose_medium(catalog, 400, distance, switch_both_ends=distance > 100)
    assert got == medium


def test_nic_side_reach_limits_node_links(catalog):
    # single-port DR4 on the NIC reaches 100 m: a 150 m node link has no option, a switch-switch one does
    assert choose_medium(catalog, 400, 150, switch_both_ends=False) is None
    assert choose_medium(catalog, 400, 150, switch_both_ends=True)[0] == "smf"


def test_twin_port_counts(catalog):
    parts = {p.role: p.quantity for p in link_parts(catalog, 100, 400, 30, "node-leaf", False)}
    assert parts == {"node-leaf switch transceiver": 50, "node-leaf NIC transceiver": 100, "node-leaf fibre": 100}
    both = {p.role: p.quantity for p in link_parts(catalog, 101, 400, 30, "leaf-spine", True)}
    assert both == {"leaf-spine switch transceiver": 2 * 51, "leaf-spine fibre": 101}


def test_splitter_dac_serves_two_links(catalog):
    (dac,) = link_parts(catalog, 9, 400, 2, "node-leaf", False)
    assert dac.part == "dac-osfp-800g-2x400g-3m" and dac.quantity == 5


def test_xdr_has_no_copper_or_multimode(catalog):
    medium, _ = choose_medium(catalog, 800, 2)
    assert medium == "smf"


def test_unknown_speed_is_named_not_guessed(catalog):
    (line,) = link_parts(catalog, 4, 3200, 2, "node-leaf", False)
    assert line.part is None and "3200" in line.note
    assert link_parts(catalog, 0, 400, 2, "x", False) == []
