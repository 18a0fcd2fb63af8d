"""MoE token dispatcher (Strategy.moe_dispatcher): Megatron-Core's dropless MoE layer synchronises with the host
each forward under both dispatchers, so the kernels issued per local expert after the sync are exposed; the alltoall
dispatcher issues more of them (its all-to-all, permutation and FP8 padding) than the flex one (DeepEP / HybridEP).
"auto" follows Megatron-Bridge 25.11's recipes (HybridEP on multi-host NVLink domains, DeepEP when EP leaves the
domain)."""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, TrainsizerError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import KERNELS
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import (
    ep_ranks_per_token,
    estimate_time,
    group_limited_units_per_token,
    moe_alltoall,
    round_robin_groups_per_token,
    step_time_arrays,
)
from trainsizer.scenario import resolve_job

from .test_perf_common import b200_cluster, h100_cluster, llama8b, mixtral

TR = Training(seq_len=4096, global_batch_seqs=256)


def _nvl72(gpus: int = 64):
    # GB200 NVL72 trays: 4 GPUs per host, one NVLink domain over the racks' trays
    return dataclasses.replace(h100_cluster(gpus, intra_gb_s=900.0), gpus_per_node=4, scaleup_domain=min(gpus, 72))


def test_auto_follows_the_megatron_bridge_recipes():
    h100 = h100_cluster(256)
    assert bool(moe_alltoall("auto", h100, 8, 1))  # EP inside one HGX node: alltoall
    assert not bool(moe_alltoall("auto", h100, 64, 1))  # EP across nodes: DeepEP
    assert not bool(moe_alltoall("auto", _nvl72(), 8, 1))  # NVL72: HybridEP
    got = moe_alltoall("auto", h100, np.array([4, 8, 16]), np.array([1, 2, 1]))
    assert got.tolist() == [True, False, False]  # EP x TP beyond the 8-GPU domain
    assert bool(moe_alltoall("alltoall", _nvl72(), 8, 1)) and not bool(moe_alltoall("flex", h100, 8, 1))
    with pytest.raises(SpecError) as err:
        moe_alltoall("all2all", h100, 8, 1)
    assert "strategy.moe_dispatcher" in str(err.value)


def _compute(m, s, st, **kw) -> float:
    return estimate_time(m, TR, s, st.with_(**kw)).breakdown_s["compute"]


def test_host_time_per_local_expert_for_both_dispatchers():
    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    st = Strategy(dp=64, ep=8, micro_batch=1, framework="megatron-core")
    a2a, flex = _compute(m, s, st, moe_dispatcher="alltoall"), _compute(m, s, st, moe_dispatcher="flex")
    assert a2a > flex
    assert _compute(m, s, st) == a2a  # auto: EP 8 in one node -> alltoall
    k = load_constants()
    base = _compute_arrays(m, TR, s, st.with_(moe_dispatcher="flex"), _zero_host(k))  # GPU-only
    # the host part is per local expert: twice the local experts (EP 4 instead of 8) doubles it, and the
    # alltoall / flex ratio is that of their per-kernel costs
    a2a4, flex4 = _compute(m, s, st, ep=4, moe_dispatcher="alltoall"), _compute(m, s, st, ep=4, moe_dispatcher="flex")
    assert (a2a4 - flex4) == pytest.approx(2.0 * (a2a - flex), rel=0.05)
    per = k.moe_host_s_per_expert_kernel
    assert (a2a - base) / (flex - base) == pytest.approx(per["alltoall"] / per["flex"], rel=0.05)
    # dense models are not affected
    d = Strategy(tp=8, dp=8, framework="megatron-core")
    assert estimate_time(llama8b(), TR, s, d.with_(moe_dispatcher="alltoall")).step_s == estimate_time(
        llama8b(), TR, s, d.with_(moe_dispatcher="flex")).step_s
    # the PyTorch-native styles have no host sync; their own EP ("auto") is torchtitan's all_to_all of one copy per
    # expert, and only an explicit flex (DeepEP: NeMo AutoModel, torchtitan's deepep backend) sends one per rank
    fsdp = Strategy(dp=64, ep=8, zero=3, framework="torchtitan")
    auto, a2a, flex = (estimate_time(m, TR, s, fsdp.with_(moe_dispatcher=d)) for d in ("auto", "alltoall", "flex"))
    assert auto.step_s == a2a.step_s
    assert flex.breakdown_s["ep_comm"] < a2a.breakdown_s["ep_comm"]
    assert flex.step_s < a2a.step_s


def _moe_host(m, k, ep: int, dispatcher: str, cast_kernels: float) -> float:
    """The host term the estimator should add per step for `m` on the 64-GPU test cluster (DP 64, MBS 1)."""
    kernels = KERNELS["moe_expert_gemms"] + KERNELS["moe_expert_casts"] * cast_kernels
    per_layer = m.experts / ep * k.moe_host_s_per_expert_kernel[dispatcher] * kernels
    micro_batches = TR.global_batch_seqs / 64
    return micro_batches * m.moe_layer_count * per_layer


def test_fp8_casts_add_host_kernels_per_expert():
    """FP8 adds the casts' kernels to each expert's launches: 1 per cast for MXFP8, 3 for Transformer Engine's
    current scaling (amax, scale, cast; TE 2.9 Float8CurrentScalingQuantizer), so the exposed host time grows
    6 : 10 : 18 from BF16 to MXFP8 to current scaling."""
    m = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792)
    st = Strategy(dp=64, ep=8, micro_batch=1, framework="megatron-core", moe_dispatcher="flex")
    k = load_constants()
    for precision, recipe, cast_kernels in (("bf16", "auto", 0.0), ("fp8", "mxfp8", 1.0), ("fp8", "tensorwise", 3.0)):
        s = b200_cluster(64) if recipe == "mxfp8" else h100_cluster(64)  # MXFP8 needs Blackwell's block scales
        tr = dataclasses.replace(TR, precision=precision, fp8_recipe=recipe)
        host = _compute_arrays(m, tr, s, st, k) - _compute_arrays(m, tr, s, st, _zero_host(k))
        assert host == pytest.approx(_moe_host(m, k, 8, "flex", cast_kernels), rel=1e-6)


def _zero_host(k):
    """A copy of the constants with the MoE host term switched off."""
    return dataclasses.replace(k, moe_host_s_per_expert_kernel={"alltoall": 0.0, "flex": 0.0})


def _compute_arrays(m, tr, s, st, k) -> float:
    return float(np.asarray(step_time_arrays(m, tr, s, st, constants=k)["compute"]).reshape(-1)[0])


def _job(dispatcher: str) -> dict:
    return yaml.safe_load(textwrap.dedent(f"""\
        model: qwen3-30b-a3b
        data: {{tokens: 1.0e9}}
        seq_len: 4096
        global_batch: {{sequences: 512}}
        hardware: {{accelerator: b200, count: 8, network: ib-ndr400}}
        strategy: {{ep: 8, micro_batch: 1, recompute: none, distributed_optimizer: true,
                    framework: megatron-core, moe_dispatcher: {dispatcher}}}
        """))


def test_job_file_names_the_dispatcher_and_a_bad_name_is_refused():
    cat = load_catalog()
    sc = resolve_job(_job("flex"), cat)
    assert sc.strategy.moe_dispatcher == "flex"
    assert sc.summary()["strategy"]["moe_dispatcher"] == "flex"
    with pytest.raises(TrainsizerError) as err:
        resolve_job(_job("deepep2"), cat)
    assert "moe_dispatcher" in str(err.value)


def test_flex_sends_a_token_once_per_rank_alltoall_once_per_expert():
    """DeepEP / HybridEP deduplicate a token's copies per EP rank; the alltoall dispatcher sends one per expert."""
    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    st = Strategy(dp=64, ep=8, micro_batch=1, framework="megatron-core")
    a2a = estimate_time(m, TR, s, st.with_(moe_dispatcher="alltoall")).breakdown_s["ep_comm"]
    flex = estimate_time(m, TR, s, st.with_(moe_dispatcher="flex")).breakdown_s["ep_comm"]
    ranks = float(ep_ranks_per_token(64, 8, 8))
    assert 5.0 < ranks < 5.6  # 8 experts of 64 on 8 ranks of 8: about 5.3 distinct ranks
    # the alltoall dispatcher is NCCL's all-to-all, at its NVSwitch busbw (step_time.nccl_alltoall_rates, known-gaps
    # 95); Megatron-Core's flex keeps the ring rate
    k = load_constants()
    nccl = k.raw["comm"]["nccl_alltoall_busbw_fraction"] / k.intra_busbw_fraction
    assert flex / a2a == pytest.approx(ranks / 8 * nccl, rel=0.02)


@settings(max_examples=60, deadline=None)
@given(hs.sampled_from([8, 16, 64, 128, 256]), hs.integers(1, 8), hs.sampled_from([1, 2, 4, 8, 16, 32, 64]))
def test_ranks_per_token_bounded_by_topk_and_ep(experts, topk, ep):
    ep = min(ep, experts)
    r = float(ep_ranks_per_token(experts, topk, ep))
    assert 1.0 - 1e-9 <= r <= min(topk, ep) + 1e-9
    if ep == experts:  # one expert per rank: every copy goes to its own rank
        assert r == pytest.approx(topk)


def test_flex_across_nodes_forwards_one_network_copy_per_remote_node():
    """DeepEP's internode kernels and HybridEP send a token over the network once per remote node holding one of its
    experts and forward it over NVLink there: with EP 16 over two nodes, about one network copy per token instead of
    one per remote rank (about 3.3 for 8 of 128 experts); inside one node nothing changes."""
    from trainsizer.estimate import comm
    from trainsizer.estimate.calibration import rates

    m = mixtral().with_(experts=128, experts_per_token=8, expert_ffn=768)
    s = h100_cluster(16)
    st = Strategy(dp=16, ep=16, micro_batch=1, recompute="none", framework="megatron-core", moe_dispatcher="flex")
    ep = estimate_time(m, TR, s, st).breakdown_s["ep_comm"]
    a2a = estimate_time(m, TR, s, st.with_(moe_dispatcher="alltoall")).breakdown_s["ep_comm"]
    r = rates(s, "bf16")
    per_copy = 4096 * m.hidden * 2.0
    ranks = float(ep_ranks_per_token(128, 8, 16))
    remote_nodes = float(ep_ranks_per_token(128, 8, 2)) / 2.0
    assert 0.99 < remote_nodes < 1.0  # a token's 8 experts almost always touch the other node
    one = comm.forwarded_all_to_all_time(per_copy * remote_nodes, per_copy * ranks * 7 / 8, 16, 8, r, s)
    per_rank = comm.all_to_all_time(per_copy * ranks, 16, 8, r, s)
    assert float(one) < float(per_rank) / 2.5
    layers = m.layers  # every layer is MoE: dispatch + combine, forward and backward
    assert ep == pytest.approx(4 * layers * float(one) * TR.global_batch_seqs / 16, rel=0.02)
    assert ep < a2a / 2.5
    inside = h100_cluster(8)
    st8 = st.with_(dp=8, ep=8)
    flat = comm.all_to_all_time(per_copy * float(ep_ranks_per_token(128, 8, 8)), 8, 8, r, inside)
    assert estimate_time(m, TR, inside, st8).breakdown_s["ep_comm"] == pytest.approx(
        4 * layers * float(flat) * TR.global_batch_seqs / 8, rel=0.02)


def test_round_robin_routing_spans_fewer_ranks_than_random():
    """NeMo AutoModel's FakeBalancedGate and torchtitan's debug force-balance give token i the experts k i ... k i + k - 1
    (mod E): DeepSeek-V3's 8 of 256 experts on EP 64 (4 per rank) sit on 2 ranks of one node, where 8 random experts
    sit on 7.7 ranks of 5.3 nodes; Kimi K2's 8 of 384 on EP 32 (12 per rank) on 4 / 3 ranks on average."""
    assert round_robin_groups_per_token(256, 8, 64) == pytest.approx(2.0)
    assert round_robin_groups_per_token(256, 8, 8) == pytest.approx(1.0)
    assert round_robin_groups_per_token(384, 8, 32) == pytest.approx(4.0 / 3.0)
    assert ep_ranks_per_token(256, 8, 64) == pytest.approx(7.68, abs=0.01)
    assert np.allclose(round_robin_groups_per_token(64, 4, np.array([1, 8, 64])), [1.0, 1.0, 4.0])


def test_primus_forced_balance_spans_the_ranks_counted_by_hand():
    """Primus's router under moe_router_force_load_balancing gives token i the experts 6 i ... 6 i + 5 mod E
    (PrimusTopKRouter.routing at AMD-AGI/Primus b3699abf7): on DeepSeek-V2-Lite's 64 experts over EP 8 (8 a rank) the
    first expert 6 i mod 64 sits at 0, 6, 4, 2 within its rank in turn, so the six reach one rank twice in four and two
    ranks otherwise (1.5); on DeepSeek-V2's 160 over EP 8 (20 a rank) 6 i mod 20 runs 0, 6, 12, 18, 4, 10, 16, 2, 8, 14
    and only 18 and 16 cross a rank (1.2). Random balanced routing puts them on 4.5 ranks; V2's group-limited router
    (3 of 8 groups, a group a rank) on 3."""
    assert round_robin_groups_per_token(64, 6, 8) == pytest.approx(1.5)
    assert round_robin_groups_per_token(160, 6, 8) == pytest.approx(1.2)
    assert ep_ranks_per_token(64, 6, 8) == pytest.approx(4.54, abs=0.01)


@settings(max_examples=60, deadline=None)
@given(hs.integers(1, 6), hs.integers(0, 5), hs.integers(1, 8))
def test_round_robin_never_spans_more_groups_than_random(log_e, log_g, k):
    experts, groups = 2 ** (log_e + 3), 2 ** min(log_g, log_e + 3)
    k = min(k, experts)
    rr = float(round_robin_groups_per_token(experts, k, groups))
    assert 1.0 <= rr <= min(k, groups) + 1e-9
    assert rr <= float(ep_ranks_per_token(experts, k, groups)) + 1e-9


def test_routing_pattern_changes_only_a_deepep_dispatch():
    """round-robin shortens DeepEP's (flex) dispatch, whose copies follow the ranks a token's experts span; the
    alltoall dispatcher sends one copy per expert whatever the pattern. A name outside MOE_ROUTINGS is refused."""
    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    st = Strategy(dp=64, ep=16, zero=3, framework="torchtitan")
    rr = dataclasses.replace(TR, moe_routing="round-robin")
    flex, flex_rr = (estimate_time(m, t, s, st.with_(moe_dispatcher="flex")) for t in (TR, rr))
    assert flex_rr.breakdown_s["ep_comm"] < flex.breakdown_s["ep_comm"]
    a2a, a2a_rr = (estimate_time(m, t, s, st.with_(moe_dispatcher="alltoall")) for t in (TR, rr))
    assert a2a_rr.step_s == a2a.step_s
    with pytest.raises(SpecError) as err:
        estimate_time(m, dataclasses.replace(TR, moe_routing="roundrobin"), s, st)
    assert "training.moe_routing" in str(err.value) and "round-robin" in str(err.value)


def test_fake_balanced_gate_runs_no_router_gemm():
    """NeMo AutoModel's FakeBalancedGate (moe_routing fake-balanced) gives the round-robin experts without computing
    logits: the dispatch is round-robin's, the step loses the gate GEMM's time, and no E-wide fp32 probabilities are
    saved for backward."""
    from trainsizer.estimate.memory import memory_per_gpu_bytes

    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    st = Strategy(dp=64, ep=16, zero=3, framework="torchtitan", moe_dispatcher="flex", recompute="none")
    rr, fake = (dataclasses.replace(TR, moe_routing=r) for r in ("round-robin", "fake-balanced"))
    t_rr, t_fake = (estimate_time(m, t, s, st) for t in (rr, fake))
    assert t_fake.breakdown_s["ep_comm"] == t_rr.breakdown_s["ep_comm"]
    assert t_fake.step_s < t_rr.step_s
    assert memory_per_gpu_bytes(m, fake, s, st)[0] < memory_per_gpu_bytes(m, rr, s, st)[0]


@pytest.mark.parametrize("dispatcher", ["alltoall", "flex"])
def test_full_iteration_graph_runs_the_moe_layer_sync_free(dispatcher):
    """A full-iteration CUDA graph cannot hold a host sync (Megatron-Bridge v0.5.0 set_full_iter_cg_configs: a static
    EP-rank token budget and device-side expert splits), so the per-expert host term is gone: the step's compute is
    the GPU-only figure. Per-layer graphs and no graphs keep the term."""
    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    st = Strategy(dp=64, ep=8, micro_batch=1, framework="megatron-core", moe_dispatcher=dispatcher)
    k = load_constants()
    for graphs in ("full_iteration", None, "none", "layer"):
        one = st.with_(cuda_graphs=graphs)
        with_sync, gpu_only = _compute_arrays(m, TR, s, one, k), _compute_arrays(m, TR, s, one, _zero_host(k))
        if graphs == "full_iteration":
            assert with_sync == gpu_only
        else:
            assert with_sync > gpu_only * 1.01


def _router_monte_carlo(experts: int, topk: int, groups: int, per_token: int, units: int, n: int = 4000) -> float:
    """Distinct units a token reaches under Megatron-Core's group_limited_topk on random scores (force-balanced
    routing, moe_utils.apply_random_logits): groups scored by their top k / per_token sigmoid scores, the best
    per_token kept, the top k of their experts."""
    rng = np.random.default_rng(0)
    s = 1.0 / (1.0 + np.exp(-rng.standard_normal((n, experts))))
    scores = np.sort(s.reshape(n, groups, -1), axis=-1)[:, :, -(topk // per_token):].sum(-1)
    chosen = np.argsort(-scores, axis=1)[:, :per_token]
    mask = np.zeros((n, groups), bool)
    np.put_along_axis(mask, chosen, True, 1)
    top = np.argsort(-np.where(np.repeat(mask, experts // groups, axis=1), s, -np.inf), axis=1)[:, :topk]
    return float(np.mean([len(set(row)) for row in top // (experts // units)]))


@pytest.mark.parametrize("units", [8, 16, 32, 64])
def test_group_limited_routing_against_the_router(units):
    """DeepSeek-V3's node-limited routing (n_group 8, topk_group 4; Megatron-Core group_limited_topk): a token's 8
    experts lie in 4 of the 8 groups, so over 8 nodes it reaches at most 4 (no limit: 5.3). The count is within 6% of
    the router run on random scores, and nearer to it than the count without the limit."""
    limited = float(group_limited_units_per_token(256, 8, 8, 4, units))
    free = float(ep_ranks_per_token(256, 8, units))
    router = _router_monte_carlo(256, 8, 8, 4, units)
    assert limited == pytest.approx(router, rel=0.06)
    assert abs(limited - router) < abs(free - router)
    if units == 8:
        assert limited == pytest.approx(4.0) and free > 5.2


@settings(max_examples=60, deadline=None)
@given(hs.sampled_from([1, 2, 4, 8]), hs.integers(1, 8), hs.sampled_from([1, 2, 4, 8, 16, 32, 64]),
       hs.integers(1, 8))
def test_group_limited_routing_bounds(groups, per_token, units, topk):
    """Never more units than the top-k or the units; over units that are the groups, at most the groups a token may
    use; every group allowed is the unlimited count. (Not bounded by the unlimited count: the limit spreads a token's
    experts over its chosen groups, so 2 experts in 2 of 4 groups span both halves more often than 2 free ones.)"""
    per_token = min(per_token, groups)
    limited = float(group_limited_units_per_token(256, topk, groups, per_token, units))
    free = float(ep_ranks_per_token(256, topk, units))
    assert 1.0 - 1e-9 <= limited <= min(topk, units) + 1e-9
    if units == groups:
        assert limited <= per_token + 1e-9
    if per_token == groups:
        assert limited == pytest.approx(free)


def test_group_limited_routing_shortens_a_flex_dispatch_across_nodes():
    """EP 64 over 8 nodes with the flex dispatcher: DeepSeek-V3's group limit (8 groups = the 8 nodes, 4 a token)
    sends fewer network copies than the same model routed over every expert; the alltoall dispatcher sends one copy
    per expert either way."""
    from trainsizer.models import load_preset

    v3 = load_preset("deepseek-v3")
    free = v3.with_(expert_groups=1, expert_groups_per_token=1)
    s = h100_cluster(64)
    st = Strategy(dp=64, ep=64, micro_batch=1, framework="megatron-core", moe_dispatcher="flex")
    ep = {name: estimate_time(m, TR, s, st).breakdown_s["ep_comm"] for name, m in (("v3", v3), ("free", free))}
    assert ep["v3"] < 0.9 * ep["free"]
    a2a = st.with_(moe_dispatcher="alltoall")
    assert estimate_time(v3, TR, s, a2a).breakdown_s["ep_comm"] == pytest.approx(
        estimate_time(free, TR, s, a2a).breakdown_s["ep_comm"])


@pytest.mark.parametrize("groups", [(8, 4), (1, 1)])
def test_flex_scalar_and_vector_paths_agree_inside_and_across_nodes(groups):
    """EP 8 (one node) beside EP 16 / 32 / 64 (2-8 nodes) in one batch give each strategy's scalar step time, with
    and without DeepSeek-V3's group limit. Bug fix: a batch holding any EP that left the node timed the one-node
    EP 8 as a forwarded dispatch too (the scalar path: the plain all-to-all)."""
    from trainsizer.estimate.step_time import estimate_time_batch
    from trainsizer.models import load_preset

    v3 = load_preset("deepseek-v3").with_(expert_groups=groups[0], expert_groups_per_token=groups[1])
    s, eps = h100_cluster(256), np.array([8, 16, 32, 64])
    kw = dict(pp=4, vpp=1, micro_batch=1, recompute="full", framework="megatron-core", moe_dispatcher="flex")
    vec = estimate_time_batch(v3, TR, s, Strategy(dp=np.full(4, 64), ep=eps, **kw))
    for i, ep in enumerate(eps):
        one = estimate_time(v3, TR, s, Strategy(dp=64, ep=int(ep), **kw))
        assert vec["step_s"][i] == pytest.approx(one.step_s, rel=1e-12)
