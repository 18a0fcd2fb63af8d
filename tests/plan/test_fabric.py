import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.plan.buildout.fabric import port_violations, size_fat_tree

# NVIDIA DGX SuperPOD RA-11333 Table 3 (H100) / B200 RA: nodes -> leaf, spine, core at radix 64, 8 rails.
RA_TABLE3 = [(128, 32, 16, 0), (256, 64, 32, 0), (512, 128, 128, 64), (1024, 256, 256, 128), (2048, 512, 512, 256)]
# RA-11333 Table 4 (compute fabric of 1 and 2 SU; UFM ports aside).
RA_TABLE4 = [(31, 8, 4), (63, 16, 8), (127, 32, 16)]


@pytest.mark.parametrize("nodes, leaf, spine, core", RA_TABLE3)
def test_superpod_table3(nodes, leaf, spine, core):
    t = size_fat_tree(nodes, 8, 64)
    assert (t.leaves, t.spines, t.cores) == (leaf, spine, core)
    assert t.tiers == (3 if core else 2)


@pytest.mark.parametrize("nodes, leaf, spine", RA_TABLE4)
def test_superpod_table4(nodes, leaf, spine):
    t = size_fat_tree(nodes, 8, 64)
    assert (t.leaves, t.spines) == (leaf, spine)
    assert t.rail_optimised and t.nodes_per_su == 32


def test_small_cluster_is_one_switch():
    t = size_fat_tree(8, 8, 64)
    assert (t.tiers, t.leaves, t.spines) == (1, 1, 0)
    assert t.leaf_spine_links == 0


@given(nodes=st.integers(1, 2048), rails=st.sampled_from([1, 2, 4, 8]), radix=st.sampled_from([40, 64, 128, 144]),
       oversub=st.sampled_from([1.0, 4 / 3, 2.0, 3.0]))
def test_port_equations_hold_for_1_to_2048_nodes(nodes, rails, radix, oversub):
    try:
        t = size_fat_tree(nodes, rails, radix, oversub)
    except SpecError:
        # only when the leaves need more pods (of radix/2 leaves) than a core switch has ports
        d = int(radix * oversub / (1 + oversub) + 1e-9)
        leaves = rails * -(-nodes // d) if rails >= 2 else -(-nodes * rails // d)
        assert -(-leaves // (radix // 2)) > radix
        return
    assert port_violations(t) == []
    assert t.node_leaf_links == nodes * rails


@given(nodes=st.integers(9, 2048))
def test_a_broken_tree_is_caught(nodes):
    from dataclasses import replace

    t = size_fat_tree(nodes, 8, 64)
    assert port_violations(replace(t, leaf_up=t.leaf_up - 1))  # below the oversubscription
    if t.tiers == 2 and t.spines > 1:
        assert port_violations(replace(t, spines=t.spines - 1))
    if t.tiers == 3:
        assert port_violations(replace(t, cores=t.cores - 1))


def test_more_than_three_tiers_is_a_clear_error():
    with pytest.raises(SpecError, match="more than 3 tiers"):
        size_fat_tree(4000, 8, 40)


def test_oversubscription_halves_spines():
    full = size_fat_tree(200, 8, 64, 1.0)
    half = size_fat_tree(200, 8, 64, 2.0)
    assert half.spines < full.spines
    assert half.leaf_up * 2 >= half.leaf_down_used


@pytest.mark.parametrize("bad", [dict(nodes=0, rails=8, radix=64), dict(nodes=4, rails=8, radix=2),
                                 dict(nodes=4, rails=8, radix=64, oversubscription=0.5)])
def test_bad_input(bad):
    with pytest.raises(SpecError):
        size_fat_tree(**bad)


@given(nodes=st.integers(2, 2048), rails=st.sampled_from([1, 2, 8]), radix=st.sampled_from([40, 64, 128]),
       zone=st.integers(1, 512), o=st.sampled_from([1.5, 2.0, 4.0, 7.0]))
def test_a_zoned_fabric_is_wired_consistently_and_never_larger_than_the_non_blocking_one(nodes, rails, radix, zone, o):
    """hardware.fabric's tree (fabric.size_zoned_tree): its port equations hold, it has no more switches or
    switch-to-switch links than the non-blocking tree of the same nodes, a leaf-level zone never straddles two leaves,
    and it says at which tier the oversubscription sits."""
    from trainsizer.plan.buildout.fabric import size_zoned_tree

    try:
        full = size_fat_tree(nodes, rails, radix)
    except SpecError:
        return
    t = size_zoned_tree(nodes, rails, radix, zone, o)
    assert not port_violations(t)
    assert t.switches <= full.switches
    assert t.leaf_spine_links + t.spine_core_links <= full.leaf_spine_links + full.spine_core_links
    assert t.oversubscribed_at in ("leaf", "spine", "none")
    if t.oversubscribed_at == "leaf" and t.tiers > 1:
        per_leaf = t.nodes_per_su if t.rail_optimised else t.leaf_down_ports // rails
        assert per_leaf % zone == 0 and t.leaf_up * o >= t.leaf_down_used
    if t.oversubscribed_at == "spine":
        assert t.tiers == 3 and t.spine_up * o >= t.spine_down and t.cores < full.cores
    if zone >= nodes or t.tiers == 1:
        assert (t.leaves, t.spines, t.cores) == (full.leaves, full.spines, full.cores)


def test_llama3_style_pods_thin_the_core_at_radix_64():
    """512 nodes x 8 rails (4,096 GPUs), zones of 128 nodes (one 3-tier pod at radix 64) under 1:7: the pods keep
    the RA's 128 leaves / 128 spines; the spines' uplinks drop from 32 to 5 each, so 10 cores instead of 64."""
    from trainsizer.plan.buildout.fabric import size_zoned_tree

    t = size_zoned_tree(512, 8, 64, 128, 7.0)
    assert (t.tiers, t.leaves, t.spines, t.cores, t.oversubscribed_at) == (3, 128, 128, 10, "spine")
    assert size_zoned_tree(512, 8, 64, 384, 7.0).oversubscribed_at == "none"  # 3,072-GPU zones: more than a pod


# Rail groups (fabric.yaml rail_groups_max_switches = 2): one tier while whole rails fit one or two switches.
# GB200 NVL72: 18 trays x 4 rails a rack; HGX: 8 rails a node; radix 64 (QM9700 at NDR 400).
NVL72_RACKS = [  # racks -> tiers, leaves, spines, leaf-spine links
    (1, 1, 2, 0, 0),     # 72 ports: rails 0-1 and 2-3 on two switches (36 ports each), no spine
    (2, 2, 8, 3, 144),   # 36 trays a rail > 32 down-ports: two rail leaves a rail, 18 uplinks each
    (4, 2, 12, 5, 288),
    (8, 2, 20, 10, 580),  # 144 trays a rail over 5 leaves (29 on the busiest), 29 uplinks a leaf
    (16, 2, 36, 18, 1152),
]
HGX_NODES = [(4, 1, 1, 0), (8, 1, 1, 0), (16, 1, 2, 0), (32, 2, 8, 4), (64, 2, 16, 8), (128, 2, 32, 16)]


@pytest.mark.parametrize("racks, tiers, leaves, spines, links", NVL72_RACKS)
def test_nvl72_racks_fabric_size(racks, tiers, leaves, spines, links):
    t = size_fat_tree(18 * racks, 4, 64, rail_groups_max=2)
    assert (t.tiers, t.leaves, t.spines, t.leaf_spine_links) == (tiers, leaves, spines, links)
    assert port_violations(t) == [] and t.node_leaf_links == 72 * racks


@pytest.mark.parametrize("nodes, tiers, leaves, spines", HGX_NODES)
def test_hgx_nodes_fabric_size(nodes, tiers, leaves, spines):
    t = size_fat_tree(nodes, 8, 64, rail_groups_max=2)
    assert (t.tiers, t.leaves, t.spines) == (tiers, leaves, spines)
    assert port_violations(t) == []


def test_rail_groups_only_where_nvlink_forwards_cross_rail_traffic():
    """Without the allowance (no NVLink domain spanning the rails) the same ports need leaves and spines."""
    assert (size_fat_tree(18, 4, 64).tiers, size_fat_tree(18, 4, 64).spines) == (2, 2)
    t = size_fat_tree(18, 4, 64, rail_groups_max=2)
    assert t.rail_groups and t.max_nodes_same_switches() == 32  # two rails a switch: 64 // 2 trays
    assert size_fat_tree(18, 4, 64, rail_optimised=False, rail_groups_max=2).tiers == 2


@given(nodes=st.integers(1, 512), rails=st.sampled_from([2, 4, 8]), radix=st.sampled_from([40, 64, 128]),
       groups=st.integers(0, 4))
def test_rail_groups_are_wired_consistently_and_smaller_than_leaf_spine(nodes, rails, radix, groups):
    try:
        t = size_fat_tree(nodes, rails, radix, rail_groups_max=groups)
        full = size_fat_tree(nodes, rails, radix)
    except SpecError:
        return
    assert port_violations(t) == []
    assert t.switches <= full.switches and t.leaves <= max(groups, full.leaves)
    if t.rail_groups:
        assert 2 <= t.leaves <= groups and t.leaf_spine_links == 0 and nodes <= radix
    from dataclasses import replace
    if t.rail_groups:  # a switch over its radix, or a rail cut in two, is caught
        assert port_violations(replace(t, leaves=t.leaves - 1)) or t.leaves == 1
