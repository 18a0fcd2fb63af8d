"""The device script for known-gaps 305 (d) (benchmarks/device/te_grouped_skew.py): its CPU smoke run prints the
environment line, one line a (local experts, routing) with the synced wall, kernel and exposed times and the busiest
expert's load, and a line a local-expert count with the uneven-rows and new-rows costs; its splits always hold the rank's
routed rows, in multiples of the FP8 padding, and the varying routing's draws differ in their rows, not only in order."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .device_scripts import DEVICE_DIR, import_tiny, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "te_grouped_skew.py"


@pytest.fixture(scope="module")
def skew():
    return import_tiny(SCRIPT)


def test_tiny_run_prints_three_routings_a_local_expert_count_and_their_costs():
    head, *lines = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and "CUBLASLT_HEURISTICS_CACHE_CAPACITY" in head["env"]
    rows = [r for r in lines if "routing" in r]
    sums = [r for r in lines if "routing" not in r]
    assert [(r["local_experts"], r["routing"]) for r in rows] == [
        (e, k) for e in (2, 4) for k in ("balanced", "skewed-fixed", "skewed-varying")]
    assert {r["path"] for r in rows} == {"torch.mm loop"}  # TE is not used off a GPU
    assert all(r["wall_ms"] > 0 and r["gpu_ms"] > 0 and r["exposed_ms"] >= 0 for r in rows)
    assert all((r["busiest_over_mean"] == 1.0) == (r["routing"] == "balanced") for r in rows)
    assert [s["local_experts"] for s in sums] == [2, 4]
    assert all(set(s) == {"shape", "local_experts", "uneven_rows_gpu_ms", "new_rows_exposed_ms"} for s in sums)


@given(experts=st.integers(1, 64), per=st.integers(1, 40), seed=st.integers(0, 10_000))
def test_zipf_splits_hold_the_rows_in_aligned_pieces(skew, experts, per, seed):
    rows = skew.ALIGN * experts * per
    out = skew.zipf_splits(experts, rows, random.Random(seed))
    assert len(out) == experts and sum(out) == rows
    assert all(s >= 0 and s % skew.ALIGN == 0 for s in out)


def test_the_varying_routing_draws_new_rows_and_the_fixed_ones_one_plan(skew):
    rows = skew.ALIGN * 4 * 32
    assert skew.split_plan("balanced", 4, rows) == [[rows // 4] * 4]
    assert len(skew.split_plan("skewed-fixed", 4, rows)) == 1
    varying = skew.split_plan("skewed-varying", 4, rows)
    assert len(varying) == skew.DRAWS
    assert len({tuple(sorted(s)) for s in varying}) > 1  # the rows themselves change, not only which expert gets them
    assert max(max(s) for s in varying) > rows // 4  # skewed: some expert above the mean
