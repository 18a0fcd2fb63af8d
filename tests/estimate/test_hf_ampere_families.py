"""benchmarks/hf_ampere_families.py (docs/known-gaps.md 279 (a)): the family listing's arithmetic (a family's trend over
the positions, its share of the class's error, the class were it exact, the sign split, the what-if's MAPE by family)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import hf_ampere_families as fa  # noqa: E402


def _row(family: str, err: float, miss: float = 0.0, tokens: float = 1000.0, rid: str = "") -> fa.FamilyRow:
    return fa.FamilyRow(family, rid or f"{family}_{err}_{tokens}", err, miss, tokens, 0.0)


def test_trend_reads_flat_growing_and_shrinking_misses():
    t = np.array([500.0, 1000.0, 2000.0, 4000.0])
    assert fa.trend(t, np.full(4, 5.0))[3] == "flat"
    a, b, r2, word = fa.trend(t, 1.0 + 2.0 * t / 1e3)
    assert (a, b, r2, word) == pytest.approx((1.0, 2.0, 1.0, "grows"))
    assert fa.trend(t, 9.0 - 2.0 * t / 1e3)[3] == "shrinks"
    assert fa.trend(np.full(3, 1000.0), np.array([1.0, 2.0, 3.0]))[3] == "-"
    assert fa.trend(t[:2], np.array([1.0, 5.0]))[3] == "-"
    assert fa.trend(np.array([500.0, np.nan, 2000.0, 4000.0]), np.full(4, 2.0))[3] == "flat"


def test_summaries_share_and_class_if_exact():
    rows = [_row("a", +10.0), _row("a", +30.0), _row("b", -20.0), _row("c", +40.0)]
    out = {s["family"]: s for s in fa.summaries(rows)}
    assert [s["family"] for s in fa.summaries(rows)] == ["a", "c", "b"]  # most summed |error| first
    assert sum(s["share"] for s in out.values()) == pytest.approx(100.0)
    assert out["a"]["share"] == pytest.approx(40.0)
    assert out["a"]["median"] == pytest.approx(20.0) and out["a"]["mape"] == pytest.approx(20.0)
    # the class's MAPE (100 / 4 = 25) with family a's errors set to 0: 60 / 4
    assert out["a"]["class_if_exact"] == pytest.approx(15.0)
    assert out["b"]["class_if_exact"] == pytest.approx(20.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-80.0, 80.0, allow_nan=False), min_size=1, max_size=30))
def test_sign_split_covers_the_class(errs):
    rows = [_row("f", e, rid=str(i)) for i, e in enumerate(errs)]
    split = fa.sign_split(rows)
    assert split["too fast"][0] + split["too slow"][0] == len(errs)
    if any(e != 0.0 for e in errs):
        assert split["too fast"][1] + split["too slow"][1] == pytest.approx(100.0)


def test_family_whatif_means_each_factor_over_the_family_and_the_class():
    rows = [_row("a", 10.0, rid="r1"), _row("a", -10.0, rid="r2"), _row("b", 30.0, rid="r3")]
    errs = {"r1": [10.0, 5.0], "r2": [-10.0, -20.0], "r3": [30.0, 0.0]}
    out = fa.family_whatif(rows, errs)
    assert out["a"] == pytest.approx([10.0, 12.5])
    assert out["b"] == pytest.approx([30.0, 0.0])
    assert out["all"] == pytest.approx([50.0 / 3.0, 25.0 / 3.0])


def test_family_names_the_benchmark_and_the_series():
    class R:
        benchmark, row_id = "perf_heldout64", "fmsorca_mp_mistral7b_full_pf_2gpu_mb8"

    assert fa.family_of(R()) == "perf_heldout64:fmsorca"
    R.row_id = "tt24.11_3b_lora"
    assert fa.family_of(R()) == "perf_heldout64:tt24.11_3b"


def test_class_argument_defaults_to_the_ampere_node_class():
    assert fa.class_arg([]) == "hf/dense/ampere/node"
    assert fa.class_arg(["--class", "hf/moe"]) == "hf/moe"
    with pytest.raises(SystemExit):
        fa.class_arg(["--class"])
