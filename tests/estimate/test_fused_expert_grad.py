"""transformers' eager loops over fused 3-D expert parameters (docs/known-gaps.md 261 (a)): GraniteMoe's
GraniteMoeParallelExperts syncs once a layer and runs every expert (step_time._expert_loop_excess's split form), and each
expert's `weight[i]` returns, in the backward, a gradient of the whole fused parameter that autograd adds into the
accumulating one (step_time._fused_expert_grad_time), quadratic in the experts."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.estimate.compute import KERNELS
from trainsizer.estimate.host_sync import host_figure
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
# granite-3.0-3b-a800m's widths (benchmarks/perf_heldout66.py MODELS)
GRANITE = {"layers": 32, "hidden": 1536, "heads": 24, "kv_heads": 8, "ffn": 512, "vocab": 49155,
           "tied_embeddings": True, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "experts": 40,
           "experts_per_token": 8, "expert_ffn": 512, "family": "granitemoe"}


def _compute(method: str = "full", impl: str = "eager", **model) -> float:
    job = {"model": {**GRANITE, **model}, "method": method, "data": {"tokens": 1e8}, "seq_len": 256,
           "global_batch": {"sequences": 64}, "precision": "bf16", "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
           "strategy": {"micro_batch": 8, "recompute": "full", "framework": "hf", "optimizer_precision": "bf16",
                        "experts_implementation": impl}}
    return float(evaluate(resolve_job(job, CAT), CAT)["time"]["breakdown_s"]["compute"])


def _grad_s(monkeypatch, method: str = "full", impl: str = "eager", **model) -> float:
    """Compute seconds a step the whole-parameter gradients add: the hf style as shipped less the same style with no
    family's experts fused (the loop's form kept)."""
    with_grads = _compute(method, impl, **model)
    monkeypatch.setitem(step_time.PERF_STYLES, "hf",
                        dataclasses.replace(step_time.PERF_STYLES["hf"], fused_expert_families=""))
    without = _compute(method, impl, **model)
    monkeypatch.undo()
    return with_grads - without


def test_the_whole_parameter_gradients_grow_with_the_square_of_the_experts(monkeypatch):
    """Per expert zeros of the whole fused parameter (E experts' weights) and an add into the accumulating one: E x
    (4E - 3) parameter sizes a layer; at 80 experts of the same width about four times 40's."""
    g40, g80 = _grad_s(monkeypatch), _grad_s(monkeypatch, experts=80, experts_per_token=16)
    assert g40 > 0.0
    assert 3.6 < g80 / g40 < 4.2


def test_the_charge_is_the_fused_experts_bytes_at_the_stream_rate(monkeypatch):
    """A lower bound from the bytes alone: 32 layers x 8 micro-batches x (4E - 1) x the 40 experts' bf16 weights
    (3 x 1536 x 512 each), at no more than the A100-80GB's rated 2,039 GB/s."""
    fused = 40 * 3 * 1536 * 512 * 2.0
    floor = 32 * 8 * (4 * 40 - 1) * fused / 2.039e12
    got = _grad_s(monkeypatch)
    assert floor < got < 1.5 * floor


def test_frozen_experts_grouped_mm_and_an_unfused_family_pay_none(monkeypatch):
    """A LoRA job's experts record no select (the weights need no gradient); grouped_mm indexes no expert; Mixtral's
    experts are a ModuleList of their own weights."""
    assert _grad_s(monkeypatch, method="lora") == 0.0
    assert _grad_s(monkeypatch, impl="grouped_mm") == 0.0
    assert _grad_s(monkeypatch, family="mixtral") == 0.0


def test_the_split_loop_issues_fewer_ops_than_a_sync_per_expert():
    """LoRA (no expert gradients): GraniteMoe's loop (one sync a layer, select + F.linear a projection and expert) adds
    less than Mixtral's form (a sync and 12 ops an expert) on the same widths, and at most its ops' host time:
    32 layers x 8 micro-batches x 2 passes (forward, recompute) x 40 experts x 4 ops x the launch-bound op."""
    split = _compute(method="lora") - _compute(method="lora", impl="grouped_mm")
    per_sync = _compute(method="lora", family="custom") - _compute(method="lora", impl="grouped_mm", family="custom")
    ops = 32 * 8 * 2 * 40 * KERNELS["moe_split_loop_forward_ops"] * host_figure("launch_bound_op_s", "nvidia")
    assert 0.0 < split < per_sync
    assert split < ops


@settings(max_examples=15, deadline=None)
@given(experts=st.sampled_from([8, 16, 40, 64]), ffn=st.sampled_from([256, 512, 1024]))
def test_the_loop_adds_time_at_any_width_and_expert_count(experts, ffn):
    """The loop's charges are time added, never taken (against grouped_mm), for any width and expert count."""
    k = min(8, experts)
    eager = _compute(experts=experts, experts_per_token=k, expert_ffn=ffn)
    grouped = _compute(impl="grouped_mm", experts=experts, experts_per_token=k, expert_ffn=ffn)
    assert eager > grouped
