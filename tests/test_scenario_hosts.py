"""Hosts vs scale-up domains (GB200 NVL72: 4-GPU trays in a 72-GPU NVLink domain), power caps from the catalog."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate import estimate_time
from trainsizer.scenario import domain_shares, job_domain_gpus, resolve_job

JOB = {"model": "llama-3.1-70b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
       "global_batch": {"sequences": 256}}


def _job(count: int, **hw) -> dict:
    return {**JOB, "global_batch": {"sequences": max(1, count // 4) * 2}, "hardware": {"accelerator": "gb200", "count": count, "network": "ib-ndr400", **hw},
            "strategy": {"tp": 4, "pp": 1, "micro_batch": 1, "zero": 1, "distributed_optimizer": True}}


@pytest.mark.parametrize("count, domain", [(4, 4), (36, 36), (72, 72), (128, 64), (256, 64), (144, 72),
                                           (1152, 72), (100, 48)])
def test_whole_tray_jobs_of_any_size(count, domain):
    sc = resolve_job(_job(count), load_catalog())
    assert sc.system.gpus_per_node == min(4, count)  # the catalog's tray size, not 8 and not 72
    assert sc.system.scaleup_domain == domain
    assert sc.system.gpus % sc.system.scaleup_domain == 0 or count < 72 or count == 100  # 100: 52 + 48
    est = estimate_time(sc.model, sc.training, sc.system, sc.strategy)
    assert est.step_s > 0


def test_partial_tray_is_refused_with_the_host_size():
    with pytest.raises(SpecError, match="4-GPU hosts"):
        resolve_job(_job(130), load_catalog())


def test_tray_nics_follow_the_gpus():
    """A catalog network's NIC count is per 8-GPU node; a 4-GPU tray keeps one NIC per GPU."""
    sc = resolve_job(_job(128), load_catalog())
    assert sc.network.nics_per_node == 4
    assert sc.system.inter_node_gb_s == pytest.approx(400 / 8 * sc.network.efficiency)


def test_domain_placement_rule():
    assert job_domain_gpus(8, 8, 64) == 8  # an HGX node is its own domain
    assert job_domain_gpus(2, 8, 16) == 2  # bridged pairs inside a PCIe host: unchanged
    assert job_domain_gpus(72, 4, 128) == 64
    assert job_domain_gpus(72, 4, 40) == 40


@pytest.mark.parametrize("gpus, shares", [
    (128, (64, 64)), (144, (72, 72)), (256, (64,) * 4), (576, (72,) * 8), (512, (64,) * 8),
    # an even share that leaves 2 trays of a rack free (NVIDIA's 16 of 18) is kept, one more rack than the fewest
    (2496, (64,) * 39),
    # no even share of at least 16 trays divides 200: the fewest racks, in whole 8-GPU groups (was 5 racks of 40)
    (200, (72, 64, 64)), (100, (52, 48))])
def test_domain_shares_are_the_racks_bought(gpus, shares):
    """55 (f): the placement the estimate times is the racks the plan buys: every GPU placed, whole trays, and no
    more racks than the fewest unless each keeps at most 2 trays free."""
    got = domain_shares(72, 4, gpus)
    assert got == shares and sum(got) == gpus and all(s % 4 == 0 and s <= 72 for s in got)
    assert len(got) == -(-gpus // 72) or min(got) >= 64
    assert job_domain_gpus(72, 4, gpus) == min(shares)


def test_packed_placement_keeps_groups_of_its_tile_whole():
    """200 GB200 in 3 racks: each rack holds whole 8-GPU groups (TP 8 never straddles), and the estimate times the
    smallest rack's share, with a note naming the racks (en / zh)."""
    assert all(s % 8 == 0 for s in domain_shares(72, 4, 200))
    sc = resolve_job(_job(200), load_catalog())
    assert sc.system.scaleup_domain == 64
    said = [str(n) for n in sc.notes if "72 + 64 + 64" in str(n)]
    assert said and "3 racks" in said[0] and "5 racks of 40" in said[0]


def test_tp_inside_the_domain_is_faster_than_across_hosts_of_8():
    """TP=8 on NVL72 stays on NVLink across trays; the same TP split over PCIe-linked hosts would not."""
    sc = resolve_job({**_job(128), "strategy": {"tp": 8, "micro_batch": 1, "distributed_optimizer": True}},
                     load_catalog())
    w = estimate_time(sc.model, sc.training, sc.system, sc.strategy).notes
    assert not any(n.startswith("tp_across_nodes") for n in w)


@pytest.mark.parametrize("acc, per_node, host", [("gb200", 8, 4), ("gb300", 72, 4)])
def test_per_node_above_the_tray_is_refused(acc, per_node, host):
    """8 per node on an NVL72 rack (4-GPU trays) names the field, the tray size and what is allowed."""
    job = _job(144, per_node=per_node)
    job["hardware"]["accelerator"] = acc
    with pytest.raises(SpecError) as err:
        resolve_job(job, load_catalog())
    assert err.value.where.endswith("hardware.per_node") and err.value.value == per_node
    assert f"holds {host}" in str(err.value) and f"at most {host}" in str(err.value)


def test_part_of_a_tray_per_node_is_a_job_on_part_of_each_host():
    sc = resolve_job(_job(8, per_node=2), load_catalog())
    assert sc.system.gpus_per_node == 2 and sc.system.nodes == 4


@pytest.mark.parametrize("acc, per_node, limit", [("h100-sxm-80gb", 16, 8), ("mi300x", 16, 8), ("b200", 9, 8),
                                                 ("ascend-910b", 16, 8), ("gb200", 8, 4)])
def test_per_node_above_the_board_is_refused(acc, per_node, limit):
    """An HGX / UBB board is the host of an SXM / OAM part: 16 H100 SXM per node does not exist, and would be
    estimated as one 16-GPU host (catalog host_gpus_max)."""
    job = {**JOB, "hardware": {"accelerator": acc, "count": 2 * per_node, "per_node": per_node,
                               "network": "ib-ndr400"}}
    with pytest.raises(SpecError, match=f"holds {limit}") as err:
        resolve_job(job, load_catalog())
    assert "hardware.per_node" in str(err.value)


@pytest.mark.parametrize("acc, per_node", [("l40s", 10), ("rtx-4090", 10), ("h100-pcie-80gb", 8),
                                           ("v100-sxm-32gb", 16), ("ascend-910c", 16), ("h100-sxm-80gb", 4)])
def test_per_node_where_servers_hold_it(acc, per_node):
    """PCIe cards have no board limit (10-card servers exist); DGX-2 holds 16 V100; fewer than a board is allowed."""
    job = {**JOB, "hardware": {"accelerator": acc, "count": 2 * per_node, "per_node": per_node,
                               "network": "ib-ndr400"}}
    assert resolve_job(job, load_catalog()).system.gpus_per_node == per_node


@pytest.mark.parametrize("acc, per_node", [("h100-sxm-80gb", 4), ("mi325x", 3), ("mi300x", 2)])
def test_part_of_an_8_gpu_board_a_host_is_one_domain_of_the_jobs_gpus_there(acc, per_node):
    """16 H100 as 4 hosts of 4 (4-GPU slices of HGX boards) with TP 8 were timed as one 8-GPU NVLink domain across two
    hosts (step time, TP time and 'scaleup_domains 2 of 8' as on 2 hosts of 8), and 12 MI325X at 3 a host read
    '4 trays of 3 in 2 scale-up domains of 8' (plan --per-node 3): a board's domain is its host, so the job's domain is its GPUs there
    and a TP group over them crosses the network."""
    cat = load_catalog()
    count = 8 * per_node
    job = {**JOB, "global_batch": {"sequences": 48},
           "hardware": {"accelerator": acc, "count": count, "per_node": per_node, "network": "ib-ndr400"}}
    sc = resolve_job(job, cat)
    assert sc.system.scaleup_domain == per_node
    assert "scaleup_domains" not in sc.summary()["hardware"]
    full = resolve_job({**job, "hardware": {**job["hardware"], "per_node": 8}}, cat)
    assert full.system.scaleup_domain == 8
    tp = {"tp": 8, "pp": 1, "micro_batch": 1, "recompute": "full"}
    sliced = estimate_time(sc.model, sc.training, sc.system, resolve_job({**job, "strategy": tp}, cat).strategy)
    whole = estimate_time(full.model, full.training, full.system, resolve_job({**job, "strategy": tp}, cat).strategy)
    # 1.9x on H100 4 a host: the whole board's sequence-parallel collectives are NVLink rings with no NVLS gain
    # (step_time._sp_pair_time, known-gaps 82); above 2x while they carried it
    assert sliced.breakdown_s["tp_comm"] > 1.5 * whole.breakdown_s["tp_comm"]
