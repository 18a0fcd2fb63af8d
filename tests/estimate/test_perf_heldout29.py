"""Held-out rows added 2026-12-04, fourth batch (benchmarks/perf_heldout29.py; nothing fitted on them): torchtitan's
Qwen3 32B on 8-64 H100 96 GB (PR 1690). Bounds = the figures measured when the rows were added, with a margin: the
FSDP-only rows come out too slow and the FSDP x TP rows too fast (docs/known-gaps.md 57), so the bounds guard against a
regression, not an accuracy claim."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_heldout as ph  # noqa: E402
import perf_heldout28 as p28  # noqa: E402
import perf_heldout29 as p29  # noqa: E402
from harness import mape  # noqa: E402

# source -> MAPE bound (%); reached at landing in the comment
BOUNDS = {
    "torchtitan Qwen3 32B PR (H100 96 GB)": 24.0,  # 17.7: FSDP only -5..-18%, FSDP x TP +13..+28%
    "torchtitan Qwen3 32B PR (H100 96 GB) peak memory": 9.0,  # 5.6: +1.9..+8.9%
}


@pytest.fixture(scope="module")
def run():
    return p29.run_all()


def test_every_row_names_its_source_url_date_and_assumptions():
    rs = p29.rows()
    assert list(rs[0]) == list(ph.rows()[0])  # heldout_pretrain.csv's columns: perf_heldout.job_of reads them
    assert len({r["id"] for r in rs}) == len(rs) == 16
    models = yaml.safe_load(ph.MODELS.read_text(encoding="utf-8"))
    for r in rs:
        assert r["source"] and r["source_locator"] and r["assumed"], r["id"]
        assert re.search(r"\b(commit|PR) ", r["source_locator"]), r["id"]
        assert re.fullmatch(r"20\d\d-\d\d-\d\d", r["date"]), r["id"]
        assert r["confidence"] in ("high", "medium", "low"), r["id"]
        assert float(r["value"]) > 0 and r["metric"] in ("tokens_per_s_per_gpu", "peak_memory_gib"), r["id"]
        assert r["model"] in models or (BENCH.parent / "src/trainsizer/models/presets" / f"{r['model']}.json").exists()
        assert not r["overlay"] or (BENCH / "data" / r["overlay"]).exists(), r["id"]


def test_every_row_is_estimated_none_refused_and_each_fits(run):
    assert not [(c.row_id, c.skipped) for c, _, _ in run if c.skipped]
    assert all(res["memory"]["fits"] for _, res, _ in run)  # every run was made


def test_per_source_mape_within_bounds(run):
    groups = p28.by_source([c for c, _, _ in run])
    assert set(groups) == set(BOUNDS)
    for source, bound in BOUNDS.items():
        assert mape(groups[source]) <= bound, (source, mape(groups[source]))


def test_compile_gain_at_one_layout(run):
    """Qwen3 32B, FSDP 8, local batch 2 on H100: compiled over eager measured 1.161, predicted 1.108 (reached -4.6%)."""
    pairs = p28.option_pairs(run, "torch_compile", "true", "false")
    assert len(pairs) == 1
    (_, meas, pred), = pairs
    assert abs(pred / meas - 1.0) < 0.10
