"""FP8's extra step-time growth with scale (benchmarks/fp8_growth.py; docs/known-gaps.md 252 (a)): the dgxc series are
paired as the tables publish them, the measured FP8 growth exceeds BF16's where it is said to, and the estimate
carries only part of it (the rest is stated, not modelled)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import fp8_growth as fg  # noqa: E402


@pytest.fixture(scope="module")
def pairs():
    return fg.pairs(fg.all_points())


def _key(p: fg.Pair) -> tuple[str, str, int, int]:
    return p.fp8_lo.release, p.fp8_lo.model, p.fp8_lo.gpus, p.fp8_hi.gpus


def test_the_series_the_tables_publish(pairs):
    keys = {_key(p) for p in pairs}
    assert {("v25.04", "Llama 3.1 8B", 8, 128), ("v25.04", "Llama 3.1 70B", 64, 2048),
            ("v25.04", "Llama 3.1 405B", 512, 2048), ("v25.04", "GPT-3 175B", 128, 2048),
            ("v24.11", "dgxc2411-llama3.1-405b-126l", 576, 2304), ("v24.11", "gpt-3-175b", 128, 2048),
            ("v24.11", "nemotron-4-340b", 128, 2048), ("v24.11", "dgxc2411-grok1-314b-64l", 512, 2048)} <= keys
    assert len(pairs) == 14
    by = {_key(p): p for p in pairs}
    assert not by[("v25.04", "Llama 3.1 70B", 64, 2048)].same_layout  # FP8 PP 8 x CP 1, BF16 PP 4 x CP 2
    assert by[("v24.11", "gpt-3-175b", 128, 2048)].same_layout
    # GPT-3 175B v24.11: 256 sequences over DP 4 at 128 GPUs, VP 12: 2 x 64 x 12 synchronous reductions a step
    assert by[("v24.11", "gpt-3-175b", 128, 2048)].reductions() == 1536


def test_fp8_grows_more_than_bf16_at_scale_and_the_estimate_carries_part(pairs):
    """Every pair over 8 or more times the GPUs of the development set's v25.04 release grows more in FP8 than in BF16
    (1.018-1.037 measured), and the estimate's FP8 extra seconds (the amax all-reduces, the DP terms) carry under a
    third of it; v24.11's 8B at the same layout does not grow (the extra is the release's, not the layout's)."""
    wide = [p for p in pairs if p.fp8_lo.release == "v25.04" and p.fp8_hi.gpus >= 8 * p.fp8_lo.gpus]
    assert len(wide) == 3
    for p in wide:
        g_f, g_b = p.growth(True)
        assert g_f / g_b > 1.015, _key(p)
        assert 0.0 < p.extra_s(False) < p.extra_s(True) / 3.0, _key(p)
    old = next(p for p in pairs if _key(p) == ("v24.11", "llama-3.1-8b", 8, 128))
    new = next(p for p in pairs if _key(p) == ("v25.04", "Llama 3.1 8B", 8, 128))
    assert old.fp8_lo.layout == new.fp8_lo.layout
    assert old.extra_s(True) < 0.05 < 0.1 < new.extra_s(True)


def test_gb200_s_v25_05_pairs(pairs):
    """On GB200 (NeMo 25.04, 128 -> 512 GPUs) Llama 4 Maverick's FP8 grows a little more than its BF16 (1.011), Grok-1's
    less (0.980: its FP8 rows speed up with scale): FP8's extra growth is not every job's."""
    by = {p.fp8_lo.model: p for p in pairs if p.fp8_lo.release == "v25.05 gb200"}
    assert set(by) == {"llama-4-maverick-17b-128e", "nemo-grok1-314b"}
    g = {m: p.growth(True)[0] / p.growth(True)[1] for m, p in by.items()}
    assert g["llama-4-maverick-17b-128e"] > 1.005 and g["nemo-grok1-314b"] < 0.99


@given(st.integers(1, 4096), st.integers(1, 4096))
def test_expected_max_grows_with_the_draws(a, b):
    lo, hi = sorted((a, b))
    assert fg.expected_max(lo) <= fg.expected_max(hi)
    assert fg.expected_max(1) == 0.0


def test_implied_jitter_is_the_wait_over_the_expected_max_gap():
    gap = fg.expected_max(64) - fg.expected_max(4)
    assert fg.implied_jitter(0.1, 100, 0.01, 4, 64) == pytest.approx(0.1 / 100 / gap / 0.01)
    assert fg.implied_jitter(0.1, 100, 0.01, 8, 8) != fg.implied_jitter(0.1, 100, 0.01, 8, 8)  # nan: no growth
