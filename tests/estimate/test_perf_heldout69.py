"""Held-out rows added 2026-12-06, forty-third batch (benchmarks/perf_heldout69.py; nothing fitted on them): swiss-ai's
Megatron-LM baselines on CSCS Alps' quad-GH200 nodes (Llama 3 300M, Llama 3.2 3B, Llama 3.1 8B; February 2025); ATorch's
Llama 2 7B on A100-80GB under FSDP1 and DeepSpeed 3D (2023-11), time and max_memory_allocated. Bounds =
the figures measured when the rows were added, with a margin: they guard against a regression, not an accuracy claim
(docs/known-gaps.md 267)."""

from __future__ import annotations

import pytest

import perf_heldout as ph
import perf_heldout69 as p69
from harness import mape
from trainsizer.estimate import flops as F
from trainsizer.models import load_model

from .heldout_rows import check_columns_and_ids, check_source_bounds, run_fixture

run = run_fixture(p69.run_all)
SWISSAI = "swiss-ai Megatron-LM on GH200 (Alps), PR"
ATORCH_FSDP, ATORCH_DS = "ATorch Llama 2 7B on A100 (FSDP, 2023-11)", "ATorch Llama 2 7B on A100 (DeepSpeed 3D, 2023-11)"


def swissai_rows() -> list[dict[str, str]]:
    return [r for r in p69.rows() if r["id"].startswith("swissai_")]


def test_every_row_names_its_pull_request_script_commit_and_assumptions():
    rs = swissai_rows()
    check_columns_and_ids(rs, ph.ROWS, 5)  # perf_heldout.job_of reads these columns
    for r in rs:
        assert r["source"].startswith("swiss-ai/Megatron-LM (the Swiss AI Initiative's Megatron-LM fork) pull request")
        assert r["source_locator"].startswith("PR ") and " at commit " in r["source_locator"], r["id"]
        assert "the scripts state no network" in r["assumed"] and "megatron_core_version 0.11" in r["assumed"], r["id"]
        assert r["accelerator"] == "gh200-96gb" and r["framework"] == "megatron-core", r["id"]
    models = p69.models()
    assert {r["model"] for r in rs} - set(models) == {"llama-3.1-8b"}  # a shipped preset; the others inline
    assert load_model("llama-3.1-8b").source.startswith("preset llama-3.1-8b")


def test_the_rows_are_the_launcher_scripts():
    """300M: 8 nodes, MBS 2 x GBS 256 x 4,096; 3B: 1 / 8 nodes, MBS 1 / 2, GBS 256 x 8,192; 8B on 64 nodes: the PR's
    baseline (TP 2, MBS 4, GBS 1,024 x 4,096) and its change (TP 1, MBS 1, GBS 512 x 8,192); bf16 gradients (main
    grads bf16), the distributed optimizer, no recompute, four GPUs a host on every row."""
    expected = {"swissai_2025-02_llama3_300m_gh200_32gpu": (32, 1, 2, 256, 4096),
                "swissai_2025-02_llama3.2_3b_gh200_4gpu": (4, 1, 1, 256, 8192),
                "swissai_2025-02_llama3.2_3b_gh200_32gpu": (32, 1, 2, 256, 8192),
                "swissai_2025-02_llama3.1_8b_gh200_256gpu_tp2_mbs4": (256, 2, 4, 1024, 4096),
                "swissai_2025-02_llama3.1_8b_gh200_256gpu_tp1_mbs1": (256, 1, 1, 512, 8192)}
    jobs = {r["id"]: p69.job(r) for r in swissai_rows()}
    assert set(jobs) == set(expected)
    for row_id, job in jobs.items():
        s = job["strategy"]
        assert (job["hardware"]["count"], s["tp"], s["micro_batch"], job["global_batch"]["sequences"],
                job["seq_len"]) == expected[row_id], row_id
        assert (s["recompute"], s["distributed_optimizer"], s["grad_reduce_in_fp32"]) == ("none", True, False), row_id
        assert job["hardware"]["network"] == {"nics_per_node": 4, "gbps_per_nic": 200, "kind": "ethernet"}, row_id
    assert jobs["swissai_2025-02_llama3.1_8b_gh200_256gpu_tp2_mbs4"]["strategy"]["sequence_parallel"] is False


def test_megatron_tflops_is_megatrons_num_floating_point_operations(run):
    """The 3B rows' metric: Megatron-LM's logged TFLOP/s/GPU (training.py num_floating_point_operations at swiss-ai
    59ac8f14): 12 b s L h^2 ((1 + g/a + s/h) + 1.5 f/h + V/(2 L h)) for a dense SwiGLU model, over the step and GPUs."""
    c, res, r = next(t for t in run if t[2]["id"] == "swissai_2025-02_llama3.2_3b_gh200_4gpu")
    b, s, L, h, f, v, g, a = 256, 8192, 28, 3072, 8192, 128256, 8, 24
    megatron = 12 * b * s * L * h * h * ((1 + g / a + s / h) + 1.5 * f / h + v / (2 * L * h))
    assert megatron == pytest.approx(F.nemo_llama_flops(b, s, L, h, g, a, f, v), rel=1e-12)
    assert c.predicted == pytest.approx(megatron / res["time"]["step_s"] / 4 / 1e12, rel=1e-9)


def test_source_bounds(run):
    cases = [c for c, _, _ in run]
    assert not [c.row_id for c in cases if c.skipped]  # none refused
    check_source_bounds(cases, {
        (f"{SWISSAI} 10: Llama 3.2 3B", "megatron_tflops_per_gpu"): (2, 8.0),  # 3.8 at landing
        (f"{SWISSAI} 33: Llama 3.1 8B", "tokens_per_s_per_gpu"): (2, 8.0),  # 4.3 at landing
        (ATORCH_FSDP, "atorch_tflops_per_gpu"): (4, 5.0),  # 1.5 at landing
        (ATORCH_DS, "atorch_tflops_per_gpu"): (6, 13.0),  # 9.0 at landing
        (ATORCH_FSDP, "peak_allocated_gib"): (4, 11.0),  # 7.6 with the returned K / V cache, 271 (a); 37.6 before
        (ATORCH_DS, "peak_allocated_gib"): (6, 12.0),  # 7.7 at landing
    })
    timed = [c for c, _, r in p69.timed(run)]
    assert len(timed) == 15 and mape(timed) < 13.0  # 9.7 at landing
    assert len(p69.peaks(run)) == 10


def test_the_300m_step_is_predicted_about_three_times_too_fast(run):
    """The 300M model (6 layers, 2,048 wide, a 128,256 vocabulary: the LM head 40% of its FLOPs) at 140 TFLOP/s a GH200:
    the estimate's step is 0.27 s against the PR's 0.9 s (-69.8% at landing), while the 3B and 8B rows of the same
    cluster and stack are within +2..+7%: a cost of small models the estimate lacks (docs/known-gaps.md 267 (b)). A
    guard that fails when the estimate moves, either way."""
    c = next(c for c, _, r in run if r["id"] == "swissai_2025-02_llama3_300m_gh200_32gpu")
    assert -0.80 < c.err < -0.55
    larger = [c for c, _, r in run if r["id"].startswith("swissai_") and r["model"] != "swissai-llama3-300m"]
    assert all(-0.05 < c.err < 0.12 for c in larger)


def test_every_run_is_said_to_fit():
    assert all(f.fits for f in p69.fits())


def atorch_rows() -> list[dict[str, str]]:
    return [r for r in p69.rows() if r["id"].startswith("atorch_")]


def test_the_atorch_rows_name_the_readme_commit_and_read_its_table():
    """Every row of the README's table without LoRA, a time and a memory row each: FSDP on 8-64 GPUs (batch 4 a GPU,
    no accumulation), DS 3D at TP x PP x DP as the table gives them (micro-batch 8, 64 accumulation steps)."""
    rs = atorch_rows()
    check_columns_and_ids(rs, ph.ROWS, 20)
    for r in rs:
        assert r["source"].startswith("intelligent-machine-learning/dlrover atorch/examples/llama2/README.md"), r["id"]
        assert "3a442b728" in r["source_locator"] and "compute_llama2_training_flops" in r["assumed"], r["id"]
        assert r["metric"] == ("peak_allocated_gib" if r["id"].endswith("_mem") else "atorch_tflops_per_gpu")
    layouts = {(int(r["gpu_count"]), int(r["tp"]), int(r["pp"]), int(r["micro_batch"]), int(r["global_batch_seqs"]),
                r["framework"]) for r in rs}
    assert layouts == {(8, 1, 1, 4, 32, "fsdp"), (16, 1, 1, 4, 64, "fsdp"), (32, 1, 1, 4, 128, "fsdp"),
                       (64, 1, 1, 4, 256, "fsdp"), (8, 1, 2, 8, 2048, "deepspeed"), (8, 2, 1, 8, 2048, "deepspeed"),
                       (8, 2, 2, 8, 1024, "deepspeed"), (16, 2, 2, 8, 2048, "deepspeed"),
                       (32, 2, 2, 8, 4096, "deepspeed"), (64, 2, 2, 8, 8192, "deepspeed")}
    ds = [p69.job(r) for r in rs if r["framework"] == "deepspeed"]
    assert all((j["precision"], j["strategy"]["zero"], j["strategy"]["recompute"]) == ("fp16", 1, "full") for j in ds)
    assert p69.models()["llama-2-7b-tied"]["model"] == {"preset": "llama-2-7b", "name": "llama-2-7b-tied",
                                                        "tied_embeddings": True}


def test_atorch_hardware_flops_is_the_examples_formula():
    """example_utils.compute_llama2_training_flops at 3a442b728 for the 8-GPU FSDP row (global batch 32 x 4,096,
    Llama 2 7B, checkpointing on): 32 layers x (8 b s h^2 + 4 b s^2 h + 6 b s h f) x 4 + 2 b s h V x 3; without
    checkpointing the layers count 3 times."""
    b, s, h, v, f, n = 32, 4096, 4096, 32000, 11008, 32
    layer = 8 * b * s * h * h + 4 * b * s * s * h + 3 * 2 * b * s * h * f
    assert p69.atorch_hardware_flops(b, s, h, v, f, n, True) == n * layer * 4 + 2 * b * s * h * v * 3
    assert p69.atorch_hardware_flops(b, s, h, v, f, n, False) == (n * layer + 2 * b * s * h * v) * 3
    # the README's HFU column is this figure over the A100's 312 TFLOP/s: 204.67 -> 65.6%
    assert round(100 * 204.67 / 312, 1) == 65.6


def test_atorch_fsdp_time_holds_and_its_peaks_match_the_measured(run):
    """FSDP1 time within -5..+2% at 8-64 GPUs; the max_memory_allocated peaks with the K / V cache the model returns
    and the loop holds across the step (strategy.returns_kv_cache, live_at_rerun logits; docs/known-gaps.md 271 (a))
    +11.1 / +8.1 / +6.2 / +5.1% at 271's landing, -0.0 / -0.1 / -0.2 / -0.2% once the forward's end holds no 16-bit
    shard, no gradient and only the root unit and the prefetched layer (281 (a)); without the cache they sat 10.8-13.5
    GiB below: a guard both ways. What shards falls from 8 to 64 GPUs as measured (12 B a parameter: the fp32 shard and
    AdamW's moments), where it fell 2.7 GiB more with the 16-bit shard and gradients counted."""
    fsdp = {r["id"]: c for c, _, r in run if r["id"].startswith("atorch_") and r["framework"] == "fsdp"}
    assert all(-0.06 < c.err < 0.03 for k, c in fsdp.items() if not k.endswith("_mem"))
    mem = [c for _, c in sorted((int(r["gpu_count"]), c) for c, _, r in run
                                if r["id"].startswith("atorch_") and r["framework"] == "fsdp" and r["id"].endswith("_mem"))]
    assert len(mem) == 4 and all(-0.03 < c.err < 0.03 for c in mem)
    assert abs((mem[0].predicted - mem[-1].predicted) - (mem[0].measured - mem[-1].measured)) < 0.3


def test_atorch_ds3d_tensor_parallel_rows_are_predicted_too_fast(run):
    """DS 3D at TP 2 (ATorch's manual TP in DeepSpeed's pipeline engine, no sequence parallel) +9.8..+11.8% at
    landing, +7.6..+9.4% once each split column-parallel linear reduces its own input gradient (docs/known-gaps.md
    272 (c)); the TP 1 x PP 2 row +1.2% (267 (f)): a guard that fails when the estimate moves."""
    ds = {(int(r["tp"]), int(r["gpu_count"])): c for c, _, r in run
          if r["framework"] == "deepspeed" and not r["id"].endswith("_mem")}
    assert -0.03 < ds[(1, 8)].err < 0.05
    assert all(0.05 < c.err < 0.12 for (tp, _), c in ds.items() if tp == 2)
