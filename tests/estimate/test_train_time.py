from __future__ import annotations

import pytest

from trainsizer.estimate.train_time import time_to_train


def test_ideal_vs_with_failures():
    t = time_to_train(1e12, 1e6, 8e9, 512, 8)
    assert t.ideal_days == pytest.approx(1e6 / 86400)
    assert t.train_days > t.ideal_days
    assert t.gpu_hours == pytest.approx(t.train_days * 24 * 512)
    no_fail = time_to_train(1e12, 1e6, 8e9, 512, 8, include_failures=False)
    assert no_fail.train_days == pytest.approx(no_fail.ideal_days)


def test_zero_tokens_is_zero():
    assert time_to_train(0, 1e6, 8e9, 8, 8).train_days == 0.0


def test_narayanan_gpt3_estimate_formula():
    # Narayanan 2021 s5.1: 8 T P / (n X): GPT-3 175B, 300B tokens, 1024 A100 at 140 TFLOP/s -> ~34 days
    tokens, params, n, x = 300e9, 175e9, 1024, 140e12
    tokens_per_s = n * x / (8 * params)
    assert time_to_train(tokens, tokens_per_s, params, n, 8, include_failures=False).train_days == pytest.approx(
        34, rel=0.05)
