from trainsizer.plan.buildout.fabric import size_fat_tree


def test_rollout_has_every_phase_with_sources(blocks, catalog):
    ph = blocks().phases
    assert [p.id for p in ph.rollout] == ["validate", "design", "order", "deploy", "bring_up", "acceptance",
                                          "production"]
    assert all(p.source in catalog.sources for p in ph.rollout)
    assert ph.total_weeks == (sum(p.weeks_low for p in ph.rollout), sum(p.weeks_high for p in ph.rollout))
    assert ph.burn_in_hours >= 24


def test_scale_out_doubles_on_the_same_radix(blocks):
    out = blocks(hardware={"count": 256}, global_batch={"sequences": 256})
    so, net = out.phases.scale_out, out.network.compute
    assert so.double_nodes == 64
    t = size_fat_tree(64, 8, net.radix)
    assert (so.double_leaves, so.double_spines) == (t.leaves, t.spines)
    assert "tiers" in so.recabling or "add" in so.recabling or "fits" in so.recabling
    assert so.nodes_without_new_leaf >= out.network.compute.links["node_leaf"] // 8


def test_single_switch_to_two_tiers_says_recabling(blocks):
    so = blocks(hardware={"count": 64}).phases.scale_out  # 8 nodes x 8 rails = 64 ports: one switch
    assert "1 -> 2 tiers" in so.recabling
