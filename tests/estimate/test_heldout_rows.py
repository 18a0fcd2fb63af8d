"""The held-out tests' shared checks (tests/estimate/heldout_rows.py): the per-source count and MAPE bound
(docs/known-gaps.md 257 (a)) passes on cases within it and fails on a wrong count, a MAPE at or over the bound, or a
source's refused row counted; a fine-tuning row's citation (check_rows_cited) and a Megatron-Bridge card row's
(check_card_rows) fail on each missing or wrong part."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import finetune_heldout as fh
import perf_heldout as ph
from harness import Case, mape

from .heldout_rows import check_card_rows, check_rows_cited, check_source_bounds


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


COMMIT = "0123456789abcdef0123456789abcdef01234567"
URL, DATE = "https://github.com/o/r/blob/", r"2024-\d\d-\d\d"


def _cited() -> list[dict[str, str]]:
    """Two rows with finetune_heldout.DATA's columns and one of their own after them, cited at a full commit;
    b refused."""
    header = fh.DATA.open(encoding="utf-8").readline().strip().split(",")
    cited = {"url": f"https://github.com/o/r/blob/{COMMIT}/README.md", "locator": "README.md table",
             "date": "2024-04-02", "assumed": "bf16"}
    return [dict.fromkeys(header, "") | cited | {"id": rid, "refused": refused, "own": "x"}
            for rid, refused in (("a", ""), ("b", "why"))]


def test_cited_rows_pass():
    check_rows_cited(_cited(), 2, ("https://github.com/x/", URL), r"2024-04-\d\d", refused=("b",))


@pytest.mark.parametrize("change, args", [({}, (3, URL, DATE, ("b",))),
                                          ({}, (2, "https://github.com/p/", DATE, ("b",))),
                                          ({}, (2, URL, r"2024-05-\d\d", ("b",))), ({}, (2, URL, DATE, ())),
                                          ({"url": "https://github.com/o/r/blob/main/README.md"}, ()),
                                          ({"date": "2024-04-02 (approx.)"}, ()),
                                          ({"locator": ""}, ()), ({"assumed": ""}, ())])
def test_a_wrong_citation_fails(change, args):
    """A wrong count, url, date or refused list; a branch for a commit, a date with more after it, no locator,
    no assumptions."""
    rows = _cited()
    rows[0] |= change
    with pytest.raises(AssertionError):
        check_rows_cited(rows, *(args or (2, URL, DATE, ("b",))))


def _card_rows() -> list[dict[str, str]]:
    """Two card rows in perf_heldout.ROWS's columns at the bridge commit; n1 trained with natural routing."""
    header = ph.ROWS.open(encoding="utf-8").readline().strip().split(",")
    card = {"source": "NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/m/card.yaml",
            "source_locator": "card.yaml bridge_commit 067f987df", "date": "2026-08-22"}
    return [dict.fromkeys(header, "") | card | {"id": rid, "assumed": f"the recipe{note}"}
            for rid, note in (("f1", ""), ("n1", "; NATURAL routing"))]


def test_card_rows_pass():
    check_card_rows(_card_rows(), 2, ("n1",))


@pytest.mark.parametrize("change, n, natural", [
    ({}, 3, ("n1",)), ({}, 2, ()), ({}, 2, ("n1", "f1")),
    ({"source": "NVIDIA/dgxc-benchmarking card.yaml"}, 2, ("n1",)),
    ({"source_locator": "card.yaml bridge_commit 1234567"}, 2, ("n1",)),
    ({"source_locator": "card.yaml at 067f987df"}, 2, ("n1",)),
    ({"date": "2025-08-22"}, 2, ("n1",)), ({"assumed": "TP 1"}, 2, ("n1",))])
def test_a_wrong_card_row_fails(change, n, natural):
    """A wrong count or natural-routing set; another source, another commit or none named, another year, no
    recipe."""
    rows = _card_rows()
    rows[0] |= change
    with pytest.raises(AssertionError):
        check_card_rows(rows, n, natural)
