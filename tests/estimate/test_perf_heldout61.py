"""Held-out rows added 2026-12-06, thirty-fifth batch (benchmarks/perf_heldout61.py; nothing fitted on them): IBM's
fms-acceleration A100-80GB benchmarks at 24bdadb (2025-02-07) and its PowerLM-3b file at 426a4a5 (2024-09-28):
fms-hf-tuning's SFTTrainer, full fine-tuning, LoRA and bitsandbytes QLoRA on Mistral-7B, Mixtral-8x7B, Llama-2-70B and
PowerLM-3b, one GPU or two under FSDP1.
Bounds = the figures measured when the rows were added, with a margin: they guard against a regression, not an
accuracy claim (docs/known-gaps.md 238)."""

from __future__ import annotations

import pytest

import finetune_heldout as fh
import perf_heldout61 as p61
from harness import scored

from .heldout_rows import check_rows_cited, check_source_bounds, run_fixture, script_stdout

FMS = "fms-acceleration benchmarks"
GRANITE = "fms-acceleration granite benchmarks"
BF16 = "fms-acceleration bf16 benchmarks"
# (source, metric) -> (rows, MAPE bound %); reached at landing in the comment
BOUNDS = {(FMS, "tokens_s"): (19, 9.0),  # 6.3 (11.6 before the QLoRA fp32 stream, 243)
          (FMS, "peak_gib"): (19, 9.0),  # 6.5 (7.7 before the HF Trainer's set_to_none, known-gaps 242)
          (GRANITE, "tokens_s"): (12, 20.0),  # 16.1 (238 (c); 22.5 before 243 (a))
          (GRANITE, "peak_gib"): (12, 4.0),  # 1.8 (5.0 before 242)
          (BF16, "tokens_s"): (10, 9.0),  # 5.8
          (BF16, "peak_gib"): (10, 4.0)}  # 1.9 (3.1 before 242)


cases = run_fixture(p61.cases, "cases")


def test_every_row_names_its_file_commit_date_and_assumptions():
    check_rows_cited(p61.rows(), 41, "https://github.com/foundation-model-stack/fms-acceleration/blob/",
                     "2025-02-07|2024-09-28|2024-09-16")


def test_the_rows_are_the_suites_job():
    """Packed 4,096-token sequences, full recompute, the upcast loss, per-GPU tokens; FSDP1 FULL_SHARD on two GPUs
    with the reentrant checkpoint around its units, none on one; LoRA without autocast in the 2025 file (no bf16 flag
    in its scenario), under it in the PowerLM-3b file and for every QLoRA row; PEFT's prepare_model_for_kbit_training
    only where the 4-bit weights load on the GPU; full fine-tuning's AdamW on the bf16 weights (bf16 moments, no
    master) except where accelerate holds FSDP's trainable flat parameters in fp32 (bf16 set under FSDP: the
    PowerLM-3b file's two-GPU rows)."""
    for r in p61.rows():
        job, s = p61.job(r), p61.job(r)["strategy"]
        granite = r["id"].startswith(("fmsacc24_", "fmsacc2409_"))  # bf16 True: autocast, FSDP's fp32 flat params
        n = job["hardware"]["count"]
        assert (job["seq_len"], job["packing"], s["recompute"], s["loss_impl"]) == (4096, True, "full", "upcast")
        assert r["tokens_scope"] == "per_gpu" and r["peak_mem_unit"] == "GiB-active", r["id"]
        assert job["global_batch"]["sequences"] == s["micro_batch"] * n in (4, 8), r["id"]
        assert s.get("fsdp", "none") == ("full" if n == 2 else "none"), r["id"]
        assert s["checkpoint_impl"] == ("reentrant_outer" if n == 2 else "reentrant"), r["id"]
        assert s.get("autocast") is (False if job["method"] == "lora" and not granite else None), r["id"]
        if job["method"] == "qlora":
            assert s["kbit_upcast"] is (n == 1), r["id"]
            assert job["lora"].get("impl") == ("peft" if n == 1 else "peft-base-dtype"), r["id"]
        if job["method"] == "full":
            assert s.get("optimizer_precision") == (None if granite and n == 2 else "bf16"), r["id"]


def test_sources_stay_within_their_bounds(cases):
    check_source_bounds(cases, BOUNDS)


def test_two_gpus_shard_the_full_fine_tune_as_measured(cases):
    """FSDP1 over two GPUs halves the full fine-tune's model states: the measured peak falls from 67.5 to 33.7 GiB,
    and the estimate's by at least 40% too."""
    got = {c.row_id: c for c in scored(cases, "peak_gib")}
    one, two = got["fmsacc25_mistral7b_full_1gpu_mb4"], got["fmsacc25_mistral7b_full_2gpu_mb2"]
    assert two.measured < 0.55 * one.measured
    assert two.predicted < 0.6 * one.predicted


def test_the_loss_phase_holds_no_gradient_but_the_heads(cases):
    """238 (a), 242: where the measured peak is the loss phase (PowerLM-3b full fine-tuning, one GPU, micro-batch 8:
    above the five bf16 copies of the step), the HF Trainer's set_to_none leaves only the LM head's gradient there:
    the estimate was over by its 6.54 GiB of gradients, now within 0.3 GiB of the measured peak. Mistral-7B's
    micro-batch 8 then peaks at the step, its five bf16 copies as at micro-batch 4, and fits the card as run."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.memory import GIB, estimate_memory

    r = next(r for r in p61.rows() if r["id"] == "fmsacc24_powerlm3b_full_1gpu_mb8")
    sc = fh._scenario(r, load_catalog(), p61.MODELS)
    est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    assert est.peak_phase == "forward/backward" and est.items_bytes["gradients"] / GIB < 0.25
    got = {c.row_id: c for c in scored(cases, "peak_gib")}
    assert abs(got[r["id"]].predicted - got[r["id"]].measured) < 0.3
    for rid in ("fmsacc25_mistral7b_full_1gpu_mb8", "fmsacc2409_mistral7b_full_1gpu_mb8"):
        assert got[rid].predicted == pytest.approx(got[rid.replace("mb8", "mb4")].predicted, abs=0.01), rid


def test_the_bf16_flag_as_measured(cases):
    """The one flag the 2024-09 file sets and the 2025 one does not: under FSDP on two GPUs accelerate then holds the
    full fine-tune's flat parameters in fp32, and the peak doubles (measured 2.00x at micro-batch 2 and 4; predicted
    within 5% of it at 2, and at 4 above 1.5x, the 2025 twin's loss phase being over by its gradients, 238 (a)); LoRA
    runs under autocast, a little faster (measured 1.02-1.03x on one GPU, predicted within a point)."""
    mem = {rid: (m, p) for rid, m, p in p61.bf16_flag(cases, "peak_gib")}
    for rid in ("fmsacc2409_mistral7b_full_2gpu_mb2", "fmsacc2409_mistral7b_full_2gpu_mb4"):
        assert mem[rid][0] == pytest.approx(2.0, abs=0.01), rid
    assert mem["fmsacc2409_mistral7b_full_2gpu_mb2"][1] == pytest.approx(2.0, rel=0.05)
    assert mem["fmsacc2409_mistral7b_full_2gpu_mb4"][1] > 1.5
    tps = {rid: (m, p) for rid, m, p in p61.bf16_flag(cases, "tokens_s")}
    for rid in ("fmsacc2409_mistral7b_lora_1gpu_mb4", "fmsacc2409_mistral7b_lora_1gpu_mb8"):
        m, p = tps[rid]
        assert 1.0 < m < 1.05 and p == pytest.approx(m, abs=0.01), rid


def test_one_gpu_qlora_pays_the_fp32_stream(cases):
    """243: on one GPU TRL runs prepare_model_for_kbit_training, so the 4-bit linears return fp32 and the stream runs
    fp32: every one-GPU QLoRA row (Mistral-7B, PowerLM-3b, Mixtral-8x7B under the expert loop) within 5% (they read
    +20..+43% before), and QLoRA slower than its LoRA twin on one GPU as measured."""
    got = {c.row_id: c for c in scored(cases, "tokens_s")}
    one = [c for rid, c in got.items() if "_qlora_1gpu_" in rid]
    assert len(one) == 6
    for c in one:
        assert abs(c.predicted / c.measured - 1.0) < 0.05, c.row_id
    for rid, measured, predicted in p61.method_ratios(cases, "qlora", "lora"):
        if "_1gpu_" in rid:
            assert measured < 0.9 and predicted < 0.9, rid


def test_the_script_runs():
    out = script_stdout("perf_heldout61")
    assert "perf_heldout61 time: n=41" in out and "refused 0" in out
