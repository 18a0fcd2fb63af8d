from trainsizer.plan.buildout.fabric import size_fat_tree


def test_rollout_has_every_phase_with_sources(blocks, catalog):
    ph = blocks(goal={"procurement": "buy"}).phases
    assert ph.acquisition == "buy"
    assert [p.id for p in ph.rollout] == ["validate", "design", "order", "deploy", "bring_up", "acceptance",
                                          "production"]
    assert all(p.source in catalog.sources for p in ph.rollout)
    assert ph.total_weeks == (sum(p.weeks_low for p in ph.rollout), sum(p.weeks_high for p in ph.rollout))
    assert ph.burn_in_hours >= 24


def test_scale_out_doubles_on_the_same_radix(blocks):
    out = blocks(hardware={"count": 256}, global_batch={"sequences": 256}, goal={"procurement": "buy"})
    so, net = out.phases.scale_out, out.network.compute
    assert so.double_nodes == 64
    t = size_fat_tree(64, 8, net.radix)
    assert (so.double_leaves, so.double_spines) == (t.leaves, t.spines)
    assert "tiers" in so.recabling or "add" in so.recabling or "fits" in so.recabling
    assert so.nodes_without_new_leaf >= out.network.compute.links["node_leaf"] // 8


def test_one_tier_to_two_tiers_says_recabling(blocks):
    """8 HGX nodes x 8 rails: one switch, doubled to two rail-group switches (whole rails move with their node
    cables); 16 nodes on two rail groups, doubled to 32 nodes, need leaves and spines (fabric.yaml
    rail_groups_max_switches)."""
    so = blocks(hardware={"count": 64}, goal={"procurement": "buy"}).phases.scale_out
    assert so.recabling_msg.key == "phase_scale_rail_groups" and (so.double_tiers, so.double_leaves) == (1, 2)
    so = blocks(hardware={"count": 128}, global_batch={"sequences": 256}, goal={"procurement": "buy"}).phases.scale_out
    assert "1 -> 2 tiers" in so.recabling and (so.double_leaves, so.double_spines) == (8, 4)


def test_a_rented_cluster_is_reserved_not_ordered_or_racked(blocks, catalog):
    """Renting, there is nothing to order, rack or cable: the roll-out reserves capacity, onboards and checks
    the rented nodes; doubling asks the provider for nodes instead of adding switches."""
    ph = blocks(goal={"procurement": "rent"}).phases
    assert ph.acquisition == "rent"
    assert [p.id for p in ph.rollout] == ["validate", "reserve", "onboard", "acceptance_rented", "production_rented"]
    assert all(p.source in catalog.sources for p in ph.rollout)
    assert ph.total_weeks[1] < blocks(goal={"procurement": "buy"}).phases.total_weeks[0]
    assert ph.scale_out.recabling_msg.key == "phase_scale_rent" and ph.scale_out.double_leaves is None


def test_either_rolls_out_the_way_the_plan_prices_the_job(build):
    """procurement either: the roll-out of the cheaper of rent and buy, as the plan prices the job (job_cost)."""
    from trainsizer.evaluate import job_cost
    from trainsizer.plan.buildout import build_blocks

    seen = set()
    for tokens in (1e9, 1e13):  # a short job rents cheaper, a years-long one buys cheaper
        b = build(goal={"procurement": "either", "deadline_days": None}, data={"tokens": tokens})
        basis = job_cost(b.evaluation["cost"], b.currency)[1]
        assert build_blocks(b).phases.acquisition == basis
        seen.add(basis)
    assert seen == {"rent", "buy"}


def test_the_rental_reservation_window_is_the_clouds_published_one(blocks, catalog):
    """Reserving rented capacity takes from the same day to the 8 weeks ahead that the clouds' self-service GPU
    reservations accept (cloud_gpu_reservations, dated), not an unsourced convention; the sentence says so."""
    from trainsizer.messages import tr
    from trainsizer.plan.texts import as_msg

    reserve = next(p for p in blocks(goal={"procurement": "rent"}).phases.rollout if p.id == "reserve")
    source = catalog.sources[reserve.source]
    assert reserve.source != "convention" and source.date and source.url
    assert (reserve.weeks_low, reserve.weeks_high) == (0, 8)
    assert "8 weeks" in str(reserve.what) and "8 周" in str(tr(as_msg(reserve.what_msg), "zh"))


def test_a_bought_workstation_is_ordered_and_set_up_not_racked(blocks):
    """A 1-GPU workstation bought: no design review, rack, cabling or fabric bring-up; a few weeks in all."""
    ph = blocks(model="llama-3.1-8b", method="lora", goal={"procurement": "buy"},
                hardware={"accelerator": "l40s", "count": 1, "per_node": 1, "network": None},
                strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"},
                global_batch={"sequences": 8}).phases
    assert [p.id for p in ph.rollout] == ["validate", "order_workstation", "set_up_workstation",
                                          "acceptance_workstation", "production"]
    assert ph.total_weeks[1] <= 8
