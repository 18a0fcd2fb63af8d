"""transformers' eager MoE loop between its host syncs (docs/known-gaps.md 283): the queue refills from empty after
each expert's sync, so the ops before the expert's first GEMM are waited through (kernels moe_expert_loop_lead_ops,
step_time._expert_loop_excess), and under DeepSpeed ZeRO-3 with each expert linear its own module the hooks on the
expert's modules run inside that segment, serial with the rest of the micro-batch (step_time._zero3_expert_hook_calls,
_zero3_expert_segments, _deepspeed_hook_excess)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import compute, step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import host_figure
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
OP_S = host_figure("launch_bound_op_s", "nvidia")


def _job(model: str = "mixtral-8x7b", seq_len: int = 1024, micro_batch: int = 1, pad_share: float = 0.0,
         **strategy) -> dict:
    return {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": seq_len, "pad_share": pad_share,
            "global_batch": {"sequences": 32 * micro_batch}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 32, "network": "ib-ndr400"},
            "strategy": {k: v for k, v in {"micro_batch": micro_batch, "recompute": "full", "zero": 3,
                                           "framework": "hf", "experts_implementation": "eager", **strategy}.items()
                         if v is not None}}


def _x(**kw) -> step_time._Step:
    sc = resolve_job(_job(**kw), CAT)
    return step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


def _f(v) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def _step_s(**kw) -> float:
    sc = resolve_job(_job(**kw), CAT)
    return _f(step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"])


def test_a_gpu_bound_expert_waits_through_the_lead_ops_and_its_first_gemm_issue():
    """Under FSDP (no ZeRO-3 hooks) at 8,192 tokens a GPU each expert's GEMMs outrun the CPU, so each expert's sync
    costs the lead ops' issue and the first GEMM's: (lead + 1) launch-bound ops (NVIDIA has no round-trip figure),
    8 experts x 2 forward passes a Mixtral layer (forward and recompute)."""
    assert host_figure("round_trip_s", "nvidia") is None
    x = _x(seq_len=8192, zero=None, fsdp="full", checkpoint_impl="reentrant_outer")
    local, gpu = step_time._routed_expert_forward(x)
    assert _f(gpu) > 12 * OP_S  # GPU-bound
    lead = compute.KERNELS["moe_expert_loop_lead_ops"]
    assert lead == 3
    assert _f(step_time._expert_loop_excess(x)) == pytest.approx(8 * 2 * (lead + 1) * OP_S)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([128, 512, 2048, 8192, 32768]), st.sampled_from([0.0, 1.0, 2.0, 3.0, 6.0]))
def test_the_lead_ops_never_make_the_loop_cheaper(seq_len, lead):
    """Moving ops from the drained run to the lead (no GPU work) never shortens it: the GPU waits at least as long."""
    x = _x(seq_len=seq_len, zero=None, fsdp="full", checkpoint_impl="reentrant_outer")
    saved = compute.KERNELS["moe_expert_loop_lead_ops"]
    try:
        compute.KERNELS["moe_expert_loop_lead_ops"] = 0.0
        none = _f(step_time._expert_loop_excess(x))
        compute.KERNELS["moe_expert_loop_lead_ops"] = lead
        some = _f(step_time._expert_loop_excess(x))
    finally:
        compute.KERNELS["moe_expert_loop_lead_ops"] = saved
    assert some >= none - 1e-12
    assert some <= none + lead * 8 * 2 * OP_S + 1e-12


def test_zero3_hooks_on_one_mixtral_expert_are_counted_as_the_layer_counts_them():
    """Three gathered linears (w1, w3, w2: 24 calls a forward each) and the expert's MLP module and act_fn (6 each),
    as perf_constants.yaml zero3_hooks counts them; the layer's count over its 8 experts holds 8 times that."""
    c = load_constants().raw["zero3_hooks"]
    per = 3 * c["module_calls"]["gathered"]["forward"] + 2 * c["module_calls"]["parameterless"]["forward"]
    assert per == 84
    assert _f(step_time._zero3_expert_hook_calls(_x(zero3_expert_fetch="per_expert"))) == per


@pytest.mark.parametrize("kw", [{"zero3_expert_fetch": "block"}, {"zero": None, "fsdp": "full"},
                                {"experts_implementation": "grouped_mm", "zero3_expert_fetch": "per_expert"},
                                {"model": "llama-3.1-8b"}])
def test_no_hooks_run_between_the_syncs_elsewhere(kw):
    """A ZeRO-3 leaf MoE block (one module), FSDP (hooks per unit), one grouped call (no loop) or a dense model: none
    of the experts' hooks sits between the loop's syncs, so nothing leaves the blend."""
    x = _x(**kw)
    assert _f(step_time._zero3_expert_hook_calls(x)) == 0.0
    assert step_time._zero3_expert_segments(x) == (0.0, 0.0)


def test_serial_expert_segments_never_make_the_step_faster_and_bind_where_the_host_does():
    """Taking the experts' hooks out of the micro-batch's soft maximum and timing them inside their segments can only
    lengthen the step; at 512 tokens a GPU (host-bound segments: 96 calls against an expert's short GEMMs) the layer's
    segments cost at least their host time less their GPU time."""
    kw = {"seq_len": 512, "zero3_expert_fetch": "per_expert"}
    x = _x(**kw)
    local, gpu = step_time._routed_expert_forward(x)
    calls = _f(step_time._zero3_expert_hook_calls(x)) + compute.KERNELS["moe_expert_loop_forward"]
    assert _f(step_time._expert_loop_excess(x)) >= 8 * 2 * (calls * OP_S - _f(gpu)) - 1e-12
    segmented = _step_s(**kw)
    hooks, segs = step_time._zero3_expert_hook_calls, step_time._zero3_expert_segments
    try:
        step_time._zero3_expert_hook_calls = lambda x: 0.0
        step_time._zero3_expert_segments = lambda x, loop=None: (0.0, 0.0)
        blended = _step_s(**kw)
    finally:
        step_time._zero3_expert_hook_calls, step_time._zero3_expert_segments = hooks, segs
    assert segmented > blended


def test_pad_routed_light_experts_are_timed_at_their_own_tokens():
    """With 94% of the positions one pad token (Training.pad_share) two experts take them and six the sample tokens
    alone (compute.expert_token_split). Under ZeRO-3's per-expert hooks at 8,192 tokens a GPU a balanced expert's
    GEMMs about match its host time, so little shows; the six light experts' passes are host-bound whatever the heavy
    two's GEMMs, and each runs behind its own sync, so the loop costs more timed by group (docs/known-gaps.md 283 (d))."""
    kw = {"seq_len": 2048, "micro_batch": 4, "zero3_expert_fetch": "per_expert"}
    x_pad, x_even = _x(pad_share=0.94, **kw), _x(**kw)
    groups = step_time._expert_forward_groups(x_pad)
    assert [_f(n) for n, _ in groups] == [2.0, 6.0]
    assert _f(groups[1][1]) < _f(groups[0][1])
    assert [_f(n) for n, _ in step_time._expert_forward_groups(x_even)] == [8.0]
    assert _f(step_time._expert_loop_excess(x_pad)) > 5.0 * _f(step_time._expert_loop_excess(x_even))
    light_host = 6 * 2 * (_f(step_time._zero3_expert_hook_calls(x_pad)) + 12) * OP_S
    assert _f(step_time._expert_loop_excess(x_pad)) > 0.8 * (light_host - 6 * 2 * _f(groups[1][1]))
