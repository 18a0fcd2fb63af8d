"""benchmarks/hf_class_split.py (docs/known-gaps.md 312): a class split by job facts, eta^2 over the class and within
series, the sharding read off a job, the bins."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import hf_class_split as hs  # noqa: E402
from accuracy_bands import Row  # noqa: E402


def _split(err: float, series: str, fact: str, miss: float = 0.0, dp: float = 0.0) -> hs.SplitRow:
    return hs.SplitRow(f"{series}_{fact}_{err}", err, miss, dp, 1000.0,
                       {"series": series, "source": "b", "fact": fact, "other": series})


def test_bin_label_edges_and_nan():
    edges = (1024.0, 4096.0)
    assert hs.bin_label(10.0, edges) == "<1024"
    assert hs.bin_label(1024.0, edges) == "1024-4096"
    assert hs.bin_label(4096.0, edges) == ">=4096"
    assert hs.bin_label(float("nan"), edges) == "-"
    assert [hs.token_order(s) for s in ("<1024", "1024-4096", ">=4096", "-")] == [-1.0, 1024.0, 4096.0, float("inf")]


def test_sharding_of_reads_the_job_as_written():
    def job(count, **strategy):
        return {"hardware": {"count": count}, "strategy": strategy}

    assert hs.sharding_of(job(1, fsdp="full")) == "1 GPU"
    assert hs.sharding_of(job(8, fsdp="full")) == "sharded"
    assert hs.sharding_of(job(8, zero=3)) == "sharded"
    assert hs.sharding_of(job(8, zero=2)) == "ZeRO-1/2"
    assert hs.sharding_of(job(2, fsdp="none", zero=0)) == "replicated"
    assert hs.sharding_of(job(2)) == "replicated"


def test_job_facts_reads_method_lora_and_attention():
    job = {"method": "qlora", "precision": "bf16", "hardware": {"accelerator": "a10g", "count": 1},
           "lora": {"impl": "litgpt"}, "flash_attention": True, "strategy": {"micro_batch": 4, "recompute": "full"}}
    facts = hs.job_facts(Row("perf_heldout37", "litgpt24_x_qlora", "tokens_s", 1.0, 1.0, job))
    assert facts["LoRA impl"] == "litgpt" and facts["attention"] == "flash" and facts["series"] == "litgpt24"
    assert facts["micro-batch"] == "4-8" and facts["sharding"] == "1 GPU" and facts["framework"] == "-"
    full = dict(job, method="full", strategy={"attention_kernel": "sdpa"})
    facts = hs.job_facts(Row("perf_heldout37", "litgpt24_x_full", "tokens_s", 1.0, 1.0, full))
    assert facts["LoRA impl"] == "-" and facts["attention"] == "sdpa" and facts["micro-batch"] == "<2"


def test_eta_squared_bounds_and_extremes():
    err = np.array([10.0, 10.0, -10.0, -10.0])
    assert hs.eta_squared(["a", "a", "b", "b"], err) == pytest.approx(1.0)  # the groups explain it all
    assert hs.eta_squared(["a", "b", "a", "b"], err) == pytest.approx(0.0)  # none of it
    assert hs.eta_squared(["a", "b", "c", "d"], np.full(4, 3.0)) == 0.0  # nothing varies


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(-80, 80).map(float)), min_size=2, max_size=30))
def test_eta_squared_within_unit_interval_and_demeaned_strata_explain_nothing(pairs):
    values, err = [v for v, _ in pairs], np.array([e for _, e in pairs])
    eta = hs.eta_squared(values, err)
    assert 0.0 <= eta <= 1.0
    within = hs.demeaned(values, err)
    assert hs.eta_squared(values, within) == pytest.approx(0.0, abs=1e-6)  # the strata's own means taken out
    for v in set(values):
        assert np.mean(within[[x == v for x in values]]) == pytest.approx(0.0, abs=1e-9)


def test_fact_ranking_tells_a_mechanism_from_a_source_label():
    # "other" names the series (a source label): much of the class's variance, none within series; "fact" splits
    # every series the same way (a mechanism): all of it within series
    rows = [_split(+30.0 + 20.0, "s1", "x"), _split(+30.0 - 20.0, "s1", "y"),
            _split(-30.0 + 20.0, "s2", "x"), _split(-30.0 - 20.0, "s2", "y")]
    ranked = {f: (over, within) for f, _, over, within in hs.fact_ranking(rows)}
    assert "series" not in ranked and "source" not in ranked
    assert ranked["other"] == pytest.approx((900.0 / 1300.0, 0.0), abs=1e-9)
    assert ranked["fact"] == pytest.approx((400.0 / 1300.0, 1.0))
    assert hs.fact_ranking(rows)[0][0] == "fact"


def test_fact_groups_share_and_cross():
    rows = [_split(+10.0, "s1", "x", miss=2.0, dp=1.0), _split(+30.0, "s1", "x", miss=4.0, dp=1.0),
            _split(-20.0, "s2", "y", miss=-3.0, dp=0.0)]
    groups = {g[0]: g for g in hs.fact_groups(rows, "fact")}
    assert groups["x"][1:] == pytest.approx((2, 20.0, 20.0, 200.0 / 3.0))
    assert sum(g[4] for g in groups.values()) == pytest.approx(100.0)
    cells = hs.cross(rows, "series", "fact")
    assert [(a, b, n) for a, b, n, *_ in cells] == [("s1", "x", 2), ("s2", "y", 1)]
    assert cells[0][5:] == pytest.approx((3.0, 1.0))  # median miss, median exposed DP ms
