"""PyTorch's ring attention under the torchtitan style (step_time._cp_torch_ring): K / V at the query heads' width
(torchtitan's Attention repeats them before SDPA), one all-gather waited on after the local causal block, dK / dV in
fp32 one rank on per ring step, fp32 merges; Megatron-Core keeps Transformer Engine's ring over the K / V heads."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.messages import tr
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-8b", "data": {"tokens": 1e9},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "network": "ib-ndr400"}}


def _cp_comm(cp: int, framework: str = "torchtitan", style=None, model: str = "llama-3.1-8b",
             seq: int = 32768, kv_heads: int | None = None) -> float:
    sc = resolve_job({**JOB, "model": model, "seq_len": seq * cp, "global_batch": {"sequences": 8 // cp},
                      "strategy": {"cp": cp, "dp": 8 // cp, "micro_batch": 1, "recompute": "full",
                                   "framework": framework}}, load_catalog())
    m = sc.model if kv_heads is None else replace(sc.model, kv_heads=kv_heads)
    return estimate_time(m, sc.training, sc.system, sc.strategy, framework_style=style,
                         memory_note=False).breakdown_s["cp_comm"]


def test_torchtitan_ring_costs_more_than_transformer_engines_and_grows_with_cp():
    """The ring's fp32 merges, its fp32 dK / dV and the last exchange cost more than TE's 16-bit corrections."""
    te = replace(perf_style("torchtitan"), cp_torch_ring=False)
    assert 0.0 < _cp_comm(8, style=te) < _cp_comm(8)
    costs = [_cp_comm(c) for c in (2, 4, 8)]
    assert 0.0 < costs[0] < costs[1] < costs[2]


def test_torch_ring_moves_kv_at_the_query_width():
    """repeat_kv before SDPA: the K / V the ring gathers are as wide with 8 K / V heads as with 32."""
    assert _cp_comm(8, seq=1024, kv_heads=32) == _cp_comm(8, seq=1024) > 0.0  # the gather exposed at 1K a rank


def test_megatron_core_ring_is_not_the_torch_ring():
    assert not perf_style("megatron-core").cp_torch_ring and perf_style("torchtitan").cp_torch_ring


@settings(max_examples=12, deadline=None)
@given(cp=st.sampled_from([1, 2, 4, 8]), seq=st.sampled_from([2048, 8192, 32768]))
def test_torch_ring_cost_is_nonnegative_and_nothing_without_cp(cp, seq):
    cost = _cp_comm(cp, seq=seq)
    assert cost >= 0.0
    assert (cost == 0.0) == (cp == 1)


def _job(**strategy) -> dict:
    return {**JOB, "seq_len": 8192, "global_batch": {"sequences": 1},
            "strategy": {"cp": 8, "dp": 1, "micro_batch": 1, "framework": "torchtitan", **strategy}}


def test_repeat_kv_false_moves_the_kv_heads_and_is_echoed():
    """strategy.repeat_kv false (Hugging Face models: SDPA enable_gqa): the gather moves 8 K / V heads, not 32."""
    times = {}
    for repeat in (True, False):
        sc = resolve_job(_job(repeat_kv=repeat), load_catalog())
        assert sc.summary()["strategy"]["repeat_kv"] is repeat
        times[repeat] = estimate_time(sc.model, sc.training, sc.system, sc.strategy,
                                      memory_note=False).breakdown_s["cp_comm"]
    assert 0.0 < times[False] < times[True]
    assert _cp_comm(8, seq=1024) == _cp_comm(8, seq=1024, style=replace(perf_style("torchtitan"), repeat_kv=True))


def test_bad_repeat_kv_is_a_clear_error_with_words_in_both_languages():
    with pytest.raises(SpecError, match="repeat_kv"):
        resolve_job(_job(repeat_kv="sometimes"), load_catalog())
    assert t("field_strategy.repeat_kv", "zh") != t("field_strategy.repeat_kv", "en")


@settings(max_examples=4, deadline=None)
@given(repeat=st.booleans())
def test_old_name_cp_repeat_kv_is_read_as_repeat_kv_with_a_note(repeat):
    """strategy.cp_repeat_kv (the name before 2026-12-06) is still read, as repeat_kv, with a note naming both
    names; the summary (JSON) carries the new name only, and the estimate is the new name's."""
    old = resolve_job(_job(cp_repeat_kv=repeat), load_catalog())
    new = resolve_job(_job(repeat_kv=repeat), load_catalog())
    assert old.summary()["strategy"]["repeat_kv"] is repeat and "cp_repeat_kv" not in old.summary()["strategy"]
    assert old.strategy == new.strategy
    renamed = [n for n in old.notes if n.key == "note_field_renamed"]
    assert len(renamed) == 1 and "strategy.cp_repeat_kv" in renamed[0] and "strategy.repeat_kv" in renamed[0]
    assert tr(renamed[0], "zh") != tr(renamed[0], "en")
    assert not [n for n in new.notes if n.key == "note_field_renamed"]
    assert "cp_repeat_kv" not in old.job.strategy.model_dump()


def test_old_and_new_names_together_are_a_clear_error():
    with pytest.raises(SpecError, match="cp_repeat_kv.*repeat_kv.*keep only repeat_kv"):
        resolve_job(_job(cp_repeat_kv=True, repeat_kv=False), load_catalog())
