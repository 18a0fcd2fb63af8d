"""Held-out check on published runs added 2026-12-04 (fifth batch; nothing is fitted on them): training stacks whose
held-out evidence was thin, AMD's first. Each row is stated as the authors wrote it.

Data: benchmarks/data/heldout_2026f_*.csv, in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job, so a
row reads as a user's job file; every assumed setting is in its `assumed` column):
- heldout_2026f_amd.csv: AMD's Primus "MoE package" (AMD-AGI/Primus examples/moe_package/README.md at b3699abf7,
  2025-12-16): DeepSeek-V2-Lite on one node of 8 MI355X (BF16, 4,096 tokens, EP 8) at micro-batch 1 / 2 / 4 / 8 / 12,
  then with Transformer Engine's fused cross-entropy and with Primus-Turbo's DeepEP, each with tokens/s a GPU and the
  device memory in use (the chart's usage ratio of the 287.98 GiB HIP total); DeepSeek-V2 (236B) on 4 nodes of 8 MI355X
  (PP 4 x EP 8, micro-batch 1, global batch 256): the 1F1B baseline, + fused loss, + DeepEP. The stack is Primus's
  Megatron-LM backend with Transformer Engine for ROCm (the megatron-core style); the run scripts and configs beside the
  README give the layout. Left out (no job field states them): the README's later bars, which add Primus-Turbo's
  sync-free MoE (stage 1: router and permutation fusion, no device-to-host sync), NUMA binding / a larger kernarg pool
  ('LaunchOpt') and UCCL-EP; the V2 bars with VPP 3 / 5 come after 'LaunchOpt'.
  Beside them, AMD's performance-results page's Llama 3.1 8B FP8 on 8 nodes of MI325X (Megatron-LM, data parallel,
  micro-batch 2 x 8,192: 16,186 tokens/s a GPU), as AMD's Primus projection blog quotes it (docs/tech_blogs/projection/
  projection.md at 2eb9dc7d, 2026-03-26); the page itself is not readable here. Its other rows are not rows: Llama 3.1
  70B FP8 / BF16 on FSDP (batch 4 / 1) state no recompute (the estimate brackets them); Mixtral 8x22B on 64 MI355X
  (PP 4 x VPP 2 x EP 8, batch 2) states no global batch or recompute and does not fit without recompute
  (docs/known-gaps.md 59 (c)).
  Primus's GPT-OSS 20B MLPerf-style run on 8 MI355X (AMD-AGI/Primus PR 923, merged 2026-08-07 as 68256bd3: "929 ms/step
  at steady state"; examples/mlperf/gpt_oss_20b's config at that commit: EP 1, micro-batch 4, global batch 32, 8,192
  tokens, FP8 current scaling with Primus-Turbo's ragged FP8 grouped GEMM).

Printed: each row (published, predicted, error), per-source MAPE, the worst rows with the estimate's step breakdown,
the micro-batch series (per-GPU rate against micro-batch 1, measured and predicted), the fused-loss and DeepEP gains at
one layout, the device memory line a + b x micro-batch of the Lite baseline rows and the DeepEP row's memory against
the all-to-all row's (docs/known-gaps.md 113 (b)) and the per-sequence gap against whole per-token tensors of a MoE
layer (165 (a)), the V2 DeepEP row at VPP 3 over VPP 1 against the README's bar
(125 (c)), the Lite baseline rows again at 8 micro-batches a rank a step (the README states no global batch; 159 (a)),
the unfused permutation's bf16 compare-and-swap elements a step against each row's gap and the stage-1 bar (187 (a)),
the DeepSeek rows with MLA's backward at CK's padded tile, an AITER before its assembly MLA kernel (195),
refused rows (each a bug: these runs were made) and rows whose measured run the memory estimate says does not fit.

Sign: (predicted - published) / published; for tokens/s + = predicted too fast, for memory + = predicted too large.

Run: python benchmarks/perf_heldout30.py
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case
from trainsizer.models import load_model

DATA = Path(__file__).resolve().parent / "data"
FILES = (DATA / "heldout_2026f_amd.csv",)
BATCH = ph.Batch(FILES)
rows, run_all = BATCH.rows, BATCH.run_all
# the memory line's rows: micro-batch 8 and 12 (218 / 285 GiB of 288) are left out, near or at the card's capacity
MEMORY_LINE_MAX_MBS = 4
DEEPEP_MEMORY_ROW = "primus_2025-12_mi355x_dsv2lite_mbs12_lossfusion_deepep_8gpu_device_memory"
GIB = float(1 << 30)


def micro_batch_series(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, int, float, float]]:
    """(row id, micro-batch, measured, predicted per-GPU rate over the series' micro-batch 1 row) for time rows of one
    source and stack that differ only in the micro-batch (and the accumulation steps that come with it); series of one
    row are left out."""
    def key(r: dict[str, str]) -> tuple:
        return (r["source_key"], r["metric"], r["strategy_extra"], r["model"], r["gpu_count"], r["global_batch_seqs"])
    done = [(c, r) for c, res, r in run if res and c.metric not in ph.MEMORY_METRICS]
    base = {key(r): c for c, r in done if r["micro_batch"] == "1"}
    size = Counter(key(r) for _, r in done)
    return [(r["id"], int(r["micro_batch"]), c.measured / base[key(r)].measured, c.predicted / base[key(r)].predicted)
            for c, r in done if key(r) in base and size[key(r)] > 1]


def memory_series(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[int, float, float]]:
    """(micro-batch, measured, predicted device memory in GiB) of the DeepSeek-V2-Lite baseline rows (the alltoall
    dispatcher, unfused loss), in micro-batch order: the series the memory line below is read from."""
    out = [(int(r["micro_batch"]), c.measured, c.predicted) for c, res, r in run
           if res and c.metric == "device_memory_used_gib" and "_baseline_" in r["id"]]
    return sorted(out)


def memory_line(series: list[tuple[int, float, float]], at_most: int = MEMORY_LINE_MAX_MBS) -> tuple[float, ...]:
    """(measured a, b, predicted a, b): least squares device memory = a + b x micro-batch over the rows at micro-batch
    <= `at_most` (the larger ones fill the card: AMD's blog reads 99.79% at micro-batch 12, so their reserve is the
    card's, not the run's need; docs/known-gaps.md 113 (b))."""
    pts = [(m, meas, pred) for m, meas, pred in series if m <= at_most]
    x = np.array([m for m, _, _ in pts], float)
    out: tuple[float, ...] = ()
    for col in (1, 2):
        b, a = np.polyfit(x, np.array([p[col] for p in pts], float), 1)
        out += (float(a), float(b))
    return out


def print_memory(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    ma, mb, pa, pb = memory_line(memory_series(run))
    print(f"device memory per micro-batch (DeepSeek-V2-Lite baseline rows at micro-batch <= {MEMORY_LINE_MAX_MBS}, "
          "a + b x sequences, GiB):")
    print(f"  measured  a {ma:6.1f} + b {mb:5.2f}   predicted a {pa:6.1f} + b {pb:5.2f}   "
          f"gap a {ma - pa:+5.1f}, b {mb - pb:+5.2f}")
    by_id = {r["id"]: (c, res) for c, res, r in run}
    (dc, _), (ac, _) = by_id[DEEPEP_MEMORY_ROW], by_id[DEEPEP_MEMORY_ROW.replace("_deepep", "")]
    print(f"  DeepEP row over the all-to-all row at micro-batch 12: measured {dc.measured - ac.measured:+.1f} GiB, "
          f"predicted {dc.predicted - ac.predicted:+.1f}")
    row = next(r for _, _, r in run if r["id"] == DEEPEP_MEMORY_ROW)
    model = load_model(ph.model_data(ph.MODELS)[row["model"]]["model"])
    found = "; ".join(f"{k} {v:.2f}" for k, v in per_sequence_candidates(model, int(row["seq_len"])).items())
    print(f"  gap b {mb - pb:+.2f} (DeepEP row {(dc.measured - ac.measured) / int(row['micro_batch']):+.2f} a sequence) "
          f"against whole bf16 tensors a token and MoE layer, GiB a sequence: {found}")


def per_sequence_candidates(model: Any, seq_len: int) -> dict[str, float]:
    """GiB a sequence of whole 16-bit tensors each MoE layer makes per token, over the model's MoE layers: what the
    memory line's per-sequence gap is read against (docs/known-gaps.md 165 (a)). Shared experts: Megatron-Core's
    SharedExpertMLP under moe_shared_expert_overlap runs fc1 (2 x its width), the activation and fc2 (hidden) on its
    own stream (shared_experts.py linear_fc1_forward_and_act / linear_fc2_forward at 847781764f); the routed copy is
    one top-k copy of the tokens (permute's output, the all-to-all's, the sorted one: k x hidden each)."""
    per_layer = float(seq_len * model.moe_layer_count) * 2.0 / GIB
    fs, h = model.shared_expert_ffn, model.hidden
    return {"shared experts' fc1 + activation + fc2 outputs": per_layer * (3 * fs + h),
            "their saved pair (fc1 output, activation)": per_layer * 3 * fs,
            "one routed copy": per_layer * model.experts_per_token * h}


def print_gains(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    print("micro-batch series (per-GPU rate over micro-batch 1, measured vs predicted):")
    for row_id, mbs, meas, pred in micro_batch_series(run):
        print(f"  {row_id:58s} mbs {mbs:2d} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    print("Transformer Engine's fused cross-entropy over Megatron-Core's unfused one at one layout:")
    for row_id, meas, pred in p28.option_pairs(run, "loss_impl", "te", "vocab-parallel-unfused"):
        print(f"  {row_id:58s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")


# Primus's README 'sync-free stage 1' bar over the DeepEP bar (DeepSeek-V2-Lite, micro-batch 12): Primus-Turbo's fused
# router with the aux score and moe_permute_fusion, 35,150.6 -> 39,273.1 tokens/s a GPU (README Figure 6 at b3699abf7;
# a bar, not a row: Turbo's fused router is not Megatron-Core's, docs/known-gaps.md 76, 84)
STAGE1_MEASURED_GAIN = 39273.1 / 35150.6
STAGE1_ROW = "primus_2025-12_mi355x_dsv2lite_mbs12_lossfusion_deepep_8gpu"


def stage1_gain() -> tuple[float, float]:
    """(measured, predicted) rate of the stage-1 bar over the DeepEP row: the row estimated again with the router and
    permutation fused (strategy_extra moe_permute_fusion / moe_router_fusion true)."""
    row = next(r for r in rows() if r["id"] == STAGE1_ROW)
    fused = dict(row, strategy_extra=row["strategy_extra"].replace("moe_permute_fusion=false", "moe_permute_fusion=true")
                 .replace("moe_router_fusion=false", "moe_router_fusion=true"))
    (base, _, _), (on, _, _) = ph.estimate_rows([row, fused])
    return STAGE1_MEASURED_GAIN, on.predicted / base.predicted


# The unfused permutation's backward on CDNA 4 under the rows' PyTorch 2.9.0 (README endnotes [1] / [2]): Megatron-Core's
# permute is tokens.index_select(0, sorted_indices), whose autograd backward is zeros(...).index_add_(0, idx, grad);
# ATen's index_add_ adds each bf16 element through fastAtomicAdd -> fastSpecializedAtomicAdd -> preview_unsafeAtomicAdd,
# whose packed hardware add (__builtin_amdgcn_flat_atomic_fadd_v2bf16) is compiled for gfx942 only at that release, so
# on gfx950 it is a 32-bit compare-and-swap loop, the element's neighbour in the same word contending
# (aten/src/ATen/native/cuda/KernelUtils.cuh; gfx950 added by pytorch PR 167661 / 170330, 2025-11-12 / 2025-12-12,
# after the rows' image). The forward's scatter_add_ takes opportunistic_fastAtomicAdd (gfx942 and gfx950: the packed
# hardware add for adjacent lanes). No CAS rate on MI355X was found: the diagnostic below says what each row's gap
# and the stage-1 bar's unexplained gain are per CAS element (docs/known-gaps.md 187 (a)); nothing here is applied.
def cas_elements_per_step(row: dict[str, str], model: Any) -> float:
    """bf16 elements the unfused permute's backward index_add_ adds by compare-and-swap on one rank in one step: every
    micro-batch a rank runs, every MoE layer on its pipeline stage, the micro-batch's tokens x top-k x hidden."""
    gpus, tp, pp, cp = (int(row[k] or 1) for k in ("gpu_count", "tp", "pp", "cp"))
    mbs, gbs, seq = int(row["micro_batch"]), int(row["global_batch_seqs"]), int(row["seq_len"])
    micro_batches = gbs / (gpus // (tp * pp * cp) * mbs)
    return micro_batches * model.moe_layer_count / pp * mbs * seq / cp * model.experts_per_token * model.hidden


def cas_check(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> tuple[float, list[tuple[str, float, float,
                                                                                                        float]]]:
    """(ps an element the stage-1 bar's gain leaves unexplained, [(row id, CAS elements a step in G, ps an element the
    row's step gap is, the row's error with that unexplained time a step added)]) for the MI355X time rows that run the
    permutation unfused. The stage-1 bar over the DeepEP row (fused router and permutation): measured saving less the
    estimate's saving for the same switch, over the DeepEP row's CAS elements a step."""
    models = ph.model_data(ph.MODELS)
    picked = [(c, res, r, load_model(models[r["model"]]["model"])) for c, res, r in run
              if res and r["metric"] == "tokens_per_s_per_gpu" and "moe_permute_fusion=false" in r["strategy_extra"]]

    def steps(c: Case, res: dict[str, Any], r: dict[str, str]) -> tuple[float, float]:
        measured = int(r["global_batch_seqs"]) * int(r["seq_len"]) / (c.measured * int(r["gpu_count"]))
        return measured, float(res["time"]["step_s"])

    meas_gain, pred_gain = stage1_gain()
    c1, res1, r1, m1 = next(p for p in picked if p[2]["id"] == STAGE1_ROW)
    meas1, pred1 = steps(c1, res1, r1)
    unexplained_s = meas1 * (1.0 - 1.0 / meas_gain) - pred1 * (1.0 - 1.0 / pred_gain)
    per_element_s = unexplained_s / cas_elements_per_step(r1, m1)
    out = []
    for c, res, r, m in picked:
        n = cas_elements_per_step(r, m)
        meas, pred = steps(c, res, r)
        out.append((r["id"], n / 1e9, (meas - pred) / n * 1e12, meas / (pred + n * per_element_s) - 1.0))
    return per_element_s * 1e12, out


def print_cas_check(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    ps, out = cas_check(run)
    print(f"unfused permute's backward index_add_ (bf16 compare-and-swap on gfx950 under PyTorch 2.9; not modelled): the "
          f"stage-1 bar leaves {ps:.1f} ps an element unexplained")
    for row_id, g, gap_ps, err in out:
        print(f"  {row_id:58s} {g:7.1f} G elements a step, the row's gap {gap_ps:5.1f} ps an element; "
              f"at {ps:.1f} ps {err:+6.1%}")


# Primus's README V2 chart past the rows (images/DeepSeekV2_tks_speedup_mi355.png at b3699abf7): 'Pre+VPP3' over
# 'Pre+LaunchOpt', 2,298.6 -> 2,308.0 tokens/s a GPU, interleaving 3 chunks a rank on the DeepEP layout with the MoE
# layers' host syncs still in (LaunchOpt is NUMA binding and a kernarg pool, host-side, no job field; a bar, not a row:
# docs/known-gaps.md 125 (c))
VPP3_MEASURED_GAIN = 2308.0 / 2298.6
VPP3_ROW = "primus_2025-12_mi355x_dsv2_lossfusion_deepep_32gpu"


def vpp3_gain() -> tuple[float, float, float, float]:
    """(measured gain, predicted gain, predicted bubble at VPP 1, at VPP 3 in s) of the V2 DeepEP row estimated again
    with 3 virtual stages a rank (vpp 3) over the row as stated (vpp 1)."""
    row = next(r for r in rows() if r["id"] == VPP3_ROW)
    (base, res1, _), (on, res3, _) = ph.estimate_rows([row, dict(row, vpp="3")])
    bubble = [float(r["time"]["breakdown_s"]["pp_bubble"]) for r in (res1, res3)]
    return VPP3_MEASURED_GAIN, on.predicted / base.predicted, bubble[0], bubble[1]


# The README states the micro-batch of the Lite bars, not their global batch (the rows assume the config's 768). The
# config's own pair, micro-batch 12 / global batch 768 on 8 data-parallel ranks, is 8 micro-batches a rank a step; the
# other reading keeps that accumulation at every micro-batch (global batch 64 x micro-batch). docs/known-gaps.md 159 (a)
GA_READING_STEPS = 8


def global_batch_check(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[int, float, float, float]]:
    """(micro-batch, measured seconds a micro-batch, predicted error at the rows' global batch, predicted error at
    GA_READING_STEPS micro-batches a rank a step) for the Lite baseline time rows. The measured time a micro-batch is
    the micro-batch's tokens over the per-GPU rate (every rank holds one micro-batch's tokens at EP 8, DP 8), which no
    global batch changes; the estimate is run again at global batch GA_READING_STEPS x 8 ranks x micro-batch."""
    base = [(c, r) for c, _, r in run
            if "_dsv2lite_" in r["id"] and "_baseline_" in r["id"] and r["metric"] == "tokens_per_s_per_gpu"]
    dp = 8  # DeepSeek-V2-Lite rows: 8 GPUs, TP 1, PP 1 (EP 8 inside the data-parallel ranks)
    other = [dict(r, global_batch_seqs=str(GA_READING_STEPS * dp * int(r["micro_batch"]))) for _, r in base]
    out = []
    for (case, row), (alt, _, _) in zip(base, ph.estimate_rows(other), strict=True):
        mbs = int(row["micro_batch"])
        per_mb_s = mbs * int(row["seq_len"]) / float(row["value"])
        out.append((mbs, per_mb_s, case.err, alt.err))
    return out


def print_global_batch_check(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    print(f"DeepSeek-V2-Lite baseline rows at the assumed global batch (768) and at {GA_READING_STEPS} micro-batches a rank "
          "a step (the README states neither):")
    for mbs, per_mb_s, err, err_ga in global_batch_check(run):
        print(f"  mbs {mbs:2d}  measured {per_mb_s:.3f} s a micro-batch  predicted {err:+6.1%} (global batch 768)  "
              f"{err_ga:+6.1%} ({GA_READING_STEPS * 8 * mbs})")


def mla_bwd_check(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float]]:
    """(row id, error as estimated, error with strategy.aiter_mla_bwd_asm false) for the DeepSeek (MLA) time rows: the
    image's AITER before its assembly MLA backward (aiter PR 1308, Transformer Engine for ROCm PR 364, 2025-11), where
    CK's tile kernel runs d_qk 192 / d_v 128 padded to 256 (docs/known-gaps.md 195). The rows state neither: the
    image rocm/megatron-lm:v25.10 ships a PyTorch nightly of 2025-11-12, its Transformer Engine commit is not published."""
    mla = [(c, r) for c, res, r in run if res and "_dsv2" in r["id"] and r["metric"] == "tokens_per_s_per_gpu"]
    extra = "aiter_mla_bwd_asm=false"
    other = [dict(r, strategy_extra=f"{r['strategy_extra']};{extra}" if r["strategy_extra"] else extra) for _, r in mla]
    return [(r["id"], c.err, alt.err) for (c, r), (alt, _, _) in zip(mla, ph.estimate_rows(other), strict=True)]


def print_mla_bwd_check(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    print("MLA backward at CK's 256 tile (strategy.aiter_mla_bwd_asm false: an AITER before 7a41cca; the image's is not "
          "published), per DeepSeek time row:")
    for row_id, err, err_ck in mla_bwd_check(run):
        print(f"  {row_id:60s} {err:+7.1%} -> {err_ck:+7.1%}")


# The GPT-OSS row's experts run Primus-Turbo's Triton grouped GEMM (its config sets PRIMUS_TURBO_GROUPED_GEMM_BACKEND=
# triton, FP8 tensorwise, use_turbo_ragged_grouped_gemm: AMD-AGI/Primus examples/mlperf/gpt_oss_20b at 68256bd3, with
# Primus-Turbo e160182d), stated as strategy.moe_turbo_grouped_gemm: the experts at the kernel's published share of the
# dense rate (benchmarks/turbo_grouped_gemm.py; docs/known-gaps.md 264 (a)). Printed against the dense rate.
TURBO_ROW = "primus_2026-08_mi355x_gpt_oss_20b_fp8_mbs4_8gpu"


def turbo_grouped_check() -> tuple[float, float]:
    """(the GPT-OSS row's error as stated, its error with the experts at the dense rate: moe_turbo_grouped_gemm false)."""
    row = next(r for r in rows() if r["id"] == TURBO_ROW)
    dense = dict(row, strategy_extra=row["strategy_extra"].replace("moe_turbo_grouped_gemm=true",
                                                                   "moe_turbo_grouped_gemm=false"))
    (stated, _, _), (alt, _, _) = ph.estimate_rows([row, dense])
    return stated.err, alt.err


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, fifth batch (nothing fitted)", 58)
    print_gains(run)
    print_memory(run)
    print_global_batch_check(run)
    meas, pred = stage1_gain()
    print(f"sync-free stage 1 (fused router + permutation) over the DeepEP row: measured {meas:.3f} predicted {pred:.3f}")
    meas, pred, b1, b3 = vpp3_gain()
    print(f"V2 DeepEP row at VPP 3 over VPP 1 (README 'Pre+VPP3' over 'Pre+LaunchOpt'): measured {meas:.3f} predicted "
          f"{pred:.3f} (pipeline bubble {b1 * 1e3:.0f} -> {b3 * 1e3:.0f} ms a step)")
    print_cas_check(run)
    print_mla_bwd_check(run)
    err, err_dense = turbo_grouped_check()
    print(f"GPT-OSS 20B FP8 row, experts on Primus-Turbo's Triton grouped GEMM (its MI355X share, stated) {err:+.1%}, "
          f"at the dense FP8 rate {err_dense:+.1%}")
    p28.print_pairs_and_refusals(run)


if __name__ == "__main__":
    main()
