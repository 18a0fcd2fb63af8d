"""moe_dispatcher deepep: flex with DeepEP's backend stated. The same transport, per-expert host figure and copies as
flex everywhere; on Megatron-Core its _DeepepManager's own host calls join the MoE layer's host path
(step_time._deepep_host_calls; docs/known-gaps.md 334 (a)), which flex and hybridep leave at the router's."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.step_time import estimate_time
from trainsizer.evaluate import _moe_dispatcher
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

JOB = {"model": "qwen3-30b-a3b", "data": {"tokens": 1e9}, "seq_len": 2048, "global_batch": {"sequences": 32},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 4, "network": "ib-ndr400"}}
MCORE = {"framework": "megatron-core", "tp": 4, "ep": 4, "etp": 1, "sequence_parallel": True, "micro_batch": 1,
         "recompute": "none", "distributed_optimizer": True}
TITAN = {"framework": "torchtitan", "fsdp": "full", "ep": 4, "micro_batch": 1, "recompute": "full",
         "torch_compile": False}


def _est(strategy: dict, dispatcher: str):
    sc = resolve_job({**JOB, "strategy": {**strategy, "moe_dispatcher": dispatcher}}, load_catalog())
    return sc, estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def test_megatron_core_deepep_costs_its_managers_host_calls_over_flex():
    """Host-bound at TP 4 x EP 4 with one 2K micro-batch (perf_heldout72's Qwen3-30B-A3B LoRA layout, full SFT
    here): the 30 counted calls a MoE layer (21 forward, 9 backward) at 14.8 us each lengthen the step; the transport
    and the EP communication are flex's."""
    _, flex = _est(MCORE, "flex")
    _, deepep = _est(MCORE, "deepep")
    assert deepep.breakdown_s["ep_comm"] == pytest.approx(flex.breakdown_s["ep_comm"], rel=1e-12)
    assert deepep.step_s > flex.step_s
    # at most the calls and the three syncs' next issues: 48 MoE layers x 32 micro-batches x (31 + 3) x 14.8 us
    assert deepep.step_s - flex.step_s < 48 * 32 * 34 * 14.8e-6 * 1.0001


def test_its_three_syncs_each_pay_the_next_issue_on_nvidia():
    """_indices_to_multihot's boolean-mask indexes and repeat_interleave sync a forward; NVIDIA has no round-trip
    figure, so each pays the next op's issue (host_sync.drain_excess_s), as the unfused permutation's masked_select;
    nothing under flex."""
    from trainsizer.estimate.host_sync import host_figure
    from trainsizer.estimate.step_time import _deepep_sync_s, _step

    def sync_s(dispatcher: str) -> float:
        sc = resolve_job({**JOB, "strategy": {**MCORE, "moe_dispatcher": dispatcher}}, load_catalog())
        return float(_deepep_sync_s(_step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)))

    assert host_figure("round_trip_s", "nvidia") is None
    assert sync_s("deepep") == pytest.approx(3 * host_figure("launch_bound_op_s", "nvidia"))
    assert sync_s("flex") == 0.0


def test_on_a_pytorch_native_stack_deepep_is_flex():
    _, flex = _est(TITAN, "flex")
    _, deepep = _est(TITAN, "deepep")
    assert deepep.step_s == pytest.approx(flex.step_s, rel=1e-12)


def test_the_estimate_says_deepep_was_assumed_in_both_languages():
    sc, _ = _est(MCORE, "deepep")
    assert _moe_dispatcher(sc, "megatron-core") == {"moe_dispatcher": {"requested": "deepep", "assumed": "deepep"}}
    assert t("moe_dispatcher_deepep", "zh") != t("moe_dispatcher_deepep", "en")
    assert "DeepEP" in t("moe_dispatcher_deepep", "en")


def test_a_misspelt_dispatcher_is_refused_by_name():
    with pytest.raises(SpecError, match="moe_dispatcher"):
        resolve_job({**JOB, "strategy": {**MCORE, "moe_dispatcher": "deep-ep"}}, load_catalog())
