"""Megatron-Core DDP's model-init peak (memory._ddp_init_peak, docs/known-gaps.md 270 (f)): with the distributed
optimizer each buffer's parameter copy is allocated while the model's own parameters still are, before any master or
optimizer state; it sets the peak where the training steps hold less (the optimizer on the host, full recompute)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory, memory_per_gpu_bytes

from .test_perf_common import a100_cluster, llama8b, mixtral

HOST_OPT = dict(tp=8, dp=1, zero=1, micro_batch=1, recompute="full", framework="megatron-core",
                distributed_optimizer=True, offload="optimizer")
T = Training(method="full", seq_len=4096, global_batch_seqs=8)


def _est(model=None, training=T, **kw):
    return estimate_memory(model or llama8b(), training, a100_cluster(8), Strategy(**(HOST_OPT | kw)))


def test_init_holds_the_weights_twice_beside_the_gradient_buffer():
    e = _est()
    it = e.items_bytes
    assert e.peak_phase == "model init"
    assert it["ddp_init_param_copies"] == pytest.approx(it["weights"])  # a dense model: one buffer
    assert "master_weights" not in it or it["master_weights"] == 0
    allocated = it["weights"] + it["ddp_init_param_copies"] + it["grad_accum_buffer"]
    assert e.per_gpu_bytes > allocated


def test_no_parameter_buffer_without_the_distributed_optimizer_or_under_other_stacks():
    for kw in ({"distributed_optimizer": False, "offload": "none", "zero": 0},
               {"framework": "deepspeed", "distributed_optimizer": False, "tp": 1, "dp": 8}):
        e = _est(**kw)
        assert e.peak_phase != "model init" and "ddp_init_param_copies" not in e.items_bytes


def test_an_expert_buffer_follows_the_dense_one():
    """Dense buffer first (its copy beside the dense gradients), then the experts' (their copy and gradients beside
    the dense ones): the copy item is the larger of the dense weights less the expert gradients and the expert
    weights."""
    e = _est(mixtral(), tp=1, dp=8, ep=8)
    it = e.items_bytes
    assert e.peak_phase == "model init"
    assert it["weights"] > it["ddp_init_param_copies"] > 0.5 * it["weights"]


@settings(max_examples=25, deadline=None)
@given(mb=hs.sampled_from([1, 2]), rec=hs.sampled_from(["full", "selective", "none"]),
       off=hs.sampled_from(["none", "optimizer"]))
def test_the_peak_is_never_below_the_init_nor_the_steps(mb, rec, off):
    """The init's allocated bytes (a dense model's weights twice and its gradient buffer) are a floor of the peak
    whichever phase wins, and the batch path agrees with the detailed one."""
    kw = dict(micro_batch=mb, recompute=rec, offload=off)
    on = _est(**kw)
    it = on.items_bytes
    assert on.per_gpu_bytes >= it["weights"] * 2 + it["grad_accum_buffer"]
    assert (on.peak_phase == "model init") == ("ddp_init_param_copies" in it)
    s = Strategy(**(HOST_OPT | kw))
    assert float(memory_per_gpu_bytes(llama8b(), T, a100_cluster(8), s)[0]) == pytest.approx(on.per_gpu_bytes)
    assert dataclasses.replace(s).distributed_optimizer
