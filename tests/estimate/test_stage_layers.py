"""strategy.pp_first_stage_layers / pp_last_stage_layers: the end ranks' decoder layers as a job states them
(Megatron-Core num_layers_in_first/last_pipeline_stage, a pipeline_model_parallel_layout's per-rank counts); memory
and time both take the split from pipeline.stage_layer_range."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

# Megatron-Bridge's DeepSeek-V3 recipe at PP 16 (B200): `Et*4|(t*4|)*14tmL` as one chunk a rank, 1 decoder layer +
# the MTP module + the loss on the last rank, 4 on every other
JOB = {"model": "deepseek-v3", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 2048},
       "precision": "bf16", "hardware": {"accelerator": "b200", "count": 256, "network": "ib-ndr400"}}
STRATEGY = {"tp": 1, "pp": 16, "ep": 8, "micro_batch": 1, "recompute": "full", "framework": "megatron-core",
            "distributed_optimizer": True}


def _scenario(**strategy):
    return resolve_job({**JOB, "strategy": {**STRATEGY, **strategy}}, load_catalog())


def test_the_job_states_the_last_rank_and_the_summary_says_so():
    sc = _scenario(pp_last_stage_layers=1)
    assert sc.strategy.pp_last_stage_layers == 1 and sc.strategy.pp_first_stage_layers is None
    assert sc.summary()["strategy"]["pp_last_stage_layers"] == 1
    assert t("field_strategy.pp_last_stage_layers", "zh") != t("field_strategy.pp_last_stage_layers", "en")


def test_memory_of_the_last_stage_follows_the_stated_layers():
    """One decoder layer on the last rank against floor(61 / 16) = 3 under the even split: its layer activations
    fall, the middle stage keeps 4."""
    even, stated = _scenario(), _scenario(pp_last_stage_layers=1)
    m_even = estimate_memory(even.model, even.training, even.system, even.strategy)
    m_stated = estimate_memory(stated.model, stated.training, stated.system, stated.strategy)
    assert m_stated.stage_bytes["last"] < m_even.stage_bytes["last"]
    assert m_stated.stage_bytes["middle"] == pytest.approx(m_even.stage_bytes["middle"], rel=1e-9)


def test_time_takes_the_same_split():
    """At PP 4 a last rank of 10 layers leaves 17 on each other rank against the even split's 16: the pacing stage
    holds one layer more, its compute 17 / 16 of the even one's (the model without its MTP module, whose time on
    the last rank would pace the even split: tests/estimate/test_mtp_time.py)."""
    raw = json.loads(resources.files("trainsizer.models").joinpath("presets", "deepseek-v3.json").read_text("utf-8"))

    def compute(**kw):
        sc = resolve_job({**JOB, "model": raw | {"num_nextn_predict_layers": 0},
                          "strategy": {**STRATEGY, "pp": 4, **kw}}, load_catalog())
        return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).breakdown_s["compute"]

    assert compute(pp_last_stage_layers=10) / compute() == pytest.approx(17 / 16, rel=0.02)


def test_a_bad_count_is_a_spec_error_not_a_traceback():
    with pytest.raises(SpecError):
        _scenario(pp_last_stage_layers=0)
