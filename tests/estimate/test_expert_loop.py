"""strategy.experts_implementation: transformers' routed experts as every 4.x release runs them (eager: one expert at a
time, each behind a host sync, so the CPU issues each expert's kernels while the GPU waits, in the forward and its
recompute: step_time._expert_loop_excess) or as v5's default one torch._grouped_mm (the hf style's default); the option
belongs to the stack that runs transformers' MoE code (hf) and is said in the estimate's framework block."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import step_time
from trainsizer.estimate.compute import KERNELS
from trainsizer.estimate.host_sync import host_figure
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(model: str = "mixtral-8x7b", seq_len: int = 512, **strategy) -> dict:
    return {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": seq_len,
            "global_batch": {"sequences": 32}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 32, "network": "ib-ndr400"},
            "strategy": {"micro_batch": 1, "recompute": "full", "zero": 3, "framework": "hf", **strategy}}


def _evaluate(**kw) -> dict:
    return evaluate(resolve_job(_job(**kw), CAT), CAT)


def _step(**kw) -> float:
    return float(_evaluate(**kw)["time"]["step_s"])


def test_the_eager_loop_is_slower_than_grouped_mm_and_unstated_is_grouped_mm():
    eager, grouped = _step(experts_implementation="eager"), _step(experts_implementation="grouped_mm")
    assert eager > grouped
    assert _step() == grouped


def test_the_host_cost_is_bounded_by_the_kernels_issued_after_each_sync():
    """At 512 tokens a GPU each of Mixtral's 8 experts gets 128 tokens: its GEMMs are short, so the CPU's issue time
    shows, but never more than all of it: 32 layers x 8 experts x 2 forward passes (forward + recompute) x 12 kernels
    x NVIDIA's launch-bound eager op (the GPU's own share of each expert overlaps it; no NVIDIA round trip is read)."""
    host_all = 32 * 8 * 2 * KERNELS["moe_expert_loop_forward"] * host_figure("launch_bound_op_s", "nvidia")
    added = (_evaluate(experts_implementation="eager")["time"]["breakdown_s"]["compute"]
             - _evaluate(experts_implementation="grouped_mm")["time"]["breakdown_s"]["compute"])
    assert 0.05 * host_all < added < host_all


def test_the_system_carries_the_catalog_vendor_for_its_host_facts():
    amd = dict(_job(), hardware={"accelerator": "mi300x", "count": 32, "network": "ib-ndr400"})
    assert resolve_job(amd, CAT).system.vendor == "amd"
    assert resolve_job(_job(), CAT).system.vendor == "nvidia"


def _whole_input_grads_s(seq: int) -> float:
    """Compute seconds a step of the loop's work that grows with the tokens: its whole-input gradients
    (step_time._expert_loop_input_grad_time: one fill and add of the block input a hit expert, docs/known-gaps.md
    273 (a)) and its glue beyond the permutation (step_time._expert_loop_glue_time, 317 (d)), over the job's layers
    and micro-batches."""
    sc = resolve_job(_job(seq_len=seq, experts_implementation="eager"), CAT)
    x = step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)
    per_layer = float(np.asarray(step_time._expert_loop_input_grad_time(x) + step_time._expert_loop_glue_time(x))
                      .reshape(-1)[0])
    return per_layer * sc.model.layers * float(np.asarray(x.m).reshape(-1)[0])


def test_the_cost_fades_where_each_expert_has_enough_work():
    """Per-call cost, not work: at 4x the tokens a GPU the experts' GEMMs outrun the CPU's issue time, so the loop's
    host cost adds less compute time in absolute seconds, not more (the compute alone: Mixtral's MoE block is a ZeRO-3
    leaf by DeepSpeed's default under either implementation, whose exposed gather the longer compute partly hides).
    The loop's work, its whole-input gradients and its glue, grows with the tokens instead (4x the bytes; at 512
    tokens the gradients' 24 kernels' fixed cost a layer weighs as much as the bytes) and is taken out of the host part
    here."""
    def compute(seq: int, impl: str) -> float:
        return float(_evaluate(seq_len=seq, experts_implementation=impl)["time"]["breakdown_s"]["compute"])

    def host_part(seq: int) -> float:
        return compute(seq, "eager") - compute(seq, "grouped_mm") - _whole_input_grads_s(seq)
    assert 0.0 <= host_part(2048) < host_part(512)
    assert 1.5 < _whole_input_grads_s(2048) / _whole_input_grads_s(512) < 4.05


def test_a_dense_model_is_unchanged():
    assert _step(model="llama-3.1-8b", experts_implementation="eager") == _step(model="llama-3.1-8b")


def test_the_estimate_says_which_experts_implementation_it_assumed():
    assert _evaluate()["framework"]["experts_implementation"] == {"requested": None, "assumed": "grouped_mm"}
    stated = _evaluate(experts_implementation="eager")["framework"]["experts_implementation"]
    assert stated == {"requested": "eager", "assumed": "eager"}
    assert "experts_implementation" not in _evaluate(model="llama-3.1-8b")["framework"]


def test_outside_transformers_stacks_it_is_refused_with_the_rule():
    with pytest.raises(TrainsizerError, match="experts_implementation"):
        _step(framework="torchtitan", experts_implementation="eager")


def test_an_unknown_implementation_is_refused_with_the_allowed_ones():
    with pytest.raises(TrainsizerError, match="grouped_mm"):
        _step(experts_implementation="batched")


def _fsdp_dp_comm(seq: int, impl: str, ckpt: str = "reentrant_outer", model: str = "mixtral-8x7b") -> float:
    kw = dict(model=model, seq_len=seq, fsdp="full", checkpoint_impl=ckpt, experts_implementation=impl)
    if model != "mixtral-8x7b":
        kw.pop("experts_implementation")
    return float(_evaluate(**kw)["time"]["breakdown_s"]["dp_comm"])


def test_fsdp1_gathers_lose_the_cpu_run_ahead_behind_the_loop_syncs():
    """FSDP1 issues a unit's all-gathers from its own hooks, so they hide only as far as the CPU runs ahead of the GPU;
    the eager loop's host sync per expert stops that, and with a reentrant checkpoint around each unit all four passes
    (3 gathers + the reduce-scatter) are exposed whatever the compute: the exposed time no longer falls as the tokens
    grow, where grouped_mm's does, and it is never below grouped_mm's."""
    eager = [_fsdp_dp_comm(s, "eager") for s in (512, 2048, 8192)]
    grouped = [_fsdp_dp_comm(s, "grouped_mm") for s in (512, 2048, 8192)]
    assert eager[0] == pytest.approx(eager[1]) and eager[1] == pytest.approx(eager[2])
    assert grouped[2] < grouped[0]
    assert all(e >= g for e, g in zip(eager, grouped, strict=True))


def test_a_dense_model_under_fsdp1_keeps_its_overlap():
    """No MoE layer, no sync: the CPU runs ahead and FSDP1's hook-issued gathers hide as before."""
    assert _fsdp_dp_comm(8192, "eager", model="llama-3.1-8b") == pytest.approx(
        _fsdp_dp_comm(8192, "grouped_mm", model="llama-3.1-8b"))
