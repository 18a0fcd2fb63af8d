from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import comm
from trainsizer.estimate.calibration import Calibration, load_constants, rates

from .test_perf_common import a100_cluster, h100_cluster


def _r(system, cal=None):
    return rates(system, "bf16", load_constants(), cal)


def test_single_rank_costs_nothing():
    s = h100_cluster()
    r = _r(s)
    assert float(comm.all_reduce_time(1e9, 1, 1, r, s)) == 0.0
    assert float(comm.reduce_scatter_time(1e9, 1, 1, r, s)) == 0.0
    assert float(comm.all_to_all_time(1e9, 1, 1, r, s)) == 0.0


def test_ring_all_reduce_matches_nccl_busbw_inside_a_node():
    s = a100_cluster()
    r = _r(s)
    size = 16 * 2**30
    t = float(comm.all_reduce_time(size, 8, 8, r, s))
    busbw = size / t * 2 * 7 / 8 / 1e9
    assert busbw == pytest.approx(0.8 * 300, rel=0.02)  # network.yaml: A100 ring ~235-240 GB/s


def test_multi_node_busbw_is_nics_per_node_times_nic_rate():
    s = a100_cluster(gpus=16)
    r = _r(s)
    size = 16 * 2**30
    t = float(comm.all_reduce_time(size, 16, 8, r, s))
    busbw = size / t * 2 * 15 / 16 / 1e9
    assert 170 < busbw < 200  # 2x DGX A100 (8x HDR): 192 GB/s measured (nccl#812)


def test_nvls_helps_inside_domain_only():
    on, off = h100_cluster(nvls=True), h100_cluster(nvls=False)
    g = load_constants().nvls_allreduce_gain
    assert float(comm.all_reduce_time(1e9, 8, 8, _r(on), on, g)) < float(comm.all_reduce_time(1e9, 8, 8, _r(off),
                                                                                               off, g))


def test_placement_ranks_per_domain():
    assert float(comm.ranks_per_domain(8, 1, 8)) == 8
    assert float(comm.ranks_per_domain(64, 8, 8)) == 1  # DP across nodes when TP fills the node
    assert float(comm.ranks_per_domain(16, 2, 8)) == 4


@settings(max_examples=40, deadline=None)
@given(n=hs.sampled_from([2, 4, 8, 16, 64, 512]), size=hs.floats(1e3, 1e10), bw=hs.floats(5, 100))
def test_faster_network_never_slower(n, size, bw):
    slow, fast = a100_cluster(inter_gb_s=bw), a100_cluster(inter_gb_s=bw * 2)
    k = min(n, 8)
    for fn in (comm.reduce_scatter_time, comm.all_to_all_time):
        assert float(fn(size, n, k, _r(fast), fast)) <= float(fn(size, n, k, _r(slow), slow)) + 1e-15
    assert float(comm.all_reduce_time(size, n, k, _r(fast), fast)) <= float(
        comm.all_reduce_time(size, n, k, _r(slow), slow)) + 1e-15


def test_pcie_box_is_slower_than_nvlink():
    pcie = a100_cluster().__class__(**{**a100_cluster().__dict__, "intra_node_gb_s": 25.0})
    nv = a100_cluster()
    assert float(comm.all_reduce_time(1e9, 8, 8, _r(pcie), pcie)) > 5 * float(comm.all_reduce_time(1e9, 8, 8,
                                                                                                _r(nv), nv))


def test_calibrated_busbw_is_used():
    s = a100_cluster()
    r = _r(s, Calibration(busbw_intra_gb_s=100.0, busbw_inter_gb_s=80.0))
    assert r.intra_busbw == 100e9
    assert r.inter_nic == pytest.approx(10e9)


def test_all_to_all_and_p2p():
    s = h100_cluster()
    r = _r(s)
    assert float(comm.all_to_all_time(1e9, 16, 8, r, s)) > float(comm.all_to_all_time(1e9, 8, 8, r, s))
    assert float(comm.p2p_time(1e9, np.array(False), r, s)) > float(comm.p2p_time(1e9, np.array(True), r, s))


def _mi300x_node(links: int = 7):
    """8x MI300X on the xGMI UBB: 448 GB/s per direction per GPU over 7 point-to-point links."""
    from trainsizer.estimate.inputs import System

    return System(accelerator="mi300x", gpus=8, gpus_per_node=8, memory_gib=192.0,
                  peak_tflops={"bf16": 1307.4, "fp8": 2614.9}, hbm_gb_s=5300.0, intra_node_gb_s=448.0,
                  scaleup_domain=8, scaleup_mesh_links=links, tdp_w=750.0)


def _busbw_gb_s(s, n: int) -> float:
    size = 8 * 2**30
    t = float(comm.all_reduce_time(size, n, n, _r(s), s))
    return size / t * 2 * (n - 1) / n / 1e9


def test_xgmi_mesh_all_reduce_matches_rccl_measurements():
    # RCCL all-reduce on 8x MI300X: 313 GB/s over 8 GPUs, 47.7 GB/s between 2 (networks.yaml allreduce-8x-mi300x)
    s = _mi300x_node()
    assert _busbw_gb_s(s, 8) == pytest.approx(313, rel=0.03)
    assert _busbw_gb_s(s, 2) == pytest.approx(47.7, rel=0.10)
    assert _busbw_gb_s(s, 4) == pytest.approx(313 * 3 / 7, rel=0.03)


def test_mesh_point_to_point_gets_one_link():
    mesh, switched = _mi300x_node(), _mi300x_node(links=0)
    t_mesh = float(comm.p2p_time(1e9, True, _r(mesh), mesh))
    t_switch = float(comm.p2p_time(1e9, True, _r(switched), switched))
    assert t_mesh > 5 * t_switch  # one of 7 links (64 GB/s) against the whole switch port


@settings(max_examples=30, deadline=None)
@given(k=hs.sampled_from([2, 3, 4, 5, 6, 7, 8]), size=hs.floats(1e6, 1e10))
def test_mesh_groups_never_beat_the_full_node(k, size):
    s = _mi300x_node()
    r = _r(s)
    per_rank = [float(comm.all_to_all_time(size, n, n, r, s)) for n in (k, 8)]
    share = comm.mesh_share(np.array([k, 8]), s)
    assert share[0] <= share[1] == 1.0
    # an all-to-all over k ranks sends (k - 1)/k of the buffer over k - 1 of the 7 links: 8/k times the 8-GPU time
    assert per_rank[0] == pytest.approx((per_rank[1] - s.intra_node_latency_s) * 8 / k + s.intra_node_latency_s)


# --- oversubscribed fabric (System.zone_gpus / oversubscription; Llama 3 paper s3.3.1: 3,072-GPU pods, 1:7)
def _zoned(gpus=8192, zone=3072, o=7.0):
    from dataclasses import replace

    return replace(h100_cluster(gpus=gpus), zone_gpus=zone, oversubscription=o)


def test_non_blocking_fabric_has_every_member_in_one_zone():
    s = h100_cluster(gpus=8192)
    assert float(comm.zone_members(64, 128, s)) == 64
    assert float(comm.p2p_zone_factor(512, 16, s)) == 1.0


def test_ring_across_pods_keeps_the_nic_rate_while_enough_members_share_a_pod():
    """DP outermost (Llama 3's order): a DP ring of 64 with stride 128 has 24 members per 3,072-GPU pod; the pod's
    uplinks (3,072 / 7 NICs) carry the 128 rings that cross it at full rate."""
    s, flat = _zoned(), h100_cluster(gpus=8192)
    m = comm.zone_members(64, 128, s)
    assert float(m) == 24
    assert float(comm.reduce_scatter_time(6e9, 64, 1, _r(s), s, m)) == pytest.approx(
        float(comm.reduce_scatter_time(6e9, 64, 1, _r(flat), flat)))


def test_ring_with_one_member_per_zone_runs_at_nic_over_o():
    s = _zoned(gpus=512, zone=8, o=4.0)
    r = _r(s)
    m = comm.zone_members(64, 8, s)
    assert float(m) == 1
    t0 = float(comm.reduce_scatter_time(8e9, 64, 1, r, s))
    assert float(comm.reduce_scatter_time(8e9, 64, 1, r, s, m)) == pytest.approx(4.0 * t0, rel=0.01)


def test_all_to_all_out_of_zone_share_goes_through_nic_over_o():
    """EP 64 with 8 per node, 32-GPU zones at 2:1: half of each rank's bytes leave the zone at NIC / 2, slower
    than the 56/64 the NIC sends in all."""
    s = _zoned(gpus=64, zone=32, o=2.0)
    r = _r(s)
    nbytes = 4e9
    flat = float(comm.all_to_all_time(nbytes, 64, 8, r, s))
    zoned = float(comm.all_to_all_time(nbytes, 64, 8, r, s, comm.zone_members(64, 1, s)))
    inter = nbytes / r.inter_nic
    assert flat == pytest.approx(56 / 64 * inter, rel=0.01)
    assert zoned == pytest.approx(2.0 * 32 / 64 * inter, rel=0.01)


def test_forwarded_dispatch_slows_by_the_out_of_zone_share():
    s = _zoned(gpus=64, zone=32, o=4.0)
    r = _r(s)
    m = comm.zone_members(64, 1, s)
    t0 = float(comm.forwarded_all_to_all_time(1e9, 1e8, 64, 8, r, s))
    t1 = float(comm.forwarded_all_to_all_time(1e9, 1e8, 64, 8, r, s, m))
    assert t1 / t0 == pytest.approx(4.0 * 32 / 56, rel=0.02)  # (n - m) / (n - k) of the copies at NIC / 4


def test_pipeline_hops_crossing_pods():
    s = _zoned()
    assert float(comm.p2p_zone_factor(8, 16, s)) == 1.0  # 128 ranks: inside one pod
    # stride 512: one hop in 6 crosses, 512 flows through 3,072 / 7 NIC ports
    assert float(comm.p2p_zone_factor(512, 16, s)) == pytest.approx(1 + 512 / 3072 * (512 * 7 / 3072 - 1))
    assert float(comm.p2p_zone_factor(4096, 2, s)) == pytest.approx(7.0)  # every rank of the pod sends across


@settings(max_examples=40, deadline=None)
@given(n=hs.sampled_from([2, 8, 64, 512]), stride=hs.sampled_from([1, 8, 64, 512]),
       zone=hs.sampled_from([8, 64, 512, 4096]), o=hs.floats(1.0, 16.0))
def test_oversubscription_never_speeds_a_collective_up(n, stride, zone, o):
    s = _zoned(gpus=8192, zone=zone, o=o)
    r = _r(s)
    k = comm.ranks_per_domain(n, stride, 8)
    m = comm.zone_members(n, stride, s)
    for f in (comm.reduce_scatter_time, comm.all_to_all_time):
        assert float(f(1e9, n, k, r, s, m)) >= float(f(1e9, n, k, r, s)) * (1 - 1e-12)
    more = _zoned(gpus=8192, zone=zone, o=o * 2)
    assert float(comm.all_to_all_time(1e9, n, k, r, more, m)) >= float(comm.all_to_all_time(1e9, n, k, r, s, m))


def test_zone_smaller_than_the_scale_up_domain_does_not_touch_its_traffic():
    """NVL72-like: 72 GPUs per NVLink domain, 36-GPU fabric zones at 1:4. A group inside the domain never uses the
    scale-out fabric; one spanning two domains leaves its domain (and so its zones) at the domain's cut only."""
    from dataclasses import replace

    s = replace(h100_cluster(gpus=144), scaleup_domain=72, zone_gpus=36, oversubscription=4.0)
    flat = replace(s, zone_gpus=0, oversubscription=1.0)
    r = _r(s)
    m_in = comm.zone_members(72, 1, s)
    assert float(m_in) == 36
    for f in (comm.reduce_scatter_time, comm.all_to_all_time):
        assert float(f(1e9, 72, 72, r, s, m_in)) == pytest.approx(float(f(1e9, 72, 72, r, flat)))
    m_two = comm.zone_members(144, 1, s)
    assert float(comm.all_to_all_time(1e9, 144, 72, r, s, m_two)) == pytest.approx(
        max(72 / 144 * 1e9 / r.inter_nic * 4.0, float(comm.all_to_all_time(1e9, 144, 72, r, flat))), rel=1e-3)
