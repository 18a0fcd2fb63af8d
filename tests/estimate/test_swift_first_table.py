"""benchmarks/swift_first_table.py: ms-swift's first benchmark page (cfcb67265, 2023-12-14: truncation_left, 1,000
samples) beside perf_heldout35's table (docs/known-gaps.md 118, item (c)). Held out, printed, nothing fitted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_heldout35 as p35  # noqa: E402
import swift_first_table as ft  # noqa: E402


@pytest.fixture(scope="module")
def compared():
    return {row[0]: row for row in ft.compare()}


def test_every_row_names_a_scored_setting_and_its_source():
    ids = {r["id"] for r in p35.rows() if not r["refused"]}
    rs = ft.rows()
    assert len(rs) == 24 and len({r["row"] for r in rs}) == 24
    for r in rs:
        assert r["row"] in ids, r["row"]
        assert "/blob/cfcb67265/" in r["url"] and r["date"] == "2023-12-14", r["row"]
        assert float(r["minutes"]) > 0 and float(r["peak_mib"]) > 0, r["row"]


def test_truncation_left_is_the_estimates_own_cut():
    # the page's statistics as a lognormal, cut at each run's cutoff by the estimate (sample_lengths.min(L, cutoff))
    mean, spread = ft.dataset_lengths()
    assert mean == p35.DATASET_MEAN_TOKENS and spread == pytest.approx(0.695, abs=5e-4)


def test_where_the_lengths_repeat_the_lora_peak_is_the_estimates(compared):
    """LoRA with FlashAttention at 2,048, most samples at the cutoff: within 7% of the estimate (every model, batch,
    rank, target and recompute variant); the published rows of the same settings, every length under the cutoff,
    read at least a fifth more (the caching allocator's reserve under per-sample lengths, known-gaps 97 (b))."""
    published = {c.row_id: c.measured for c in p35.cases() if c.metric == "peak_gib" and not c.skipped}
    rows = [rid for rid in compared if rid.startswith("swift_lora_") and "_2048" in rid and "nofa" not in rid]
    assert len(rows) == 10
    for rid in rows:
        _, _, gib, pred, _, _ = compared[rid]
        assert abs(pred / gib - 1) < 0.07, (rid, gib, pred)  # batch 8 -6.5% (4.3% summed, known-gaps 203)
        assert published[rid] > 1.2 * gib, rid


def test_the_estimates_training_minutes_exceed_the_whole_runs_on_7b_and_14b_lora(compared):
    """The page's minutes include loading the model: the estimate's training time for the same samples comes out
    above them on every 7B / 14B LoRA row but the eager-attention and all-linear ones (too slow a token: known-gaps
    118 (b); the all-linear ratio, 104 (c))."""
    lora = [rid for rid in compared if ("7b" in rid or "14b" in rid) and "lora" in rid]
    under = {rid for rid in lora if compared[rid][5] <= compared[rid][4]}
    assert len(lora) == 16 and under <= {"swift_lora_qwen-7b_2048_nofa", "swift_lora_qwen-7b_2048_r8_all"}, under


def test_the_lora_gap_comes_with_the_length_mix_in_data_and_in_the_allocator_replay(compared):
    """docs/known-gaps.md 128, item (b): on every LoRA model and cutoff the December table (truncation_left: many
    samples at the cutoff) reads less over the estimate than the published one ('delete': every length its own),
    and about none at 2,048; the caching allocator replayed over the loss path orders the two length mixes alike
    (seed by seed), its reserve at 2,048 under truncation_left the one-shape 16/12 of the allocated peak (1.16 GiB)."""
    gaps = ft.lora_gaps(list(compared.values()))
    assert len(gaps) == 9
    for rid, (first, published) in gaps.items():
        assert first < published, rid
        if rid.endswith("_2048"):
            assert abs(first) < 1.5 and published > 7.0, rid
    for cutoff, trunc, delete in ft.reserve_by_length_mix(samples=150):
        assert all(t <= d + 1e-9 for t, d in zip(trunc, delete, strict=True)), cutoff
        if cutoff == 2048:
            assert max(trunc) < 1.5 < 5.0 < min(delete)


def test_the_reserved_peak_under_this_tables_lengths(compared):
    """docs/known-gaps.md 198 (a): the caching allocator's growth (estimate.allocator) under truncation_left's lengths,
    the same code as perf_heldout35's rows on another length mix. At 2,048 most samples sit at the cutoff, so the
    records stop early (at most 1.5 GiB over the allocated peak at batch 1, less at batch 2 / 4 / 8); at 4,096 the
    LoRA rows come within 10% (-8.7..-31.2% on the allocated peak); at 8,192 they go over (198 (b))."""
    reserved = ft.reserved_peaks()
    for rid, (_, _, gib, allocated, _, _) in compared.items():
        growth = reserved[rid] - allocated
        assert growth >= 0, rid
        if rid.endswith("_2048") and rid.startswith("swift_lora_"):
            assert growth < 1.5, rid
        if rid.startswith("swift_lora_") and rid.endswith("_4096"):
            assert abs(reserved[rid] / gib - 1) < 0.10 and allocated < gib, rid
        if rid.startswith("swift_lora_") and rid.endswith("_8192"):
            assert reserved[rid] > gib > allocated, rid
    batch = [reserved[f"swift_lora_qwen-7b_2048_bs{b}"] - compared[f"swift_lora_qwen-7b_2048_bs{b}"][3] for b in (2, 4, 8)]
    assert batch == sorted(batch, reverse=True)
