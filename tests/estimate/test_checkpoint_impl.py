"""strategy.checkpoint_impl: a reentrant checkpoint wrapped around each FSDP unit (reentrant_outer: Hugging Face
transformers <= 4.51's layer loop, FSDP2's module hooks) gathers every unit a third time in the backward and loses the
backward prefetch (step_time._reentrant_outer_exposed, from torch/distributed/fsdp/_runtime_utils.py); inside the unit,
or non-reentrant, the schedule is the prefetched one. Only ZeRO-3 / FSDP under full recompute moves."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate import step_time
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import _reentrant_outer_exposed, estimate_time, perf_style
from trainsizer.evaluate import evaluate
from trainsizer.names import CHECKPOINT_IMPLS
from trainsizer.render.estimate_view import print_estimate
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, llama8b


@pytest.fixture(autouse=True)
def _no_launch_wait(monkeypatch):
    """These tests count the checkpoint's schedule: the collectives' wait behind the running GEMM (known-gaps 144) is
    left out here; test_collective_launch_wait covers it."""
    monkeypatch.setattr(step_time, "_collective_launch_wait", lambda x, n_coll, layer_fwd_s: 0.0 * n_coll)


def _dp_comm_s(impl: str | None, zero: int = 3, recompute: str = "full", seq: int = 1024) -> float:
    training = Training(seq_len=seq, global_batch_seqs=64, precision="bf16")
    st = Strategy(dp=64, micro_batch=1, zero=zero, recompute=recompute, framework="hf", checkpoint_impl=impl)
    return estimate_time(llama8b(), training, h100_cluster(64), st).breakdown_s["dp_comm"]


def test_outer_reentrant_exposes_more_of_the_backward_than_inside_or_non_reentrant():
    inside, outer, non = (_dp_comm_s(i) for i in ("reentrant", "reentrant_outer", "non_reentrant"))
    assert inside == pytest.approx(non)  # the unit's pre-backward hook runs first either way
    assert outer > 1.5 * inside


def test_only_sharded_parameters_under_full_recompute_move():
    for kw in ({"zero": 2}, {"recompute": "none"}, {"recompute": "selective"}):
        assert _dp_comm_s("reentrant_outer", **kw) == pytest.approx(_dp_comm_s("reentrant", **kw))


def test_schedule_at_its_limits():
    """Comm-bound (no compute to hide behind): 3 all-gathers + the reduce-scatter, plus nothing hidden; compute-bound:
    the backward's reduce-scatter and the recompute's all-gather still wait (one NCCL queue), the rest is hidden."""
    training = Training(seq_len=1024, global_batch_seqs=64, precision="bf16")
    from trainsizer.estimate.step_time import _step

    st = Strategy(dp=64, micro_batch=1, zero=3, recompute="full", framework="hf")
    x = _step(llama8b(), training, h100_cluster(64), st, None, None, None)
    ag, rs, units = np.array(1.0), np.array(0.8), np.array(32.0)
    bound = _reentrant_outer_exposed(x, ag, rs, units, 0.0, 0.0, 0.0)
    assert float(bound) == pytest.approx(3.0 * ag + rs + ag / units)
    big = _reentrant_outer_exposed(x, ag, rs, units, 0.0, 100.0, 100.0 / 32.0)
    k = x.k.overlap_interference
    assert float(big) == pytest.approx(ag / units + k * (ag - ag / units) + rs + ag + k * ag)


def test_style_defaults_come_from_the_frameworks():
    # transformers >= 5 gradient_checkpointing_enable() without kwargs: use_reentrant False (PR #43203, 2026-01)
    assert perf_style("hf").checkpoint_impl == "non_reentrant"
    assert perf_style("torchtitan").checkpoint_impl == "non_reentrant"
    assert perf_style("torchtune").checkpoint_impl == "non_reentrant"
    assert perf_style("fsdp").checkpoint_impl == "non_reentrant"  # llm-foundry's yamls
    assert {perf_style(s).checkpoint_impl for s in ("deepspeed", "megatron-core")} == {"reentrant"}
    assert "reentrant_outer" in CHECKPOINT_IMPLS


def test_a_bad_value_is_refused_with_the_choices():
    st = dataclasses.replace(Strategy(dp=8, zero=3, recompute="full", framework="hf"), checkpoint_impl="reentrent")
    with pytest.raises(SpecError, match="reentrant"):
        estimate_time(llama8b(), Training(seq_len=1024, global_batch_seqs=8), h100_cluster(8), st)


JOB = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e8}, "seq_len": 2048,
       "global_batch": {"sequences": 64}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"}}


def test_outer_needs_an_fsdp_unit():
    cat = load_catalog()
    with pytest.raises(SpecError, match="fsdp: full or hybrid"):
        resolve_job({**JOB, "strategy": {"zero": 3, "checkpoint_impl": "reentrant_outer"}}, cat)


def test_stated_alone_it_is_a_stack_option_the_search_carries():
    from trainsizer.spec import STACK_OPTION_FIELDS, stated_stack_options

    assert "checkpoint_impl" in STACK_OPTION_FIELDS
    scenario = resolve_job({**JOB, "strategy": {"checkpoint_impl": "reentrant_outer"}}, load_catalog())
    assert stated_stack_options(scenario.job.strategy) == (("checkpoint_impl", "reentrant_outer"),)


def test_the_estimate_says_what_it_assumed_in_json_and_table():
    cat = load_catalog()
    res = evaluate(resolve_job({**JOB, "strategy": {"fsdp": "full", "recompute": "full", "framework": "hf"}}, cat), cat)
    assert res["framework"]["checkpoint_impl"] == {"requested": None, "assumed": "non_reentrant"}
    stated = {"fsdp": "full", "recompute": "full", "framework": "hf", "checkpoint_impl": "reentrant_outer"}
    res = evaluate(resolve_job({**JOB, "strategy": stated}, cat), cat)
    assert res["framework"]["checkpoint_impl"]["assumed"] == "reentrant_outer"
    for lang, label in (("en", "activation checkpointing assumed: reentrant_outer"), ("zh", "假定的激活检查点实现：reentrant_outer")):
        buf = io.StringIO()
        print_estimate(res, lang, Console(file=buf, width=250))
        assert label in buf.getvalue()
    plain = evaluate(resolve_job({**JOB, "strategy": {"tp": 2, "recompute": "none"}}, cat), cat)
    assert "checkpoint_impl" not in plain["framework"]  # nothing gathered per unit: not said


def test_a_4x_reentrant_job_inside_the_unit_times_as_the_5x_default():
    """transformers 4.52-4.x checkpoint reentrantly inside accelerate's FSDP1 unit (GradientCheckpointingLayer): the
    pre-backward hook runs first, so the step is the 5.x non-reentrant default's; only around the unit (<= 4.51) it
    moves."""
    cat = load_catalog()

    def step(impl: str | None) -> float:
        strategy = {"fsdp": "full", "recompute": "full", "framework": "hf", **({"checkpoint_impl": impl} if impl else {})}
        return evaluate(resolve_job({**JOB, "strategy": strategy}, cat), cat)["time"]["step_s"]

    assert step("reentrant") == pytest.approx(step(None), rel=1e-12)
    assert step("non_reentrant") == pytest.approx(step(None), rel=1e-12)
    assert step("reentrant_outer") > step(None) * 1.001
