"""Held-out pretraining runs (benchmarks/perf_heldout.py): no constant was fitted on them.

Bounds are today's per-source figures with a margin, so a regression past them means a mechanism broke (not that
a constant needs re-fitting on these rows). The known weak spots are bounded loosely on purpose: the A100
production runs (Pythia, GPT-NeoX-20B, StarCoderBase) and SmolLM3's monitored throughput come out 9-24% faster
than published.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import perf_heldout as ph

# source -> MAPE bound (%); reached at landing in the comment
BOUNDS = {
    "NVIDIA dgxc Nemotron-4 (H100)": 9.0,  # 6.1
    # 6.0 since Hopper's native attention runs at cuDNN's measured rate (3.7 before): the 24.09 release ran
    # slower kernels than the dgxc 25.04 development rows, so its rows come out too fast (8B +12.8%)
    "NVIDIA NeMo 24.09 docs (H100 FP8)": 8.5,
    # 12.2 with the delayed scaling NeMo 2.2.0 (= 25.02) ran (8.2 taken as current scaling; 6.2 before Blackwell's
    # attention was derived from cuDNN 9.13.1), every row too fast: the 25.02 stack is older than the cuDNN measured;
    # at one layout 25.02 -> 25.11 ran +17.8% (8B), +5.8% (405B) on B200. Not a constant to re-fit: a release gap.
    # 13.3 since Transformer Engine's casts write no FP8 transpose on Blackwell (TE >= 2.0, which 25.02 ran)
    "NVIDIA NeMo 25.02 docs (B200 FP8)": 14.0,
    # the same page's H100 table (one row read: GPT-3 175B, the layout of the 24.09 row, 5% faster), too slow: on
    # the same page the model's B200 / H100 is 2.12 against 1.85 measured (one_release_two_gpus)
    "NVIDIA NeMo 25.02 docs (H100 FP8)": 12.0,
    # 7.3 with GB200's MAMF-derived GEMM share and cuDNN-derived attention (7.5 at the FA2 figure, 9.4 with 0.62)
    "NVIDIA NeMo 25.04 docs (GB200 FP8)": 9.5,
    # 10.1 since Hopper's FA2 runs at its measured rate (7.1 at the 0.25 tuned on llm-foundry's Triton rows): the 8B
    # rows too fast (BF16 +20 / +21%, Float8 +10..+13%)
    "torchtitan async TP (H100 500 W)": 11.0,
    "EleutherAI Pythia (A100-40GB)": 13.0,  # 8.8 with FlashAttention v1 and its head-dim sizes, the PipelineEngine's
    # ZeRO-1 all-reduce, 1B's fp32 reduce, the parallel residual, DeepSpeed v0.3's fp16 step and no sequence
    # parallelism (21.5 before ZeRO-1 after backward and the unfused fp32 cross-entropy, 14.5 before the all-reduce,
    # 10.0 before the parallel residual, 10.3 before the fp16 step's checks and gradient accumulation, 9.5 with
    # sequence parallelism), predicted too fast
    # 9.0 with FlashAttention v1, its fp32 reduce after backward and the unfused fp32 loss (9.4 without), too fast
    "BigCode StarCoderBase (A100-80GB)": 13.0,
    # 23.6 in tokens/s per GPU against the Smol Training Playbook's monitored 13,500-14,000 with nanotron's eager
    # SwiGLU (activation_kernel eager; 27.5 before); as wall-clock GPU-hours 19.5 with nanotron's fp32 all-reduce and
    # unfused fp32 loss (24.0 before both, 21.8 before the loss), too fast; 28.7 since Hopper's FA2 runs at its
    # measured rate and length curve
    "Hugging Face SmolLM3 (H100)": 30.0,
    # 13.1 in GPT-NeoX's own FLOP/s formula without sequence parallelism (15.7 before the parallel residual, 16.4
    # with it before the fp16 step's checks and gradient accumulation, 15.0 with sequence parallelism; 26.7 as Eq.
    # 3), too fast
    "EleutherAI GPT-NeoX-20B (A100-40GB)": 21.0,
    # 5.4: Qwen3-30B-A3B EP 16 on HybridEP +5.8% (-21.3% before the forwarding across nodes), 405B -5.0%
    "Megatron-Bridge 26.06 docs (H100 FP8)": 8.0,
    # 18.1 with the round-robin routing of its forced-balance gate: DeepSeek-V3 +11% / +33% (256 / 1,024 GPUs), Kimi K2
    # +26%, Qwen3-30B-A3B +4%, gpt-oss 20B +6% / 120B +37% (too fast), Llama 3.1 70B CP 2 -10%; without gpt-oss 16.7,
    # 11.3 under uniform random routing (-25 / -11 / -1 / -10%), 29.2 before an explicit DeepEP dispatcher
    # (moe_dispatcher flex) counted on the torchtitan style
    "NeMo AutoModel (H100 BF16, FSDP2 + EP)": 22.0,
    # 5.3: 1B -4 / -5%, 7B and Llama 3 8B within 1.3%, 13B at micro-batch 1 +8.0% (BF16) / +22.4% (FP8), too fast
    # (8.5 when this bound was set; the 13B's FP8 gain: docs/known-gaps.md 25 (a))
    "AI2 OLMo-core (H100)": 12.0,
    # 2.9 with the FlashAttention-2 its launcher ran (NVTE_FUSED_ATTN 0: attention_kernel fa2) at FA2's measured H100
    # rate (0.337, FA3 paper Fig. 5) and length curve (FA2 paper Fig. 7(d), at span / cp): 4K -4.5%, 16K-1M -0..-3%;
    # 24.4 at the 0.25 tuned on llm-foundry's rows (which ran Triton), every row too slow (4K -10%, 512K -33%); 32.3
    # too fast (+6 to +50%) before, at the cuDNN rate; 4.7 since Transformer Engine's ring pays its per-step
    # corrections and copies (step_time._cp_te_ring: -3..-7%, too slow, kept: counted from the code)
    "NVIDIA NeMo 24.03 long sequence (H100 FP8 CP)": 6.0,
    # 3.5 with cuDNN's measured rate at the kernels' length (span / cp: 16K-64K, 1.14-1.21x the 8K rate on B200;
    # attention.native_length_scaling), 8K -4.2% to 1M -5.4%; 12.1 at the flat 8K rate (-4% to -18%); 4.0 with TE's
    # ring's per-step corrections (step_time._cp_te_ring)
    "NVIDIA NeMo 25.04 long sequence (B200 FP8 CP)": 6.0,
    "NVIDIA dgxc Nemotron-4 peak memory (H100)": 12.0,  # 8.3 below PyTorch's reserved peak
    "NVIDIA dgxc Nemotron-4 memory after the step (H100)": 4.0,  # 0.8: model states with bf16 gradient buffers
}


@pytest.fixture(scope="module")
def results():
    return ph.run_all()


def test_every_published_run_is_estimated_none_refused(results):
    refused = [(c.row_id, c.skipped) for c, _, _ in results if c.skipped]
    assert not refused
    assert len(results) >= 40


def test_per_source_mape_within_bounds(results):
    sources = {c.source for c, _, _ in results}
    assert sources == set(BOUNDS)
    for source, bound in BOUNDS.items():
        errs = [abs(c.err) for c, _, _ in results if c.source == source]
        assert 100 * np.mean(errs) <= bound, (source, 100 * np.mean(errs))


def test_every_row_names_its_source_date_and_confidence():
    models = yaml.safe_load(ph.MODELS.read_text(encoding="utf-8"))
    for row in ph.rows():
        assert row["source"] and row["source_locator"] and row["date"], row["id"]
        assert row["confidence"] in ("high", "medium", "low"), row["id"]
        assert float(row["value"]) > 0, row["id"]
        if row["model"] in models:
            assert models[row["model"]]["source"], row["model"]


def test_async_tp_speeds_up_the_torchtitan_rows(results):
    """The same job with async TP is faster than with vanilla TP, as measured (ratios 1.09-1.16)."""
    pred = {c.row_id: c.predicted for c, _, _ in results}
    for rid in pred:
        if rid.startswith("torchtitan") and "_vanillatp_" in rid:
            assert pred[rid.replace("_vanillatp_", "_asynctp_")] > pred[rid], rid


def test_runs_that_ran_are_predicted_to_fit(results):
    """Every run was made, so each fits: NeMo AutoModel's gpt-oss 120B without activation checkpointing since its
    DeepEP experts save Megatron's per-slot layout (95 -> 75 GiB), the other AutoModel MoE rows with the bf16 model
    AutoModel builds, the NeMo 24.09 rows with the launcher's optimizer settings, Pythia 70M-410M at micro-batch 32
    on 40 GB since GPT-NeoX's vocab-parallel loss is modelled."""
    unfit = [c.row_id for c, mem, _ in results if "NOT FIT" in mem]
    assert unfit == [NEAR_MISS], unfit


# Since the fit check reads what CUDA gives a process (79.20 GiB on an H100 80GB, not 80), NeMo 24.09's GPT3-20B FP8
# row comes out 11 MiB over: nothing in the reserve is above its sources, so its own terms decide it (its recompute
# is not stated; docs/known-gaps.md 42 (b)). Since its communicators are charged as NCCL allocates them (TP 2's ring
# 32 x 12 MiB, DP 32's across four hosts 8 x 12 MiB: 224 MiB more than the 2 x 128 before, docs/known-gaps.md
# 299 (a)) it is 234 MiB over. Held to that near miss: any other growth, or any other row, fails.
NEAR_MISS = "nemo_24.09_h100_gpt3_20b_fp8_64gpu"


def test_the_one_near_miss_is_within_a_few_mib(results):
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.memory import estimate_memory
    from trainsizer.scenario import resolve_job

    row = next(r for c, _, r in results if c.row_id == NEAR_MISS)
    models = yaml.safe_load(ph.MODELS.read_text(encoding="utf-8"))
    sc = resolve_job(ph.job_of(row, models), load_catalog())
    mem = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    assert 0 < (mem.per_gpu_bytes - mem.capacity_bytes) / 2**20 < 16 + 224  # MiB


def test_gb200_b200_pairs_are_the_rows_at_the_same_layout(results):
    """NeMo 25.04 (GB200) and 25.02 (B200) list four models at the same layout (GPT-3 175B and Llama 3 70B differ).
    Printed, not bounded tightly: the releases differ too (measured 1.06-1.27, the model 1.00-1.24, 25.02 with
    delayed scaling, 25.04 with current scaling)."""
    pairs = ph.system_pairs(results)
    assert sorted(m for m, _, _, _ in pairs) == ["llama-3.1-405b", "llama-3.1-8b", "nemotron-4-15b",
                                                  "nemotron-4-340b"]
    for model, _, measured, predicted in pairs:
        assert 1.0 < measured < 1.3 and 0.9 < predicted < 1.5, model


def test_throughput_error_has_one_sign_for_step_and_rate_rows():
    """+ = predicted too fast, whether a row publishes tokens/s (predicted above) or a step time (predicted below)."""
    fast_rate = ph.Case("r", "s", "tokens_per_s_per_gpu", 100.0, 110.0)
    fast_step = ph.Case("r", "s", "step_time_s", 1.1, 1.0)
    assert ph.throughput_err(fast_rate) == pytest.approx(0.10)
    assert ph.throughput_err(fast_step) == pytest.approx(0.10)


def test_one_release_on_two_gpus(results):
    """The NeMo 25.02 container on DGX H100 (dgxc v25.04's 25.02.01 rows and the 25.02 page's H100 row) and on DGX B200
    (the 25.02 page): the FP8 models both list (GPT-3 175B, Nemotron-4 15B, 340B) and all FP8 rows, H100 first. On
    H100 that release's rows come out within a few percent on average (-1.0% today); its B200 rows are the 25.02
    source (+12.2%): the gap follows the GPU the release ran on, not the release's framework settings
    (docs/known-gaps.md 5.3, NeMo 25.02)."""
    out = ph.one_release_two_gpus(results)
    assert [m for _, m, _ in out] == ["all FP8 rows", "gpt-3-175b", "nemotron-4-15b", "nemotron-4-340b"]
    for _, model, sides in out:
        assert [gpu for gpu, _, _ in sides] == ["H100", "B200"], model
    counts = {m: [n for _, _, n in sides] for _, m, sides in out}
    assert counts == {"all FP8 rows": [6, 6], "gpt-3-175b": [1, 1], "nemotron-4-15b": [3, 1],
                      "nemotron-4-340b": [2, 1]}
    h100_all = out[0][2][0][1]
    assert abs(h100_all) < 0.06  # today -1.0%


def test_nemo_24_03_rows_state_the_flash_attention_their_launcher_ran():
    """NeMo-Framework-Launcher 24.01-24.07 set NVTE_FUSED_ATTN 0, so Transformer Engine ran flash-attn 2 on H100."""
    rows = [r for r in ph.rows() if r["id"].startswith("nemo_24.03_")]
    assert len(rows) == 9
    assert all("attention_kernel=fa2" in r["strategy_extra"].split(";") for r in rows)


def test_fp8_bf16_pairs_are_the_rows_of_one_source_at_one_layout(results):
    """Rows of one source that differ only in the precision (FP8 recipe and fp8_param_allgather aside) are paired, so
    what FP8 gains is compared apart from each row's own error. OLMo-core's 1B / 7B / Llama 3 8B gains come out within
    2% of the measured; its 13B at micro-batch 1 measures 1.20 where the model gives 1.36 (docs/known-gaps.md 25 (a))."""
    pairs = {row: (mb, meas, pred) for row, mb, meas, pred in ph.precision_pairs(results)}
    assert set(pairs) == {f"dgxc_v25.04_nemotron4_15b_fp8_{n}gpu" for n in (16, 256, 2048)} | {
        f"dgxc_v25.04_nemotron4_340b_fp8_{n}gpu" for n in (256, 2048)} | {
        f"torchtitan_2025-06_{m}_fp8_{tp}tp_{n}gpu" for m, n in (("8b", 64), ("70b", 256))
        for tp in ("vanilla", "async")} | {f"olmocore_{m}_fp8_8gpu" for m in ("1b", "7b", "llama3_8b", "13b")}
    for row, (_, meas, pred) in pairs.items():
        assert 1.1 < meas < 1.6 and 1.1 < pred < 1.6, row  # FP8 is faster, a step time read as its inverse
    for m in ("1b", "7b", "llama3_8b"):
        _, meas, pred = pairs[f"olmocore_{m}_fp8_8gpu"]
        assert abs(pred / meas - 1.0) < 0.03, m
    _, meas, pred = pairs["olmocore_13b_fp8_8gpu"]
    assert pred / meas < 1.2  # today +13.2%


def test_precision_pairs_drop_only_fp8_settings():
    assert ph._without_fp8_extra("fsdp=full;fp8_param_allgather=true;grad_reduce_in_fp32=true") == \
        ph._without_fp8_extra("grad_reduce_in_fp32=true;fsdp=full")
    assert ph._without_fp8_extra("fsdp=full") != ph._without_fp8_extra("fsdp=hybrid")
    assert ph._rate(2.0, 1.0, "step_time_s") == pytest.approx(2.0)
    assert ph._rate(100.0, 130.0, "tokens_per_s_per_gpu") == pytest.approx(1.3)


def test_a_batch_reads_its_files_in_order(tmp_path):
    """Batch.rows: every file's rows, file after file (docs/known-gaps.md 249 (a))."""
    header = ph.ROWS.open(encoding="utf-8").readline()
    first, second = ph.rows()[:2], ph.rows()[2:5]
    paths = []
    for i, part in enumerate((second, first)):
        path = tmp_path / f"part{i}.csv"
        path.write_text(header + "".join(_csv_line(r) for r in part), encoding="utf-8")
        paths.append(path)
    got = [r["id"] for r in ph.Batch(tuple(paths)).rows()]
    assert got == [r["id"] for r in second + first]


def _csv_line(row: dict[str, str]) -> str:
    import csv
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(row.values())
    return out.getvalue()


def test_a_later_models_file_replaces_an_earlier_ones_entry(tmp_path):
    """Batch.models merges its files in order: an entry of the second file replaces the first file's of that key."""
    entries = yaml.safe_load(ph.MODELS.read_text(encoding="utf-8"))
    key = next(iter(entries))
    changed = {key: {**entries[key], "model": {**entries[key]["model"], "layers": 7}}}
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(changed), encoding="utf-8")
    assert ph.Batch((), (ph.MODELS, path)).models()[key]["model"]["layers"] == 7
    assert ph.Batch((), (path, ph.MODELS)).models()[key]["model"] == entries[key]["model"]
    assert set(ph.Batch((), (ph.MODELS, path)).models()) == set(entries)


def test_a_batch_scores_its_rows_through_its_predict():
    """Batch.run_all = estimate_rows on its rows with its own reading of the estimate; job and fits read its
    models."""
    rows = ph.rows()[:2]
    default = ph.Batch(())
    got = default.estimate(rows)
    assert [(c.row_id, c.predicted) for c, _, _ in got] == [(c.row_id, c.predicted) for c, _, _ in ph.estimate_rows(rows)]
    steps = ph.Batch((), predict=lambda row, result, model: float(result["time"]["step_s"])).estimate(rows)
    assert [c.predicted for c, _, _ in steps] == [float(res["time"]["step_s"]) for _, res, _ in got]
    assert default.job(rows[0]) == ph.job_of(rows[0], ph.model_data(ph.MODELS))


def test_the_summary_line_counts_scored_and_refused_rows():
    run = [(ph.Case("a", "s", "m", 100.0, 110.0), {}, {}), (ph.Case("b", "s", "m", 100.0, 80.0), {}, {}),
           (ph.Case("c", "s", "m", 100.0, skipped="REFUSED: x"), {}, {})]
    scored, refused = ph.scored_refused(run)
    assert [c.row_id for c in scored] == ["a", "b"] and [c.row_id for c in refused] == ["c"]
    assert ph.median_pct(scored) == pytest.approx(-5.0) and np.isnan(ph.median_pct([]))
    assert ph.time_summary("perf_heldoutNN", run) == "\nperf_heldoutNN time: n=2 MAPE 15.0% (median -5.0%); refused 1"
    assert ph.step_line(refused[0], {}, 4) == "  c    REFUSED: x"
