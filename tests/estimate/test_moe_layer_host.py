"""Megatron-Core's MoE layer host path beyond a dense layer's MLP (step_time._moe_layer_host_s; docs/known-gaps.md
297 (a)): the router and its aux loss, the alltoall dispatcher's preprocess, D2H copies, permutation and all-to-alls,
a shared expert and fc2's per-expert bias adds, each host call at the vendor's launch-bound eager op, counted at
Megatron-LM 61f31145 (perf_constants.yaml kernels moe_layer_*), joined to the layer's host floor. Nothing on a dense
model, another style, a sync-free layer or under CUDA graphs; the flex dispatcher's own path is counted where DeepEP's
backend is stated (moe_dispatcher deepep, _DeepepManager at 61f31145: docs/known-gaps.md 334 (a)), not under flex or
hybridep."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate import step_time
from trainsizer.estimate.compute import KERNELS
from trainsizer.estimate.host_sync import host_figure
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import _moe_layer_host_s, _step, estimate_time, estimate_time_batch

from .test_perf_common import h100_cluster, llama8b, mixtral

TR = Training(seq_len=2048, global_batch_seqs=64)
OP_S = host_figure("launch_bound_op_s", "nvidia")


def _st(**kw) -> Strategy:
    base = dict(tp=1, pp=1, dp=8, ep=4, micro_batch=1, recompute="none", distributed_optimizer=True,
                framework="megatron-core", moe_dispatcher="alltoall")
    return Strategy(**(base | kw))


def _host(model=None, **kw) -> float:
    return float(_moe_layer_host_s(_step(model or mixtral(), TR, h100_cluster(8), _st(**kw), None, None, None)))


def _calls(*names: str) -> float:
    return sum(KERNELS[f"moe_layer_{n}"] for n in names)


def test_the_count_at_ep_above_one_and_at_ep_one():
    """Mixtral's every layer is MoE: EP 4 holds 2 experts a rank (sort_chunks both ways), EP 1 all 8 (no count
    all-gather, no extra D2H copies, no all-to-all)."""
    router = _calls("router_host_fwd", "router_host_bwd")
    dispatch = _calls("alltoall_host_fwd", "alltoall_host_bwd") + 2.0 * KERNELS["moe_layer_alltoall_sort_host"]
    ep = _calls("alltoall_ep_host_fwd", "alltoall_ep_host_bwd")
    assert _host() == pytest.approx((router + dispatch + ep) * OP_S)
    assert _host(ep=1, dp=8) == pytest.approx((router + dispatch) * OP_S)
    assert _host(ep=8, dp=8) == pytest.approx((router + dispatch - 2.0 * KERNELS["moe_layer_alltoall_sort_host"] + ep)
                                              * OP_S)  # one expert a rank: no sort


def test_a_recomputed_block_issues_its_forward_again():
    fwd = _calls("router_host_fwd", "alltoall_host_fwd", "alltoall_ep_host_fwd", "alltoall_sort_host")
    assert _host(recompute="full") - _host() == pytest.approx(fwd * OP_S)


def test_biases_shared_experts_expert_bias_and_an_fp32_router_add_theirs():
    m = mixtral()
    local = m.experts / 4
    bias = local * KERNELS["moe_layer_expert_bias_host_per_expert"] + KERNELS["moe_layer_expert_bias_host"]
    assert _host(dataclasses.replace(m, mlp_bias=True)) - _host() == pytest.approx(bias * OP_S)
    shared = _calls("shared_expert_host_fwd", "shared_expert_host_bwd")
    assert _host(dataclasses.replace(m, shared_expert_ffn=4096)) - _host() == pytest.approx(shared * OP_S)
    fp32 = _host(dataclasses.replace(m, router_fp32=True))
    assert fp32 - _host() == pytest.approx(KERNELS["moe_layer_router_fp32_host_bwd"] * OP_S)
    # a score-correction bias (with the fp32 router: DeepSeek-V3, Moonlight) updates its counts; a gate bias (GPT-OSS)
    # rides in the gating GEMM
    assert _host(dataclasses.replace(m, router_bias=True, router_fp32=True)) - fp32 == pytest.approx(
        KERNELS["moe_layer_router_bias_host_fwd"] * OP_S)
    assert _host(dataclasses.replace(m, router_bias=True)) == pytest.approx(_host())


def test_the_flex_dispatcher_is_charged_its_router_only():
    assert _host(moe_dispatcher="flex") == pytest.approx(_calls("router_host_fwd", "router_host_bwd") * OP_S)
    assert _host(moe_dispatcher="hybridep") == pytest.approx(_host(moe_dispatcher="flex"))


def test_deepep_stated_adds_its_managers_calls_and_the_probs_cast():
    """DeepEP's backend stated: _DeepepManager's top-k, FusedDispatch / FusedCombine, the eager multihot conversion
    and the fused permute / unpermute (21 forward, 9 backward), the forward again under recompute; the 16-bit router's
    probabilities cast to fp32 (+1 forward), none behind an fp32 router; the dispatcher asserts TP x EP > 1."""
    router = _calls("router_host_fwd", "router_host_bwd")
    deepep = _calls("deepep_host_fwd", "deepep_host_bwd", "deepep_probs_cast_host")
    assert _calls("deepep_host_fwd", "deepep_host_bwd") == 30.0
    assert _host(moe_dispatcher="deepep") == pytest.approx((router + deepep) * OP_S)
    fwd = _calls("router_host_fwd", "deepep_host_fwd", "deepep_probs_cast_host")
    assert _host(moe_dispatcher="deepep", recompute="full") - _host(moe_dispatcher="deepep") == pytest.approx(fwd * OP_S)
    m = dataclasses.replace(mixtral(), router_fp32=True)
    cast = KERNELS["moe_layer_deepep_probs_cast_host"]
    assert _host(m, moe_dispatcher="deepep") - _host(m, moe_dispatcher="flex") == pytest.approx((deepep - cast) * OP_S)
    assert _host(moe_dispatcher="deepep", ep=1) == pytest.approx(_host(moe_dispatcher="flex", ep=1))


def test_nothing_on_a_dense_model_another_style_a_sync_free_layer_or_under_graphs():
    assert _host(model=llama8b(), ep=1) == 0.0
    assert _host(framework="torchtitan", moe_dispatcher="auto") == 0.0
    assert _host(cuda_graphs="layer") == 0.0
    assert _host(moe_pad_to_capacity=True) == 0.0


def test_a_host_bound_step_grows_by_it(monkeypatch):
    """Micro-batch 1 at 2K tokens on Mixtral's shape halved: the layer is host-bound, so the count adds nearly in full
    on every layer and micro-batch."""
    small = dataclasses.replace(mixtral(), hidden=1024, ffn=3584, expert_ffn=3584, heads=8, kv_heads=8)
    s = _st()
    with_count = float(estimate_time(small, TR, h100_cluster(8), s).step_s)
    x = _step(small, TR, h100_cluster(8), s, None, None, None)
    added = float(_moe_layer_host_s(x)) * small.layers * float(np.mean(x.m))
    monkeypatch.setattr(step_time, "_moe_layer_host_s", lambda x: 0.0)
    without = float(estimate_time(small, TR, h100_cluster(8), s).step_s)
    assert 0.5 * added < with_count - without <= added * 1.0001


def test_scalar_and_batch_agree():
    s = _st()
    one = float(estimate_time(mixtral(), TR, h100_cluster(8), s).step_s)
    batch = estimate_time_batch(mixtral(), TR, h100_cluster(8),
                                dataclasses.replace(s, tp=np.ones(2, int), dp=np.full(2, 8), ep=np.full(2, 4)))
    assert [float(v) for v in batch["step_s"]] == pytest.approx([one, one], rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8]))
def test_biased_experts_cost_more_where_a_rank_holds_more(ep_a, ep_b):
    """fc2's bias adds loop over a rank's local experts: a smaller EP (more experts a rank) never issues fewer
    bias calls."""
    m = dataclasses.replace(mixtral(), mlp_bias=True)
    lo, hi = sorted((ep_a, ep_b))
    bias_lo = _host(m, ep=lo) - _host(ep=lo)
    bias_hi = _host(m, ep=hi) - _host(ep=hi)
    assert bias_lo >= bias_hi - 1e-12
