"""Held-out rows added 2026-12-06, twenty-eighth batch (benchmarks/perf_heldout54.py; nothing fitted on them): a user's
DGX B200 run of Megatron-Bridge's Qwen3-30B-A3B recipe (issue 4439), NVIDIA's DeepSeek-V3 B200 recipe at 256 GPUs
(PR 1869) and torchtitan's llama3 defaults on 8 MI350X (PR 4779). Bounds = the figures measured when the rows were
added, with a margin: they guard against a regression, not an accuracy claim (docs/known-gaps.md 200)."""

from __future__ import annotations

import pytest

import perf_heldout as ph
import perf_heldout54 as p54

SOURCES = {"mbissue4439_": "Megatron-Bridge/issues/4439", "mbpr1869_": "Megatron-Bridge/pull/1869",
           "torchtitan_2026-09_mi350x_": "torchtitan/pull/4779"}
# reached at landing in the comment
REPORTS_MAPE_BOUND = 12.0  # 7.2 (200 (a), (b))
TITAN_MAPE_BOUND = 35.0  # 25.7 (200 (c), (d))


def _source(row_id: str) -> str:
    return next(url for prefix, url in SOURCES.items() if row_id.startswith(prefix))


def test_every_row_names_its_thread_date_and_assumptions():
    rows = p54.report_rows() + p54.titan_rows()
    assert len(rows) == len({r["id"] for r in rows}) == 6
    for r in rows:
        assert f"https://github.com/NVIDIA-NeMo/{_source(r['id'])}" in r["source"] or \
            f"https://github.com/pytorch/{_source(r['id'])}" in r["source"], r["id"]
        assert r["source_locator"] and r["assumed"] and r["date"].startswith("2026-"), r["id"]


def test_the_titan_rows_keep_the_pretrain_columns_and_the_configs_defaults():
    header = open(ph.ROWS, encoding="utf-8").readline().strip().split(",")
    models = ph.model_data(ph.MODELS)
    for r in p54.titan_rows():
        assert list(r) == header, r["id"]
        s = ph.job_of(r, models)["strategy"]
        assert (s["framework"], s["loss_impl"], s["torch_compile"]) == ("torchtitan", "chunked", False), r["id"]
    by = {r["id"]: ph.job_of(r, models)["strategy"] for r in p54.titan_rows()}
    assert (by["torchtitan_2026-09_mi350x_llama3_8b_8gpu"]["recompute"],
            by["torchtitan_2026-09_mi350x_llama3_70b_tp8_8gpu"]["recompute"]) == ("selective", "full")
    assert by["torchtitan_2026-09_mi350x_llama3_70b_tp8_8gpu"]["tp"] == 8


@pytest.mark.parametrize("flops_g, mfu, value", [(57.914449920, 0.205, 8141.3), (481.442709504, 0.246, 1175.2)])
def test_the_titan_rate_is_the_stated_mfu_over_torchtitans_flops_a_token(flops_g, mfu, value):
    """tokens/s a GPU = MFU x the PR's 2.3 PFLOP/s peak / torchtitan's FLOPs a token (6 N less the embedding + 12 L d S)."""
    assert mfu * 2.3e15 / (flops_g * 1e9) == pytest.approx(value, abs=0.1)
    assert any(float(r["value"]) == value for r in p54.titan_rows())


def test_the_reports_read_tflops_through_their_tables_flops_a_token():
    for r in p54.report_rows():
        gf = float(r["model_tflops_per_gpu"]) * 1e3 / float(r["tokens_per_sec_per_gpu"])
        assert gf == pytest.approx(619e3 / 27136 if "qwen3" in r["id"] else 725e3 / 2790, rel=1e-4), r["id"]


def test_nothing_is_refused_and_each_source_is_within_its_bound():
    cs = p54.report_cases()
    assert len(cs) == 4 and sum(abs(p / m - 1) for _, _, m, p in cs) / len(cs) * 100 <= REPORTS_MAPE_BOUND
    run = p54.titan_run()
    assert not [c.row_id for c, _, _ in run if c.skipped]
    assert sum(abs(c.err) for c, _, _ in run) / len(run) * 100 <= TITAN_MAPE_BOUND
    assert all(f.fits for f in p54.fits())


def test_the_table_twin_is_the_same_job_measured_twice():
    user, nvidia, pred = p54.table_twin()
    assert user == pytest.approx(562 / 619 * nvidia, rel=1e-3) and pred > 0
