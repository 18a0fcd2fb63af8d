"""strategy.cudnn_release: the fused attention at a later cuDNN release (perf_constants.yaml
attention.cudnn_release_speedup, derived from NVIDIA's cudnn-frontend GB300 rows at 9.13.1 and 9.17.0 by
benchmarks/attention_blackwell.py), Blackwell parts and the native kernel only, refused elsewhere in en / zh."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.step_time import estimate_time
from trainsizer.messages import msg, tr
from trainsizer.scenario import resolve_job

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import attention_blackwell as ab  # noqa: E402

CAT = load_catalog()


def _job(acc: str = "gb200", seq_len: int = 8192, **strategy) -> dict:
    return {"model": "llama-3.1-8b", "seq_len": seq_len, "data": {"tokens": 1e9}, "global_batch": {"sequences": 64},
            "precision": "fp8", "hardware": {"accelerator": acc, "count": 8, "network": "ib-ndr400"},
            "strategy": {"recompute": "none", "framework": "megatron-core", "distributed_optimizer": True,
                         **strategy}}


def _step(job: dict) -> float:
    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_shipped_speedups_are_the_measured_gb300_release_pair():
    k = load_constants()
    derived = ab.cudnn_release_speedups()
    assert set(derived) == set(k.cudnn_release_speedup["9.17"])
    for family, (fwd, bwd) in derived.items():
        assert k.cudnn_release(family, "9.17") == pytest.approx((fwd, bwd), abs=5e-4)
    assert derived["gb300"] == pytest.approx((1899.0 / 1495.7, 1292.0 / 1130.1))
    assert k.cudnn_release("gb200", None) == k.cudnn_release("gb200", "9.13") == (1.0, 1.0)
    assert k.cudnn_release("h100-sxm-80gb", "9.17") is None


@settings(max_examples=12, deadline=None)
@given(seq_len=hs.sampled_from([2048, 4096, 8192, 16384]), acc=hs.sampled_from(["b200", "gb200", "gb300"]))
def test_a_later_release_only_shortens_the_attention(seq_len, acc):
    """The base release and an unset one are the same job; 9.17 is faster, and up to 8K, where both releases run at
    their 8K rates, the time it saves grows with the sequence (attention's share of the step grows with it, the GEMMs'
    does not). Above 8K each release runs its own measured length curve (attention.native_length_scaling), and
    9.17's lead narrows as measured (GB300, forward: 1.27x at 8K, 1.16x at 16K)."""
    base = _step(_job(acc, seq_len))
    assert _step(_job(acc, seq_len, cudnn_release="9.13")) == base
    later = _step(_job(acc, seq_len, cudnn_release="9.17"))
    assert later < base
    if 2 * seq_len <= 8192:
        longer = _step(_job(acc, 2 * seq_len)) / 2.0, _step(_job(acc, 2 * seq_len, cudnn_release="9.17")) / 2.0
        assert 1.0 - longer[1] / longer[0] > 1.0 - later / base


def test_yaml_number_is_read_as_the_release_and_echoed():
    sc = resolve_job(_job(cudnn_release=9.17), CAT)
    assert sc.strategy.cudnn_release == "9.17"
    assert sc.summary()["strategy"]["cudnn_release"] == "9.17"


@pytest.mark.parametrize(("acc", "strategy", "rule"), [
    ("h100-sxm-80gb", {"cudnn_release": "9.17"}, "cudnn_release_part"),
    ("gb200", {"cudnn_release": "9.17", "attention_kernel": "fa2"}, "cudnn_release_part"),
    ("gb200", {"cudnn_release": "9.17", "framework": "torchtitan", "zero": 3}, "te_options_framework"),
])
def test_refused_where_no_measurement_applies(acc, strategy, rule):
    with pytest.raises(TrainsizerError, match=rule):
        _step(_job(acc, **strategy))


def test_unknown_release_is_refused_with_the_allowed_ones():
    with pytest.raises(TrainsizerError, match="9.13, 9.17"):
        resolve_job(_job(cudnn_release="9.19"), CAT)


def test_refusal_reads_in_both_languages():
    args = dict(release="9.17", accelerator="h100-sxm-80gb", kernel="native", families="b200, gb200")
    en, zh = tr(msg("rule_cudnn_release_part", **args), "en"), tr(msg("rule_cudnn_release_part", **args), "zh")
    assert "measured on b200, gb200 only" in en and "h100-sxm-80gb" in en
    assert "只在 b200, gb200 上测过" in zh and "h100-sxm-80gb" in zh
