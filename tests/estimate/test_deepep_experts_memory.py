"""Routed experts behind DeepEP on the PyTorch-native stacks (strategy.moe_dispatcher flex on the hf memory profile):
NeMo AutoModel's GroupedExpertsDeepEP applies the routing probabilities inside the expert activation and unpermutes
without them, so a routed token-slot keeps Megatron-Core's layout (expert input, fc1 output, fc2 input, probability,
one index map) instead of transformers' (which also keeps the expert output and its weighted copy)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.activations import layer_items, titan_expert_slot_bytes
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models.arch import ModelArch

MOE = ModelArch(name="moe", family="qwen3_moe", layers=8, hidden=2048, heads=16, kv_heads=4, ffn=0, vocab=151936,
                experts=64, experts_per_token=8, expert_ffn=768)
DENSE = ModelArch(name="dense", family="llama", layers=8, hidden=2048, heads=16, kv_heads=4, ffn=8192,
                  vocab=32000)
TRAIN = Training(seq_len=4096, global_batch_seqs=64)


def _h100(gpus: int = 8) -> System:
    return System(accelerator="h100-sxm", gpus=gpus, gpus_per_node=8, memory_gib=80.0,
                  peak_tflops={"bf16": 989.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0, host_ram_gib=2048.0)


def _acts(model: ModelArch, dispatcher: str, framework: str = "torchtitan", recompute: str = "none",
          item: str = "layer_activations", **extra) -> float:
    st = Strategy(dp=8, ep=8 if model.is_moe else 1, zero=3, micro_batch=1, recompute=recompute, framework=framework,
                  moe_dispatcher=dispatcher, **extra)
    return estimate_memory(model, TRAIN, _h100(), st).items_bytes[item]


def _slot(**kw) -> dict[str, float]:
    it = layer_items(MOE, TRAIN, moe=True, recompute="none", impl="flash", **kw)
    return {k: v for k, v in it.detail.items() if k.startswith("routed_")}


def test_deepep_slot_is_megatrons_layout():
    deepep, megatron = _slot(profile="hf", deepep_experts=True), _slot(profile="megatron")
    assert deepep == megatron
    assert "routed_expert_output_per_slot" not in deepep and "routed_weighted_output_per_slot" not in deepep
    hf = _slot(profile="hf")
    assert hf["routed_expert_output_per_slot"] == hf["routed_weighted_output_per_slot"] == 2 * MOE.hidden


def test_flex_on_torchtitan_keeps_less_by_the_slot_difference():
    """Per layer and token: top-k slots x (torchtitan's own eager expert slot - DeepEP slot) bytes fewer, over the
    layers the GPU holds (torchtitan's all-to-all path keeps its GroupedExperts' tensors: titan_expert_slot_bytes)."""
    per_slot = (titan_expert_slot_bytes(MOE, TRAIN, compiled=False)
                - layer_items(MOE, TRAIN, moe=True, profile="hf", recompute="none", impl="flash",
                              deepep_experts=True).routed)
    saved = _acts(MOE, "alltoall") - _acts(MOE, "flex")
    assert per_slot > 0
    assert saved == pytest.approx(TRAIN.seq_len * MOE.experts_per_token * per_slot * MOE.layers, rel=1e-9)


@pytest.mark.parametrize("model, dispatcher, framework", [
    (DENSE, "flex", "torchtitan"),  # no routed experts
    (MOE, "flex", "megatron-core"),  # the Megatron profile already keeps this layout
    (MOE, "auto", "torchtitan"),  # torchtitan's own all_to_all: its experts' layout
])
def test_unchanged_where_no_deepep_experts_run(model, dispatcher, framework):
    assert _acts(model, dispatcher, framework) == _acts(model, "alltoall", framework)


def test_full_recompute_keeps_the_layer_input_and_a_smaller_working_set():
    assert _acts(MOE, "flex", recompute="full") == _acts(MOE, "alltoall", recompute="full")
    ws = "recompute_working_set"  # the loss phase summed in, so the re-run layer's item shows (known-gaps 214)
    assert _acts(MOE, "flex", recompute="full", item=ws, live_at_rerun="loss") < \
        _acts(MOE, "alltoall", recompute="full", item=ws, live_at_rerun="loss")


@settings(max_examples=25, deadline=None)
@given(h=hs.sampled_from([1024, 2880, 7168]), f=hs.sampled_from([256, 768, 2048, 2880]),
       k=hs.sampled_from([1, 2, 4, 8]), bf16=hs.booleans())
def test_deepep_slot_never_keeps_more_than_transformers(h, f, k, bf16):
    model = MOE.with_(hidden=h, expert_ffn=f, experts_per_token=k, heads=h // 128, kv_heads=h // 512)
    tr = Training(seq_len=4096, global_batch_seqs=64, precision="bf16" if bf16 else "fp32")
    kw = dict(moe=True, profile="hf", recompute="none", impl="flash")
    hf = layer_items(model, tr, **kw).routed
    deepep = layer_items(model, tr, deepep_experts=True, **kw).routed
    a = 2 if bf16 else 4
    assert hf - deepep == pytest.approx(2 * a * h + 8 + a * f)  # expert output, weighted copy, one index, SiLU out
