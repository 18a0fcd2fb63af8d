"""benchmarks/fms_stack_drift.py (docs/known-gaps.md 330): the dense file's pairs are the rows perf_heldout61 scores
where it names them, GPU-bound pairs barely move while the granite MoE rows move 1.19-1.25x, the interpreter measured on
one torch build moves the MoE block's host little, and the estimate's host what-if is 1 at the shipped figures and grows
with a slower host."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import fms_stack_drift as fd  # noqa: E402

HELDOUT61 = BENCH / "data" / "heldout_2027i_fms_acceleration.csv"


def test_every_named_pair_is_the_perf_heldout61_row_on_the_same_line_and_job():
    rows = {r["id"]: r for r in csv.DictReader(line for line in HELDOUT61.open() if not line.startswith("#"))}
    named = [p for p in fd.pairs() if p["heldout_id"]]
    assert len(named) == 19 and {p["heldout_id"] for p in named} == {i for i in rows if i.startswith("fmsacc25_")}
    for p in named:
        loc = rows[p["heldout_id"]]["locator"]
        assert re.search(rf"at 24bdadb, data line {p['line_24bdadb']} \(framework_config {p['framework_config']}, "
                         rf"{re.escape(p['model'])}, num_gpus {p['num_gpus']}, per_device_train_batch_size "
                         rf"{p['micro_batch']}\)", loc)


def test_pairs_have_both_figures_and_the_ratio_is_new_over_old():
    ps = fd.pairs()
    assert len(ps) == 85
    p = ps[0]
    assert fd.ratio(p) == pytest.approx(float(p["samples_per_s_24bdadb"]) / float(p["samples_per_s_9239802"]))


def test_the_dense_file_moves_about_one_percent_where_the_granite_rows_move_a_fifth():
    groups = {g: (n, m, lo, hi) for g, n, m, lo, hi in fd.drift_by_group(fd.pairs())}
    n, median, lo, hi = groups["all"]
    assert n == 85 and 1.0 < median < 1.03 and lo < 1.0 < hi
    assert sum(v[0] for g, v in groups.items() if g != "all") == 85
    import perf_heldout66 as h66

    sps = {r["id"]: float(r["samples_per_s"]) for r in h66.rows()}
    assert all(1.19 < sps[new] / sps[old] < 1.26 for old, new in fd.GRANITE)


def test_the_interpreter_speeds_python_twice_and_the_moe_block_little():
    got = {c: x for c, _a, _b, x in fd.interpreter_ratios()}
    assert set(got) == {"python_call", "mm", "linear_module", "moe_forward", "moe_backward"}
    assert got["python_call"] > 1.8
    assert got["moe_forward"] < 1.12 and got["moe_backward"] < 1.05 and got["mm"] < 1.08


def test_host_ratios_are_one_at_the_shipped_figures_and_grow_with_a_slower_host():
    pytest.importorskip("numpy")
    from trainsizer.catalog import load_catalog

    jobs, _ = fd._heldout_jobs()
    (got,) = fd.host_ratios([jobs["fmsmoe_v2_granite3b_none_1gpu"]], load_catalog())
    assert got[0] == pytest.approx(1.0) and got[1] < got[2] < got[3] and got[1] > 1.0


def test_the_drift_is_the_gpu_bound_rows_median_and_the_factor_interpolates_between_the_what_ifs():
    ratios = [[1.0, 1.0, 1.0, 1.0, 1.001], [1.0, 1.05, 1.1, 1.2, 1.4], [1.0, 1.0, 1.0, 1.0, 1.0]]
    assert fd.gpu_bound_drift([1.02, 1.3, 1.01], ratios) == pytest.approx(1.015)
    assert fd.implied_factor(1.15, ratios[1]) == pytest.approx(1.75)
    assert fd.implied_factor(1.05, ratios[1]) == pytest.approx(1.25)
    assert fd.implied_factor(1.5, ratios[1]) is None and fd.implied_factor(0.99, ratios[1]) is None
    assert fd.implied_factor(1.0005, ratios[0]) is None  # GPU-bound: no host factor read on it
