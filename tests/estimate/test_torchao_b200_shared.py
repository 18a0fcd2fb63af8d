"""benchmarks/torchao_b200_shared.py, the diagnostic of docs/known-gaps.md 151: its rate groups name the estimator's
rates, its scaling leaves the estimator as it found it, its bisection finds the closing scale, and the gains it reads
move the way its docstring says (a shared time lowers the FP8 / BF16 gains, a GEMM-only rate raises them, the whole
step in proportion keeps them)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import torchao_b200_shared as tb  # noqa: E402
from trainsizer.estimate import step_time  # noqa: E402
from trainsizer.estimate.calibration import Rates  # noqa: E402


def test_every_group_names_fields_of_the_rates():
    names = {f.name for f in dataclasses.fields(Rates)}
    for label, (up, down) in tb.GROUPS.items():
        assert set(up) | set(down) <= names, label
        assert up or down, label


def test_the_rows_are_the_five_torchao_b200_runs_bf16_first():
    rs = tb.rows()
    assert len(rs) == 5 and rs[0]["precision"] == "bf16"
    assert all(r["precision"] == "fp8" for r in rs[1:])
    assert sorted(r["fp8_recipe"] for r in rs[1:]) == ["mxfp8", "mxfp8", "rowwise", "tensorwise"]


@given(a=st.floats(0.5, 50.0), b=st.floats(0.0, 10.0), frac=st.floats(0.05, 0.95))
def test_closing_scale_finds_the_root_of_a_rising_rate(a, b, frac):
    lo, hi = a * tb.LOWEST + b, a + b
    target = lo + frac * (hi - lo)
    s = tb.closing_scale(lambda x: a * x + b, target)
    assert s is not None and abs(a * s + b - target) <= 1e-6 * (1.0 + target)


def test_closing_scale_says_none_when_the_lowest_scale_is_still_too_fast():
    assert tb.closing_scale(lambda x: 100.0 + x, 50.0) is None


@pytest.fixture(scope="module")
def predict():
    rs = tb.rows()
    return tb.predictor(rs), len(rs)


def test_scaling_restores_the_estimator_and_slows_the_row(predict):
    fn, n = predict
    original = step_time._rates
    base = fn((), (), 1.0, 1)[0]
    slower = fn(tb.GEMMS, (), 0.5, 1)[0]
    assert step_time._rates is original
    assert slower < base
    assert fn((), (), 1.0, 1)[0] == base


def test_gains_move_as_the_docstring_says(predict):
    fn, n = predict
    base = tb.gains(fn((), (), 1.0, n))
    whole = tb.gains(fn(*tb.GROUPS["whole step"], 0.7, n))
    gemm = tb.gains(fn(*tb.GROUPS["GEMMs"], 0.7, n))
    attention = tb.gains(fn(*tb.GROUPS["attention core"], 0.5, n))
    for b, w, g, a in zip(base, whole, gemm, attention, strict=True):
        assert abs(w / b - 1.0) < 0.005
        assert g > b
        assert a < b
