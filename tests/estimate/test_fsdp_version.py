"""strategy.fsdp_version: which torch FSDP a job's fsdp runs (accelerate's fsdp_version). 1 = FullyShardedDataParallel's
flat parameters (the gradient pre-divide and the views' gradient cat, step_time._fsdp1_predivide_s /
_fsdp1_view_grad_cat_s), 2 = fully_shard (its copy-out / copy-in, step_time._fsdp2_copies); unset = the style's."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest
from pydantic import ValidationError

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import Calibration, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.evaluate import evaluate
from trainsizer.names import FSDP_VERSIONS
from trainsizer.scenario import resolve_job
from trainsizer.spec.job import FsdpVersion, StrategySpec

from .test_perf_common import h100_cluster, llama8b

CAL = Calibration(busbw_intra_gb_s=360.0, busbw_inter_gb_s=80.0)
TRAIN = Training(seq_len=4096, global_batch_seqs=256)


def _run(fsdp: str = "full", version: int | None = None, style=None):
    st = Strategy(tp=1, dp=64, zero=3, fsdp=fsdp, micro_batch=2, framework="hf", recompute="selective",
                  fsdp_version=version)
    return estimate_time(llama8b(), TRAIN, h100_cluster(), st, CAL, framework_style=style)


def test_unset_is_the_styles_fsdp1_and_version_2_takes_fsdp2s_terms():
    hf = perf_style("hf")
    assert hf.fsdp1_grad_predivide and hf.fsdp1_view_grad_cat and not hf.fsdp2_copies  # accelerate's default: 1
    default, one, two = _run(), _run(version=1), _run(version=2)
    assert one.step_s == default.step_s
    fsdp2 = dataclasses.replace(hf, fsdp1_grad_predivide=False, fsdp1_view_grad_cat=False, fsdp2_copies=True)
    assert two.step_s == pytest.approx(_run(style=fsdp2).step_s, rel=1e-12)
    assert two.step_s != one.step_s
    # FSDP2's copy-out of each all-gather and copy-in of each reduce-scatter: more bytes than FSDP1's cat alone
    m, hbm = llama8b(), rates(h100_cluster(), "bf16").hbm_bytes_s
    assert two.breakdown_s["dp_comm"] > one.breakdown_s["dp_comm"] - 2 * 2.0 * 2.0 * m.params_total / hbm


def test_the_version_acts_only_where_fsdp_shards():
    # zero 3 without fsdp is DeepSpeed's engine: no FSDP to version
    assert _run(fsdp="none", version=2).step_s == _run(fsdp="none").step_s
    assert step_time._fsdp_version_option(Strategy(fsdp="none", fsdp_version=2)) == {}
    assert step_time._fsdp_version_option(Strategy(fsdp="full", fsdp_version=2)) == {
        "fsdp1_grad_predivide": False, "fsdp1_view_grad_cat": False, "fsdp2_copies": True}


def test_a_bad_version_is_refused_with_the_choices():
    with pytest.raises(SpecError) as err:
        _run(version=3)
    assert err.value.where == "strategy.fsdp_version"
    assert "1" in str(err.value) and "2" in str(err.value)
    with pytest.raises(ValidationError) as bad:
        StrategySpec(fsdp="full", fsdp_version=3)
    assert "fsdp_version" in str(bad.value)
    assert set(get_args(FsdpVersion)) == set(FSDP_VERSIONS)


def test_a_job_file_carries_the_version_to_the_estimate():
    cat = load_catalog()
    job = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e8}, "seq_len": 2048,
           "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"}}

    def step(extra: dict) -> float:
        res = evaluate(resolve_job({**job, "strategy": {"fsdp": "full", "framework": "hf", **extra}}, cat), cat)
        return res["time"]["step_s"]

    assert step({"fsdp_version": 1}) == step({})
    assert step({"fsdp_version": 2}) != step({})
