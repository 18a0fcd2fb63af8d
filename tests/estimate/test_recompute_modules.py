"""Megatron-Core's selective recompute by module (strategy.recompute_modules, TransformerConfig.recompute_modules):
what each module's recompute stops keeping, what it re-runs, and the rules that refuse what Megatron-Core refuses."""

from __future__ import annotations

import pytest

from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate.activations import layer_items, recompute_module_items
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.models import load_model

DSV3 = load_model("deepseek-v3")
LLAMA = load_model("llama-3.1-8b")
BF16 = Training(method="pretrain", precision="bf16", seq_len=4096, global_batch_seqs=1024)
GB200 = System(accelerator="gb200", gpus=256, gpus_per_node=4, memory_gib=186.0,
               peak_tflops={"bf16": 2500.0, "fp8": 5000.0}, hbm_gb_s=8000.0, intra_node_gb_s=900.0,
               scaleup_domain=72, inter_node_gb_s=50.0)
ST = Strategy(pp=4, vpp=4, dp=64, ep=64, micro_batch=1, recompute="selective", distributed_optimizer=True,
              framework="megatron-core")


def items(moe: bool, *modules: str):
    return recompute_module_items(DSV3, BF16, moe=moe, modules=modules, impl="flash")


def test_mla_up_proj_keeps_the_latents_instead_of_q_k_v():
    none = layer_items(DSV3, BF16, moe=True, profile="megatron", recompute="none", impl="flash")
    up = items(True, "mla_up_proj")
    rq, rkv, rope = DSV3.q_lora_rank, DSV3.kv_lora_rank, DSV3.qk_rope_head_dim
    q_k_v = 2 * (DSV3.q_dim + DSV3.kv_dim + DSV3.v_dim)
    # gone: q, k, v, the up projections' inputs and their fused norms (input + fp32 rstd); kept: the compressed q,
    # kv and k_pos_emb the checkpoint holds
    gone = q_k_v + 2 * rq + 2 * rq + 4 + 2 * rkv + 2 * rkv + 4
    kept = 2 * (rq + rkv + rope)
    assert none.tp - up.tp == pytest.approx(gone - kept)
    assert up.routed == none.routed and up.sp == none.sp


def test_moe_act_drops_the_expert_activation_output_per_slot():
    none, act = items(True), items(True, "moe_act")
    assert none.routed - act.routed == 2 * DSV3.expert_ffn
    assert items(False, "moe_act").tp == items(False).tp  # dense layers have no grouped experts


def test_moe_keeps_the_block_input_only():
    moe = items(True, "moe")
    assert moe.routed == 0.0
    assert not any(k.startswith("shared_") for k in moe.detail)
    assert moe.detail["moe_checkpoint_input"] == 2 * DSV3.hidden


def test_core_attn_alone_is_plain_selective():
    """recompute_modules [core_attn] is Megatron-Core's default: the same memory and step time as selective."""
    listed = ST.with_(recompute_modules=("core_attn",))
    assert estimate_memory(DSV3, BF16, GB200, listed).per_gpu_bytes == pytest.approx(
        estimate_memory(DSV3, BF16, GB200, ST).per_gpu_bytes)
    assert estimate_time(DSV3, BF16, GB200, listed).step_s == pytest.approx(estimate_time(DSV3, BF16, GB200, ST).step_s)


def test_mla_up_proj_trades_memory_for_recompute_time():
    base = ST.with_(recompute_modules=())
    up = ST.with_(recompute_modules=("mla_up_proj",))
    m0, m1 = (estimate_memory(DSV3, BF16, GB200, s).items_bytes["layer_activations"] for s in (base, up))
    assert m1 < 0.8 * m0
    t0, t1 = (estimate_time(DSV3, BF16, GB200, s).breakdown_s["compute"] for s in (base, up))
    assert t0 < t1 < 1.05 * t0  # the up projections are a few percent of the forward


def test_moe_recompute_runs_the_all_to_alls_again():
    base = estimate_time(DSV3, BF16, GB200, ST.with_(recompute_modules=())).breakdown_s["ep_comm"]
    moe = estimate_time(DSV3, BF16, GB200, ST.with_(recompute_modules=("moe",))).breakdown_s["ep_comm"]
    assert moe == pytest.approx(base * 6.0 / 4.0)


def test_what_megatron_core_refuses_is_refused():
    mcore = Strategy(dp=256, distributed_optimizer=True)  # auto resolves to megatron-core
    with pytest.raises(StrategyError, match="mla_up_proj"):
        estimate_memory(LLAMA, BF16, GB200, mcore.with_(recompute_modules=("mla_up_proj",)))
    with pytest.raises(StrategyError, match="moe_act"):
        estimate_memory(LLAMA, BF16, GB200, mcore.with_(recompute_modules=("moe_act",)))
    with pytest.raises(StrategyError, match="megatron-core"):
        estimate_memory(DSV3, BF16, GB200, ST.with_(framework="torchtitan", recompute_modules=("moe",)))
    with pytest.raises(SpecError, match="recompute module"):
        estimate_memory(DSV3, BF16, GB200, ST.with_(recompute_modules=("attention",)))


def test_hardware_flops_count_what_the_modules_re_run():
    """HFU counts the recomputed work: the up-projection GEMMs under mla_up_proj, the MoE block under moe, not
    the attention core unless core_attn is listed."""
    from trainsizer.estimate.flops import hardware_flops_per_token, layer_flops, mla_up_proj_weights

    s, lf = 4096, layer_flops(DSV3)
    none = hardware_flops_per_token(DSV3, s, "none")
    assert hardware_flops_per_token(DSV3, s, "selective", recompute_modules=("core_attn",)) == pytest.approx(
        hardware_flops_per_token(DSV3, s, "selective"))
    up = hardware_flops_per_token(DSV3, s, "selective", recompute_modules=("mla_up_proj",))
    assert up - none == pytest.approx(2.0 * mla_up_proj_weights(DSV3) * DSV3.layers)
    moe = hardware_flops_per_token(DSV3, s, "selective", recompute_modules=("moe",))
    assert moe - none == pytest.approx(lf.router + lf.experts + lf.shared)
    assert hardware_flops_per_token(DSV3, s, "selective", recompute_modules=("moe_act",)) == none


def test_under_auto_the_megatron_options_are_judged_on_the_resolved_stack():
    """recompute_modules and the embedding / loss pipeline slots are Megatron-Core options: under framework auto
    they are refused where auto resolves to hf (data parallel) or torchtitan (ZeRO-3 with PP), and the error says
    what auto became; where auto resolves to megatron-core they are accepted."""
    with pytest.raises(StrategyError, match="recompute_modules_framework.*hf"):
        estimate_memory(LLAMA, BF16, GB200, Strategy(dp=256, recompute_modules=("core_attn",)))
    estimate_memory(LLAMA, BF16, GB200, Strategy(dp=256, distributed_optimizer=True, recompute_modules=("core_attn",)))
    slots = Strategy(pp=4, dp=64, micro_batch=1, pipeline_embedding_layer=True, pipeline_loss_layer=True)
    estimate_memory(LLAMA, BF16, GB200, slots)  # auto -> megatron-core
    with pytest.raises(StrategyError, match="pipeline_slots_need_megatron.*torchtitan"):
        estimate_memory(LLAMA, BF16, GB200, slots.with_(zero=3))  # auto -> torchtitan (FSDP2 + pipelining)
