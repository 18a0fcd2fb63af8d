"""Held-out rows added 2026-12-06, forty-second batch (benchmarks/perf_heldout68.py; nothing fitted on them):
ms-swift's example scripts (modelscope/ms-swift), packed fine-tuning peak memory under Megatron-Core (full DPO of a
dense and an MoE model, MoE SFT with expert parallelism, optimizer offload, MoE LoRA) and under transformers + DeepSpeed
ZeRO-3 (full SFT with Liger, full DPO), and the seconds a step of the scripts that name their card (H20: the FP8 / BF16
benchmark, FlashAttention-2 / -3); KTO, LoRA DPO, a whole-card figure and a run perf_heldout32 holds listed as refused. Bounds = the figures
measured when the rows were added, with a margin: they guard against a regression, not an accuracy claim
(docs/known-gaps.md 266)."""

from __future__ import annotations

import re

import pytest

import perf_heldout as ph
import perf_heldout68 as p68

from .heldout_rows import check_columns_and_ids, check_source_bounds, run_fixture

MEM = "Megatron-SWIFT example scripts (memory)"
TIME = "Megatron-SWIFT FP8 benchmark script (H20)"
HF = "ms-swift example scripts (HF Trainer, memory)"
FA3 = "ms-swift FlashAttention-3 scripts (H20, seconds a step)"
# (source, metric) -> (rows, MAPE bound %); reached at landing in the comment
BOUNDS = {(MEM, "peak_memory_gib"): (10, 22.0),  # 16.8 (266 (a), 270)
          (TIME, "step_time_s"): (2, 32.0),  # 27.8 (266 (b), 269 (c) (d))
          (HF, "peak_memory_gib"): (3, 10.0),  # 7.1 (266 (a))
          (FA3, "step_time_s"): (4, 25.0)}  # 19.7 (266 (b), 269 (c))
COMMITS = {"1b184f296c": "2025-09-30", "c3f3ca4a43": "2025-07-17", "cecf735f1f": "2025-07-10",
           "5712d6af50": "2025-06-30", "fca00c96a8": "2025-11-04", "c8bc4615e9": "2025-06-28",
           "891a9ab3d4": "2025-12-08", "e686ae81fb": "2025-10-08", "8ae0ade71a": "2025-08-15",
           "40c8406fbd": "2025-05-09", "9d297f99a9": "2025-03-21", "710553d854": "2025-08-01",
           "11a345d418": "2025-07-31", "2900bbf4d3": "2025-08-13"}

run = run_fixture(p68.run_all)


def test_every_row_names_its_script_commit_date_and_assumptions():
    rs = p68.rows()
    check_columns_and_ids(rs, ph.ROWS, 24, more=True)  # perf_heldout.job_of reads these columns
    for r in rs:
        commit = re.search(r"commit ([0-9a-f]{10}) ", r["source_locator"]).group(1)
        assert COMMITS[commit] == r["date"], r["id"]
        assert f"https://github.com/modelscope/ms-swift/blob/{commit}/examples/" in r["source_locator"], r["id"]
        assert f"'# {r['published']}'" in r["source_locator"] or r["published"].split(":")[1].strip() in \
            r["source_locator"], r["id"]
        assert r["assumed"] and r["method"] in ("full", "lora", "dpo"), r["id"]


def test_refused_rows_say_why():
    """Five rows are not estimated: two KTO runs, a LoRA DPO run, a whole-card figure and the run perf_heldout32 holds;
    every other row runs the job path."""
    refused = {r["id"]: r["refused"] for r in p68.rows() if r["refused"]}
    assert len(refused) == 5
    assert sum("KTO" in why for why in refused.values()) == 2
    assert any("LoRA DPO" in why for why in refused.values())
    assert any("whole card" in why for why in refused.values())
    assert any("perf_heldout32" in why for why in refused.values())


def test_the_rows_are_the_scripts_jobs():
    """Megatron-SWIFT rows: Megatron-Core with the distributed optimizer and fp32 gradient reduction (its defaults),
    recompute full but for the FP8 benchmark's selective, the optimizer on the host where the script offloads it, expert
    TP 1 where EP folds into TP; `swift sft` / `swift rlhf` rows: the hf style under ZeRO-3 with full recompute; every
    row packed (a DPO pair's two sequences of half the pack in one pack)."""
    for r in p68.rows():
        if r["refused"]:
            continue
        job, s = p68.job(r), p68.job(r)["strategy"]
        pack = 16384 if "flash_attention_3/transformers" in r["source_locator"] else 8192
        assert job["method"] == r["method"] and job["seq_len"] == (pack // 2 if r["method"] == "dpo" else pack), r["id"]
        assert ("lora" in job) == (r["method"] == "lora"), r["id"]
        if s["framework"] == "hf":
            assert (s["zero"], s["recompute"]) == (3, "full"), r["id"]
            continue
        assert (s["framework"], s["distributed_optimizer"], s["grad_reduce_in_fp32"]) == ("megatron-core", True, True)
        assert s["recompute"] == ("selective" if r["model"] == "qwen3-14b" else "full"), r["id"]
        assert (s.get("offload", "none") == "optimizer") == ("--optimizer_cpu_offload true" in r["assumed"]), r["id"]
        if s["ep"] > 1 and s["tp"] > 1:
            assert s["etp"] == 1, r["id"]


def test_source_stays_within_its_bounds(run):
    check_source_bounds([c for c, _, _ in run], BOUNDS)
    assert all(f.fits for f in p68.fits())


def test_every_megatron_swift_peak_is_predicted_below_its_log(run):
    """266 (a): every Megatron-SWIFT peak is predicted 1-32% under the script's figure (the DPO rows 16-22%: the
    reference model and both sequences are counted, the gap is elsewhere) but the Qwen2.5-72B one, whose figure sits
    below the model init's allocated peak (Megatron-Core DDP's parameter buffer beside the weights, 270 (f): +9.4%);
    the transformers + ZeRO-3 ones within 11%; fails when the estimate gains what the Megatron-Core runs hold (then
    update 266 / 270 and this test)."""
    got = [c for c, _, _ in run if not c.skipped and c.metric == "peak_memory_gib"]
    assert len(got) == 13
    mcore = [c for c in got if c.source == MEM]
    over = [c.row_id for c in mcore if c.err >= 0.0]
    assert over == ["mswift_sft_dense_qwen2.5_72b_offload_8gpu"], over
    assert all(-0.33 < c.err < 0.10 for c in mcore), [(c.row_id, round(c.err, 3)) for c in mcore]
    assert all(abs(c.err) < 0.11 for c in got if c.source == HF), [(c.row_id, round(c.err, 3)) for c in got]
    dpo = [res for c, res, r in run if not c.skipped and r["method"] == "dpo"]
    assert len(dpo) == 3 and all(res["memory"]["items"]["reference_model"]["gib"] > 1.0 for res in dpo)


def test_h20_fp8_gain_is_predicted_near_its_measure(run):
    """266 (b), 269 (c) (d): on 8 H20 the BF16 run takes 1.625x the FP8 run's seconds a step; with the H20's FP8 GEMMs at
    their measured share (fp8.gemm_ratio_by_family) the estimate gives 1.45-1.60x (1.25 at the H100's recipe ratio)
    and puts the BF16 run 15-30% and the FP8 run 25-40% too slow. Fails when the H20's GEMM rates or the blockwise
    recipe's cost move (then update 269)."""
    measured, predicted = p68.precision_pair(run, "step_time_s")
    assert measured == pytest.approx(1.625)
    assert 1.45 < predicted < 1.60
    got = {r["precision"]: c.err for c, _, r in run if not c.skipped and c.source == TIME}
    assert len(got) == 2 and 0.15 < got["bf16"] < 0.30 and 0.25 < got["fp8"] < 0.40, got


def test_flash_attention_3_runs_faster_than_flash_attention_2_on_h20(run):
    """266 (b), 269 (c): the two H20 scripts that ran FlashAttention-2 and -3 measure 1.10 / 1.13x the seconds a step
    with FA2; with the H20's own FA2 and native (cuDNN / FA3) figures the estimate gives 1.11 (dense ZeRO-3, 16K) and
    1.21 (MoE LoRA, 8K, whose attention is counted over the whole pack). Fails when the H20's attention figures move
    (then update 269 and this test)."""
    pairs = dict((row, (m, p)) for row, m, p in p68.attention_pairs(run))
    assert len(pairs) == 2
    assert all(1.08 < m < 1.15 and 1.05 < p < 1.25 for m, p in pairs.values()), pairs
    dense, moe = pairs["mswift_h20_qwen2.5_7b_zero3_fa2_step_4gpu"], pairs["mswift_h20_qwen3_30b_a3b_lora_fa2_step_4gpu"]
    assert abs(dense[1] - dense[0]) < 0.03 and moe[1] > moe[0], pairs
