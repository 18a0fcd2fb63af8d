"""TP above the K / V heads where the stack sub-shards the QKV activations (Megatron-Core core_v0.16.0+,
NVIDIA/Megatron-LM f7dfb99795): each rank keeps its query group's K and V heads whole, and every attention layer
all-gathers the QKV projection's output over TP (forward) and reduce-scatters its gradient (backward)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import framework
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.models.arch import ModelArch

QWEN3_MOE = ModelArch(name="qwen3-30b-a3b", family="qwen3_moe", layers=48, hidden=2048, heads=32, kv_heads=4,
                      head_dim=128, ffn=6144, vocab=151936, experts=128, experts_per_token=8, expert_ffn=768)
TRAIN = Training(seq_len=8192, global_batch_seqs=16)


def b200(gpus: int = 8) -> System:
    return System(accelerator="b200", gpus=gpus, gpus_per_node=8, memory_gib=180, peak_tflops={"bf16": 2250.0},
                  hbm_gb_s=8000.0, intra_node_gb_s=900.0, inter_node_gb_s=50.0)


def _strategy(tp: int, recompute: str = "none", fw: str = "megatron-core") -> Strategy:
    return Strategy(tp=tp, dp=8 // tp, micro_batch=2, recompute=recompute, sequence_parallel=True, framework=fw)


@pytest.mark.parametrize(("recompute", "item", "layers_kept"), [("none", "layer_activations", 48),
                                                                ("selective", "layer_activations", 48),
                                                                ("full", "recompute_working_set", 1)])
def test_each_rank_keeps_whole_kv_heads(monkeypatch, recompute, item, layers_kept):
    """At TP 8 over 4 K / V heads a rank keeps one K and one V head (128 wide each) of every token of its layers
    where the items count half a head: 2 B x 1,024 x (2 - 1) / 8 a token more a layer -- every layer without
    recompute or with selective (q / k / v kept), the one layer being recomputed under full recompute."""
    st = _strategy(8, recompute)
    on = estimate_memory(QWEN3_MOE, TRAIN, b200(), st).items_bytes
    monkeypatch.setattr(framework, "kv_subshard_frameworks", lambda: ())
    off = estimate_memory(QWEN3_MOE, TRAIN, b200(), st).items_bytes
    per_layer = 2 * 8192 * 2.0 * (QWEN3_MOE.kv_dim + QWEN3_MOE.v_dim) * (8 / 4 - 1.0) / 8
    assert on[item] - off[item] == pytest.approx(layers_kept * per_layer, rel=1e-9)


def test_no_extra_bytes_where_tp_divides_the_kv_heads(monkeypatch):
    st = _strategy(4)
    on = estimate_memory(QWEN3_MOE, TRAIN, b200(), st).per_gpu_bytes
    monkeypatch.setattr(framework, "kv_subshard_frameworks", lambda: ())
    assert estimate_memory(QWEN3_MOE, TRAIN, b200(), st).per_gpu_bytes == on


def test_qkv_all_gather_and_reduce_scatter_are_timed():
    """The step at TP 8 grows by the QKV all-gather (forward) and reduce-scatter (backward) of every attention layer
    and micro-batch: tokens x (q + k + v widths) x 2 B gathered over the 8 ranks."""
    st = _strategy(8)
    on = estimate_time(QWEN3_MOE, TRAIN, b200(), st, framework_style=perf_style("megatron-core"))
    off_style = dataclasses.replace(perf_style("megatron-core"), kv_head_subshard=False)
    off = estimate_time(QWEN3_MOE, TRAIN, b200(), st, framework_style=off_style)
    sysm = b200()
    nbytes = 2 * 8192 * (QWEN3_MOE.q_dim + QWEN3_MOE.kv_dim + QWEN3_MOE.v_dim) * 2.0
    link = sysm.intra_node_gb_s * 1e9
    floor = 2 * nbytes * (8 - 1) / 8 / link * 48 * 16 / 2  # AG + RS, 48 layers, 8 micro-batches, at full NVLink
    assert on.step_s - off.step_s >= 0.5 * floor
    assert on.step_s - off.step_s <= 0.1 * on.step_s  # a few per cent of the step, not more
    assert estimate_time(QWEN3_MOE, TRAIN, b200(), _strategy(4), framework_style=perf_style("megatron-core")).step_s \
        == estimate_time(QWEN3_MOE, TRAIN, b200(), _strategy(4), framework_style=off_style).step_s


@settings(max_examples=40, deadline=None)
@given(kv=hs.sampled_from([1, 2, 4, 8, 16]), tp=hs.sampled_from([1, 2, 4, 8, 16, 32]),
       auto=hs.sampled_from([0, 1, 2]))
def test_kv_head_copies_counts_the_ranks_sharing_a_head(kv, tp, auto):
    """Under the sub-sharding stack a K / V head is held by tp / kv ranks above the heads and by one at or below;
    the copies times the heads a rank holds cover TP (copies x kv = max(tp, kv)); other stacks hold one copy."""
    got = float(framework.kv_head_copies("auto", np.array(auto), np.array(float(tp)), kv, "gqa"))
    if auto == 0:  # megatron-core
        assert got * kv == pytest.approx(max(tp, kv))
    else:
        assert got == 1.0
    assert float(framework.kv_head_copies("megatron-core", 0, float(tp), kv, "mla")) == 1.0


def test_context_parallel_ring_carries_the_whole_kv_head():
    """Under CP the ring passes a rank's K / V on: with TP 8 over 4 K / V heads that is one whole head a rank, twice
    the half head TP 8 would leave, so the exposed ring time grows."""
    st = Strategy(tp=8, cp=2, dp=1, micro_batch=1, sequence_parallel=True, framework="megatron-core")
    off_style = dataclasses.replace(perf_style("megatron-core"), kv_head_subshard=False)
    on = estimate_time(QWEN3_MOE, TRAIN, b200(16), st, framework_style=perf_style("megatron-core")).breakdown_s
    off = estimate_time(QWEN3_MOE, TRAIN, b200(16), st, framework_style=off_style).breakdown_s
    assert on["cp_comm"] > off["cp_comm"]
    assert on["tp_comm"] > off["tp_comm"]
