"""A rented cluster's network and storage blocks describe the provider's fabrics and file system: nothing to buy
(plan/buildout/rented.py); the owned sizing stays behind the buy-vs-rent comparison."""

from __future__ import annotations

import pytest

from trainsizer.plan.buildout.bom_lines import fabric_lines


def test_rented_fabrics_are_the_providers_with_no_switch_to_buy(blocks, build):
    out = blocks(goal={"procurement": "rent"})
    net = out.network
    for fab in (net.compute, net.storage, net.inband, net.oob):
        if fab is None:
            continue
        assert fab.provided and fab.switch is None and fab.parts == [] and fab.leaves is None
    assert net.switches == [] and net.links == [] and net.sharp is None
    assert "provider" in net.subnet_manager
    # what to ask for: the ports and line rate the estimate ran on, on one non-blocking fabric
    assert (net.compute.ports_per_node, net.compute.gbps_per_port) == (8, 400.0)
    assert "non-blocking" in str(net.compute.notes[0])
    # no fabric line of its own; the buy-vs-rent capex still counts the switches owning the cluster would take
    assert fabric_lines(build(goal={"procurement": "rent"}), net) == []
    bought = blocks(goal={"procurement": "buy"})
    assert bought.network.compute.switch is not None and bought.network.compute.leaves >= 1
    assert out.bom.buy_vs_rent.capex == bought.bom.totals


def test_rented_storage_names_no_appliance_but_what_to_ask_for(blocks):
    out = blocks(goal={"procurement": "rent"})
    bought = blocks(goal={"procurement": "buy"})
    st = out.storage
    assert bought.storage.appliance is not None and bought.storage.appliances >= 1
    assert st.appliance is None and st.appliances == 0
    assert st.capacity_tb == bought.storage.capacity_tb and st.loader_read_gb_s == bought.storage.loader_read_gb_s
    note = str(st.notes[0])
    assert "no appliance to buy" in note and f"{st.loader_read_gb_s.value:g} GB/s read" in note


def test_rented_texts_read_in_chinese_too(blocks):
    """The rented fabric's topology and notes are catalogue messages, so a zh report renders them in Chinese."""
    net = blocks(goal={"procurement": "rent"}).network
    assert net.compute.topology_msg is not None and net.compute.topology_msg.key == "net_topology_rented"
    assert net.compute.notes_msg and net.compute.notes_msg[0].key == "net_note_rented_compute"
    assert net.subnet_manager_msg is not None


def test_rented_diagram_draws_no_switch_tier(blocks):
    """The architecture diagram of a rented plan shows the provider's fabric, not leaf switches to buy."""
    from trainsizer.render.report.topology import _from_build

    out = blocks(goal={"procurement": "rent"}).model_dump(mode="json", by_alias=True)
    fields = _from_build(out["network"], out["storage"])
    assert fields["tiers"] == () and fields["provided"] is True
    assert "pfs-appliance" not in (fields["storage"] or "") and "run by the provider" in fields["management"]


def test_rented_fabric_reads_as_one_phrase(blocks):
    """The diagram's fabric label of a rented plan is one phrase in en and zh ('RoCE fabric run by the provider
    (rented)'), not the kind glued to the table's topology sentence ('InfiniBand the provider's: nothing to buy')."""
    from trainsizer.plan.texts import say
    from trainsizer.render.report.topology import _from_build

    out = blocks(goal={"procurement": "rent"})
    dumped = out.model_dump(mode="json", by_alias=True)
    assert _from_build(dumped["network"], dumped["storage"])["fabric"] == "InfiniBand fabric run by the provider (rented)"
    assert _from_build(dumped["network"], dumped["storage"], "zh")["fabric"] == "服务商提供的 InfiniBand 网络（租用）"
    topology = out.network.compute.topology_msg.model_dump()
    assert say(topology, "en") == "rented, run by the provider: nothing to buy"
    assert say(topology, "zh") == "租用，由服务商提供：无需采购"


def test_one_rented_node_rents_a_persistent_volume_not_local_nvme(blocks):
    """A single rented instance has no shared storage to rent; its local NVMe ends with the instance, so the line
    asks for a persistent volume (it read 'shared storage to rent: local NVMe + NFS'). Several nodes keep the tier."""
    from trainsizer.plan.texts import say

    one = blocks(goal={"procurement": "rent"}, hardware={"count": 8, "network": None})
    line = next(ln for ln in one.bom.lines if ln.unit == "per_tb_month")
    assert "persistent" in line.item and "NFS" not in line.item
    assert line.item_msg is not None and "持久存储" in say(line.item_msg.model_dump(), "zh")
    many = blocks(goal={"procurement": "rent"})
    line = next(ln for ln in many.bom.lines if ln.unit == "per_tb_month")
    assert line.item.startswith("shared storage to rent")


def test_a_rental_longer_than_a_term_lists_the_reserved_term_and_the_rest_as_evaluate_prices_it(blocks, build):
    """known-gaps 34 (a): the BOM rents whole committed terms at the reserved rate and the rest on demand, the
    two lines adding up to what `evaluate` charges the job; the buy-vs-rent 'rent for this job' is that sum."""
    from trainsizer.evaluate import evaluate
    from trainsizer.scenario import resolve_job

    from .conftest import make_job

    changes = {"goal": {"procurement": "rent", "deadline_days": None}, "data": {"tokens": 4.4e12},
               "method": "pretrain"}
    b = build(**changes)
    assert b.train_days > 365
    out = blocks(**changes)
    rented = [ln for ln in out.bom.lines if ln.unit == "per_gpu_hour"]
    assert len(rented) == 2 and rented[0].unit_price.typical < rented[1].unit_price.typical
    assert "12-month committed term" in str(rented[0].item)
    cost = evaluate(resolve_job(make_job(**changes), b.catalog), b.catalog)["cost"]["rent"]
    total = sum(ln.total["typical"] for ln in rented)
    assert total == pytest.approx(cost["mid"], rel=1e-6)
    assert out.bom.buy_vs_rent.rent_for_job == pytest.approx(cost["mid"], rel=1e-6)
