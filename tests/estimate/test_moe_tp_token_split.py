"""strategy.moe_tp_token_split: at expert TP 1 under TP, each TP rank dispatches its 1 / tp of an MoE layer's tokens
(the default), or every TP rank dispatches, computes and combines the TP group's whole token set (false: torchtitan's
DeepEP backend at 1a36996b, whose DeepEPMoE has no reorderer for ReordererSequenceParallel to split)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

JOB = {"model": "qwen3-30b-a3b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
       "moe_routing": "round-robin",
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 32, "network": "ib-ndr400"}}


def _job(tp: int, **strategy) -> dict:
    return {**JOB, "strategy": {"tp": tp, "dp": 32 // tp, "ep": 16, "etp": 1, "micro_batch": 1, "recompute": "full",
                                "framework": "torchtitan", "moe_dispatcher": "flex", **strategy}}


def _breakdown(tp: int, style=None, **strategy) -> dict[str, float]:
    sc = resolve_job(_job(tp, **strategy), load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, framework_style=style,
                         memory_note=False).breakdown_s


def test_replicated_dispatch_doubles_the_routed_traffic_and_adds_expert_work_at_tp_2():
    split, whole = _breakdown(2), _breakdown(2, moe_tp_token_split=False)
    # twice the bytes a dispatch; each transfer's fixed latency is not doubled
    assert 1.8 * split["ep_comm"] < whole["ep_comm"] <= 2.0 * split["ep_comm"]
    assert whole["compute"] > split["compute"]  # the routed experts run every token of the TP group on each rank
    assert whole["tp_comm"] == split["tp_comm"]  # the MoE input is all-gathered over TP either way


def test_without_tp_the_option_changes_nothing():
    assert _breakdown(1) == _breakdown(1, moe_tp_token_split=False)


def test_the_option_is_echoed_and_a_bad_value_is_a_clear_error_in_both_languages():
    sc = resolve_job(_job(2, moe_tp_token_split=False), load_catalog())
    assert sc.summary()["strategy"]["moe_tp_token_split"] is False
    with pytest.raises(SpecError, match="moe_tp_token_split"):
        resolve_job(_job(2, moe_tp_token_split="sometimes"), load_catalog())
    assert t("field_strategy.moe_tp_token_split", "zh") != t("field_strategy.moe_tp_token_split", "en")


def test_torchtitan_expert_tp_dispatches_the_tp_groups_tokens_from_every_tp_rank():
    """torchtitan's ExpertTensorParallel at etp = tp all-to-alls the all-gathered MoE input from each TP rank (the
    'redundant all-to-all' of c4b409af2): twice the bytes of a sequence-shard dispatch at TP 2; Megatron-Core's
    alltoall dispatcher sends the sequence shard and all-gathers after (_moe_tp_collectives)."""
    shard = replace(perf_style("torchtitan"), etp_dispatch_replicated=False)
    for dispatcher in ("alltoall", "flex"):
        split, whole = (_breakdown(2, style, etp=2, moe_dispatcher=dispatcher)["ep_comm"] for style in (shard, None))
        assert 1.8 * split < whole <= 2.0 * split
    assert perf_style("torchtitan").etp_dispatch_replicated and not perf_style("megatron-core").etp_dispatch_replicated
