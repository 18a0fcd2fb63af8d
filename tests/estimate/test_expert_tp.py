"""Expert tensor parallelism (strategy.etp): the routed experts' TP degree apart from the dense layers'
(Megatron-Core expert_tensor_parallel_size, torchtitan expert_tensor_parallel_degree)."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.errors import StrategyError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.estimate.validate import check_strategy, shard_groups, strategy_arrays
from trainsizer.models import load_model

DSV3 = load_model("deepseek-v3")
QWEN = load_model("qwen3-30b-a3b")
TR = Training(method="pretrain", precision="bf16", seq_len=4096, global_batch_seqs=1024)
H100 = System(accelerator="h100-sxm-80gb", gpus=1024, gpus_per_node=8, memory_gib=80.0,
              peak_tflops={"bf16": 989.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0, inter_node_gb_s=50.0)


def _dsv3(**kw) -> Strategy:
    return Strategy(**{"tp": 2, "pp": 16, "dp": 32, "ep": 32, "recompute": "full", "distributed_optimizer": True,
                       "framework": "megatron-core", **kw})


def test_defaults_are_each_frameworks():
    assert strategy_arrays(_dsv3())["etp"] == 2.0  # Megatron-Core: expert_tensor_parallel_size None -> tp
    titan = dict(tp=2, dp=512, zero=3, framework="torchtitan")
    assert strategy_arrays(Strategy(ep=8, **titan))["etp"] == 1.0  # torchtitan's default 1 under EP
    assert strategy_arrays(Strategy(ep=1, **titan))["etp"] == 2.0  # ... without EP its TP plan splits the experts
    assert strategy_arrays(_dsv3(etp=1))["etp"] == 1.0  # what the job says wins


def test_expert_params_and_grads_split_over_ep_x_etp():
    base = estimate_memory(DSV3, TR, H100, _dsv3(), check=False).items_bytes
    etp1 = estimate_memory(DSV3, TR, H100, _dsv3(etp=1), check=False).items_bytes
    assert etp1["weights"] > 1.3 * base["weights"]  # the routed experts are most of a stage's weights: about doubled
    assert etp1["grad_accum_buffer"] > 1.3 * base["grad_accum_buffer"]  # Megatron-Core's fp32 main gradients
    # the distributed optimizer shards the experts' states over the expert-DP group, world / (pp x ep x etp): twice
    # as large at etp 1, so a GPU's share of the optimizer states does not change
    for item in ("optimizer_states", "master_weights"):
        assert etp1[item] == pytest.approx(base[item], rel=1e-9)


def test_expert_dp_group_is_world_over_pp_ep_etp():
    dense, expert = shard_groups(strategy_arrays(_dsv3()))
    assert (dense, expert) == (32.0, 1.0)  # 1024 / (16 x 32 x 2)
    dense, expert = shard_groups(strategy_arrays(_dsv3(etp=1)))
    assert (dense, expert) == (32.0, 2.0)  # 1024 / (16 x 32 x 1)


def test_expert_gradient_reduction_grows_with_the_experts_a_gpu_holds():
    base = estimate_time(DSV3, TR, H100, _dsv3(), memory_note=False).breakdown_s["dp_comm"]
    etp1 = estimate_time(DSV3, TR, H100, _dsv3(etp=1), memory_note=False).breakdown_s["dp_comm"]
    assert etp1 > base


def test_rules():
    with pytest.raises(StrategyError) as err:  # Megatron-Core: world % (etp x ep x pp) == 0
        check_strategy(DSV3, TR, H100, _dsv3(etp=4))
    assert err.value.rule == "etp_ep_divide_gpus" and "etp=4" in str(err.value)
    with pytest.raises(StrategyError) as err:  # Qwen3-30B-A3B's experts are 768 wide
        check_strategy(QWEN, TR, H100, Strategy(tp=1, dp=1024, ep=8, etp=5, framework="megatron-core"))
    assert err.value.rule in ("etp_ep_divide_gpus", "etp_divides_ffn")
    h8 = System(accelerator="h100-sxm-80gb", gpus=40, gpus_per_node=8, memory_gib=80.0,
                peak_tflops={"bf16": 989.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0, inter_node_gb_s=50.0)
    with pytest.raises(StrategyError) as err:
        check_strategy(QWEN, TR, h8, Strategy(tp=1, dp=40, ep=8, etp=5, framework="megatron-core"))
    assert err.value.rule == "etp_divides_ffn"
    with pytest.raises(StrategyError) as err:  # torchtitan: etp 1 or tp
        check_strategy(QWEN, TR, H100, Strategy(tp=4, dp=256, ep=8, etp=2, zero=3, framework="torchtitan"))
    assert err.value.rule == "etp_torchtitan"
    # expert TP 1 with TP 2 lets EP span the TP ranks (Megatron-Core's expert grid): ep 64 over dp 32
    check_strategy(DSV3, TR, H100, _dsv3(ep=64, etp=1))


def _qwen(**kw) -> Strategy:
    return Strategy(**{"tp": 2, "dp": 512, "ep": 8, "recompute": "selective", "distributed_optimizer": True,
                       "framework": "megatron-core", **kw})


def test_etp1_moe_layers_skip_the_mlp_tp_collectives_without_shared_experts():
    # Qwen3-30B-A3B has no shared expert: at etp 1 its MoE layers' tokens stay split over TP (no gather / scatter)
    from trainsizer.estimate.step_time import _moe_tp_collectives, _step

    skip, routed = _moe_tp_collectives(_step(QWEN, TR, H100, _qwen(etp=1), None, None, None))
    assert float(skip) == pytest.approx(2.0) and float(routed) == 0.0  # every layer MoE: fwd + bwd pair, no routed
    # DeepSeek-V3's shared experts are a dense TP MLP: they keep the pair (no skip) under either dispatcher
    for dispatcher in ("alltoall", "flex"):
        skip, routed = _moe_tp_collectives(_step(DSV3, TR, H100, _dsv3(etp=1, moe_dispatcher=dispatcher), None, None,
                                                 None))
        assert float(skip) == 0.0 and float(routed) == 0.0


def test_etp_tp_gathers_the_routed_copies_over_the_expert_tp_group_under_alltoall():
    """Megatron-Core's alltoall dispatcher at etp = tp all-gathers the received routed copies (tokens x top-k x h) over
    the expert-TP group and reduce-scatters the experts' output: top-k times the dense MLP's pair."""
    tp = {etp: estimate_time(QWEN, TR, H100, _qwen(etp=etp, moe_dispatcher="alltoall", tp_comm_overlap=False),
                             memory_note=False).breakdown_s["tp_comm"] for etp in (1, 2)}
    # etp 1: the attention's pair only; etp 2: + the routed pair, 8 copies a token (about 8 x the attention's)
    assert 5.0 < (tp[2] - tp[1]) / tp[1] < 9.0
    d = {etp: estimate_time(DSV3, TR, H100, _dsv3(etp=etp, moe_dispatcher="alltoall"), memory_note=False)
         .breakdown_s["tp_comm"] for etp in (1, 2)}
    assert d[2] > 2.0 * d[1]  # shared experts' pair at both, the routed copies' on top at etp 2


def test_the_routed_pair_is_exposed_under_tp_comm_overlap():
    """The dispatcher's expert-TP gather / reduce-scatter are torch.distributed calls on the compute stream, not the
    TE linear layers' userbuffers: TP overlap hides the attention's pair, not the routed one (known-gaps.md 284 (a))."""
    def tp(etp: int, overlap: bool) -> float:
        s = _qwen(etp=etp, moe_dispatcher="alltoall", tp_comm_overlap=overlap)
        return estimate_time(QWEN, TR, H100, s, memory_note=False).breakdown_s["tp_comm"]

    assert tp(1, True) < 0.5 * tp(1, False)  # the attention's pair: mostly hidden
    routed = {overlap: tp(2, overlap) - tp(1, overlap) for overlap in (True, False)}
    assert routed[True] == pytest.approx(routed[False], rel=1e-9)


def test_an_fp32_router_reduce_scatters_the_routed_output_in_fp32():
    """Megatron-Core casts the experts' output to the routing probabilities' dtype before the expert-TP reduce-scatter
    (token_dispatcher.py token_unpermutation at 5a676b36: fp32 under moe_router_dtype fp32, ModelArch.router_fp32):
    the reduce-scatter (and its backward all-gather) move twice the bytes, the gather keeps 16 bits."""
    from trainsizer.estimate.step_time import _moe_tp_collectives, _step

    def routed(model) -> float:
        return float(_moe_tp_collectives(_step(model, TR, H100, _qwen(etp=2, moe_dispatcher="alltoall"), None, None,
                                               None))[1])

    bf16, fp32 = routed(QWEN), routed(dataclasses.replace(QWEN, router_fp32=True))
    # the collectives' 2 + 4 bytes over 2 + 2 (1.5x), and the casts' 6 B an element through HBM twice a pass (on an
    # H100 pair, 450 GB/s NVLink against 3.35 TB/s HBM, the casts add about another 0.5x)
    assert not QWEN.router_fp32 and 1.5 < fp32 / bf16 < 2.5


def test_etp_tp_under_flex_dispatches_over_the_tp_x_ep_group():
    """The flex dispatcher (DeepEP / HybridEP) at etp = tp sends each token to every expert-TP rank of its experts over
    the TP x EP group: no expert-TP collective, a larger all-to-all."""
    runs = {etp: estimate_time(QWEN, TR, H100, _qwen(etp=etp, moe_dispatcher="flex"), memory_note=False).breakdown_s
            for etp in (1, 2)}
    assert runs[2]["tp_comm"] == pytest.approx(runs[1]["tp_comm"], rel=1e-9)
    assert runs[2]["ep_comm"] > 1.5 * runs[1]["ep_comm"]  # 2 copies a rank, and the group of 16 leaves the node


def test_expert_gemms_run_at_the_etp_shard():
    from trainsizer.estimate import compute
    from trainsizer.estimate.step_time import _step

    x = _step(QWEN, TR, H100, _qwen(), None, None, None)
    assert x.et == 2.0 and _step(QWEN, TR, H100, _qwen(etp=1), None, None, None).et == 1.0
    kw = dict(tp=2, cp=1, micro_batch=1, sp=True, recompute=0, ep=8, flash=True, flash_rate=1e15,
              flash_bwd_over_fwd=2.5)
    shapes = compute.ModelShapes.of(QWEN)
    lt_tp = compute.layer_times(shapes, 4096, x.r, **kw)
    assert compute.layer_times(shapes, 4096, x.r, etp=2, **kw).fwd == lt_tp.fwd  # etp = tp: as before
    lt_1 = compute.layer_times(shapes, 4096, x.r, etp=1, **kw)
    # the same FLOPs at other shapes (M / 2, N x 2): a different time, neither zero nor double
    assert lt_1.fwd != lt_tp.fwd and 0.5 < lt_1.fwd / lt_tp.fwd < 2.0


def _acts(model, **kw) -> float:
    return estimate_memory(model, TR, H100, Strategy(**kw), check=False).items_bytes["layer_activations"]


def test_routed_slots_keep_their_hidden_wide_items_per_expert_tp_rank():
    """Megatron-Core at etp > 1: a GPU keeps the routed slots of its expert-TP group (tokens x top-k x etp / tp), with
    their hidden-wide expert input, routing weight and dispatch map whole; the expert-wide items split over etp."""
    # without the distributed optimizer: no model-init phase (its parameter buffer, known-gaps 270 (f)) can win the peak
    # and leave no activation item to compare
    mc = dict(tp=2, dp=512, ep=8, distributed_optimizer=False, framework="megatron-core")
    base = _acts(QWEN, etp=1, recompute="none", **mc)
    delta = _acts(QWEN, etp=2, recompute="none", **mc) - base
    assert delta > 0.05 * base
    # the moe_act recompute drops an expert-wide item (fc2's input): the same delta; "moe" checkpoints the layer: none
    sel = dict(recompute="selective", **mc)
    act = {etp: _acts(QWEN, etp=etp, recompute_modules=("moe_act",), **sel) for etp in (1, 2)}
    assert act[2] - act[1] == pytest.approx(delta, rel=1e-6)
    moe = {etp: _acts(QWEN, etp=etp, recompute_modules=("moe",), **sel) for etp in (1, 2)}
    assert moe[2] == pytest.approx(moe[1], rel=1e-12)
    # torchtitan (its own EP, not Megatron-Core's dispatcher): unchanged
    titan = dict(tp=2, dp=512, ep=8, zero=3, recompute="none", framework="torchtitan")
    assert _acts(QWEN, etp=2, **titan) == pytest.approx(_acts(QWEN, etp=1, **titan), rel=1e-12)


def _ep_s(system: System, **kw) -> float:
    from trainsizer.estimate.step_time import _ep_comm, _step

    x = _step(QWEN, TR, system, Strategy(**{"framework": "megatron-core", "moe_dispatcher": "alltoall", **kw}), None,
              None, None)
    return float(_ep_comm(x, x.m))


def test_ep_group_spans_the_cp_ranks():
    """The expert grid has no CP dimension (Megatron-Core's expert RankGenerator: cp = 1, order tp-cp-ep-dp-pp), so an EP
    group of 8 at expert TP 1 is 8 neighbouring ranks whatever the CP: one 8-GPU node, its all-to-all off the network."""
    slow_net = dataclasses.replace(H100, inter_node_gb_s=5.0)
    for cp in (1, 2, 4):
        layout = dict(tp=1, cp=cp, dp=1024 // cp, ep=8)
        assert _ep_s(slow_net, **layout) == pytest.approx(_ep_s(H100, **layout), rel=1e-12)
    # at expert TP 2 the EP ranks lie 2 apart: a group of 8 spans two nodes and does use the network
    wide = dict(tp=2, cp=2, dp=256, ep=8, etp=2)
    assert _ep_s(slow_net, **wide) > 2.0 * _ep_s(H100, **wide)
