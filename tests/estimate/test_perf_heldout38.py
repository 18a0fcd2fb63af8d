"""Held-out rows added 2026-12-05, twelfth batch (benchmarks/perf_heldout38.py; nothing fitted on them): the
Megatron-Bridge 25.09 pre-training tables, Llama 3 8B / 70B, Llama 3.1 405B, DeepSeek-V3 and Qwen3 30B-A3B / 235B-A22B on
DGX-GB200, -B200 and -H100 in FP8 and MXFP8. Bounds = the figures measured when the rows were added, with a margin:
they guard against a regression, not an accuracy claim (docs/known-gaps.md 108)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_heldout38 as p38  # noqa: E402


@pytest.fixture(scope="module")
def cases():
    return p38.cases()


def test_rows_carry_the_mbridge_columns_and_a_source():
    header = next(csv.reader((BENCH / "data" / "heldout_2026c_mbridge.csv").open(encoding="utf-8")))
    rs = p38.rows()
    # perf_mbridge26.job's columns, then token drop, a pipeline layout the recipe map lacks and why a row is refused
    assert list(rs[0]) == header[:24] + ["moe_token_drop", "pp_layout"] + header[24:] + ["refused"]
    assert len({r["id"] for r in rs}) == len(rs) == 27
    for r in rs:
        assert r["release"] == "25.09" and r["date"] == "2025-10-10 (table commit)", r["id"]
        assert "067f987df03b8355b03192d88d70f1709fedf51a" in r["source_locator"] and "fa0315ae2" in r["source_locator"]
        assert ("v0.1.0rc4" in r["recipe_config"]) != ("f5a691dd1" in r["recipe_config"]), r["id"]
        assert "precision: the 25.09 table prints none" in r["assumed"], r["id"]


def test_layouts_are_whole_and_the_flops_per_token_agree():
    per_token: dict[str, list[float]] = {}
    for r in p38.rows():
        gpus, gbs, mbs = int(r["gpu_count"]), int(r["global_batch_seqs"]), int(r["micro_batch"])
        dp = gpus // (int(r["tp"]) * int(r["pp"]) * int(r["cp"]))
        assert gpus % (int(r["tp"]) * int(r["pp"]) * int(r["cp"])) == 0 and gbs % (dp * mbs) == 0, r["id"]
        per_token.setdefault(r["model"], []).append(float(r["model_tflops_per_gpu"]) / float(r["tokens_per_sec_per_gpu"]))
    # NVIDIA's model FLOPs a token are one figure a model (seq fixed a model): a mistyped rate or TFLOP/s breaks it
    for model, ratios in per_token.items():
        assert max(ratios) / min(ratios) < 1.005, model


def test_token_drop_and_the_h100_deepseek_job_reach_the_strategy():
    by = {r["id"]: r for r in p38.scored_rows()}
    for rid, r in by.items():
        moe = r["model"].startswith(("Qwen3", "DeepSeek"))
        # run_script.py: token drop on every Qwen3 run and on DeepSeek-V3 off H100
        assert r["moe_token_drop"] == ("1" if moe and (r["model"] != "DeepSeekV3" or r["system"] != "H100") else "0")
        s = p38.job(r)["strategy"]
        assert s.get("moe_sync_free") is (True if r["moe_token_drop"] == "1" else None), rid
        assert s["cudnn_release"] is None, rid
    h100 = p38.job(by["mbridge_25.09_h100_deepseek_v3_fp8-cs_1024gpu"])["strategy"]
    assert h100["moe_dispatcher"] == "flex" and h100["moe_a2a_overlap"] is True
    assert h100["recompute_modules"] == ("mla_up_proj", "mlp")
    # Et|(tt|)*30mL over PP 8 x VP 4: rank 0 holds chunks 0, 8, 16, 24 (1 + 2 + 2 + 2 decoder layers), rank 7 chunks
    # 7, 15, 23, 31 (2 + 2 + 2 + the MTP / loss chunk)
    assert (h100["pp_first_stage_layers"], h100["pp_last_stage_layers"]) == (7, 6)


def test_refused_rows_say_why():
    assert [rid for rid, _ in p38.refused()] == ["mbridge_25.09_gb200_deepseek_v3_fp8-mx_256gpu"]
    assert all("no config state of the release" in why for _, why in p38.refused())


def test_rows_are_estimated_within_the_bounds_reached(cases):
    err = {rid: p / m - 1 for rid, _, m, p in cases}
    assert len(err) == 26 and all(f.fits for f in p38.fits())
    assert 100 * np.mean(np.abs(list(err.values()))) <= 19.0  # reached: 16.1%
    dense = [abs(e) for rid, e in err.items() if "_llama3" in rid]
    assert len(dense) == 13 and 100 * np.mean(dense) <= 8.5  # reached: 6.3%


def test_stating_token_drop_makes_every_moe_row_faster(cases):
    # the stated token drop (sync-free) against the same job as if dropless: the estimate must credit it
    bounds = p38.drop_bounds(cases)
    assert len(bounds) == 12
    assert all(stated > dropless for _, stated, dropless in bounds)
