import pytest

from trainsizer.plan.buildout.network import network_block


def test_two_nodes_one_switch_and_converged_storage(build):
    net = network_block(build())
    assert net.compute.topology == "single switch" and net.compute.leaves == 1
    assert net.compute.links["node_leaf"] == 16
    assert net.storage.purpose == "converged" and net.inband is None
    assert net.oob.links["node_leaf"] >= 2 + 2  # 2 BMCs + the switches
    assert net.gpudirect_rdma and net.sharp == "v3"
    assert net.nvlink.gpus_per_domain == 8 and net.nvlink.domains == 2


def test_64_nodes_rail_optimised_with_separate_fabrics(build):
    b = build(hardware={"count": 512}, global_batch={"sequences": 512})
    net = network_block(b, storage_servers=4, pdus=40)
    c = net.compute
    assert c.topology == "rail-optimised fat tree, 2 tiers"
    assert (c.leaves, c.spines) == (16, 8)  # 2 SU x 8 rails; 512 uplinks / 64
    assert net.storage.purpose == "storage" and net.inband is not None
    roles = {p.role for p in c.parts}
    assert "leaf-spine switch transceiver" in roles and "node-leaf fibre" in roles
    assert "40 PDUs" not in net.oob.notes[0] and net.oob.links["node_leaf"] >= 64 + 40 + 4


def test_allreduce_links_strategy_to_fabric(build):
    net = network_block(build())
    ar = net.allreduce
    assert ar.ranks == 16 and ar.ranks_per_domain == 8
    assert ar.busbw_gb_s > 0 and ar.time_s > 0
    # 8B params in bf16 grads over a 2-node ring: at least the bytes over the NIC payload
    assert ar.time_s >= 2 * 15 / 16 * ar.bytes_per_rank_gb / ar.busbw_gb_s * 0.999


def test_one_node_has_no_switched_fabric(build):
    net = network_block(build(hardware={"count": 8, "network": None}))
    assert net.compute is None and net.storage is None and net.oob is None


def test_cloud_efa_is_provider_managed(build):
    net = network_block(build(hardware={"network": "efa-v3"}))
    assert net.compute.kind == "provider" and net.compute.parts == []


def test_roce_gets_lossless_rules(build):
    net = network_block(build(hardware={"network": "roce-400"}))
    assert net.compute.kind == "roce" and net.lossless is not None and "PFC" in net.lossless.value


def test_speed_without_catalog_switch_is_unsized_not_invented(build):
    net = network_block(build(hardware={"network": {"nics_per_node": 2, "gbps_per_nic": 50, "kind": "roce"}}))
    assert net.compute.topology == "unsized" and net.compute.leaves == 0
    assert "no roce switch" in net.compute.notes[0]


def test_job_fabric_is_the_tree_the_build_out_sizes(build):
    """hardware.fabric (1:4 above one-node zones): the all-reduce row runs on it, and the compute fabric is sized
    for it: each leaf serves up to 64 x 4 / 5 = 51 nodes' rails at down:up 4 (whole one-node zones), so fewer leaves
    and spines and leaf-spine cables than the non-blocking tree, and the note says what it saved."""
    from trainsizer.plan.buildout.fabric import port_violations, size_zoned_tree

    plain = network_block(build(hardware={"count": 512}, global_batch={"sequences": 512}))
    zoned = network_block(build(hardware={"count": 512, "fabric": {"oversubscription": 4, "zone_gpus": 8}},
                                global_batch={"sequences": 512}))
    assert (plain.compute.leaves, plain.compute.spines) == (16, 8) and plain.compute.zone_nodes is None
    c = zoned.compute
    assert (c.leaves, c.spines, c.oversubscription, c.oversubscribed_at) == (16, 2, 4.0, "leaf")  # 32 nodes per leaf, 8 uplinks each
    assert c.links["leaf_spine"] < plain.compute.links["leaf_spine"] and c.links["node_leaf"] == 512
    assert not any("hardware.fabric" in str(n) for n in plain.compute.notes)
    assert any("1:4" in str(n) and "16 leaf / 2 spine" in str(n) and "16 / 8 / 0" in str(n) for n in c.notes)
    assert not port_violations(size_zoned_tree(64, 8, 64, 1, 4.0))
    # DP 512 with 8 per node: the ring's zone cut is one node's 8 NDR400 NICs (47 GB/s payload each) over 4
    assert zoned.allreduce.busbw_gb_s == pytest.approx(8 * 47.0 / 4, rel=0.01)
    assert zoned.allreduce.busbw_gb_s < plain.allreduce.busbw_gb_s
    assert zoned.allreduce.time_s > plain.allreduce.time_s


def test_a_management_part_is_described_for_every_link_it_serves(build):
    """The OOB switches' uplinks reuse the in-band 100G AOC: its description names both uses, not only
    'node to SN4600C' (an uplink runs switch to switch)."""
    b = build(hardware={"count": 512}, global_batch={"sequences": 512})
    net = network_block(b, storage_servers=4, pdus=40)
    uplink = [p for p in net.oob.parts if "uplink" in str(p.role)]
    assert uplink
    for line in uplink:
        name = b.catalog.part(line.part).name
        assert "out-of-band" in name and "uplink" in name, name
    for line in net.inband.parts:
        assert "in-band" in b.catalog.part(line.part).name


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_exposed_dp_time_is_labelled_as_the_whole_dp_term(build, lang):
    """Under FSDP the exposed figure is the step model's whole data-parallel term (gathers in every micro-batch),
    larger than the gradient all-reduce beside it: its label says so, in either language."""
    from trainsizer.render.report.i18n import field_label

    ar = network_block(build(global_batch={"sequences": 256})).allreduce
    assert ar.exposed_s_per_step > ar.time_s
    assert "ZeRO-3/FSDP" in field_label("exposed_s_per_step", lang)


def test_allreduce_busbw_is_the_one_its_time_assumes(build):
    """comm.ring_busbw is the bandwidth all_reduce_time divides by (the block asked hasattr(comm, '_busbw'))."""
    ar = network_block(build()).allreduce
    ring = 2 * 15 / 16 * ar.bytes_per_rank_gb / ar.busbw_gb_s
    assert ring <= ar.time_s < ring * 1.01


def _nvl72(build):
    return build(hardware={"accelerator": "gb200", "count": 128, "per_node": 4, "network": "ib-ndr400"},
                 constraints={"cooling": "liquid"}, global_batch={"sequences": 128})


def test_nvl72_tray_gets_its_share_of_the_rack_storage_nics(build):
    """The GB200 NVL72 record counts 36 BlueField-3 storage NICs for the rack's 18 trays: a 4-GPU tray has 2
    (DGX GB200 user guide), so 32 trays need 64 storage ports (+ the storage servers'), not 32 x 36."""
    from trainsizer.plan.buildout.mgmt import storage_ports

    b = _nvl72(build)
    assert storage_ports(b) == (2, 400.0)
    net = network_block(b, storage_servers=1)
    assert net.storage.ports_per_node == 2 and net.storage.links["node_leaf"] == 32 * 2 + 2
    assert net.compute.ports_per_node == 4 and net.compute.links["node_leaf"] == 128


def test_hgx_storage_nics_are_the_servers(build):
    from trainsizer.plan.buildout.mgmt import storage_ports

    b = build()
    assert storage_ports(b) == (b.server.storage_nics.count, float(b.server.storage_nics.gbps))


def test_one_domain_allreduce_runs_nvls(build):
    """8 H100 on one NVSwitch: the all-reduce the plan expects is NVLS (ring busbw x perf_constants nvls gain), as
    the step model times it, and its time divides by that busbw."""
    from trainsizer.estimate import comm
    from trainsizer.estimate.calibration import load_constants, rates

    b = build(hardware={"count": 8, "network": None})
    one = network_block(b).allreduce
    ring_busbw = float(comm.ring_busbw(8, 8, rates(b.system, "bf16"), b.system)) / 1e9
    assert one.ranks == one.ranks_per_domain == 8
    assert one.busbw_gb_s == pytest.approx(ring_busbw * load_constants().nvls_allreduce_gain)
    ring = 2 * 7 / 8 * one.bytes_per_rank_gb / one.busbw_gb_s
    assert ring <= one.time_s < ring * 1.01


def test_one_nvl72_rack_is_two_rail_group_switches(build):
    """One GB200 NVL72 rack: 72 compute NICs, 4 rails of 18 trays. Its NVLink domain spans all four rails, so the
    compute fabric is one tier of two 64-port switches holding two whole rails each (not 4 leaves + 2 spines):
    72 node links on 36 twin-port 2x400G DAC splitters, no leaf-spine optics, an embedded SM on each switch."""
    b = build(hardware={"accelerator": "gb200", "count": 72, "per_node": 4, "network": "ib-ndr400"},
              constraints={"cooling": "liquid"}, global_batch={"sequences": 72})
    net = network_block(b)
    c = net.compute
    assert (c.tiers, c.leaves, c.spines, c.links["leaf_spine"]) == (1, 2, 0, 0)
    assert c.topology_msg.key == "net_topology_rail_groups" and net.rails == 4
    assert [(p.quantity, p.role) for p in c.parts] == [(36, "node-leaf cable")]
    assert "each of the 2" in net.subnet_manager
    two = network_block(build(hardware={"accelerator": "gb200", "count": 144, "per_node": 4, "network": "ib-ndr400"},
                              constraints={"cooling": "liquid"}, global_batch={"sequences": 144})).compute
    assert (two.tiers, two.leaves, two.spines) == (2, 8, 3)  # 144 ports: more than two switches' whole rails


def test_rail_groups_need_nvlink_across_the_rails(build):
    """A PCIe node (no NVLink to forward cross-rail traffic) keeps leaves and spines for the same ports."""
    from trainsizer.plan.buildout.network import rail_groups_max

    assert rail_groups_max(build()) == 2  # 8 H100 on NVSwitch, 8 NICs
    b = build(hardware={"accelerator": "l40s", "count": 128, "per_node": 8, "network": "ib-ndr400"},
              global_batch={"sequences": 128})
    assert b.nics_per_node == 8 and rail_groups_max(b) == 0


def test_nvl72_storage_and_inband_share_one_ethernet_fabric_at_any_size(build):
    """DGX SuperPOD GB200 RA: storage and in-band ride one converged Ethernet fabric (the trays' BlueField-3 ports),
    also past 32 nodes, where HGX clusters get RA-11333's separate storage fabric (InfiniBand on an IB job)."""
    b = build(hardware={"accelerator": "gb200", "count": 576, "per_node": 4, "network": "ib-ndr400"},
              constraints={"cooling": "liquid"}, global_batch={"sequences": 576})
    net = network_block(b, storage_servers=2)
    assert (net.storage.purpose, net.storage.kind, net.inband) == ("converged", "ethernet", None)
    assert net.storage.source == "superpod_gb200_ra"
    hgx = network_block(build(hardware={"count": 512}, global_batch={"sequences": 512}), storage_servers=2)
    assert (hgx.storage.purpose, hgx.storage.kind) == ("storage", "ib") and hgx.inband is not None


def test_one_nvl72_rack_without_a_network_buys_no_compute_fabric(blocks):
    """72 GB200 written without hardware.network (known-gaps 43 (c)): no compute fabric, no slow-network risk (no
    NIC is crossed), the across-tray acceptance floor on the NVLink path; storage and management fabrics stay."""
    out = blocks(hardware={"accelerator": "gb200", "count": 72, "per_node": 4, "network": None},
                 constraints={"cooling": "liquid"}, global_batch={"sequences": 72})
    net = out.network
    assert net.compute is None and net.storage is not None and net.nvlink.gpus_per_domain == 72
    assert "multi_node_on_slow_network" not in {r["id"] if isinstance(r, dict) else r.id for r in out.risks}
    acc = out.acceptance
    assert acc.busbw_inter_gb_s_min.all_gather.value == acc.busbw_intra_gb_s_min.all_gather.value
    assert acc.nic_count_min.value == 4 and "gb200-nvl72" in acc.nic_count_min.source  # the tray, not DGX B200



def test_a_geforce_node_states_the_host_staged_rate_the_estimate_times(build):
    """8 RTX 5090 in one box: the driver refuses PCIe peer-to-peer, so the block carries the host-staged rate beside the
    link's 126 GB/s; an HGX node has none."""
    net = network_block(build(hardware={"accelerator": "rtx-5090", "count": 8, "network": None}))
    assert net.nvlink.tech == "pcie" and net.nvlink.host_staged_gb_s_per_dir == 20.0
    assert net.nvlink.gb_s_per_gpu_bidir == 126.0
    assert network_block(build()).nvlink.host_staged_gb_s_per_dir is None


def test_the_storage_and_management_links_per_node_are_in_gb_per_s_as_named(build):
    """storage_fabric / management_fabric `gbps_per_node` held ports x Gb/s / 8 (GB/s): a node's 2 x 200 Gb/s converged
    link read 'Per node: 50 Gb/s' in the report, and the 1 GbE management port '0.12 Gb/s'."""
    net = network_block(build())
    s, m = net.storage, net.oob
    assert net.storage_fabric["gbps_per_node"] == s.ports_per_node * s.gbps_per_port
    assert net.management_fabric["gbps_per_node"] == m.ports_per_node * m.gbps_per_port


@pytest.mark.parametrize("acc, link", [("mi300x", "xGMI"), ("h100-sxm-80gb", "NVLink")])
def test_the_allreduce_formula_names_the_parts_scale_up_link(build, acc, link):
    """'busbw = min(NVLink busbw, ...)' was written for MI300X nodes too (xGMI; 43 (l) named it elsewhere)."""
    from trainsizer.messages import tr

    net = network_block(build(hardware={"accelerator": acc}))
    formula = tr(net.allreduce.formula, "en")
    assert f"min({link}" in formula and (link == "NVLink" or "NVLink" not in formula)
    assert f"min({link}" in tr(net.allreduce.formula, "zh")
