from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from trainsizer.estimate.reliability import (
    goodput_fraction,
    job_mtbf_s,
    optimal_checkpoint_interval_s,
    reliability,
)


def test_llama3_mtbf_reproduced():
    # 419 unplanned interruptions in 54 days on 16,384 GPUs -> 3.09 h
    assert float(job_mtbf_s(16384)) / 3600 == pytest.approx(54 * 24 / 419, rel=0.01)


def test_young_daly_worked_example():
    # reliability.yaml worked example: delta 60 s, M 3.09 h, R 10 min -> Young tau 19.3 min, waste 0.158
    m = 3.09 * 3600
    tau = float(optimal_checkpoint_interval_s(60, m))
    assert (tau + 60) / 60 == pytest.approx(19.3, rel=0.01)  # Daly = Young - delta
    waste = 1 - float(goodput_fraction(60, 19.3 * 60, 600, m))
    assert waste == pytest.approx(0.158, abs=0.003)


@given(g=hs.integers(8, 100_000))
def test_goodput_falls_with_scale(g):
    a = reliability(70e9, g, 8).goodput
    b = reliability(70e9, 2 * g, 8).goodput
    assert 0 < b <= a <= 1


def test_faster_storage_helps():
    slow = reliability(405e9, 16384, 8, storage_gb_s=50)
    fast = reliability(405e9, 16384, 8, storage_gb_s=500)
    assert fast.goodput > slow.goodput
    assert fast.checkpoint_write_s == pytest.approx(405e9 * 14 / 500e9)
    assert set(fast.to_dict()) >= {"job_mtbf_h", "goodput", "checkpoint_interval_min"}


def test_per_node_rate_and_expected_failures():
    from trainsizer.estimate.train_time import time_to_train

    r = reliability(70e9, 1024, 8, failures_per_node_day=5e-3)
    assert r.job_mtbf_s == pytest.approx(86400 / (128 * 5e-3))
    t = time_to_train(2e12, 2e6, 70e9, 1024, 8, failures_per_node_day=5e-3)
    assert t.expected_failures == pytest.approx(t.train_days * 128 * 5e-3, rel=1e-9)
