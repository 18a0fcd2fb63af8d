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
