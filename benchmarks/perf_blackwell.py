"""Held-out check on Blackwell and MoE: NVIDIA Megatron-Bridge (NeMo 25.11) published pre-training throughput on
DGX-GB300, DGX-GB200, DGX-B200 and DGX-H100 (Llama 3 8B / 70B / 405B, DeepSeek-V3, Qwen3 30B-A3B / 235B-A22B;
BF16, FP8 current scaling, MXFP8). One constant was fitted on three of these rows (FITTED below: the DGX-B200
MoE rows set gemm.moe_host_s_per_expert_kernel.alltoall, the alltoall dispatcher's host cost per expert kernel);
its flex value comes from NVIDIA's DeepSeek-V3 GB200 guide, whose layout one row shares (DERIVED below); the rest
are held out, and the summary prints the MoE MAPE with and without the fitted and derived rows. The H100
Qwen3-30B-A3B row runs the 25.11 release recipe's layout where the table's line is no recipe's (RECIPE below,
RECIPE_LAYOUT); its table layout is printed beside it.
The MXFP8 GEMM ratio (perf_constants.yaml fp8.recipes.mxfp8) was fitted on the throughput ratio of the four row pairs
that differ only in the recipe (FP8-CS vs FP8-MX: Llama 3 8B on GB300, GB200, B200; Llama 3.1 405B on B200), not on
their levels; the summary prints that ratio, measured and predicted.

Data: benchmarks/data/megatron_bridge_perf.csv (the page's tables as rows, with source, commit and notes).
Each row goes end to end through the public job path (catalog accelerator and network, NVL72 trays and
domains, framework megatron-core, FP8 recipe tensorwise for FP8-CS and mxfp8 for FP8-MX, FSDP = Megatron FSDP
as ZeRO-3); recompute, activation offloading and CUDA graphs are not stated on the page and taken from the performance recipes
at the page's commit (RECOMPUTE_MODULES, ACTIVATION_OFFLOAD, FULL_ITERATION_GRAPHS below; none elsewhere); MoE routing is force-balanced there
(capacity factor 1); the MoE token dispatcher is left to "auto", which picks what the 25.11 recipes run
(HybridEP on GB200 / GB300, the alltoall dispatcher on B200 and the H100 Qwen3 rows). GPT-OSS 120B (no preset here) and the H100 Qwen3-235B row (columns garbled on the page)
are not in the file. Networks: GB300 ConnectX-8 800 Gb/s per GPU (ib-xdr800); GB200, B200, H100 400 Gb/s per
GPU (ib-ndr400). DeepSeek-V3 rows run the recipe's pipeline layout where the recipe names one for the row's PP x VP
(DSV3_RECIPE_LAYOUTS: the MTP layer and the loss on the last rank, three decoder layers fewer there); the GB300
PP 2 x VP 4 and GB200 MXFP8 PP 8 x VP 4 rows have none (the recipe at the page's commit runs PP 4 x VP 4) and take the
estimator's even split, the MTP layer on its last rank.

Run: python benchmarks/perf_blackwell.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from harness import Fit, fit_of, layout_stage_layers, print_fits
from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import Calibration
from trainsizer.estimate.flops import layer_flops
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "megatron_bridge_perf.csv"
MODELS = {"LLAMA3_8B": "llama-3.1-8b", "LLAMA3_70B": "llama-3.1-70b", "LLAMA3.1_405B": "llama-3.1-405b",
          "DeepSeekV3": "deepseek-v3", "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b",
          "GPT OSS 120B": "gpt-oss-120b"}
SYSTEMS = {"GB300": ("gb300", "ib-xdr800"), "GB200": ("gb200", "ib-ndr400"), "B200": ("b200", "ib-ndr400"),
           "H100": ("h100-sxm-80gb", "ib-ndr400")}
# rows a constant was fitted on (perf_constants.yaml gemm.moe_host_s_per_expert_kernel.alltoall)
FITTED = ("mbridge_25.11_b200_deepseekv3_fp8-mx_256gpu", "mbridge_25.11_b200_qwen3_30b_a3b_fp8-mx_8gpu",
          "mbridge_25.11_b200_qwen3_235b_a22b_fp8-mx_64gpu")
# the layout of the guide gemm.moe_host_s_per_expert_kernel.flex is derived from (its step time, not this row's)
DERIVED = ("mbridge_25.11_gb200_deepseekv3_fp8-mx_256gpu",)
PRECISION = {"BF16": ("bf16", "auto"), "FP8-CS": ("fp8", "tensorwise"), "FP8-MX": ("fp8", "mxfp8")}
# recipes that count the embedding and the loss as pipeline layers (account_for_embedding_in_pipeline_split and
# account_for_loss_in_pipeline_split True, v0.2.0: recipes/llama/llama3.py llama31_405b_pretrain_config,
# recipes/qwen/qwen3_moe.py qwen3_235b_a22b_pretrain_config): 126 + 2 and 94 + 2 layers over PP x VPP
PIPELINE_SLOTS = ("LLAMA3.1_405B", "Qwen3_235B_a22B")
# DeepSeek-V3's pipeline layout in Megatron-Bridge's recipes by (pp, vpp), as Megatron-Core layout strings
# (harness.layout_stage_layers): recipes/deepseek/deepseek_v3.py layout_map, the same at 00b7660 (the 25.11 tables),
# v0.3.0 (26.02), r0.3.0 904597bd3 (26.02.01), v0.4.0 (26.04) and v0.5.0 ((4, 1) E+16 | 16 | 16 | 13 + mtp + loss;
# (8, 1), (4, 2) E+8 | 8 x 6 | 5 + mtp + loss; (16, 1), (8, 2), (4, 4) E+4 | 4 x 14 | 1 + mtp + loss); (2, 8) the
# GB300 configs' pp_layout (scripts/performance/configs/deepseek/deepseek_workload_base_configs.py GB300_V1 / V2,
# v0.3.0-v0.5.0). Other pairs have none in the recipe (the 25.11 table's GB300 PP 2 x VP 4 and GB200 MXFP8 PP 8 x VP 4,
# whose recipe at 00b7660 runs PP 4 x VP 4): left to the estimator's even split
DSV3_RECIPE_LAYOUTS = {(4, 1): "Et*16|t*16|t*16|t*13mL", (8, 1): "Et*8|(t*8|)*6t*5mL", (4, 2): "Et*8|(t*8|)*6t*5mL",
                       (16, 1): "Et*4|(t*4|)*14tmL", (8, 2): "Et*4|(t*4|)*14tmL", (4, 4): "Et*4|(t*4|)*14tmL",
                       (2, 8): "Et*4|(t*4|)*14tmL"}


def recipe_layout(model: str, pp: int, vpp: int) -> dict[str, int]:
    """The strategy fields of the recipe's pipeline layout for a Megatron-Bridge row (DeepSeek-V3 only)."""
    layout = DSV3_RECIPE_LAYOUTS.get((pp, max(vpp, 1))) if model == "DeepSeekV3" else None
    return layout_stage_layers(layout, pp) if layout else {}


# Megatron-FSDP rows: cpu_offloading_num_layers of the performance recipe the table was measured with
# (scripts/performance/configs/llama/llama3_workload_base_configs.py at the docs commit 00b7660:
# LLAMA3_70B_GB200_FP8_CS 40, LLAMA3_70B_GB300_FP8_CS 20; _set_recompute_overrides sets cpu_offloading_weights
# False, so activations only)
ACTIVATION_OFFLOAD = {("GB200", "LLAMA3_70B", "FP8-CS"): 40, ("GB300", "LLAMA3_70B", "FP8-CS"): 20}
# DeepSeek-V3 rows: recompute_granularity "selective" (deepseek_llm_pretrain.py set_deepseek_v3_common_configs) with
# the recipe's recompute_modules (deepseek_workload_base_configs.py at 00b7660: GB300 ["moe_act"], GB200 and B200
# ["mla_up_proj"]); the Qwen3 and Llama recipes recompute nothing (qwen3_llm_pretrain.py recompute_granularity None)
RECOMPUTE_MODULES = {("GB300", "DeepSeekV3"): ("moe_act",), ("GB200", "DeepSeekV3"): ("mla_up_proj",),
                     ("B200", "DeepSeekV3"): ("mla_up_proj",)}
# CUDA graphs: cuda_graph_impl "local" with cuda_graph_scope "full_iteration" (the estimator's full_iteration) in the
# recipes at 00b7660 (llama3_workload_base_configs.py LLAMA3_8B_PRETRAIN_CONFIG_{GB300,GB200,B200}_FP8_CS_BASE_CONFIG;
# FP8_MX the same object); the H100 8B and the 70B / 405B FP8 recipes set none; the MoE recipes' Transformer Engine
# graphs of parts of a layer (moe_router, moe_preprocess, attn) are written none, as in perf_mbridge26.py
FULL_ITERATION_GRAPHS = {("GB300", "LLAMA3_8B"), ("GB200", "LLAMA3_8B"), ("B200", "LLAMA3_8B")}
# Rows run with the 25.11 release recipe's layout where the table's line is no recipe's (RECIPE below; the table's
# layout is printed beside them). H100 Qwen3-30B-A3B FP8-CS: the table prints MBS 2, VP 24, GA 32 -- the 25.09
# token-drop row's line unchanged -- but no recipe version has VP 24 (25.09 v0.1.0rc4 qwen3_30b_a3b_llm_pretrain.yaml
# h100: vp 12, fp8_cs mbs 2; Megatron-Bridge cb62f86, 2025-11-21, dropped mbs 2 and set moe_a2a_overlap), and
# the 25.11 release (v0.2.0 and the page's commit 00b7660: qwen3_workload_base_configs.py
# QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_BASE_CONFIG) runs PP 2, VPP 12, EP 8, MBS 1 (WorkloadBaseConfig
# default) and moe_a2a_overlap (overlap_moe_expert_parallel_comm + delay_wgrad_compute, overrides.py)
RECIPE_LAYOUT = {"mbridge_25.11_h100_qwen3_30b_a3b_fp8-cs_16gpu": {"micro_batch": 1, "vpp": 12, "moe_a2a_overlap": True}}


def job(r: dict[str, str], table_layout: bool = False) -> dict:
    """The row as a job: the table's layout, or the release recipe's where RECIPE_LAYOUT names the row (unless
    `table_layout`)."""
    acc, net = SYSTEMS[r["system"]]
    precision, recipe = PRECISION[r["precision"]]
    tp, pp, cp, ep, vpp = (int(r[k]) for k in ("tp", "pp", "cp", "ep", "vpp"))
    slots = r["model"] in PIPELINE_SLOTS and pp > 1
    modules = RECOMPUTE_MODULES.get((r["system"], r["model"]))
    recipe_layout_fields = {} if table_layout else RECIPE_LAYOUT.get(r["id"], {})
    return {
        "model": MODELS[r["model"]], "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": int(r["seq_len"]),
        "global_batch": {"sequences": int(r["global_batch_seqs"])}, "precision": precision, "fp8_recipe": recipe,
        "hardware": {"accelerator": acc, "count": int(r["gpu_count"]), "network": net},
        "strategy": {"tp": tp, "pp": pp, "cp": cp, "ep": ep, "vpp": max(vpp, 1), "micro_batch": int(r["micro_batch"]),
                     "recompute": "selective" if modules else "none", "recompute_modules": modules,
                     "distributed_optimizer": r["fsdp"] != "1",
                     "fsdp": "full" if r["fsdp"] == "1" else "none", "framework": "megatron-core",
                     "pipeline_embedding_layer": slots, "pipeline_loss_layer": slots,
                     # the 25.11 performance scripts (scripts/performance/configs/*_llm_pretrain.py, v0.2.0):
                     # cfg.ddp.grad_reduce_in_fp32 = False for every model; the FP8-CS / FP8-MX precision configs
                     # (utils/helpers.py get_precision_config) set fp8_param_gather = True
                     "grad_reduce_in_fp32": False, "fp8_param_allgather": precision == "fp8",
                     # set_common_perf_overrides: cross_entropy_fusion_impl = "te" (fusion on by default)
                     "loss_impl": "te",
                     # defer_embedding_wgrad left off: no pre-training recipe or performance config sets it at v0.2.0 /
                     # 00b7660 (CommOverlapConfig's default False; only gpt3_175b and the SFT configs set it), unlike
                     # 25.09's Llama recipes (perf_heldout38.DEFERRAL_LIMITS; known-gaps 106 (c))
                     "cuda_graphs": "full_iteration" if (r["system"], r["model"]) in FULL_ITERATION_GRAPHS else "none",
                     "activation_offload": ACTIVATION_OFFLOAD.get((r["system"], r["model"], r["precision"]), False)}
        | recipe_layout(r["model"], pp, vpp) | recipe_layout_fields,
    }


def cases(table_layout: bool = False) -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU); `table_layout`: the RECIPE_LAYOUT rows alone, as the
    table prints them."""
    cat = load_catalog()
    out = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        if table_layout and r["id"] not in RECIPE_LAYOUT:
            continue
        sc = resolve_job(job(r, table_layout), cat)
        o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
        step = float(np.asarray(o["step_s"]).reshape(-1)[0])
        pred = sc.training.tokens_per_step / step / sc.system.gpus
        out.append((r["id"], r["system"], float(r["tokens_per_sec_per_gpu"]), pred))
    return out


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    cat = load_catalog()
    out = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        sc = resolve_job(job(r), cat)
        out.append(fit_of(r["id"], sc.model, sc.training, sc.system, sc.strategy))
    return out


def flop_check() -> list[tuple[str, int, float, float]]:
    """(model, seq, NVIDIA's model FLOPs per token = the table's TFLOP/s over its tokens/s, ours under NVIDIA's
    convention): 3 x forward of every weight GEMM (routed top-k and shared experts, router, DeepSeek's dense first
    layers, MLA's low-rank projections) and the LM head, with causal attention (half the s x s scores; ours
    counts the full matrix, PaLM appendix B). MTP is in neither; NVIDIA's count leaves the router GEMM out (the
    +0.2-0.3% on the MoE models)."""
    cat, out, seen = load_catalog(), [], set()
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        if (r["model"], r["seq_len"]) in seen:
            continue
        seen.add((r["model"], r["seq_len"]))
        model, s = resolve_job(job(r), cat).model, int(r["seq_len"])
        lf = layer_flops(model)
        ours = 3.0 * (lf.gemm() + lf.lm_head + 0.5 * lf.attn_core(s))
        nvidia = float(r["model_tflops_per_gpu"]) * 1e12 / float(r["tokens_per_sec_per_gpu"])
        out.append((r["model"], s, nvidia, ours))
    return out


# a rate no kernel reaches (TFLOP/s): with it the calibrated part's time is ~0, so the step less that run is its time
_UNBOUNDED_TFLOPS = 1e9


def step_split(rid: str) -> tuple[float, float, float]:
    """(step, attention core, linear-layer GEMMs) seconds the model gives row `rid`: the step less the step with
    that part at an unbounded rate (Calibration flash_tflops / gemm_tflops); what is left is the LM head, the
    element-wise passes, the FP8 casts and the exposed communication. Where communication or offloading hides behind
    a part (the 70B's Megatron-FSDP gathers and activation offload), removing that part exposes it, so the parts of
    such a row are not additive (its 'rest' then carries the offload difference between the two parts)."""
    r = next(r for r in csv.DictReader(DATA.open(encoding="utf-8")) if r["id"] == rid)
    return job_split(job(r))


def job_split(j: dict) -> tuple[float, float, float]:
    """(step, attention core, linear-layer GEMMs) seconds of job `j`, as step_split."""
    sc = resolve_job(j, load_catalog())

    def step(cal: Calibration | None = None) -> float:
        o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, calibration=cal)
        return float(np.asarray(o["step_s"]).reshape(-1)[0])

    full = step()
    return (full, full - step(Calibration(flash_tflops=_UNBOUNDED_TFLOPS)),
            full - step(Calibration(gemm_tflops=_UNBOUNDED_TFLOPS)))


def pair_split(name: str, measured: float, new: str = "gb300", old: str = "gb200") -> str:
    """One line: the model's `new` / `old` ratio by part for the pair `name` (attention core, linear GEMMs, the
    rest) and the ratio the part outside attention would need for the measured pair ratio, the attention kept at
    the model's (cuDNN's measured rates) and the `old` row at the model's time."""
    (s1, a1, g1), (s0, a0, g0) = step_split(f"mbridge_25.11_{new}_{name}"), step_split(f"mbridge_25.11_{old}_{name}")
    rest1, rest0 = s1 - a1 - g1, s0 - a0 - g0
    need = (s0 - a0) / (s0 / measured - a1)
    return (f"  {name:36s} attention {a1 / s1:.2f} of the step ({a0 / a1:.2f}x), linear GEMMs {g1 / s1:.2f} "
            f"({g0 / g1:.2f}x), rest {rest1 / s1:.2f} ({rest0 / rest1:.2f}x); measured {measured:.3f} needs the "
            f"non-attention part at {need:.2f}x")


LAYOUT = ("precision", "global_batch_seqs", "micro_batch", "seq_len", "fsdp", "tp", "pp", "cp", "vpp", "ep")


def generation_pairs(cs: list[tuple[str, str, float, float]], new: str = "gb300",
                     old: str = "gb200") -> list[tuple[str, float, float]]:
    """(row, measured, predicted `new` / `old` throughput ratio) for the rows the page lists at the same layout on
    both systems. GB300 / GB200: their rated BF16 / FP8 peaks are equal, so the ratio is what the model gives
    Blackwell Ultra beyond them (the SFU softmax throughput, attention.sfu_ex2_speedup, and the GEMM shares:
    gemm.efficiency_max's default for GB300, GB200's derived from MAMF). GB200 / B200: the same silicon at 1,200 vs
    1,000 W, rated 2.5 vs 2.25 PF BF16, measured MAMF +4.4% (catalog gb200 `unsure`)."""
    rows = {r["id"]: r for r in csv.DictReader(DATA.open(encoding="utf-8"))}
    by_id = {c[0]: c for c in cs}
    out = []
    for rid, c in by_id.items():
        twin = rid.replace(f"_{new}_", f"_{old}_")
        if f"_{new}_" in rid and twin in by_id and all(rows[rid][k] == rows[twin][k] for k in LAYOUT):
            out.append((rid.split(f"_{new}_")[1], c[2] / by_id[twin][2], c[3] / by_id[twin][3]))
    return out


def gpu_pairs(cs: list[tuple[str, str, float, float]], new: str = "B200",
              old: str = "H100") -> list[tuple[str, float, float]]:
    """(model and recipe, measured, predicted `new` / `old` tokens/s/GPU) for every model and FP8 recipe the page
    lists on both systems, each at its own table layout: at one release, whether the model's B200 runs as far
    ahead of its H100 as the measured one (the NeMo 25.02 rows, perf_heldout.py, ran the first Blackwell release)."""
    rows = {r["id"]: r for r in csv.DictReader(DATA.open(encoding="utf-8"))}
    by_key: dict[tuple[str, str, str], tuple[float, float]] = {}
    for rid, system, m, p in cs:
        by_key[(system, rows[rid]["model"], rows[rid]["precision"])] = (m, p)
    out = []
    for (system, model, precision), (m, p) in by_key.items():
        twin = by_key.get((old, model, precision))
        if system == new and twin:
            out.append((f"{model} {precision}", m / twin[0], p / twin[1]))
    return out


def main() -> None:
    cs = cases()
    print(f"{'row':56s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for rid, _, m, p in cs:
        tag = " FITTED" if rid in FITTED else " DERIVED" if rid in DERIVED else " RECIPE" if rid in RECIPE_LAYOUT else ""
        print(f"{rid:56s} {m:9.0f} {p:9.0f} {100 * (p - m) / m:+7.1f}{tag}")
    for rid, _, m, p in cases(table_layout=True):
        print(f"  RECIPE row {rid} with the table's layout instead: {p:.0f} ({100 * (p - m) / m:+.1f}%)")
    errs = np.array([abs(p - m) / m for _, _, m, p in cs])
    print(f"\nMegatron-Bridge 25.11 ({len(FITTED)} MoE rows fitted, {len(DERIVED)} derived, the rest held out): "
          f"n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    for system in dict.fromkeys(s for _, s, _, _ in cs):
        e = [abs(p - m) / m for _, s, m, p in cs if s == system]
        print(f"  {system:6s} n={len(e):2d} MAPE {100 * np.mean(e):5.1f}%")
    dense = [abs(p - m) / m for rid, _, m, p in cs if "llama" in rid]
    moe = [abs(p - m) / m for rid, _, m, p in cs if "llama" not in rid]
    print(f"  dense n={len(dense)} MAPE {100 * np.mean(dense):.1f}%; MoE n={len(moe)} MAPE {100 * np.mean(moe):.1f}%")
    held = [abs(p - m) / m for rid, _, m, p in cs if "llama" not in rid and rid not in FITTED]
    print(f"  MoE held out (without the {len(FITTED)} fitted rows) n={len(held)} MAPE {100 * np.mean(held):.1f}%")
    clean = [abs(p - m) / m for rid, _, m, p in cs if "llama" not in rid and rid not in FITTED + DERIVED]
    print(f"  MoE held out (without the fitted and derived rows) n={len(clean)} MAPE {100 * np.mean(clean):.1f}%")
    pairs = [(c, x) for c in cs for x in cs if "_fp8-cs_" in c[0] and x[0] == c[0].replace("_fp8-cs_", "_fp8-mx_")]
    if pairs:
        meas = np.mean([c[2] / x[2] for c, x in pairs])
        pred = np.mean([c[3] / x[3] for c, x in pairs])
        print(f"  FP8-CS / FP8-MX throughput, {len(pairs)} pairs at the same layout: measured {meas:.3f} predicted {pred:.3f}")
    print("GB300 / GB200 throughput at the same layout (equal rated peaks; measured vs predicted):")
    gb_pairs = generation_pairs(cs)
    for name, meas, pred in gb_pairs:
        print(f"  {name:36s} measured {meas:.3f} predicted {pred:.3f}")
    print("GB300 / GB200 pairs by part (the model's GB300 time split and the GB200 / GB300 time ratio of each part):")
    for name, meas, _ in gb_pairs:
        print(pair_split(name, meas))
    print("GB200 / B200 throughput at the same layout (rated peaks 2.5 / 2.25 PF BF16; measured vs predicted):")
    for name, meas, pred in generation_pairs(cs, "gb200", "b200"):
        print(f"  {name:36s} measured {meas:.3f} predicted {pred:.3f}")
    print("B200 / H100 tokens/s/GPU at one release, each at its table layout (measured vs predicted):")
    for name, meas, pred in gpu_pairs(cs):
        print(f"  {name:36s} measured {meas:.3f} predicted {pred:.3f}")
    print("model FLOPs per token, NVIDIA's table vs this estimator under NVIDIA's convention (causal attention):")
    for name, s, nvidia, ours in flop_check():
        print(f"  {name:16s} s={s:5d} {nvidia / 1e9:8.2f} vs {ours / 1e9:8.2f} GFLOP ({100 * (ours / nvidia - 1):+.1f}%)")
    print("worst rows:")
    for rid, _, m, p in sorted(cs, key=lambda c: -abs(c[3] - c[2]) / c[2])[:5]:
        print(f"  {rid:56s} {100 * (p - m) / m:+7.1f}%")
    print_fits(fits(), "Megatron-Bridge 25.11")


if __name__ == "__main__":
    main()
