"""strategy.local_batch: torchtitan and NeMo AutoModel run one pipeline schedule per local batch and accumulate
gradients across them (AutoModel recipes/llm/benchmark.py: ga_steps = global / (local x dp)), so each schedule fills
and drains the pipeline on its own; Megatron runs all of a step's micro-batches in one schedule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError, TrainsizerError
from trainsizer.estimate import pipeline
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-70b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 256},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 64, "network": "ib-ndr400"}}
# 64 GPUs = PP 4 x DP 16: 16 sequences per DP rank a step


def _scenario(**strategy):
    return resolve_job({**JOB, "strategy": {"pp": 4, "vpp": 2, "micro_batch": 1, "fsdp": "full",
                                            "recompute": "full", "framework": "torchtitan", **strategy}},
                       load_catalog())


def _breakdown(**strategy) -> dict[str, float]:
    sc = _scenario(**strategy)
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).breakdown_s


def test_schedule_micro_batches():
    assert pipeline.schedule_micro_batches(16.0, 1, None) == 16.0
    assert pipeline.schedule_micro_batches(16.0, 2, 8) == 4.0
    assert pipeline.schedule_micro_batches(4.0, 1, 8) == 4.0  # never more than the step's
    got = pipeline.schedule_micro_batches(np.array([16.0, 8.0]), np.array([1.0, 2.0]), 8)
    assert got.tolist() == [8.0, 4.0]


def test_each_schedule_pays_its_own_bubble():
    """16 micro-batches as 1, 2 or 4 schedules: the bubble (p - 1) / (v m_s) of each schedule's time, m / m_s
    schedules a step: 1x, 2x, 4x the one-schedule bubble; compute unchanged."""
    one = _breakdown()
    assert _breakdown(local_batch=16) == one
    for local, runs in ((8, 2), (4, 4)):
        b = _breakdown(local_batch=local)
        assert b["pp_bubble"] == pytest.approx(runs * one["pp_bubble"], rel=1e-9)
        assert b["compute"] == one["compute"]
        assert b["pp_comm"] > one["pp_comm"]  # each schedule's warm-up and cool-down transfers


@settings(max_examples=30, deadline=None)
@given(p=hs.integers(2, 16), v=hs.integers(1, 8), m_s=hs.integers(1, 64), runs=hs.integers(1, 16))
def test_bubble_of_runs_schedules(p, v, m_s, runs):
    """The step's bubble time, frac(p, m_s, v) x m: runs schedules of m_s micro-batches idle runs times as long as one
    schedule does, and never less than one schedule of all m micro-batches."""
    m = m_s * runs
    step = pipeline.bubble_fraction(p, pipeline.schedule_micro_batches(m, 1, m_s), v) * m
    assert step == pytest.approx(runs * pipeline.bubble_fraction(p, m_s, v) * m_s)
    assert step >= pipeline.bubble_fraction(p, m, v) * m - 1e-12


def test_in_flight_activations_within_one_schedule():
    """Fewer micro-batches per schedule never hold more activations than one schedule of them all."""
    sc, lb = _scenario(), _scenario(local_batch=4)
    base = estimate_memory(sc.model, sc.training, sc.system, sc.strategy).items_bytes["layer_activations"]
    assert estimate_memory(lb.model, lb.training, lb.system, lb.strategy).items_bytes["layer_activations"] <= base


def test_echoed_in_the_job_summary():
    assert _scenario(local_batch=8).summary()["strategy"]["local_batch"] == 8
    assert _scenario().summary()["strategy"]["local_batch"] is None
    assert t("field_strategy.local_batch", "zh") != t("field_strategy.local_batch", "en")


def _refusal(**strategy) -> str:
    with pytest.raises(TrainsizerError) as err:
        sc = _scenario(**strategy)
        estimate_memory(sc.model, sc.training, sc.system, sc.strategy)
    return str(err.value)


def test_not_a_multiple_of_the_micro_batch():
    with pytest.raises(SpecError, match="local_batch 3 is not a multiple of micro_batch 2"):
        _scenario(micro_batch=2, local_batch=3)


def test_must_divide_the_sequences_of_a_rank():
    with pytest.raises(StrategyError, match="local_batch_divides"):
        sc = _scenario(local_batch=6)  # 16 per rank
        estimate_memory(sc.model, sc.training, sc.system, sc.strategy)


@pytest.mark.parametrize("framework", ["megatron-core", "deepspeed"])
def test_refused_on_stacks_that_run_one_schedule(framework):
    text = _refusal(local_batch=8, framework=framework, fsdp="none", zero=1)
    assert "local_batch" in text and "torchtitan" in text
