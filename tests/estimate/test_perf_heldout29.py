"""Held-out rows added 2026-12-04, fourth batch (benchmarks/perf_heldout29.py; nothing fitted on them): torchtitan's
Qwen3 32B on 8-64 H100 96 GB (PR 1690), its eager FSDP2 Llama 3 8B on 8 / 64 H100 96 GB (PR 1881), its Llama 3 8B BF16 /
MXFP8 on 4 GB200 (PR 3914) and PyTorch + Nebius's
DeepSeek-V3 on 256 B200. Bounds = the figures measured when the rows were added, with a margin: the Qwen3 FSDP-only rows
come out too slow, its FSDP x TP rows and the DeepSeek-V3 rows too fast (docs/known-gaps.md 57 (l), (m)), so those
bounds guard against a regression, not an accuracy claim; the 4-GB200 Llama 3 8B rows are held to the development
set's 10% (docs/known-gaps.md 57 (n), 63)."""

from __future__ import annotations

import perf_heldout as ph
import perf_heldout28 as p28
import perf_heldout29 as p29
from harness import job_fits
from perf_mlperf6 import job as mlperf6_job

from .heldout_rows import BENCH, check_rows_sourced, check_run, run_fixture

# source -> MAPE bound (%); reached at landing in the comment
BOUNDS = {
    "torchtitan Qwen3 32B PR (H100 96 GB)": 24.0,  # 17.7: FSDP only -5..-18%, FSDP x TP +13..+28%
    "torchtitan Qwen3 32B PR (H100 96 GB) peak memory": 9.0,  # 5.6: +1.9..+8.9%
    "torchtitan NVFP4 PR (4 GB200 Llama 3 8B)": 10.0,  # 5.6: BF16 +4.2, MXFP8 +7.1%
    "torchtitan NVFP4 PR (4 GB200 Llama 3 8B) peak memory": 10.0,  # 5.4: -4.0 / -6.9% (+7.1 / +3.8% and said not to
    # fit before torchtitan's chunked loss and compiled per-op SAC were modelled: known-gaps 63)
    # 48.9: all-to-all +42.3, DeepEP +55.6%, too fast (84.2 before DeepEP's TP-replicated dispatch, 57 (m)); 6.3 since
    # the rows time the FlexAttention they ran (-2.6 / -10.1%, known-gaps 327 (a))
    "PyTorch + Nebius blog (256 B200 DeepSeek-V3)": 55.0,
    "torchtitan SimpleFSDP PR, FSDP2 rows (H100 96 GB)": 20.0,  # 14.8: FSDP 8 -24.6, FSDP 64 +9.3, FSDP 4 x TP 2 -10.5%
    "torchtitan SimpleFSDP PR, FSDP2 rows (H100 96 GB) peak memory": 12.0,  # 7.2: +4.9 / +16.0 / -0.8%
}
# measured runs the memory estimate says do not fit: none (the 4-GB200 Llama 3 8B runs, at 94.7 / 97.6% of the 184.3 GiB
# card, fit since torchtitan's chunked loss holds one chunk's logits at a time: docs/known-gaps.md 63)
UNFIT: set[str] = set()


run = run_fixture(p29.run_all)


def test_every_row_names_its_source_url_date_and_assumptions():
    rs = p29.rows()
    check_rows_sourced(rs, list(ph.rows()[0]), ph.MODELS, 28, ("tokens_per_s_per_gpu", "peak_memory_gib"))
    for r in rs:
        assert not r["overlay"] or (BENCH / "data" / r["overlay"]).exists(), r["id"]


def test_every_row_is_estimated_none_refused_each_fits_but_the_stated_ones_and_each_source_within_its_bound(run):
    check_run(run, BOUNDS, UNFIT)  # every run was made


def test_compile_gain_at_one_layout(run):
    """Qwen3 32B, FSDP 8, local batch 2 on H100: compiled over eager measured 1.161, predicted 1.108 (reached -4.6%)."""
    pairs = p28.option_pairs(run, "torch_compile", "true", "false")
    assert len(pairs) == 1
    (_, meas, pred), = pairs
    assert abs(pred / meas - 1.0) < 0.10


def test_mxfp8_gain_over_bf16_at_one_layout(run):
    """Llama 3 8B on 4 GB200: MXFP8 over BF16 measured 1.281, predicted 1.317 (reached +2.8%)."""
    pairs = ph.precision_pairs([(c, "", r) for c, _, r in run])
    assert len(pairs) == 1
    (_, _, meas, pred), = pairs
    assert abs(pred / meas - 1.0) < 0.06


def test_deepep_gain_over_the_all_to_all_at_one_layout(run):
    """DeepSeek-V3 on 256 B200: DeepEP over torchtitan's all-to-all measured 1.320, predicted 1.217 (-7.8%) since the
    rows time FlexAttention (known-gaps 327 (a); 1.269 as cuDNN SDPA, 1.443 in an earlier reading, 2.097
    while DeepEP's dispatch was taken as split over the TP ranks, which torchtitan's DeepEP path at 1a36996b does not
    do: docs/known-gaps.md 62); the pair differs in the dispatcher and what comes with it (moe_tp_token_split)."""
    pairs = p28.option_pairs(run, "moe_dispatcher", "flex", "alltoall")
    assert len(pairs) == 1
    (_, meas, pred), = pairs
    assert abs(pred / meas - 1.0) < 0.15


def test_rows_time_the_flexattention_their_torchtitan_commit_runs(run):
    """torchtitan 1a36996b's DeepSeek-V3 671B flavor runs attn_type "flex" and bcc09297a's llama3 registry defaults
    attn_backend "flex" (SDPA refused for language models since 169545712): FlexAttention's Triton template with
    block_causal masks, not the style's cuDNN SDPA (docs/known-gaps.md 327 (a), (b)); the rows state attention_kernel
    flex. Timed so: Nebius all-to-all / DeepEP -2.6 / -10.1% (+15.8 / +11.4% as SDPA), the 4-GB200 Llama 3 8B BF16 /
    MXFP8 -3.1 / -0.5% (+4.7 / +10.3%); the same jobs with the style's SDPA come out 8-24% faster."""
    flex = [(c, r) for c, res, r in run if r["id"].startswith(("nebius_2026-03_b200_dsv3", "torchtitan_2026-08_gb200"))
            and c.metric not in ph.MEMORY_METRICS]
    assert len(flex) == 4
    for c, r in flex:
        assert "attention_kernel=flex" in r["strategy_extra"], r["id"]
        assert abs(c.predicted / c.measured - 1.0) < 0.15, (r["id"], c.predicted, c.measured)
        as_sdpa = dict(r, strategy_extra=r["strategy_extra"].replace("attention_kernel=flex;", ""))
        case, _ = ph.run_row(as_sdpa, p29.BATCH.models(), {})
        assert case.predicted > 1.05 * c.predicted, r["id"]


def test_mbridge_26_08_gpt_oss_rows_are_the_26_06_01_jobs_without_the_regression():
    """The 26.08 GPT-OSS 120B lines state the 26.06.01 lines' jobs (same layout, batch and recipe settings) but for
    their Megatron-Core release (0.19 against 0.18: fc2's scaled expert bias, docs/known-gaps.md 344 (a)), so the
    estimate differs by that kernel only and the measured rate moved 1.63 / 1.57x (the regression those lines were
    footnoted with). Time within 26% (reached +20.0 / +22.5%, the GPT-OSS gap of docs/known-gaps.md 41); both fit."""
    import perf_heldout27 as p27
    from perf_mbridge26 import job

    old = {r["system"]: r for r in p27.rows() if r["release"] == "26.06.01" and r["model"] == "GPT OSS 120B"}
    rs = p29.mbridge_rows()
    assert len(rs) == 2
    for r in rs:
        assert "4ab94dfad" in r["source_locator"] and r["release"] == "26.08", r["id"]
        new_job, old_job = job(r), job(old[r["system"]])
        assert (new_job["strategy"].pop("megatron_core_version"), old_job["strategy"].pop("megatron_core_version")) == (
            "0.19", "0.18"), r["id"]
        assert new_job == old_job, r["id"]
        assert float(r["tokens_per_sec_per_gpu"]) > 1.5 * float(old[r["system"]]["tokens_per_sec_per_gpu"])
    errs = [abs(p - m) / m for _, _, m, p in p29.mbridge_cases()]
    assert max(errs) < 0.26
    assert all(f.fits for f in p29.mbridge_fits())


def test_mlperf6_hpe_lambda_gpt_oss_rows_and_the_gb300_series():
    """HPE's GPT-OSS 20B on 16 / 32 GB300 (NVIDIA's v6.0 code, micro-batch 2, data parallel): within 10% (reached +6.1 /
    +3.7%). Measured, 16 -> 32 GPUs keeps the per-GPU rate (46,310 -> 46,496). Lambda's 72-GPU run at NVIDIA's layout
    (CP 2 x EP 4, micro-batch 1) measures NVIDIA's rate within 1% (25,225 vs 25,181) and is predicted as far off (+46.8%):
    the gap is the layout's, not a submitter's or the GPU count's (docs/known-gaps.md 57 (q)); bounded loosely. All fit."""
    cs = {rid: (m, p) for rid, _, m, p in p29.mlperf_cases()}
    assert len(cs) == 3
    hpe = {rid: mp for rid, mp in cs.items() if "_hpe_" in rid}
    assert len(hpe) == 2 and all(abs(p / m - 1.0) < 0.10 for m, p in hpe.values())
    m16, m32 = hpe["mlperf6.0_hpe_gb300_gpt_oss_20b_mxfp8_16gpu"][0], hpe["mlperf6.0_hpe_gb300_gpt_oss_20b_mxfp8_32gpu"][0]
    assert abs(m32 / m16 - 1.0) < 0.02
    series = {rid: (m, p) for rid, _, m, p in p29.gpt_oss_series()}
    lam, nv = series["mlperf6.0_lambda_gb300_gpt_oss_20b_mxfp8_72gpu"], series["mlperf6.0_gb300_gpt_oss_20b_mxfp8_72gpu"]
    assert abs(lam[0] / nv[0] - 1.0) < 0.01 and 0.0 < lam[1] / lam[0] - 1.0 < 0.60
    assert all(f.fits for f in job_fits((r["id"], mlperf6_job(r)) for r in p29.mlperf_rows()))
    assert sorted(int(rid.rsplit("_", 1)[1][:-3]) for rid in series) == [8, 16, 32, 72, 72, 512]
