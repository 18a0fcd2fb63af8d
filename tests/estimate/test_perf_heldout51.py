"""Held-out rows added 2026-12-05, twenty-fifth batch (benchmarks/perf_heldout51.py; nothing fitted on them): torchtitan
Llama 3 8B pre-training under FSDP2 over 32 H100 on 4 AWS p5 hosts (EFA), from the AWS SageMaker torchtitan blog (eager,
compile, FP8 linear, FP8 all-gather) and awsome-distributed-training's torchtitan test case (eager and compiled, with
torchtitan's max_reserved). Bounds = the figures measured when the rows were added, with a margin: they guard against
a regression, not an accuracy claim (docs/known-gaps.md 177)."""

from __future__ import annotations

import pytest

import perf_heldout as ph
import perf_heldout28 as p28
import perf_heldout48 as p48
import perf_heldout51 as p51
from harness import mape

from .heldout_rows import check_rows_sourced, run_fixture

BLOG = "AWS SageMaker torchtitan blog (32 H100, p5)"
AWSOME = "awsome-distributed-training torchtitan test case (32 H100, p5)"
# source -> (rows, MAPE bound %); reached at landing in the comment
BOUNDS = {BLOG: (4, 7.0),  # 4.1
          AWSOME: (2, 7.0),  # 4.3
          AWSOME + " peak memory": (2, 50.0)}  # 44.4 (max_reserved without expandable segments: 177 (a))


run = run_fixture(p51.run_all)


def test_the_rows_are_sourced_and_carry_the_heldout_columns():
    rs = p51.rows()
    check_rows_sourced(rs, list(ph.rows()[0]), ph.MODELS, 8, ("tokens_per_s_per_gpu", "peak_memory_gib"))
    for r in rs:
        assert r["framework"] == "torchtitan" and r["network"] == "efa-v2" and r["gpu_count"] == "32", r["id"]
        assert r["model"] == "llama-3.1-8b" and r["seq_len"] == "8192" and r["micro_batch"] == "1", r["id"]
        assert r["global_batch_seqs"] == "32" and r["recompute"] == "selective", r["id"]  # FSDP 32, no accumulation
        assert ("ac90c36e" in r["source_locator"]) == r["id"].startswith("sagemaker"), r["id"]


def test_no_row_is_refused_every_run_fits_and_each_source_is_within_its_bound(run):
    assert not [c.row_id for c, _, _ in run if c.skipped]
    assert all(res["memory"]["fits"] for _, res, _ in run)  # every run was made on an 80 GB card
    groups = p28.by_source([c for c, _, _ in run])
    assert set(groups) == set(BOUNDS)
    for source, (n, bound) in BOUNDS.items():
        assert len(groups[source]) == n and mape(groups[source]) <= bound, (source, mape(groups[source]))


def test_the_awsome_optimized_run_is_bf16_with_compile_and_its_gain_is_compiles():
    by = {r["id"]: r for r in p51.rows()}
    opt = by["awsome_2025-03_h100_llama3_8b_bf16_compile_32gpu"]
    # the README's enable_float8_linear is ignored by the torchtitan of the run (float8 is model.converters there)
    assert opt["precision"] == "bf16" and not opt["fp8_recipe"] and "torch_compile=true" in opt["strategy_extra"]
    assert "enable_float8_linear" in opt["assumed"] and "57387af0" in opt["assumed"]
    fp8 = [r for r in by.values() if r["precision"] == "fp8"]
    assert len(fp8) == 2 and all(r["fp8_recipe"] == "tensorwise" and r["id"].startswith("sagemaker") for r in fp8)


def test_each_optimisation_gains_in_order_and_the_model_tracks_the_measured_gain(run):
    ratios = {rid: (m, p) for rid, m, p in p48.over_base(run, p51.eager, ("source_key",))}
    assert len(ratios) == 4
    blog = [ratios[f"sagemaker_2024-09_h100_llama3_8b_{k}_32gpu"] for k in
            ("bf16_compile", "fp8_tensorwise_compile", "fp8_tensorwise_f8ag_compile")]
    for column in (0, 1):  # measured and predicted: compile < + FP8 linear < + FP8 all-gather, each above eager
        assert 1.0 < blog[0][column] < blog[1][column] < blog[2][column]
    for rid, (measured, predicted) in ratios.items():
        assert predicted == pytest.approx(measured, rel=0.06), rid  # 1.7-4.4% at landing
