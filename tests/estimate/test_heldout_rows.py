"""The held-out tests' shared checks (tests/estimate/heldout_rows.py): the per-source count and MAPE bound
(docs/known-gaps.md 257 (a)) passes on cases within it and fails on a wrong count, a MAPE at or over the bound, or a
source's refused row counted."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .heldout_rows import BENCH, check_source_bounds

sys.path.insert(0, str(BENCH))

from harness import Case, mape  # noqa: E402


def _cases() -> list[Case]:
    """Two sources: A's two time rows (+10 / -20%: MAPE 15%) and one memory row (+5%), a refused A time row; B's one
    time row (-30%)."""
    return [Case("a1", "A", "tokens_s", 100.0, 110.0), Case("a2", "A", "tokens_s", 100.0, 80.0),
            Case("a3", "A", "peak_gib", 10.0, 10.5), Case("a4", "A", "tokens_s", 100.0, skipped="REFUSED: x"),
            Case("b1", "B", "tokens_s", 50.0, 35.0)]


def test_within_every_bound_passes():
    check_source_bounds(_cases(), {("A", "tokens_s"): (2, 15.5), ("A", "peak_gib"): (1, 6.0),
                                   ("B", "tokens_s"): (1, 31.0)})


@pytest.mark.parametrize("bounds", [{("A", "tokens_s"): (3, 50.0)},  # the refused row is not scored
                                    {("A", "tokens_s"): (1, 50.0)},
                                    {("B", "peak_gib"): (1, 50.0)},  # no row of that metric
                                    {("A", "tokens_s"): (2, 15.0)},  # the bound is strict
                                    {("B", "tokens_s"): (1, 29.0)}])
def test_a_wrong_count_or_a_bound_reached_fails(bounds):
    with pytest.raises(AssertionError):
        check_source_bounds(_cases(), bounds)


@given(st.lists(st.floats(0.5, 1.5), min_size=1, max_size=6), st.floats(0.0, 60.0))
def test_passes_exactly_when_the_mape_is_under_the_bound(ratios, bound):
    cases = [Case(f"r{i}", "S", "tokens_s", 100.0, 100.0 * x) for i, x in enumerate(ratios)]
    if mape(cases) < bound:
        check_source_bounds(cases, {("S", "tokens_s"): (len(cases), bound)})
    else:
        with pytest.raises(AssertionError):
            check_source_bounds(cases, {("S", "tokens_s"): (len(cases), bound)})
