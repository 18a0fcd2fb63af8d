"""FSDP2 step-time collectives: under torch.distributed.pipelining a stage's parameters are all-gathered once a step
and its gradients reduce-scattered once, after the last backward, and waited on (step_time._fsdp_once_per_step);
routed experts are gathered and scattered over the expert shard group, dp x cp / ep ranks (step_time._expert_shard),
so none where EP already covers the shard group."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import comm
from trainsizer.estimate.calibration import rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import h100_cluster, llama8b, mixtral


def _style(once: bool = True):
    """torchtitan without its compute-stream copies, so dp_comm holds the collectives alone."""
    return dataclasses.replace(perf_style("torchtitan"), fsdp2_copies=False, pp_fsdp_once_per_step=once)


def _dp(style, model=None, gpus=16, seqs=32, pp=4, ep=1, mb=1) -> float:
    training = Training(seq_len=4096, global_batch_seqs=seqs, precision="bf16")
    st = Strategy(dp=gpus // pp, pp=pp, ep=ep, zero=3, micro_batch=mb, recompute="full")
    return estimate_time(model or llama8b(), training, h100_cluster(gpus), st,
                         framework_style=style).breakdown_s["dp_comm"]


def test_torchtitan_reduces_once_per_step_under_pipelining():
    assert perf_style("torchtitan").pp_fsdp_once_per_step
    assert not perf_style("fsdp").pp_fsdp_once_per_step and not perf_style("megatron-core").pp_fsdp_once_per_step


@settings(max_examples=12, deadline=None)
@given(per_dp=hs.sampled_from([4, 8, 16, 32]))
def test_under_pipelining_the_collectives_do_not_grow_with_micro_batches(per_dp):
    """4 stages over 16 GPUs (DP 4): 4-32 micro-batches a step, the same one gather and one scatter; charged per
    micro-batch (the flag off) they grow with them."""
    assert _dp(_style(), seqs=4 * per_dp) == pytest.approx(_dp(_style(), seqs=16), rel=1e-9)
    assert _dp(_style(False), seqs=4 * per_dp) > _dp(_style(), seqs=4 * per_dp)


def test_the_last_reduce_scatter_is_exposed():
    """At least the stage's fp32 reduce-scatter over the DP group: it is waited on after the last backward."""
    system = h100_cluster(16)
    r = rates(system, "bf16")
    stage = llama8b().params_total / 4
    k = comm.ranks_per_domain(4, 1, system.domain_gpus)
    rs = float(comm.reduce_scatter_time(stage * 4.0, 4, k, r, system))
    assert _dp(_style()) >= rs > 0


def test_without_pipelining_nothing_changes():
    assert _dp(_style(), gpus=8, pp=1) == _dp(_style(False), gpus=8, pp=1)


def test_experts_that_ep_already_shards_add_no_fsdp_traffic():
    """Mixtral on 8 GPUs, DP 8: with EP 8 each GPU's experts are held by it alone (an expert shard group of one rank,
    which AutoModel leaves out of FSDP), so wider experts add no FSDP time; with EP 2 they are gathered over 4 ranks,
    with EP 1 over all 8."""
    wide = dataclasses.replace(mixtral(), expert_ffn=2 * mixtral().expert_ffn)
    one, two, eight = (_dp(_style(), model=mixtral(), gpus=8, pp=1, ep=e) for e in (1, 2, 8))
    assert one > two > eight > 0
    assert _dp(_style(), model=wide, gpus=8, pp=1, ep=8) == pytest.approx(eight, rel=1e-9)
    assert _dp(_style(), model=wide, gpus=8, pp=1, ep=2) > two


def _dp_strategy(once, gpus=16, seqs=32, pp=4) -> float:
    training = Training(seq_len=4096, global_batch_seqs=seqs, precision="bf16")
    st = Strategy(dp=gpus // pp, pp=pp, zero=3, micro_batch=1, recompute="full", framework="torchtitan",
                  pp_fsdp_once_per_step=once)
    return estimate_time(llama8b(), training, h100_cluster(gpus), st).breakdown_s["dp_comm"]


def test_strategy_turns_the_once_a_step_sync_off():
    """NeMo AutoModel's MoE path without enable_fsdp_optimizations: the stage module (the ForCausalLM) is not an
    FSDP module, so torch's pipeline stage runs a plain backward and FSDP2 reduce-scatters and reshards after every
    micro-batch (strategy.pp_fsdp_once_per_step false)."""
    assert _dp_strategy(None) == _dp_strategy(True)
    assert _dp_strategy(False) > _dp_strategy(True)
    assert _dp_strategy(False, seqs=64) > _dp_strategy(False, seqs=32)


def test_per_micro_batch_sync_under_pipelining_gathers_once():
    """reshard_after_forward = not pp_enabled: a micro-batch that syncs gathers in its forward only, so its
    collectives and copies cost less than the unpipelined path's two gathers and one reduce-scatter."""
    from trainsizer.estimate import step_time as st_mod

    training = Training(seq_len=4096, global_batch_seqs=32, precision="bf16")
    st = Strategy(dp=4, pp=4, zero=3, micro_batch=1, recompute="full", framework="torchtitan",
                  pp_fsdp_once_per_step=False)
    x = st_mod._step(llama8b(), training, h100_cluster(16), st, None, None, None)
    piped = float(st_mod._fsdp2_copies(x, 1e9, 2.0, 2.0, 4.0))
    assert piped == pytest.approx(float(x.m) * 1e9 * (2 * 2.0 + 2.0 + 4.0) / x.r.hbm_bytes_s)


def _step_x(once, vpp=1, pp=4):
    from trainsizer.estimate import step_time as st_mod

    training = Training(seq_len=4096, global_batch_seqs=32, precision="bf16")
    st = Strategy(dp=16 // pp, pp=pp, vpp=vpp, zero=3, micro_batch=1, recompute="full", framework="torchtitan",
                  pp_fsdp_once_per_step=once)
    return st_mod, st_mod._step(llama8b(), training, h100_cluster(16), st, None, None, None)


def test_each_chunk_call_exposes_its_first_gather_and_last_reduce_scatter():
    """FSDP2 waits for a backward call's reduce-scatters before it returns (_root_post_backward_final_callback) and
    gathers a forward call's first unit before its compute: under pipelining with a sync every micro-batch, each of
    the v chunks is a call of its own; without pipelining one call a micro-batch."""
    st_mod, x = _step_x(False, vpp=2)
    edges = float(st_mod._fsdp_call_edges(x, 8.0, 16.0, 8.0))
    assert edges == pytest.approx(2 * (1.0 + 2.0))
    _, one = _step_x(False, vpp=1, pp=1)
    assert float(st_mod._fsdp_call_edges(one, 8.0, 16.0, 8.0)) == pytest.approx(1.0 + 2.0)


def test_interleaving_adds_calls_when_syncing_every_micro_batch():
    assert _dp_strategy_v(False, 2) > _dp_strategy_v(False, 1)


def _dp_strategy_v(once, vpp) -> float:
    training = Training(seq_len=4096, global_batch_seqs=32, precision="bf16")
    st = Strategy(dp=4, pp=4, vpp=vpp, zero=3, micro_batch=1, recompute="full", framework="torchtitan",
                  pp_fsdp_once_per_step=once)
    return estimate_time(llama8b(), training, h100_cluster(16), st).breakdown_s["dp_comm"]
