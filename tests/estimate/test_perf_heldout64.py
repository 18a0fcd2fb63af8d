"""Held-out rows added 2026-12-06, thirty-eighth batch (benchmarks/perf_heldout64.py; nothing fitted on them): IBM's
fms-acceleration orca-math files (refs_orca/a100_80gb_pf.csv at 3cf092a, a100_80gb_mp.csv at 4224c66): Mistral-7B full
fine-tuning in fp16 with padding-free (flattened) micro-batches, one A100 or 2-8 under FSDP1, with and without the
multipack sampler. Bounds = the figures measured when the rows were added, with a margin: they guard against a
regression, not an accuracy claim (docs/known-gaps.md 248)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import finetune_heldout as fh  # noqa: E402
import perf_heldout64 as p64  # noqa: E402
from harness import mape, scored  # noqa: E402

PF = "fms-acceleration padding-free benchmarks"
MP = "fms-acceleration multipack benchmarks"
# (source, metric) -> (rows, MAPE bound %); reached at landing in the comment
BOUNDS = {(PF, "tokens_s"): (4, 38.0),  # 33.2 (248 (a))
          (PF, "peak_gib"): (4, 6.0),  # 3.8
          (MP, "tokens_s"): (24, 29.0),  # 24.7 (248 (a), (b))
          (MP, "peak_gib"): (24, 37.0)}  # 32.8 (248 (c))


@pytest.fixture(scope="module")
def cases():
    return p64.cases()


def test_every_row_names_its_file_commit_date_and_assumptions():
    rs = p64.rows()
    header = open(fh.DATA, encoding="utf-8").readline().strip().split(",")
    assert list(rs[0])[: len(header)] == header  # finetune_heldout.job reads these columns
    assert len({r["id"] for r in rs}) == len(rs) == 28
    for r in rs:
        assert r["url"].startswith("https://github.com/foundation-model-stack/fms-acceleration/blob/"), r["id"]
        assert len(r["url"].split("/blob/")[1].split("/")[0]) == 40, r["id"]  # a full commit, not a branch
        assert r["locator"] and r["date"] in ("2024-09-30", "2024-08-23") and r["assumed"], r["id"]
    assert not [r["id"] for r in rs if r["refused"]]


def test_the_rows_are_the_suites_job():
    """A flattened micro-batch is one packed row of micro-batch x the mean sample length with attention within each
    sample; two micro-batches a step on each GPU; fp16 weights and AdamW moments with no master; full recompute, the
    upcast loss, per-GPU real tokens; FSDP1 FULL_SHARD with the reentrant checkpoint around its units on 2-8 GPUs."""
    for r in p64.rows():
        job, s = p64.job(r), p64.job(r)["strategy"]
        n, mean = job["hardware"]["count"], job["data"]["avg_tokens"]
        assert job["packing"] and s["micro_batch"] == 1 and job["global_batch"]["sequences"] == 2 * n, r["id"]
        assert job["seq_len"] == mean * int(r["id"].rsplit("_mb", 1)[1]), r["id"]
        assert mean == (289 if r["id"].startswith("fmsorca_pf_") else 274), r["id"]
        assert (job["precision"], s["optimizer_precision"], s["recompute"], s["loss_impl"]) == (
            "fp16", "bf16", "full", "upcast"), r["id"]
        assert r["tokens_scope"] == "per_gpu" and not r["tokens_counted"] and r["peak_mem_unit"] == "GiB-active"
        assert s.get("fsdp", "none") == ("full" if n > 1 else "none"), r["id"]
        assert s["checkpoint_impl"] == ("reentrant_outer" if n > 1 else "reentrant"), r["id"]


def test_sources_stay_within_their_bounds(cases):
    for (src, metric), (n, bound) in BOUNDS.items():
        got = [c for c in scored(cases, metric) if c.source == src]
        assert len(got) == n, (src, metric)
        assert mape(got) < bound, (src, metric, mape(got))


def test_one_gpu_peak_is_the_optimizer_step(cases):
    """On one GPU the peak does not move with the micro-batch (67.49 GiB at 4 and 8: the step's five fp16 copies of the
    7.24B parameters); the estimate gives the same within 0.2 GiB."""
    got = {c.row_id: c for c in scored(cases, "peak_gib")}
    for rid in ("fmsorca_pf_mistral7b_full_pf_1gpu_mb4", "fmsorca_pf_mistral7b_full_pf_1gpu_mb8"):
        assert got[rid].measured == pytest.approx(67.49, abs=0.01)
        assert got[rid].predicted == pytest.approx(got[rid].measured, abs=0.2), rid


def test_the_fsdp_peaks_miss_by_the_other_ranks_part_of_the_weights(cases):
    """248 (c): on 4 and 8 GPUs the measured peak is over the estimate by about (1 - 1/GPUs) of the fp16 weights, as if
    rank 0 held one whole unsharded model: 0.86-1.01 of it on every such row, 0.93 on average. Fails when the memory
    estimate counts it (then update 248 and this test)."""
    shares = [d / w for _, n, d, w in p64.rank0_excess(cases) if n >= 4]
    assert len(shares) == 16
    assert 0.85 < sum(shares) / len(shares) < 1.05, shares


def test_multipack_is_faster_than_padding_free_alone(cases):
    """248 (b): the multipack sampler's balanced ranks measure 1-27% faster than padding-free alone at the same
    layout; the estimate has one job for both (ratio 1.000): a rank-imbalance term would move it."""
    got = p64.multipack_ratios(cases, "tokens_s")
    assert len(got) == 12
    assert all(1.0 < m < 1.3 for _, m, _ in got)
    assert all(p == pytest.approx(1.0, abs=1e-9) for _, _, p in got)


def test_the_script_runs():
    out = subprocess.run([sys.executable, str(BENCH / "perf_heldout64.py")], capture_output=True, text=True,
                         check=True, cwd=BENCH).stdout
    assert "perf_heldout64 time: n=28" in out and "refused 0" in out
