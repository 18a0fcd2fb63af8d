"""benchmarks/harness.py's shared helpers (the ones no batch test exercises by itself)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import Case, twin_ratios  # noqa: E402


def _case(rid: str, measured: float, predicted: float, metric: str = "tokens_s", skipped: str = "") -> Case:
    return Case(rid, "src", metric, measured, predicted, skipped=skipped)


def test_twin_ratios_divide_each_row_by_its_twin_and_skip_the_unpaired():
    cs = [_case("a_2gpu", 30.0, 40.0), _case("a_1gpu", 20.0, 20.0), _case("b_2gpu", 9.0, 9.0),
          _case("c_2gpu", 5.0, 5.0), _case("c_1gpu", 1.0, 0.0, skipped="refused"),
          _case("a_2gpu_mem", 1.0, 1.0, metric="peak_gib")]
    got = twin_ratios(cs, "tokens_s", lambda rid: rid.replace("_2gpu", "_1gpu") if "_2gpu" in rid else None)
    assert got == [("a_2gpu", pytest.approx(1.5), pytest.approx(2.0))]  # b: no twin; c: its twin refused
