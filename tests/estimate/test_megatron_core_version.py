"""strategy.megatron_core_version: the Megatron-Core release a job runs (known-gaps 227 (e)). TP above the K / V heads
came in core_v0.16.0 (framework.MCORE_RELEASE_FACTS): an older release asks TP to divide them; unset, the present
reading; stated on another stack, refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate.framework import MCORE_RELEASE_FACTS, kv_subshard_frameworks, mcore_has
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.estimate.validate import check_strategy
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job
from trainsizer.spec import StrategySpec

# Qwen3-30B-A3B's 4 KV heads at TP 8 on one B200 node: Megatron-Core core_v0.16.0+ sub-shards them (known-gaps 227)
JOB = {"model": "qwen3-30b-a3b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 16},
       "hardware": {"accelerator": "b200", "count": 8}}
TP8 = {"tp": 8, "micro_batch": 2, "recompute": "full", "framework": "megatron-core", "distributed_optimizer": True}


def _scenario(**strategy):
    return resolve_job({**JOB, "strategy": {**TP8, **strategy}}, load_catalog())


def _refusals(sc):
    return [e.rule for e in check_strategy(sc.model, sc.training, sc.system, sc.strategy)]


@pytest.mark.parametrize(("written", "line"), [("0.15", "0.15"), ("0.15.1", "0.15"), ("core_r0.15.0", "0.15"),
                                               ("core_v0.16.0rc1", "0.16"), ("v0.16.0", "0.16"), ("0.10", "0.10"),
                                               (None, None)])
def test_a_version_is_read_as_its_release_line(written, line):
    assert StrategySpec(megatron_core_version=written).megatron_core_version == (
        None if line is None else f"{int(line.split('.')[0])}.{int(line.split('.')[1])}")


@pytest.mark.parametrize("bad", [0.1, 16, "sixteen", "0", "0.16.x", "r0.15"])
def test_what_is_not_a_version_is_refused_with_the_forms_allowed(bad):
    with pytest.raises(SpecError, match="megatron_core_version") as err:
        _scenario(megatron_core_version=bad)
    assert "core_r0.15.0" in str(err.value) and "quote" in str(err.value)


def test_before_016_tp_must_divide_the_kv_heads():
    """core_r0.15's TransformerConfig asks num_query_groups % tp == 0: TP 8 on 4 KV heads is refused, naming the
    release and the one that brought the sub-sharding; TP 4 runs; unset or 0.16 the sub-sharded TP 8 runs."""
    with pytest.raises(StrategyError) as err:
        check_strategy(*_parts(_scenario(megatron_core_version="0.15")))
    assert err.value.rule == "tp_divides_kv_heads"
    assert "Megatron-Core 0.15" in str(err.value) and "core_v0.16.0" in str(err.value)
    assert "Megatron-Core 0.15" in err.value.render("zh") and "core_v0.16.0" in err.value.render("zh")
    assert _refusals(_scenario(megatron_core_version="0.15", tp=4)) == []
    assert _refusals(_scenario()) == [] and _refusals(_scenario(megatron_core_version="0.16")) == []


def _parts(sc):
    return sc.model, sc.training, sc.system, sc.strategy


def test_a_release_that_allows_the_layout_estimates_as_unset():
    """Where the release has every fact the job uses, the estimate is the present reading's to the byte."""
    on, unset = _scenario(megatron_core_version="core_v0.16.0"), _scenario()
    assert estimate_memory(*_parts(on)).per_gpu_bytes == estimate_memory(*_parts(unset)).per_gpu_bytes
    assert estimate_time(*_parts(on)).step_s == estimate_time(*_parts(unset)).step_s
    old, old_unset = _scenario(megatron_core_version="0.13", tp=4), _scenario(tp=4)
    assert estimate_time(*_parts(old)).step_s == estimate_time(*_parts(old_unset)).step_s


@pytest.mark.parametrize("framework", ["torchtitan", "hf", "megatron", "deepspeed"])
def test_the_version_is_megatron_cores_only(framework):
    sc = _scenario(tp=4, framework=framework, distributed_optimizer=False, megatron_core_version="0.15")
    with pytest.raises(StrategyError) as err:
        check_strategy(*_parts(sc))
    assert err.value.rule == "megatron_core_version_framework" and "megatron-core" in str(err.value)


@given(hs.integers(0, 1), hs.integers(0, 40))
def test_a_fact_holds_from_its_release_on(major, minor):
    since = tuple(int(n) for n in MCORE_RELEASE_FACTS["kv_head_subshard"].split("."))
    line = f"{major}.{minor}"
    assert mcore_has("kv_head_subshard", line) == ((major, minor) >= since)
    assert ("megatron-core" in kv_subshard_frameworks(line)) == ((major, minor) >= since)
    assert mcore_has("kv_head_subshard", None) and "megatron-core" in kv_subshard_frameworks()


def test_the_field_has_a_label_in_both_languages():
    assert t("field_strategy.megatron_core_version", "zh") != t("field_strategy.megatron_core_version", "en")
