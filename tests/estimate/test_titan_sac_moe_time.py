"""What torchtitan's per-op SAC re-runs of an MoE block (compute._op_policy_recompute): the routed experts' grouped
GEMMs whole (torch._grouped_mm is outside the save list, and SelectiveAC runs with early_stop False), the router gate
unless biased (aten.addmm is kept; an unbiased gate's mm is force-recomputed), and the block's linears the policy does
not keep (flops.op_sac_moe_linears, the list the memory estimate reads too; docs/known-gaps.md 169 (b), 186)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate import compute
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.flops import op_sac_gate_kept, op_sac_moe_linears
from trainsizer.models import load_model

from .test_perf_common import h100_cluster

OSS = load_model("gpt-oss-20b")
BARE = dataclasses.replace(OSS, qkv_bias=False, out_bias=False, router_bias=False)


def _layer(model, recompute: int, selective_op_policy: bool = True):
    r, k = rates(h100_cluster(), "bf16"), load_constants()
    return compute.layer_times(compute.ModelShapes.of(model), 4096, r, tp=1, cp=1, micro_batch=1, sp=0,
                               recompute=recompute, ep=1, flash=True, flash_rate=r.flash_flops,
                               flash_bwd_over_fwd=k.flash_bwd_over_fwd, selective_op_policy=selective_op_policy)


def _routed_forward_gemms(model) -> float:
    """The routed experts' (and an unbiased gate's) forward GEMM seconds of one MoE layer, as `_moe_layer` returns."""
    r = rates(h100_cluster(), "bf16")
    shapes = compute.ModelShapes.of(model)
    d = compute._dense_parts(shapes, 4096.0, 1.0, 0.0, r, False, 1.0, 1.0)
    return compute._moe_layer(shapes, 4096.0, 1.0, 1.0, r, g_attn=d.g_attn, b_attn=d.b_attn, a_fwd=0.0, a_bwd=0.0,
                              weights=True, attn_w=d.attn_w, ew_fwd_common=d.ew_fwd_common, act_passes=(1.0, 1.0),
                              fp8_weight_casts=1.0, moe_capacity_factor=1.0)[4]


def test_the_op_list_keeps_biased_linears_and_every_other_unbiased_one():
    assert all(kept for *_, kept in op_sac_moe_linears(OSS))  # gpt-oss: biased wqkv and wo, no shared expert
    assert [kept for *_, kept in op_sac_moe_linears(BARE)] == [True, False, True, False]
    shared = dataclasses.replace(BARE, shared_expert_ffn=1024)
    assert [kept for *_, kept in op_sac_moe_linears(shared)] == [True, False, True, False, True, False, True]
    assert op_sac_gate_kept(OSS) and not op_sac_gate_kept(BARE)


def test_a_biased_block_re_runs_the_routed_experts_whole_and_none_of_its_linears():
    # gpt-oss-20b has no dense layer: the selective recompute is the routed GEMMs plus the block's element-wise work
    sel, none = _layer(OSS, 1), _layer(OSS, 0)
    routed = _routed_forward_gemms(OSS)
    assert routed > 0.0
    assert sel.bwd - none.bwd > routed
    # and less than the whole forward that full recompute re-runs (the attention and its linears are kept)
    assert sel.bwd - none.bwd < _layer(OSS, 2).bwd - none.bwd


def test_unbiased_blocks_re_run_wk_wo_and_the_gate_too():
    extra = (_layer(BARE, 1).bwd - _layer(BARE, 0).bwd) - (_layer(OSS, 1).bwd - _layer(OSS, 0).bwd)
    assert extra > 0.0


@settings(max_examples=15, deadline=None)
@given(ffn=st.sampled_from([512, 1024, 2880, 4096]), k=st.integers(1, 8))
def test_the_recompute_grows_with_the_routed_work(ffn, k):
    small = dataclasses.replace(OSS, expert_ffn=ffn, experts_per_token=k)
    big = dataclasses.replace(small, experts_per_token=k + 2)
    assert (_layer(big, 1).bwd - _layer(big, 0).bwd) > (_layer(small, 1).bwd - _layer(small, 0).bwd)
