"""Held-out published runs (benchmarks/perf_external.py): no estimator constant was fitted on them.

Tolerances are looser than the development set's on purpose (unpublished settings are assumed, see each
case); a regression past them means a mechanism broke, not that a constant needs re-fitting.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from perf_external import CASES, run_case  # noqa: E402
from trainsizer.catalog import load_catalog  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_held_out_run_within_25_percent(case):
    predicted, _ = run_case(case, load_catalog())
    assert abs(predicted / case.published - 1) <= 0.25, (case.name, predicted, case.published)


def test_held_out_mape_within_15_percent():
    cat = load_catalog()
    errors = [abs(run_case(c, cat)[0] / c.published - 1) for c in CASES]
    assert sum(errors) / len(errors) <= 0.15
