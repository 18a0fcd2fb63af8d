"""LitGPT's Alpaca2k histogram as digitised (benchmarks/alpaca2k_lengths.py, docs/known-gaps.md 127): the read agrees
with the picture's legend and the set's size, and the lognormal the config-hub rows state reproduces its padded
micro-batch means."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import alpaca2k_lengths as a2k  # noqa: E402
from trainsizer.estimate.sample_lengths import padded_tokens  # noqa: E402


def test_the_read_histogram_agrees_with_the_legend_and_the_trained_count():
    x, n = a2k.histogram()
    assert n.sum() == pytest.approx(a2k.LEGEND["trained"], rel=0.01)  # 1,897 read, 1,900 trained
    assert a2k.quantile(x, n, 0.5) == pytest.approx(a2k.LEGEND["median"], rel=0.01)
    assert a2k.LEGEND["min"] <= x[0] < 60 and x[-1] <= a2k.LEGEND["max"]
    # far longer than the 52K Alpaca the rows took before (mean 125 Llama 2 tokens)
    assert 200 < float((x * n).sum() / n.sum()) < 230


def test_the_stated_lognormal_reproduces_the_padded_means():
    x, n = a2k.histogram()
    mean, sigma = a2k.lognormal_fit(x, n)
    assert (mean, sigma) == (229.0, 0.72)
    for b, want in zip(a2k.MICRO_BATCHES, a2k.padded_means(x, n), strict=True):
        assert float(padded_tokens(mean, sigma, a2k.CUTOFF, b)) == pytest.approx(want, rel=0.01)


def test_a_bad_histogram_file_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "h.csv"
    bad.write_text("length_tokens,samples\n60,1\n55,2\n", encoding="utf-8")
    monkeypatch.setattr(a2k, "DATA", bad)
    with pytest.raises(ValueError, match="ascend"):
        a2k.histogram()
