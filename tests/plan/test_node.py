import pytest

from trainsizer.plan.buildout.node import node_block


def test_breakdowns_add_up(build):
    n = node_block(build())
    assert n.cpu_cores.value == sum(n.cpu_cores_breakdown.values())
    assert n.ram_gib.value == pytest.approx(sum(n.ram_breakdown_gib.values()), abs=0.1)
    assert n.server == "dgx-h100" and n.enough == {"cpu_cores": True, "ram_gib": True, "nvme_tb": True}


def test_offload_needs_host_ram_and_cores(build):
    plain = node_block(build())
    off = node_block(build(strategy={"offload": "optimizer"}))
    assert off.ram_breakdown_gib["offloaded_states"] > 0 == plain.ram_breakdown_gib["offloaded_states"]
    # the memory estimate's host figure, the one the plan prices (evaluate.host_ram_block): one fact, not two
    b = build(strategy={"offload": "optimizer"})
    assert off.ram_breakdown_gib["offloaded_states"] == pytest.approx(b.evaluation["memory"]["host_gib_per_node"],
                                                                      abs=0.01)
    # fp32 master + Adam moments (12 B/param) + ZeRO-Offload's fp32 gradient partition (4 B/param), sharded over
    # dp 16, for the node's 8 GPUs
    params = 8.03e9
    assert off.ram_breakdown_gib["offloaded_states"] == pytest.approx(params * 16 / 16 * 8 / 2**30, rel=0.02)
    assert off.cpu_cores_breakdown["cpu_adam_offload"] >= 1


def test_async_checkpoint_share_shrinks_with_nodes(build):
    two = node_block(build())
    eight = node_block(build(hardware={"count": 64}))
    assert eight.ram_breakdown_gib["async_checkpoint_staging"] == pytest.approx(
        two.ram_breakdown_gib["async_checkpoint_staging"] / 4, rel=0.01)


def test_nvl72_tray_is_compared_with_its_share_of_the_rack(build):
    """A node of an NVL72 rack is one 4-GPU tray with 2 Grace CPUs (144 cores) and 960 GiB of LPDDR5X: the
    derived needs are checked against that share, not against the whole 72-GPU rack."""
    b = build(hardware={"accelerator": "gb200", "count": 128, "per_node": 4, "network": "ib-ndr400"},
              constraints={"cooling": "liquid"}, global_batch={"sequences": 128})
    n = node_block(b)
    assert (n.server_cpu_cores, n.server_ram_gib) == (2592 * 4 // 72, pytest.approx(17280 * 4 / 72))
    assert n.notes_msg[0].key == "node_note_rack_tray_sourced" and "nv_gb200_nvl72_table" in n.notes[0]


def test_part_of_an_hgx_server_still_has_the_whole_host(build):
    n = node_block(build(hardware={"count": 4, "per_node": 4}))
    assert n.server_cpu_cores == build().server.cpu_cores and n.notes_msg[0].key == "node_note_partial_server"


def test_a_workstation_is_not_headed_by_the_catalogs_bigger_rack_server(blocks):
    """A bought 4 x L40S workstation is a box of its own 4 GPUs: the node block names no server (was pcie-8x-l40s,
    an 8-card rack server, while the facility block said 'a workstation on one wall circuit') and says which
    server it set aside; a 4-GPU node of a cluster of those servers keeps the server."""
    out = blocks(model="llama-3.1-8b", method="lora", goal={"procurement": "buy"},
                 hardware={"accelerator": "l40s", "count": 4, "per_node": 4, "network": None},
                 strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"},
                 global_batch={"sequences": 8})
    assert out.facility.site == "workstation"
    assert out.node.server is None and out.node.server_cpu_cores is None
    notes = " ".join(str(n) for n in out.node.notes)
    assert "pcie-8x-l40s" in notes and "workstation" in notes
    cluster = blocks(model="llama-3.1-8b", method="lora", goal={"procurement": "buy"},
                     hardware={"accelerator": "l40s", "count": 8, "per_node": 4, "network": "roce-100"},
                     strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"},
                     global_batch={"sequences": 8})
    assert cluster.node.server == "pcie-8x-l40s"


def test_a_box_no_catalog_server_holds_is_stated_as_an_assumption(build):
    """8 RTX 5090: no catalog server record holds the card, so the 8 to a box is the search's assumption; the node
    block says so with the GPU power the chassis must carry. A catalog server's node says nothing of the kind."""
    node = node_block(build(hardware={"accelerator": "rtx-5090", "count": 8, "network": None}))
    assert node.server is None and node.gpus_per_node == 8
    said = " ".join(str(n) for n in node.notes)
    assert "no catalog server holds rtx-5090" in said and "8 x 575 W (4.6 kW" in said
    assert not any("no catalog server" in str(n) for n in node_block(build()).notes)
    rented = node_block(build(hardware={"accelerator": "rtx-5090", "count": 8, "network": None},
                              goal={"procurement": "rent"}))
    said = " ".join(str(n) for n in rented.notes)
    assert "share one instance" in said and "builder" not in said


def test_a_rented_card_is_the_providers_instance_not_the_catalog_box(blocks):
    """A rented node of one L40S read "Node ... pcie-8x-l40s" and "the job uses 1 of the 8 GPUs of pcie-8x-l40s;
    server figures are whole-server" beside a Server column of dashes: a rented instance names no catalog server."""
    from trainsizer.messages import tr

    out = blocks(hardware={"accelerator": "l40s", "count": 1, "per_node": 1, "network": None},
                 goal={"procurement": "rent"}, global_batch={"sequences": 8})
    assert out.node.server is None
    assert not any("whole-server" in tr(n, "en") for n in out.node.notes)
    bought = blocks(hardware={"accelerator": "l40s", "count": 1, "per_node": 1, "network": None},
                    goal={"procurement": "buy"}, global_batch={"sequences": 8})
    assert bought.node.server is None  # a bought workstation sizes its own host, as before
