"""strategy.pp_stage_layers: every pipeline rank's decoder layers as a job states them (nanotron's compute-balanced
build_model, a Megatron-Core pipeline_model_parallel_layout); time paces on the rank with the most, memory judges
every middle rank that can hold the most (pipeline.fullest_middle_ranks)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate import pipeline
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

# Llama-2 7B-like dense model, 32 layers, on two nodes at PP 4
JOB = {"model": "llama-2-7b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
       "precision": "bf16", "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"}}
STRATEGY = {"tp": 2, "pp": 4, "micro_batch": 1, "recompute": "none", "framework": "megatron-core",
            "distributed_optimizer": True}


def _scenario(**strategy):
    return resolve_job({**JOB, "strategy": {**STRATEGY, **strategy}}, load_catalog())


def _time(**strategy):
    sc = _scenario(**strategy)
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def _memory(**strategy):
    sc = _scenario(**strategy)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy)


@given(counts=st.lists(st.integers(0, 12), min_size=1, max_size=12))
def test_ranks_hold_their_counts_in_order(counts):
    """Rank r builds layers [sum(counts[:r]), sum(counts[:r + 1])); the most loaded is the largest count."""
    L, p = sum(counts), len(counts)
    for r in range(p):
        start, stop = pipeline.stage_layer_range(L, p, float(r), 0.0, 0.0, None, None, tuple(counts))
        assert (float(start), float(stop)) == (sum(counts[:r]), sum(counts[: r + 1]))
    first, last = pipeline.first_last_stage_layers(L, p, 0.0, 0.0, None, None, tuple(counts))
    assert (float(first), float(last)) == (counts[0], counts[-1])
    assert float(pipeline.most_loaded_stage_layers(L, p, 0.0, 0.0, None, None, tuple(counts))) == max(counts)


@given(counts=st.lists(st.integers(0, 12), min_size=3, max_size=16))
def test_the_fullest_middle_ranks_pass_every_earlier_middle_count(counts):
    ranks = pipeline.fullest_middle_ranks(tuple(counts))
    assert all(1 < r < len(counts) - 1 for r in ranks)
    for r in range(2, len(counts) - 1):
        assert (r in ranks) == (counts[r] > max(counts[1:r]))
    assert pipeline.fullest_middle_ranks(None) == ()


def test_an_even_list_is_the_even_split():
    even, listed = _time(), _time(pp_stage_layers=[8, 8, 8, 8])
    assert listed.step_s == pytest.approx(even.step_s, rel=1e-12)
    assert _memory(pp_stage_layers=[8, 8, 8, 8]).per_gpu_bytes == pytest.approx(_memory().per_gpu_bytes, rel=1e-12)


def test_time_paces_on_the_rank_with_the_most_layers():
    """A middle rank of 10 (9 / 10 / 8 / 5) paces the pipeline against the even split's 8 + the LM head on the last:
    the compute grows, and more with 10 than with 9 on that rank (the end ranks cannot state it)."""
    even = _time().breakdown_s["compute"]
    nine, ten = (_time(pp_stage_layers=c).breakdown_s["compute"] for c in ([9, 9, 9, 5], [9, 10, 8, 5]))
    assert even < nine < ten
    assert ten / nine == pytest.approx(10 / 9, rel=0.02)


def test_memory_judges_a_later_middle_rank_that_holds_more():
    """8 / 6 / 12 / 6: rank 2 holds twice rank 1's layers with one micro-batch fewer in flight: it is evaluated and is
    the worst GPU."""
    m = _memory(pp_stage_layers=[8, 6, 12, 6])
    assert set(m.stage_bytes) == {"first", "middle", "middle_r2", "last"}
    assert m.worst_stage == 2 and m.stage_bytes["middle_r2"] > m.stage_bytes["middle"]
    assert "2 of 4" in m.worst_gpu and "12 layers" in m.worst_gpu  # ranks from 0, as STAGE_RANK


def test_the_summary_says_the_list_and_the_field_has_a_label():
    sc = _scenario(pp_stage_layers=[9, 9, 8, 6])
    assert tuple(sc.summary()["strategy"]["pp_stage_layers"]) == (9, 9, 8, 6)
    assert t("field_strategy.pp_stage_layers", "zh") != t("field_strategy.pp_stage_layers", "en")


@pytest.mark.parametrize(("counts", "extra", "says"), [
    ([8, 8, 16], {}, "3 counts for pp 4"),
    ([8, 8, 17, -1], {}, "whole number from 0"),
    ([8, 8, 8, 8], {"pp_last_stage_layers": 8}, "one or the other"),
])
def test_a_list_that_cannot_be_a_split_is_refused_as_written(counts, extra, says):
    with pytest.raises(SpecError, match=says):
        _scenario(pp_stage_layers=counts, **extra)


@pytest.mark.parametrize(("extra", "rule"), [
    ({"pp_stage_layers": [8, 8, 8, 9]}, "pp_stage_list_split"),
    ({"pp_stage_layers": [8, 8, 8, 8], "pipeline_loss_layer": True}, "pp_stage_list_split"),
    ({"pp_stage_layers": [8, 8, 8, 8], "framework": "deepspeed", "distributed_optimizer": False},
     "pp_stage_list_framework"),
])
def test_a_list_the_model_or_stack_cannot_take_breaks_a_rule(extra, rule):
    with pytest.raises(StrategyError) as err:
        _time(**extra)
    assert err.value.rule == rule


def test_no_uneven_layers_warning_when_every_rank_is_stated():
    sc = resolve_job({**JOB, "strategy": {**STRATEGY, "pp": 4, "pp_stage_layers": [9, 9, 8, 6]}}, load_catalog())
    notes = estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).notes
    assert not any("split" in n and "uneven" in n for n in notes)
    assert np.isfinite(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)
