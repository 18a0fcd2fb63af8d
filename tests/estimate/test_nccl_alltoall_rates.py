"""NCCL's all-to-all rates (step_time.nccl_alltoall_rates; docs/known-gaps.md 95): on an NVSwitch fabric its NVLink
busbw at perf_constants.yaml comm.nccl_alltoall_busbw_fraction of the link instead of the ring's, off-node the
network's measured all-to-all share of its ring payload (networks.yaml alltoall_payload_share), and only for the
NCCL EP dispatchers: Megatron-Core / torchtitan / HF alltoall, never DeepEP / HybridEP (flex) nor DeepSeek's own
kernels (deepseek-dualpipe)."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, nccl_alltoall_rates
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, mixtral

TR = Training(seq_len=4096, global_batch_seqs=64)
SHARE = 0.92  # what networks.yaml ib-ndr400 states


def _nccl_nvlink_over_ring() -> float:
    k = load_constants()
    return k.raw["comm"]["nccl_alltoall_busbw_fraction"] / k.intra_busbw_fraction


def test_the_nccl_rates_scale_nvlink_on_nvswitch_and_the_nic_by_the_network_share():
    s = dataclasses.replace(h100_cluster(16), inter_node_alltoall_share=SHARE)
    r = rates(s, "bf16")
    n = nccl_alltoall_rates(r, s, load_constants())
    assert n.intra_busbw == pytest.approx(r.intra_busbw * _nccl_nvlink_over_ring())
    assert n.inter_nic == pytest.approx(r.inter_nic * SHARE)
    assert n.gemm_flops == r.gemm_flops and n.hbm_bytes_s == r.hbm_bytes_s
    # no measurement behind a fraction: A100-era switches (no NVLS) and an NVIDIA mesh (GH200's quad) keep the ring rate
    for other in (dataclasses.replace(s, nvls=False), dataclasses.replace(s, scaleup_mesh_links=3, vendor="nvidia")):
        assert nccl_alltoall_rates(rates(other, "bf16"), other, load_constants()).intra_busbw == pytest.approx(
            rates(other, "bf16").intra_busbw)


def test_on_the_xgmi_mesh_rccl_all_to_all_runs_at_its_measured_share_of_the_links():
    """AMD's switchless mesh (scaleup_mesh_links): RCCL's all-to-all at comm.rccl_alltoall_busbw_fraction_mesh of
    the links, not the mesh ring's intra_busbw_fraction_mesh, whether or not the system also says nvls; the network
    share unchanged (known-gaps 113 (a)). A hand-built mesh of unknown vendor keeps the ring's rate."""
    k = load_constants()
    for nvls in (False, True):
        s = dataclasses.replace(h100_cluster(16), scaleup_mesh_links=7, nvls=nvls, inter_node_alltoall_share=SHARE,
                                vendor="amd")
        r = rates(s, "bf16")
        n = nccl_alltoall_rates(r, s, k)
        assert r.intra_busbw == pytest.approx(s.intra_node_gb_s * 1e9 * k.intra_busbw_fraction_mesh)
        assert n.intra_busbw == pytest.approx(s.intra_node_gb_s * 1e9 * k.raw["comm"]["rccl_alltoall_busbw_fraction_mesh"])
        assert n.inter_nic == pytest.approx(r.inter_nic * SHARE)
    bare = dataclasses.replace(s, vendor="")
    assert nccl_alltoall_rates(rates(bare, "bf16"), bare, k).intra_busbw == pytest.approx(rates(bare, "bf16").intra_busbw)


def test_the_catalog_share_reaches_the_system_of_an_ndr400_job_only():
    cat = load_catalog()
    assert cat.networks["ib-ndr400"].alltoall_payload_share == SHARE

    def system(network: str):
        job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
               "global_batch": {"sequences": 16}, "precision": "bf16",
               "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": network},
               "strategy": {"tp": 1, "pp": 1}}
        return resolve_job(job, cat).system

    assert system("ib-ndr400").inter_node_alltoall_share == SHARE
    assert system("roce-400").inter_node_alltoall_share == 1.0  # not measured there: the ring payload


def _ep_comm(system, **kw) -> float:
    m = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792)
    st = Strategy(dp=16, ep=16, micro_batch=1, **kw)
    return estimate_time(m, TR, system, st).breakdown_s["ep_comm"]


def test_only_the_nccl_dispatchers_take_the_network_share():
    """Two nodes, EP 16: the alltoall dispatchers' EP time grows as the NIC share falls; Megatron-Core's flex
    (DeepEP / HybridEP forwarding), torchtitan's DeepEP and DeepSeek's own kernels (deepseek-dualpipe) do not move."""
    ring = dataclasses.replace(h100_cluster(16), inter_node_alltoall_share=1.0)
    nccl = dataclasses.replace(ring, inter_node_alltoall_share=SHARE)
    for fw in ("megatron-core", "torchtitan", "hf"):
        slow, fast = _ep_comm(nccl, framework=fw, moe_dispatcher="alltoall"), _ep_comm(ring, framework=fw,
                                                                                     moe_dispatcher="alltoall")
        assert fast < slow < fast / SHARE * 1.001, fw  # the off-node bytes at SHARE of the rate, the latency unscaled
    for kw in ({"framework": "megatron-core", "moe_dispatcher": "flex"},
               {"framework": "torchtitan", "moe_dispatcher": "flex"},
               {"framework": "deepseek-dualpipe", "moe_dispatcher": "alltoall"}):
        assert _ep_comm(nccl, **kw) == _ep_comm(ring, **kw), kw


def test_inside_one_nvswitch_node_the_alltoall_dispatch_runs_at_the_nccl_nvlink_rate():
    """EP 8 on one H100 node: the alltoall dispatcher's EP time (less its latency) on NVSwitch (nvls) over the same
    node without the NVSwitch measurement is the ring busbw fraction over NCCL's all-to-all fraction; DeepSeek's own
    kernels keep the ring rate on both."""
    m = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792)
    switched, plain = h100_cluster(8), h100_cluster(8, nvls=False)
    lat = switched.intra_node_latency_s * 4 * m.layers * TR.global_batch_seqs / 8  # per a2a, not scaled

    def ep(system, fw: str) -> float:
        return estimate_time(m, TR, system, Strategy(dp=8, ep=8, micro_batch=1, framework=fw,
                                                     moe_dispatcher="alltoall")).breakdown_s["ep_comm"]

    assert (ep(switched, "megatron-core") - lat) / (ep(plain, "megatron-core") - lat) == pytest.approx(
        1.0 / _nccl_nvlink_over_ring(), rel=0.02)
    assert ep(switched, "deepseek-dualpipe") == ep(plain, "deepseek-dualpipe")
