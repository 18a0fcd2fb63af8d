"""Activation offloading costs PCIe time: the offloaded activations go to the host in the forward and come back
in the backward; what the compute cannot hide is added to the step (step_time._activation_offload)."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import activation_offload_bytes, estimate_memory
from trainsizer.estimate.step_time import BREAKDOWN_KEYS, estimate_time
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-8b")
CARD = System(accelerator="rtx-4090", gpus=1, gpus_per_node=1, memory_gib=24.0, peak_tflops={"bf16": 165.0},
              hbm_gb_s=1008.0, intra_node_gb_s=25.0, pcie_gb_s=25.0)
LORA = Training(method="lora", seq_len=4096, global_batch_seqs=8, lora_rank=16,
                lora_targets=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"))
OFF = Strategy(micro_batch=1, recompute="none", activation_offload=True, framework="torchtune")


def test_offloaded_bytes_are_every_layer_but_the_last_and_one_in_flight_stays():
    moved = float(activation_offload_bytes(MODEL, LORA, OFF, MODEL.layers))
    mem_on = estimate_memory(MODEL, LORA, CARD, OFF)
    mem_off = estimate_memory(MODEL, LORA, CARD, OFF.with_(activation_offload=False))
    # every layer but the last moves; the GPU keeps the last and one layer in flight, so one micro-batch's layer
    # activations less two layers leave it (the memory estimate also drops the first layer's norm input under
    # LoRA, 0.3% here)
    one_layer = moved / (MODEL.layers - 1)
    freed = mem_off.items_bytes["layer_activations"] - mem_on.items_bytes["layer_activations"]
    assert freed == pytest.approx(moved - one_layer, rel=0.01)
    assert float(activation_offload_bytes(MODEL, LORA, OFF.with_(activation_offload=False), 32)) == 0.0


def test_offloading_n_layers_keeps_the_others_and_one_in_flight():
    """Megatron-Core cpu_offloading_num_layers = N: the first N layers' activations go to host memory (Transformer
    Engine's AsyncDoubleBufferGroupOffloadHandler), the rest stay, plus one layer in flight."""
    mc = OFF.with_(framework="megatron-core")
    moved = float(activation_offload_bytes(MODEL, LORA, mc.with_(activation_offload=12), MODEL.layers))
    one_layer = float(activation_offload_bytes(MODEL, LORA, mc.with_(activation_offload=1), MODEL.layers))
    assert moved == pytest.approx(12 * one_layer)
    none = estimate_memory(MODEL, LORA, CARD, mc.with_(activation_offload=False)).items_bytes["layer_activations"]
    some = estimate_memory(MODEL, LORA, CARD, mc.with_(activation_offload=12)).items_bytes["layer_activations"]
    assert some == pytest.approx(none * (MODEL.layers - 12) / MODEL.layers + one_layer, rel=1e-9)
    every = estimate_memory(MODEL, LORA, CARD, mc).items_bytes["layer_activations"]
    assert every < some < none


def test_offloading_as_many_layers_as_a_chunk_holds_is_refused():
    from trainsizer.errors import StrategyError

    with pytest.raises(StrategyError, match="activation_offload_layers\\)"):
        estimate_memory(MODEL, LORA, CARD, OFF.with_(activation_offload=MODEL.layers, framework="megatron-core"))


def test_slow_host_link_exposes_transfer_time_fast_link_hides_it():
    slow = estimate_time(MODEL, LORA, dataclasses.replace(CARD, pcie_gb_s=2.0), OFF)
    fast = estimate_time(MODEL, LORA, dataclasses.replace(CARD, pcie_gb_s=1000.0), OFF)
    none = estimate_time(MODEL, LORA, CARD, OFF.with_(activation_offload=False))
    assert slow.breakdown_s["act_offload"] > 0.0
    assert fast.breakdown_s["act_offload"] == 0.0 and none.breakdown_s["act_offload"] == 0.0
    assert slow.step_s == pytest.approx(fast.step_s + slow.breakdown_s["act_offload"], rel=1e-9)
    assert set(slow.breakdown_s) == set(BREAKDOWN_KEYS)


def test_megatron_core_refuses_layer_offloading_with_pipeline_parallelism_or_recompute():
    """Megatron-Core TransformerConfig.__post_init__ (core_r0.15, Megatron-Bridge 25.11): cpu_offloading raises with
    pipeline_model_parallel_size > 1 and with recompute_granularity set (selective or full)."""
    from trainsizer.errors import StrategyError

    from .test_perf_common import h100_cluster, llama8b

    m, s = llama8b(), h100_cluster(8)
    tr = Training(method="pretrain", seq_len=8192, global_batch_seqs=16)
    mc = Strategy(dp=8, micro_batch=1, recompute="none", distributed_optimizer=True, framework="megatron-core",
                  activation_offload=8)
    estimate_memory(m, tr, s, mc)
    with pytest.raises(StrategyError, match="activation_offload_layers_pp\\)") as err:
        estimate_memory(m, tr, s, mc.with_(pp=2, dp=4))
    assert "pp 2" in str(err.value)
    for recompute, modules in (("selective", None), ("full", None), ("selective", ("core_attn",))):
        with pytest.raises(StrategyError, match="activation_offload_layers_recompute\\)"):
            estimate_memory(m, tr, s, mc.with_(recompute=recompute, recompute_modules=modules))
    # true is torchtune's enable_activation_offloading, which its recipes run with full activation checkpointing
    estimate_memory(m, tr, s, Strategy(dp=8, zero=3, micro_batch=1, recompute="full", framework="torchtune",
                                       activation_offload=True))


def test_the_megatron_bridge_recipes_that_offload_layers_are_accepted():
    """Megatron-Bridge 25.11 LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS (scripts/performance/configs/llama, docs commit
    00b7660): Megatron FSDP on 64 GPUs, micro-batch 2, pp 1, no recompute, cpu_offloading_num_layers 40 (GB300: 20)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.validate import check_strategy
    from trainsizer.scenario import resolve_job

    cat = load_catalog()
    for acc, net, layers in (("gb200", "ib-ndr400", 40), ("gb300", "ib-xdr800", 20)):
        sc = resolve_job({"model": "llama-3.1-70b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
                          "global_batch": {"sequences": 256}, "precision": "fp8", "fp8_recipe": "tensorwise",
                          "hardware": {"accelerator": acc, "count": 64, "network": net},
                          "strategy": {"tp": 1, "pp": 1, "micro_batch": 2, "fsdp": "full", "recompute": "none",
                                       "framework": "megatron-core", "activation_offload": layers}}, cat)
        check_strategy(sc.model, sc.training, sc.system, sc.strategy)
