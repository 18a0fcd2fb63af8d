"""Memory of every pipeline stage: the estimate's worst GPU is the most loaded of all p stages (first, last and the
middle stage 1 it evaluates), checked against a rank-by-rank evaluation of every stage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import memory, pipeline
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import DEFAULT_OPTIONS, estimate_memory, memory_per_gpu_bytes
from trainsizer.models.arch import ModelArch

# Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json)
LLAMA8 = ModelArch(name="llama-3.1-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8,
                   ffn=14336, vocab=128256, max_position=131072)


def h100(gpus: int) -> System:
    return System(accelerator="h100-sxm", gpus=gpus, gpus_per_node=8, memory_gib=80.0,
                  peak_tflops={"bf16": 989.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0, host_ram_gib=2048.0)


def every_stage_bytes(model: ModelArch, training: Training, strategy: Strategy, system: System) -> list[float]:
    """Reference: each of the p ranks evaluated on its own layer range, ends and in-flight micro-batches."""
    b = memory.system_batch(model, training, system, strategy, DEFAULT_OPTIONS)
    p = int(strategy.pp)
    slots = (b.s["pipeline_embedding_layer"], b.s["pipeline_loss_layer"])
    out = []
    for r in range(p):
        start, stop = pipeline.stage_layer_range(model.layers, p, r, *slots)
        g = memory._Stage(np.asarray(start, dtype=np.int64), np.asarray(stop, dtype=np.int64), stop - start,
                          float(r), r == 0, r == p - 1)
        out.append(float(np.asarray(memory._stage_bytes(b, g, DEFAULT_OPTIONS, False)["total"]).reshape(-1)[0]))
    return out


@settings(max_examples=40, deadline=None)
@given(pp=hs.sampled_from([2, 3, 4, 8, 16]), vpp=hs.sampled_from([1, 2]), slots=hs.booleans(),
       mb=hs.sampled_from([1, 2]), rec=hs.sampled_from(["none", "full"]), gbs=hs.sampled_from([16, 64, 256]))
def test_the_worst_gpu_is_the_most_loaded_of_every_stage(pp, vpp, slots, mb, rec, gbs):
    """Megatron-Core order (1F1B / interleaved): no rank holds more than the first, the last and stage 1 the
    estimate evaluates, and the estimate is never below either end."""
    model = LLAMA8.with_(layers=32 - 2 * slots)  # 32 slots either way; uneven over 3 stages
    st = Strategy(tp=2, pp=pp, vpp=vpp, dp=2, micro_batch=mb, recompute=rec, distributed_optimizer=True,
                  framework="megatron-core", pipeline_embedding_layer=slots, pipeline_loss_layer=slots)
    tr = Training(seq_len=4096, global_batch_seqs=gbs)
    e = estimate_memory(model, tr, h100(4 * pp), st, check=False)
    stages = every_stage_bytes(model, tr, st, h100(4 * pp))
    assert e.per_gpu_bytes == pytest.approx(max(stages), rel=1e-12)
    assert e.per_gpu_bytes >= max(stages[0], stages[-1])
    assert e.stage_bytes["first"] == pytest.approx(stages[0], rel=1e-12)
    assert e.stage_bytes["last"] == pytest.approx(stages[-1], rel=1e-12)
    if pp > 2:
        assert e.stage_bytes["middle"] == pytest.approx(stages[1], rel=1e-12)
    else:
        assert "middle" not in e.stage_bytes


def test_a_middle_stage_peaks_under_slots_and_interleaving():
    """Megatron-Core account_for_embedding / loss_in_pipeline_split at PP 8 x VPP 2 (30 + 2 slots, two a chunk):
    stage 1 builds 4 layers against the ends' 3, and its chunk 0 holds a full layer where the first rank's holds
    the embedding and one layer; the output names stage 1."""
    model = LLAMA8.with_(layers=30)
    st = Strategy(tp=2, pp=8, vpp=2, dp=2, micro_batch=1, distributed_optimizer=True, framework="megatron-core",
                  pipeline_embedding_layer=True, pipeline_loss_layer=True)
    tr = Training(seq_len=8192, global_batch_seqs=64)
    e = estimate_memory(model, tr, h100(32), st)
    assert e.worst_stage == 1 and e.worst_gpu.startswith("pipeline stage 1 of 8 (4 layers")
    assert e.stage_bytes["middle"] > max(e.stage_bytes["first"], e.stage_bytes["last"])
    assert e.to_dict()["stages_gib"]["middle"] == pytest.approx(e.per_gpu_bytes / memory.GIB, abs=1e-3)
    worst, _ = memory_per_gpu_bytes(model, tr, h100(32), st)
    assert float(worst.reshape(-1)[0]) == pytest.approx(e.per_gpu_bytes, rel=1e-12)


def test_no_slots_no_middle_peak():
    """Without slots stage 1 holds no more layers than the first and one micro-batch fewer: the first stays the worst."""
    st = Strategy(tp=2, pp=4, dp=2, micro_batch=1, distributed_optimizer=True, framework="megatron-core")
    e = estimate_memory(LLAMA8, Training(seq_len=8192, global_batch_seqs=64), h100(16), st)
    assert e.worst_stage == 0 and e.stage_bytes["middle"] < e.stage_bytes["first"]


def test_scalar_and_vector_paths_agree_with_a_middle_stage():
    rng = np.random.default_rng(3)
    n = 40
    pp = rng.choice([2, 4, 8], n)
    vpp = rng.choice([1, 2], n)
    slots = rng.choice([True, False], n)
    mb = rng.choice([1, 2], n)
    rec = rng.integers(0, 3, n)
    model = LLAMA8.with_(layers=30)
    tr = Training(seq_len=8192, global_batch_seqs=128)
    st = Strategy(tp=2, pp=pp, vpp=vpp, dp=2, micro_batch=mb, recompute=rec, distributed_optimizer=True,
                  framework="megatron-core", pipeline_embedding_layer=slots, pipeline_loss_layer=slots)
    vec, fits = memory_per_gpu_bytes(model, tr, h100(64), st)
    for i in range(n):
        one = Strategy(tp=2, pp=int(pp[i]), vpp=int(vpp[i]), dp=2, micro_batch=int(mb[i]),
                       recompute=("none", "selective", "full")[rec[i]], distributed_optimizer=True,
                       framework="megatron-core", pipeline_embedding_layer=bool(slots[i]),
                       pipeline_loss_layer=bool(slots[i]))
        e = estimate_memory(model, tr, h100(64), one, check=False)
        assert e.per_gpu_bytes == pytest.approx(vec[i], rel=1e-12)
        assert e.fits == bool(fits[i])
