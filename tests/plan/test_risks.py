import numpy as np
import pytest


def _ids(out):
    return {r.id for r in out.risks}


def test_consumer_card_and_export(blocks):
    out = blocks(hardware={"accelerator": "rtx-4090", "count": 8, "network": None}, model="qwen2.5-7b", method="qlora",
                 constraints={"market": "china"}, strategy={"fsdp": "none"})
    assert {"consumer_cards_in_production", "export_control_availability"} <= _ids(out)
    r = next(r for r in out.risks if r.id == "consumer_cards_in_production")
    assert "ECC no" in r.evidence and r.mitigation and r.source == "guide_003"
    assert r.evidence_msg.key == "risk_ev_consumer"   # readable in Chinese from the same plan


def test_slow_network_multi_node(blocks):
    out = blocks(hardware={"network": "roce-25"})
    assert "multi_node_on_slow_network" in _ids(out)


def test_rack_over_budget_and_deadline(blocks):
    out = blocks(constraints={"rack_kw": 8}, goal={"deadline_days": 0.01})
    ids = _ids(out)
    assert "rack_power_over_site_limit" in ids and "deadline_slack" in ids


def test_healthy_plan_triggers_few(blocks):
    ids = _ids(blocks())
    assert not ids & {"consumer_cards_in_production", "multi_node_on_slow_network", "rack_power_over_site_limit",
                      "deadline_slack", "tp_across_slow_links"}


def test_tp_over_pcie(blocks):
    out = blocks(hardware={"accelerator": "l40s", "network": "roce-100"}, strategy={"fsdp": "none", "tp": 4})
    assert "tp_across_slow_links" in _ids(out)


def test_unstated_ecc_is_flagged_as_unknown_not_as_absent():
    from types import SimpleNamespace

    from trainsizer.plan.buildout.risks import _consumer
    card = SimpleNamespace(name="overlay card", ecc=None, form_factor="SXM")
    r = _consumer(SimpleNamespace(b=SimpleNamespace(accelerator=card)))
    assert r is not None and "ECC unknown (not in the catalog)" in r.evidence and "ECC no" not in r.evidence
    assert _consumer(SimpleNamespace(b=SimpleNamespace(accelerator=SimpleNamespace(
        name="dc card", ecc=True, form_factor="SXM")))) is None


def test_server_short_of_host_needs_follows_the_node_block(blocks):
    """The risk fires exactly when the node block says the catalog server is short of a derived host need, and
    names each short part; more RAM than the server carries makes it medium."""
    for changes in ({}, {"data": {"tokens": 2.0e12}}, {"model": "llama-3.1-70b", "strategy": {"tp": 8, "fsdp": "none"}}):
        out = blocks(**changes)
        short = [k for k, v in out.node.enough.items() if v is False]
        risk = next((r for r in out.risks if r.id == "server_short_of_host_needs"), None)
        assert (risk is not None) == bool(short)
        if risk is not None:
            assert risk.evidence_msg.key == "risk_ev_server_short" and out.node.server in risk.evidence
            assert risk.severity == ("medium" if "ram_gib" in short else "low")


def test_memory_risk_fires_exactly_where_the_search_floor_is_not_cleared():
    """The plan's memory risk and the search's choice ask one test (search.config.leaves_floor): a layout
    `choose` keeps as clearing the floor is never flagged, and one it could not clear always is."""
    from types import SimpleNamespace

    from hypothesis import given
    from hypothesis import strategies as st

    from trainsizer.plan.buildout.risks import _memory
    from trainsizer.search.config import leaves_floor, load_config
    from trainsizer.search.engine import choose

    floor = load_config().memory_headroom_min

    @given(st.floats(1.0, 300.0), st.floats(0.5, 1.2))
    def check(cap, share):
        used = cap * share
        mem = {"capacity_gib": cap, "per_gpu_gib": used, "fits": used <= cap}
        flagged = _memory(SimpleNamespace(b=SimpleNamespace(evaluation={"memory": mem}))) is not None
        # the fastest layout at `used`, a roomy one 1% slower: the search moves off the fastest exactly when
        # the plan would flag it
        i, fastest = choose(np.array([1.0, 1.01]), np.array([used, 0.5 * cap]), cap, 0.07, floor)
        assert flagged == (i != fastest) == (not bool(leaves_floor(used, cap)))
        if abs(share - (1.0 - floor)) > 1e-9:
            assert bool(leaves_floor(used, cap)) == (share <= 1.0 - floor)

    check()


def test_an_unpriced_part_makes_a_purchase_budget_incomplete_not_a_rental(blocks):
    """Renting, the job's cost is the rental; the BOM is the purchase it is compared with, so unpriced parts
    there do not make the rented plan's budget incomplete (the buy-vs-rent verdict names them). Buying, they do."""
    rented = blocks(goal={"procurement": "rent"}, hardware={"accelerator": "mi325x"})
    bought = blocks(goal={"procurement": "buy"}, hardware={"accelerator": "mi325x"})
    assert rented.bom.unpriced and bought.bom.unpriced
    assert "budget_incomplete" not in _ids(rented) and "budget_incomplete" in _ids(bought)


def test_rack_risks_fire_only_where_the_plan_owns_a_rack(blocks):
    """The same 8 kW rack budget flags a bought cluster's and one bought rack server's 10.2 kW node, never a rented
    plan (the provider's racks) or a workstation (no rack)."""
    tight = {"rack_kw": 8}
    assert "rack_power_over_site_limit" in _ids(blocks(constraints=tight))
    assert "rack_power_over_site_limit" in _ids(blocks(constraints=tight, hardware={"count": 8, "network": None}))
    rented = blocks(constraints=tight, goal={"procurement": "rent"})
    assert not _ids(rented) & {"rack_power_over_site_limit", "air_cooling_limit"}
    ws = blocks(constraints=tight, model="llama-3.1-8b", method="lora", global_batch={"sequences": 8},
                hardware={"accelerator": "l40s", "count": 1, "per_node": 1, "network": None},
                strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"})
    assert ws.facility.site == "workstation" and "rack_power_over_site_limit" not in _ids(ws)


def test_a_rented_plans_mitigation_asks_the_provider(blocks):
    """A rented cluster is changed by choosing an instance type, not by ordering parts: the slow-network risk's
    mitigation says so in en and zh; the bought plan keeps its own."""
    from trainsizer.plan.texts import say

    rented = next(r for r in blocks(hardware={"network": "roce-25"}, goal={"procurement": "rent"}).risks
                  if r.id == "multi_node_on_slow_network")
    bought = next(r for r in blocks(hardware={"network": "roce-25"}).risks if r.id == "multi_node_on_slow_network")
    assert rented.mitigation_msg.key == "risk_fix_slow_network_rented" and "instance type" in rented.mitigation
    assert "实例" in say(rented.mitigation_msg.model_dump(), "zh")
    assert bought.mitigation_msg.key == "risk_fix_slow_network"


def test_server_nics_slower_than_the_named_network_are_a_risk(blocks):
    """A job naming ib-xdr800 for B200 nodes: the catalog's DGX B200 carries 8 x 400 Gb/s ConnectX-7, while the
    fabric, its optics and the estimate run 800 Gb/s; the plan says so and names the networks at the server's rate.
    On the server's own rate there is no such risk."""
    fast = blocks(hardware={"accelerator": "b200", "network": "ib-xdr800"})
    risk = next(r for r in fast.risks if r.id == "server_nics_slower_than_fabric")
    assert risk.severity == "high" and "8 x 400 Gb/s" in risk.evidence and "ib-xdr800" in risk.evidence
    assert "ib-ndr400" in risk.mitigation
    same = blocks(hardware={"accelerator": "b200", "network": "ib-ndr400"})
    assert "server_nics_slower_than_fabric" not in {r.id for r in same.risks}


@pytest.mark.parametrize(("acc", "precision", "model", "flagged"), [
    ("mi300x", "fp8", "qwen3-30b-a3b", True),      # FP8 MoE off the SM90 / SM100 kernels' targets (AMD's own stack)
    ("rtx-pro-6000", "fp8", "qwen3-30b-a3b", True),  # SM120: outside DeepGEMM / DeepEP, no vendor MoE stack named
    ("h100-sxm-80gb", "fp8", "qwen3-30b-a3b", False),  # Hopper: DeepGEMM / DeepEP run there
    ("mi300x", "bf16", "qwen3-30b-a3b", False),    # BF16: no FP8 MoE kernel needed
    ("mi300x", "fp8", "llama-3.1-8b", False),      # dense: no expert GEMMs or dispatch
])
def test_fp8_moe_off_the_kernels_targets_is_a_named_risk(blocks, acc, precision, model, flagged):
    """known-gaps 43 (e): a documented risk line (risks.yaml fp8_moe_kernel_parts, sourced to the DeepGEMM / DeepEP
    READMEs), readable in Chinese; the ranking does not weigh it."""
    from trainsizer.messages import render

    out = blocks(hardware={"accelerator": acc, "count": 8, "per_node": 8, "network": None}, model=model,
                 method="pretrain", precision=precision, global_batch={"sequences": 64},
                 strategy={"tp": 1, "pp": 1, "fsdp": "full", "micro_batch": 1, "recompute": "full"})
    risk = next((r for r in out.risks if r.id == "fp8_moe_stack_unproven"), None)
    assert (risk is not None) == flagged
    if flagged:
        assert "SM90 / SM100" in risk.evidence and acc in risk.evidence
        assert "排序未考虑" in render(risk.evidence_msg.key, "zh", risk.evidence_msg.params)
        # an AMD part names its vendor's FP8 MoE operators (Primus-Turbo), sourced to their README
        amd = acc.startswith("mi3")
        assert (risk.source, "Primus-Turbo" in risk.evidence) == (("primus_turbo_readme", True) if amd
                                                                  else ("deepgemm_readme", False))


def test_tp_over_pcie_names_no_nvlink_domain_for_a_card_without_one(blocks):
    """TP 2 on 8 RTX 5090 in one box: the evidence read 'tp 2 over pcie (NVLink domain 8 GPUs)', an NVLink domain
    the card does not have (the node is the network block's domain of a PCIe card)."""
    out = blocks(hardware={"accelerator": "rtx-5090", "count": 8, "network": None}, strategy={"fsdp": "none", "tp": 2})
    r = next(r for r in out.risks if r.id == "tp_across_slow_links")
    assert "NVLink domain" not in r.evidence and "no NVLink" in r.evidence and "rtx-5090" in r.evidence
    out = blocks(hardware={"accelerator": "rtx-a6000", "count": 8, "network": None}, strategy={"fsdp": "none", "tp": 4})
    r = next(r for r in out.risks if r.id == "tp_across_slow_links")
    assert "NVLink domain 2 GPUs" in r.evidence


def test_a_deadline_the_estimate_meets_but_its_accuracy_band_does_not_is_a_risk(build, blocks):
    """evaluate.accuracy: held-out runs of the job's class ran up to signed_p90_pct slower than estimated; a deadline
    between the estimate and that slow end is a medium risk, one past the slow end none."""
    b = build()
    band = b.evaluation["accuracy"]["time"]
    days, slower = b.train_days, band["signed_p90_pct"]
    assert band["matched"] is not None and slower > 0.0
    risk = next(r for r in blocks(goal={"deadline_days": days * (1.0 + slower / 200.0)}).risks
                if r.id == "deadline_accuracy_band")
    assert risk.severity == "medium" and band["matched"] in risk.evidence and risk.evidence_msg.key == "risk_ev_deadline_band"
    assert "deadline_accuracy_band" not in _ids(blocks(goal={"deadline_days": days * (1.0 + slower / 100.0) * 1.02}))
    missed = _ids(blocks(goal={"deadline_days": days * 0.9}))  # the estimate itself misses: deadline_slack says so
    assert "deadline_slack" in missed and "deadline_accuracy_band" not in missed


def _deepseek_offloaded_on_gb200(**changes):
    """DeepSeek-V3 SFT with its optimizer offloaded on 64 GB200 (16 trays): 690 GiB a tray of states, 1,341 GiB a
    tray in all with checkpoint staging, against a tray's 960 GiB of Grace LPDDR5X (known-gaps 43)."""
    return {"model": "deepseek-v3", "global_batch": {"sequences": 128}, "constraints": {"cooling": "liquid"},
            "hardware": {"accelerator": "gb200", "count": 64, "per_node": 4, "network": "ib-ndr400"},
            "strategy": {"tp": 1, "pp": 4, "ep": 16, "fsdp": "full", "offload": "optimizer", "micro_batch": 1,
                         "recompute": "full"}, **changes}


def test_a_tray_short_of_host_ram_says_none_can_be_added_not_order_dimms(build, blocks):
    """A GB200 tray's memory is soldered (Server.ram_extensible False): the risk that the node block's whole host
    need exceeds the tray says the layout needs more host RAM than the tray has, never 'order more DIMMs'; the
    ranking's note holds the node block's whole need to the tray (43 (w)) and says none can be added."""
    from trainsizer.plan.buildout import build_blocks

    b = build(**_deepseek_offloaded_on_gb200())
    out = build_blocks(b)
    assert out.node.enough["ram_gib"] is False
    assert 0 < out.node.ram_breakdown_gib["offloaded_states"] <= out.node.server_ram_gib < out.node.ram_gib.value
    risk = next(r for r in out.risks if r.id == "server_short_of_host_needs")
    assert risk.mitigation_msg.key == "risk_fix_server_short_fixed_ram" and "DIMM" not in risk.mitigation
    note = next(n for n in b.evaluation["notes"] if "CPU offload" in n)
    # 43 (w): the ranking holds the node block's whole need to the tray, one figure: it says so, never "fits"
    need = out.node.ram_gib.value
    assert any(f"that is {v:,} GiB, more than the 960 GiB" in note for v in (int(need), int(need) + 1))
    assert "soldered" in note
    # 43 (w): whether a DGX H100 takes more DIMMs is not in the catalog (ram_extensible unknown): the mitigation says
    # so; a DGX B200's larger configuration is read (up to 4 TB): the ordinary mitigation stays
    plain = blocks(data={"tokens": 2.0e12})
    short = next(r for r in plain.risks if r.id == "server_short_of_host_needs")
    assert short.mitigation_msg.key == "risk_fix_server_short_unknown_ram" and "not known" in short.mitigation
    b200 = blocks(data={"tokens": 2.0e12}, constraints={"cooling": "air"},
                  hardware={"accelerator": "b200", "count": 16, "per_node": 8, "network": "ib-ndr400"})
    short = next(r for r in b200.risks if r.id == "server_short_of_host_needs")
    assert short.mitigation_msg.key == "risk_fix_server_short"


@pytest.mark.parametrize("model, ep, factor, routing, flagged", [
    ("qwen3-30b-a3b", 8, 1.0, "random", True),          # EP 8 at balanced routing: the busiest rank's load is assumed
    ("qwen3-30b-a3b", 1, 1.0, "random", False),         # EP 1: one GPU runs every expert, no rank waits on another
    ("qwen3-30b-a3b", 8, 1.6, "random", False),         # a stated busiest-rank load: nothing assumed
    ("qwen3-30b-a3b", 8, 1.0, "round-robin", False),    # the router replaced by a balanced assignment: balance runs
    ("qwen3-30b-a3b", 8, 1.0, "fake-balanced", False),
    ("llama-3.1-8b", 1, 1.0, "random", False),          # dense
])
def test_balanced_routing_under_expert_parallelism_is_a_named_risk(blocks, model, ep, factor, routing, flagged):
    """known-gaps 230 (a), 236: no job input predicts the busiest EP rank's share of the routed tokens, so a plan
    timed at moe_capacity_factor 1.0 says so, quotes what balance missed on runs trained with their own routing
    (risks.yaml moe_natural_routing_measured, sourced to the Megatron-Bridge cards) and how to state a measured load."""
    from trainsizer.messages import render

    out = blocks(model=model, method="pretrain", moe_capacity_factor=factor, moe_routing=routing,
                 strategy={"tp": 1, "pp": 1, "ep": ep, "fsdp": "none", "zero": 1, "micro_batch": 1,
                           "recompute": "full"})
    risk = next((r for r in out.risks if r.id == "moe_routing_unstated"), None)
    assert (risk is not None) == flagged
    if flagged:
        assert "expert parallelism 8" in risk.evidence and "128-expert" in risk.evidence
        assert "0.39-0.77" in risk.evidence and risk.source == "mbridge_model_cards"
        assert "moe_capacity_factor" in risk.mitigation
        assert "排序未考虑" in render(risk.evidence_msg.key, "zh", risk.evidence_msg.params)


@pytest.mark.parametrize("ep, factor, flagged", [
    (8, 1.0, True),     # the derived load is charged: the risk says it is a floor
    (1, 1.0, False),    # EP 1: no rank waits on another
    (8, 2.5, False),    # a stated busiest-rank load is charged as stated
])
def test_natural_routing_names_its_derived_load_a_floor(blocks, ep, factor, flagged):
    """known-gaps 318 (b), (d): under moe_routing natural the step charges the busiest EP rank's expected load on real
    text, the least its source gives, while the Megatron-Bridge fine-tuning steps would take several times it; the
    plan says the load is a floor (not that balance is assumed) and how to state a measured one."""
    from trainsizer.messages import render

    out = blocks(model="qwen3-30b-a3b", method="pretrain", moe_capacity_factor=factor, moe_routing="natural",
                 strategy={"tp": 1, "pp": 1, "ep": ep, "fsdp": "none", "zero": 1, "micro_batch": 1,
                           "recompute": "full"})
    ids = {r.id for r in out.risks}
    assert "moe_routing_unstated" not in ids
    assert ("moe_routing_natural_floor" in ids) == flagged
    if flagged:
        risk = next(r for r in out.risks if r.id == "moe_routing_natural_floor")
        assert "expert parallelism 8" in risk.evidence and "128-expert" in risk.evidence and "floor" in risk.evidence
        assert "2.1-7.3 times its share" in risk.evidence and risk.source == "mbridge_model_cards"
        assert "moe_capacity_factor" in risk.mitigation
        assert "下限" in render(risk.evidence_msg.key, "zh", risk.evidence_msg.params)
