"""Held-out check on published runs added 2026-12-05 (twelfth batch; nothing is fitted on them), two sources:

(1) The Megatron-Bridge 25.09 NeMo Container pre-training tables, the one release of docs/performance-summary-archive.md
that no benchmark held (perf_blackwell's development rows are 25.11's; perf_mbridge26, perf_heldout27 / 29 hold
26.02-26.08). Data: benchmarks/data/heldout_2026m_mbridge2509.csv, one row per tokens/s figure: Llama 3 8B / 70B, Llama 3.1 405B,
DeepSeek-V3 (with its MTP layer), Qwen3 30B-A3B and 235B-A22B on DGX-GB200 (8-256 GPUs), DGX-B200 (8-256) and DGX-H100
(8-1,024), sequence 8,192 (Llama) or 4,096 (MoE). The table (first committed at fa0315ae2, 2025-10-10; its figures
unchanged in the archive at 067f987d) prints no precision column; its footnote names the figure in parentheses the finer quantisation
granularity (MXFP8's 32x32 blocks on Blackwell), so a line gives an FP8 per-tensor (current scaling) row and, where it
has one, an MXFP8 row; the 25.11 table labels its same-layout lines FP8-CS (FP8-MX). Each row states the table's
layout and batch (all 27 are consistent: GBS = DP x MBS x GA) and, for the rest, the release's performance scripts:
scripts/performance/configs/*/*_llm_pretrain.yaml perf_matrix and run_script.py at v0.1.0rc4 (whose matrix equals
47ff48829 of 2025-10-13, three days after the table), or at f5a691dd1 (2025-10-08) for the two lines whose layout only
that earlier state sets (GB200 Qwen3 235B-A22B at TP 2 x EP 64, H100 Qwen3 30B-A3B at VP 24). From them: Megatron-FSDP
and cpu_offloading_num_layers, per-layer CUDA graphs (`cuda_graphs: true` = model.enable_cuda_graph, Megatron-Core's
graphs of whole layers: the estimator's `layer`), DeepSeek-V3's recompute_modules, dispatcher and pipeline layout, and
token drop. run_script.py applies apply_moe_token_drop (capacity factor 1.0, padded to capacity, alltoall dispatcher)
to every Qwen3 run and to DeepSeek-V3 on GB200 / B200: those rows state strategy.moe_pad_to_capacity (the padded split sizes
are host constants; docs/known-gaps.md 87 (a)) at the default capacity factor 1.0; DeepSeek-V3 on H100 runs dropless
with DeepEP (flex), a2a overlap and the layout Et|(tt|)*30mL. Each job is perf_mbridge26.job's (the columns read as
its 26.x rows), with the 25.09 image's cuDNN (the base release: perf_mbridge26.CUDNN_BY_RELEASE's None). Refused, with
the reason in the row: GB200 DeepSeek-V3 MXFP8 (PP 8 x VP 2: no config state of the release sets it, so the run's
settings at that layout are not stated).

(2) Megatron-LM's own MoE recipes (NVIDIA/Megatron-LM examples/moe_recipes, branch dev at 9c5258f109, 2026-08-11): the
README's recipe index gives a median TFLOP/s/GPU per recipe (added by PR 5289, 2026-06-15, from W&B runs), each
recipe a self-contained YAML of Megatron-LM arguments: DeepSeek-V3 on B200 / GB300 (256 GPUs), Qwen3 235B-A22B on
H100 / B200 / B300 / GB200 / GB300 (128-256), Qwen3 30B-A3B on H100 / GB200 (16-32), MXFP8 or BF16, DeepEP / HybridEP
(flex), EP overlap, partial or full-iteration CUDA graphs, paged stash, TE's fused grouped MLP. Data:
benchmarks/data/heldout_2026m_mcore_moe_recipes.csv, each column read from the recipe's ARGS / ENV_VARS (recipe_job
says which field each sets), Megatron-LM's own defaults where it sets none. The rate is converted to tokens/s with
NVIDIA's model FLOPs a token for the model at 4,096 (the Megatron-Bridge 26.08 table's TFLOP/s over its tokens/s:
the same Megatron formula; it agrees with the 25.09 table's within 1%). PR 5728 (open, 2026-07-09) re-measured
nine of the recipes (eight scored here): printed beside, not scored. Refused, with the reason in the row: DeepSeek-V3 on GB200
(fine-grained activation offload of expert_fc1 and optimizer-state offload), DeepSeek-V4 Flash / Pro (no model). Qwen3
30B-A3B FP8 on H100 runs Transformer Engine's Float8BlockScaling (fp8_recipe: blockwise in its ARGS): scored with
fp8_recipe blockwise since 2026-12-05 (docs/known-gaps.md 111; refused before). The index's two DeepSeek-V3 H100
recipes print no figure and are not rows.

(3) Megatron-LM's DeepSeek-V3 GB200 optimisation guide (docs/discussions/deepseek-v3-gb200-optimization on dev at
eb0783b6d3, 2025-11-03; removed on 2025-11-06 as a draft being updated): one job (DeepSeek-V3 without MTP on 256 GB200,
TP 1 x PP 8 x VP 4, EP 32 inside a rack, MBS 1, GBS 2048, MXFP8) at 13 software states, 494.46 -> 970.01 TFLOP/s a GPU.
Data: benchmarks/data/heldout_2026m_mcore_dsv3_gb200.csv (the recipe csv's columns plus moe_router_fusion,
cudnn_release, ladder). Scored: the result, from the reproduce guide's arguments (HybridEP, recompute moe_act + mlp,
partial TE graphs written none, cuDNN 9.14 taken at the 9.13 base rate). The 8 steps whose change is no job field are
refused with that reason; the 4 earlier states a job does state (the baseline: NCCL alltoall, no router fusion,
recompute of the up projection; router fusion; DeepEP; the recompute change) are printed as a ladder, not scored: their
kernels and host code were replaced by the guide's later steps. Rates converted with the no-MTP FLOPs a token of
Megatron-Bridge 25.11's four "w/o MTP" lines (perf_blackwell's development csv).

Printed: for each source, each row (measured, predicted, error), MAPE by system / model / precision, the refused rows;
for (1) the worst rows,
what 25.11 (perf_blackwell's development rows) measured over 25.09 at one system, model, precision and layout against
what the estimate gives the two releases' stated options, the MXFP8 / FP8-CS ratio per line, the token-drop rows' error
as stated and as if dropless (bounds on what token drop removed); for (2) each re-measured recipe's error against both
figures; for (3) the ladder (each stated step's error and its rate over the previous one, measured and predicted);
and rows predicted not to fit.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout38.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import perf_heldout as ph
import perf_mbridge26 as mb
from harness import (
    Fit,
    job_fits,
    kept_rows,
    layout_stage_layers,
    model_data,
    pretrain_job,
    print_cases,
    print_fits,
    refused_rows,
    row_cases,
)
from perf_blackwell import DATA as DEV_2511
from perf_blackwell import cases as dev_cases
from perf_mbridge26 import print_groups, print_worst

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026m_mbridge2509.csv"
RECIPES = Path(__file__).resolve().parent / "data" / "heldout_2026m_mcore_moe_recipes.csv"
GUIDE = Path(__file__).resolve().parent / "data" / "heldout_2026m_mcore_dsv3_gb200.csv"
RECIPE_PRECISION = {"BF16": ("bf16", "auto"), "FP8-MX": ("fp8", "mxfp8"), "FP8-BLOCK": ("fp8", "blockwise")}
# the layout of the 25.11 table's lines, to pair a 25.09 row with the development row of the same job
PAIR_KEY = ("system", "model", "precision", "gpu_count", "global_batch_seqs", "micro_batch", "seq_len", "tp", "pp",
            "cp", "ep")


def rows() -> list[dict[str, str]]:
    """Every row of the csv, the refused ones included."""
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def scored_rows() -> list[dict[str, str]]:
    return kept_rows(rows())


def refused() -> list[tuple[str, str]]:
    """(row id, why it is not estimated) of the refused rows."""
    return refused_rows(rows())


# The LM head's deferred weight gradients (Megatron-Core defer_embedding_wgrad_compute, known-gaps 106 (c)): at
# v0.1.0rc4 the Llama pre-training recipes run_script.py builds set CommOverlapConfig(defer_embedding_wgrad_compute=True,
# wgrad_deferral_limit=22) (recipes/llama/llama3_70b.py pretrain_config) and 50 (llama31_405b.py); run_script.py keeps
# the recipe's comm_overlap (it swaps only tp_comm_overlap_cfg) and utils/helpers.py set_megatron_fsdp_overrides turns
# it off under Megatron-FSDP. The DeepSeek-V3 / Qwen3 recipes set none; from v0.2.0 (25.11) no pre-training recipe or
# performance config sets it (only gpt3_175b and the SFT configs).
DEFERRAL_LIMITS = {"LLAMA3_70B": 22, "LLAMA3.1_405B": 50}


def deferred_head_wgrad(r: dict[str, str]) -> dict:
    """The strategy fields of the 25.09 recipe's deferred LM-head weight gradients: pipelined, non-FSDP Llama rows."""
    limit = DEFERRAL_LIMITS.get(r["model"])
    if limit is None or int(r["pp"]) < 2 or r["fsdp"] == "1":
        return {}
    return {"defer_embedding_wgrad": True, "wgrad_deferral_limit": limit}


def job(r: dict[str, str]) -> dict:
    """perf_mbridge26's job of the row, with what the 25.09 scripts set beyond its columns: the image's cuDNN (the base
    release), token drop (moe_pad_to_capacity: the padded alltoall dispatch waits for no token counts, its
    per-expert launches stay in the host floor), a pipeline layout the recipe map does not give (H100 DeepSeek-V3's
    run_script.py layout) and the Llama recipes' deferred LM-head weight gradients (DEFERRAL_LIMITS)."""
    out = mb.job(r)
    strategy = out["strategy"]
    strategy["cudnn_release"] = None
    strategy |= deferred_head_wgrad(r)
    if r["moe_token_drop"] == "1":
        strategy["moe_pad_to_capacity"] = True
    if r["pp_layout"]:
        strategy |= layout_stage_layers(r["pp_layout"], int(r["pp"]))
    return out


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of every scored row."""
    return row_cases(scored_rows(), job)


def fits() -> list[Fit]:
    """Each scored row's predicted peak memory against the card's usable memory (every run was made)."""
    return job_fits((r["id"], job(r)) for r in scored_rows())


def release_pairs(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted 25.11 / 25.09 throughput) where the 25.11 table (perf_blackwell's development rows)
    lists the same system, model, precision, GPUs, batch and layout: what the release gained, against what the estimate
    gives the options each release's rows state (CUDA graphs, token drop, Megatron-FSDP, offload)."""
    def key(r: dict[str, str]) -> tuple:
        return tuple(r[k] for k in PAIR_KEY)

    def layout(r: dict[str, str]) -> tuple:
        return tuple(r[k] for k in PAIR_KEY if k != "precision")

    dev_rows = list(csv.DictReader(DEV_2511.open(encoding="utf-8")))
    dev = {key(r): r["id"] for r in dev_rows}
    # a 25.09 line with no same-precision twin pairs with the one 25.11 line of its layout (B200 Qwen3 30B-A3B:
    # 25.09's FP8 token-drop line, 25.11's dropless MXFP8 one)
    layouts: dict[tuple, list[str]] = {}
    for r in dev_rows:
        layouts.setdefault(layout(r), []).append(r["id"])
    dev_pred = {rid: (m, p) for rid, _, m, p in dev_cases()}
    by = {r["id"]: r for r in scored_rows()}
    out = []
    for rid, _, m, p in cs:
        only = layouts.get(layout(by[rid]), [])
        twin = dev.get(key(by[rid])) or (only[0] if len(only) == 1 else None)
        if twin:
            out.append((f"{rid} / {twin.split('_')[-2]}", dev_pred[twin][0] / m, dev_pred[twin][1] / p))
    return out


def precision_pairs(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(FP8-MX row, measured, predicted MXFP8 / FP8-CS throughput) for the lines that give both figures (some at
    another layout: GB200 Llama 3 70B and 3.1 405B run MXFP8 without Megatron-FSDP)."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    return [(rid, by[rid][0] / by[cs_id][0], by[rid][1] / by[cs_id][1]) for rid in by
            if "_fp8-mx_" in rid and (cs_id := rid.replace("_fp8-mx_", "_fp8-cs_")) in by]


def drop_bounds(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(token-drop row, signed error as stated, signed error with moe_pad_to_capacity left out): the rows estimated as the
    dropless dispatch they did not run, charged Megatron-Core's per-expert host launches after the sync
    (perf_constants.yaml gemm.moe_host_s_per_expert_kernel, tuned on the 25.11 B200 dropless rows). A diagnostic, not
    an estimate: where the measured rate lies between the two, token drop removed part of that charge, not all of it
    (docs/known-gaps.md 108 (a))."""
    drop = [r for r in scored_rows() if r["moe_token_drop"] == "1"]

    def dropless(r: dict[str, str]) -> dict:
        out = job(r)
        out["strategy"].pop("moe_pad_to_capacity")
        return out

    stated = {rid: p / m - 1 for rid, _, m, p in cs}
    return [(rid, stated[rid], p / m - 1) for rid, _, m, p in row_cases(drop, dropless)]


def recipe_rows() -> list[dict[str, str]]:
    """Every row of source (2), the Megatron-LM MoE recipe index, the refused ones included."""
    return list(csv.DictReader(RECIPES.open(encoding="utf-8")))


def recipe_scored_rows() -> list[dict[str, str]]:
    return kept_rows(recipe_rows())


def recipe_refused() -> list[tuple[str, str]]:
    return refused_rows(recipe_rows())


def recipe_job(r: dict[str, str]) -> dict:
    """A Megatron-LM MoE recipe (examples/moe_recipes/*.yaml ARGS) as a job: its layout, batch, precision, recompute
    modules, pipeline layout and slots, dispatcher (flex: DeepEP / HybridEP), EP overlap, full-iteration graph, TE's
    fused grouped MLP; Megatron-LM's own defaults where the recipe sets nothing (fp32 gradient reduction, distributed
    optimizer, TE cross-entropy). Transformer Engine graphs of parts of a layer are written none (no partial graph
    here), as perf_mbridge26 writes them."""
    acc, net = mb.SYSTEMS_26[r["system"]]
    precision, recipe = RECIPE_PRECISION[r["precision"]]
    pp, modules = int(r["pp"]), tuple(r["recompute_modules"].split())
    slots = r["pipeline_slots"] == "1" and pp > 1
    strategy = {
        "tp": int(r["tp"]), "pp": pp, "cp": int(r["cp"]), "ep": int(r["ep"]), "etp": int(r["etp"]),
        "vpp": int(r["vpp"]), "micro_batch": int(r["micro_batch"]), "framework": "megatron-core",
        "recompute": "selective" if modules else "none", "recompute_modules": modules or None,
        "distributed_optimizer": True, "grad_reduce_in_fp32": True, "grad_reduce_overlap": r["grad_reduce_overlap"] == "1",
        "fp8_param_allgather": r["fp8_param_gather"] == "1" if precision == "fp8" else None, "loss_impl": "te",
        "pipeline_embedding_layer": slots, "pipeline_loss_layer": slots, "cuda_graphs": r["cuda_graphs"],
        "moe_dispatcher": r["moe_dispatcher"], "moe_a2a_overlap": r["moe_a2a_overlap"] == "1",
        "cudnn_release": mb.CUDNN_26 if r["system"] in mb.BLACKWELL else None,
    }
    if "cudnn_release" in r:  # a row that states its image's cuDNN (empty = the base release's rate)
        strategy["cudnn_release"] = r["cudnn_release"] or None
    if r.get("moe_router_fusion") == "0":
        strategy["moe_router_fusion"] = False
    if r["moe_fused_grouped_mlp"] == "1":
        strategy["moe_fused_grouped_mlp"] = True
    if r["pp_layout"]:
        strategy |= layout_stage_layers(r["pp_layout"], pp)
    model = _heldout_models()[r["model"]]["model"] if r["model"] in _heldout_models() else r["model"]
    return pretrain_job(r, model, precision, recipe, acc, net, strategy)


_MODELS: dict = {}


def _heldout_models() -> dict:
    """benchmarks/data/heldout_models.yaml's entries (deepseek-v3-nomtp: the preset without its MTP layer), read once."""
    if not _MODELS:
        _MODELS.update(model_data(ph.MODELS))
    return _MODELS


def recipe_cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of every scored recipe row (measured = the index's TFLOP/s
    over NVIDIA's model FLOPs a token, the csv's tokens_per_sec_per_gpu)."""
    return row_cases(recipe_scored_rows(), recipe_job)


def recipe_fits() -> list[Fit]:
    return job_fits((r["id"], recipe_job(r)) for r in recipe_scored_rows())


def remeasured(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(row, error against the index's figure, error against PR 5728's re-measurement of the same recipe) where the
    open PR gives one: how far two measurements of one recipe sit apart beside the estimate's error."""
    by = {r["id"]: r for r in recipe_scored_rows()}
    out = []
    for rid, _, m, p in cs:
        again = by[rid]["remeasured_tflops_per_gpu"]
        if again:
            m2 = float(again) * 1000.0 / float(by[rid]["gflops_per_token"])
            out.append((rid, p / m - 1, p / m2 - 1))
    return out


def guide_rows() -> list[dict[str, str]]:
    """Every step of source (3), Megatron-LM's DeepSeek-V3 GB200 optimisation guide (one job, 13 software states)."""
    return list(csv.DictReader(GUIDE.open(encoding="utf-8")))


def guide_scored_rows() -> list[dict[str, str]]:
    """The guide's result, its last step (the earlier states are its history: the `ladder` rows, printed, not scored)."""
    return [r for r in guide_rows() if not r["refused"] and not r["ladder"]]


def guide_cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of the guide's scored step."""
    return row_cases(guide_scored_rows(), recipe_job)


def guide_steps() -> list[tuple[str, float, float, float]]:
    """(step, signed error, measured, predicted rate over the previous stated step's) along the guide's ladder, every
    step whose change is a job field (the baseline, router fusion, DeepEP, the recompute modules, the result): what
    each change bought against what the estimate gives it. The result's predecessor is a job the estimate states
    identically (the eight steps between change nothing a job states)."""
    cs = row_cases(kept_rows(guide_rows()), recipe_job)
    out = [(cs[0][0], cs[0][3] / cs[0][2] - 1, 1.0, 1.0)]
    return out + [(b[0], b[3] / b[2] - 1, b[2] / a[2], b[3] / a[3]) for a, b in zip(cs, cs[1:], strict=False)]


def main() -> None:
    cs = cases()
    print("Megatron-Bridge 25.09 pre-training tables (held out):")
    errs = print_cases(cs)
    print(f"\nperf_heldout38: time n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    print_groups(cs, {r["id"]: r for r in scored_rows()}, ("system", "model", "precision"))
    for kind, mine in (("dense", [c for c in cs if "_llama3" in c[0]]), ("MoE", [c for c in cs if "_llama3" not in c[0]])):
        print(f"  kind      {kind:16s} n={len(mine):2d} MAPE {100 * np.mean([abs(p / m - 1) for _, _, m, p in mine]):5.1f}%")
    for rid, why in refused():
        print(f"  refused {rid}: {why}")
    print_worst(cs, 6)
    print("\n25.11 (development rows) over 25.09 at one system, model, precision and layout (measured vs predicted):")
    for rid, meas, pred in release_pairs(cs):
        print(f"  {rid:50s} measured {meas:.3f} predicted {pred:.3f}")
    print("MXFP8 / FP8-CS per line (measured vs predicted):")
    for rid, meas, pred in precision_pairs(cs):
        print(f"  {rid:50s} measured {meas:.3f} predicted {pred:.3f}")
    print("token-drop rows: error as stated (padded: no wait, launches in the host floor) and as if dropless "
          "(per-expert host launches charged):")
    for rid, err, dropless in drop_bounds(cs):
        print(f"  {rid:50s} {100 * err:+6.1f}% {100 * dropless:+6.1f}%")
    print_fits(fits(), "perf_heldout38")
    worst = max(cs, key=lambda c: abs(c[3] - c[2]) / c[2])
    print(f"\nperf_heldout38 (25.09 tables): time n={len(cs)} MAPE {100 * np.mean(errs):.1f}%, worst {worst[0]} "
          f"{100 * (worst[3] - worst[2]) / worst[2]:+.1f}%")
    rc = recipe_cases()
    print("\n(2) Megatron-LM's MoE recipe index (held out; measured = its TFLOP/s over NVIDIA's FLOPs a token):")
    rerrs = print_cases(rc)
    print(f"\nperf_heldout38 (Megatron-LM MoE recipes): time n={len(rc)} MAPE {100 * rerrs.mean():.1f}%")
    print_groups(rc, {r["id"]: r for r in recipe_scored_rows()}, ("system", "model", "precision"))
    for rid, why in recipe_refused():
        print(f"  refused {rid}: {why}")
    print("the same recipe measured twice (PR 5728): error against the index's figure and against the re-measurement:")
    for rid, first, again in remeasured(rc):
        print(f"  {rid:56s} {100 * first:+6.1f}% {100 * again:+6.1f}%")
    print_fits(recipe_fits(), "perf_heldout38 recipes")
    gc = guide_cases()
    print("\n(3) Megatron-LM's DeepSeek-V3 GB200 guide, one job along its optimisation steps (held out):")
    gerrs = print_cases(gc)
    print(f"\nperf_heldout38 (DeepSeek-V3 GB200 guide): time n={len(gc)} MAPE {100 * gerrs.mean():.1f}%")
    for r in guide_rows():
        if r["refused"]:
            print(f"  refused {r['id']}: {r['refused']}")
    print("the ladder: each step a job states, its error and its rate over the previous such step (measured vs predicted):")
    for rid, err, meas, pred in guide_steps():
        print(f"  {rid:50s} {100 * err:+6.1f}%  measured {meas:.3f} predicted {pred:.3f}")
    print_fits(job_fits((r["id"], recipe_job(r)) for r in guide_scored_rows()), "perf_heldout38 guide")
    every = np.concatenate([errs, rerrs, gerrs])
    print(f"\nperf_heldout38 (all rows): time n={len(every)} MAPE {100 * every.mean():.1f}%")


if __name__ == "__main__":
    main()
