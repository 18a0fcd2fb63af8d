"""Held-out check on the 2026 Megatron-Bridge releases: NVIDIA's published pre-training throughput of the 26.04 and
26.06 NeMo containers (Llama 3 70B, Llama 3.1 405B, DeepSeek-V3, Qwen3 30B-A3B / 235B-A22B on DGX-GB300, -GB200,
-B300, -B200, -H100; FP8 current scaling, MXFP8, NVFP4) as absolute tokens/s/GPU. Nothing is fitted on these rows.

Data: benchmarks/data/megatron_bridge_26_perf.csv -- the tables of docs/performance-summary-archive.md at
NVIDIA-NeMo/Megatron-Bridge commit 067f987d, one row per line, each stated from the workload base config the
release's performance scripts load for it (scripts/performance/configs/*/*_workload_base_configs.py at v0.4.0 for
26.04, v0.5.0 for 26.06; the V2 variant, else V1, as utils.get_workload_base_config picks; the 26.06 DeepSeek-V3
GBS 15360 line is its _GBS15360 config). Every row's layout and batch equal its config's. From the config:
Megatron-FSDP and cpu_offloading_num_layers (activations only: _set_recompute_overrides sets cpu_offloading_weights
False), recompute_modules (DeepSeek-V3 runs recompute_granularity "selective"; Llama and Qwen3 recompute nothing),
CUDA graphs (cuda_graph_impl full_iteration = the estimator's full_iteration; Transformer Engine graphs of parts of
a layer, scopes attn / moe_router / moe_preprocess, are written none: the estimator has no partial graph; where the
config sets none, the model recipe's cuda_graph_impl "none", recipes/llama/llama3.py, deepseek/deepseek_v3.py), the MoE
dispatcher (flex where moe_flex_dispatcher_backend is set, else alltoall: utils/overrides.py
set_workload_base_configs), moe_a2a_overlap and fp8_dot_product_attention; the routed experts' TP degree 1 (ETP_RECIPE). The Blackwell rows state cuDNN 9.17 for the fused attention (CUDNN_26:
the images these releases build on are later than pytorch:25.11-py3, which ships 9.17.0). From the release's common settings
(as perf_blackwell.py, the 25.11 rows): bf16 gradient reduce, TE cross-entropy, fp8_param_gather on for FP8-CS /
MXFP8 and off for NVFP4 (training/mixed_precision.py bf16_with_nvfp4_mixed), TP communication overlap off for NVFP4
(configs/llama/llama3*_llm_pretrain.py: tp_comm_overlap False if nvfp4; the estimator's default under NVFP4 on TE
styles, step_time._recipe_style), the embedding and loss as pipeline
layers for Llama 3.1 405B and Qwen3-235B-A22B. Where the config sets cutedsl_fused_grouped_mlp the row states TE's
fused grouped MLP (strategy.moe_fused_grouped_mlp, CUTEDSL_CONFIGS). What the rows cannot state is in the `assumed`
column (DeepSeek-V3's pp_layout, the CuTe DSL kernels' rate, partial CUDA graphs, the DGX-B300 network). GPT-OSS 120B:
the 26.06 table's three lines (added 2026-12-03; the 26.04 table's are perf_heldout27's 26.04.01 lines at the same
layouts); Kimi-K2 and Nemotron 3 have no preset here and are not in the file.

Run: python benchmarks/perf_mbridge26.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from harness import Fit, job_fits, job_tokens_per_gpu, pretrain_job, print_cases, print_fits, row_cases
from perf_blackwell import DATA as OLD
from perf_blackwell import MODELS, PIPELINE_SLOTS, SYSTEMS, job_split, recipe_layout
from perf_blackwell import cases as pb_cases

DATA = Path(__file__).resolve().parent / "data" / "megatron_bridge_26_perf.csv"
# DGX-B300: eight ConnectX-8 SuperNICs, 800 Gb/s per GPU (NVIDIA DGX B300 datasheet, 2025); assumed, see `assumed`
SYSTEMS_26 = SYSTEMS | {"B300": ("b300", "ib-xdr800")}
PRECISION = {"BF16": ("bf16", "auto"), "FP8-CS": ("fp8", "tensorwise"), "FP8-MX": ("fp8", "mxfp8"),
             "NVFP4": ("fp8", "nvfp4")}
# cuDNN of the releases' images: Megatron-Bridge v0.4.0 (26.04) builds on nvcr.io/nvidia/pytorch:26.02-py3, v0.5.0
# (26.06) on 26.04-py3 (docker/Dockerfile.ci BASE_IMAGE); pytorch:25.11-py3 already ships 9.17.0 (cudnn_sdpa_blackwell.csv)
# and a later image no older one: the Blackwell rows run the 9.17 attention rate (an assumption, a lower bound; the
# 26.02 / 26.04 images' own release is not read). Hopper has no two-release measurement: H100 rows keep the base rate.
CUDNN_26 = "9.17"
# Releases whose image ships another cuDNN: Megatron-Bridge v0.2.0 (25.11, perf_heldout27's GPT-OSS lines) builds on
# nvcr.io/nvidia/pytorch:25.09-py3 (docker/Dockerfile.ci), cuDNN 9.13.1: the base release (None), as perf_blackwell's rows.
CUDNN_BY_RELEASE = {"25.11": None}
# Expert tensor parallelism of the MoE rows (strategy.etp): every MoE family's WorkloadBaseConfig sets
# expert_tensor_parallel_size=1 and no preset of the rows overrides it (scripts/performance/configs/deepseek/
# deepseek_workload_base_configs.py, qwen/qwen3_workload_base_configs.py, gpt_oss/gpt_oss_workload_base_configs.py at
# v0.3.0, r0.3.0 904597bd3, v0.4.0, r0.4.0 c5d4ab462, v0.5.0, v0.5.1), and utils/overrides.py set_workload_base_configs
# copies it onto cfg.model.expert_tensor_parallel_size. Only the TP 2 rows (H100 Qwen3-235B-A22B) differ from
# Megatron-Core's default etp = tp (known-gaps 45 (c)).
ETP_RECIPE = 1
BLACKWELL = ("GB300", "GB200", "B300", "B200")
# The workload base configs that set cutedsl_fused_grouped_mlp, read at Megatron-Bridge v0.5.0 (fcbb6031, the 26.06
# rows) and v0.5.1 (the 26.06.01 rows): every constant of scripts/performance/configs/{deepseek,gpt_oss,qwen}/
# *_workload_base_configs.py whose cutedsl_fused_grouped_mlp is True (V1 / V2 and the replace()s built on them).
# utils/overrides.py set_workload_base_configs then sets use_transformer_engine_op_fuser True and
# moe_mlp_glu_interleave_size 32 and perf_plugins.py NVTE_CUTEDSL_FUSED_GROUPED_MLP=1; at the v0.5.x Megatron-Core pin
# (Megatron-LM 458c8d0e, experts.py TEGroupedMLP.__init__) the op fuser asserts _is_fused_impl_supported, so these
# rows ran TE's fused grouped MLP (strategy.moe_fused_grouped_mlp: no eager fc2 bias or clamp; only gpt-oss, with
# expert biases and a clamped activation, moves). The 26.06.01 table footnotes its GPT-OSS lines as cudnn-frontend
# issue 256, the regression of that very kernel's dGLU backward: docs/known-gaps.md 41 (6).
CUTEDSL_CONFIGS = {
    "v0.5.0": {"DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V1", "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V1",
               "DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2", "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V2",
               "DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_GBS15360", "GPT_OSS_120B_PRETRAIN_CONFIG_GB300_FP8_MX_V2",
               "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_FP8_MX_V2", "QWEN3_235B_A22B_PRETRAIN_CONFIG_GB300_FP8_MX_V2",
               "QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200_FP8_MX_V2", "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1",
               "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB200_FP8_MX_V1", "QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_FP8_MX_V1"},
    "v0.5.1": {"DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2", "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V2",
               "GPT_OSS_120B_PRETRAIN_CONFIG_GB300_FP8_MX_V2", "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_FP8_MX_V2",
               "QWEN3_235B_A22B_PRETRAIN_CONFIG_GB300_FP8_MX_V2", "QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200_FP8_MX_V2",
               "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1", "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB200_FP8_MX_V1"},
    # v0.6.0 (the 26.08 rows of perf_heldout29): configs are functions in src/megatron/bridge/perf_recipes/*/<system>/;
    # the GPT-OSS 120B MXFP8 ones set NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 and use_transformer_engine_op_fuser
    # (gpt_oss/common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs); only the rows held are listed
    "v0.6.0": {"gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config", "gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config"},
}


# The config functions that set fp8_output_proj (the LM head in MXFP8: strategy.fp8_lm_head) when the recipe is MXFP8,
# read at v0.5.0 / v0.5.1 (scripts/performance/configs/{deepseek,gpt_oss}/*_llm_pretrain.py: deepseek_v3_pretrain_config_
# gb300 / gb200 (v0.5.1 also b300), gpt_oss_120b_pretrain_config_gb300 / gb200; none at v0.4.x), as the workload base
# config name prefixes that load them.
FP8_OUTPUT_PROJ = {
    "v0.5.0": ("DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_", "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_",
               "GPT_OSS_120B_PRETRAIN_CONFIG_GB300_", "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_"),
    "v0.5.1": ("DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_", "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_",
               "DEEPSEEK_V3_PRETRAIN_CONFIG_B300_", "GPT_OSS_120B_PRETRAIN_CONFIG_GB300_",
               "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_"),
    # v0.6.0: gpt_oss/common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs sets fp8_output_proj (the rows held)
    "v0.6.0": ("gpt_oss_120b_pretrain_64gpu_gb300_", "gpt_oss_120b_pretrain_64gpu_gb200_"),
}


def fp8_output_proj(r: dict[str, str]) -> bool:
    """Whether the row's config function sets fp8_output_proj (FP8_OUTPUT_PROJ), which applies under MXFP8 only."""
    name, _, tag = r.get("recipe_config", "").partition(" (")
    return r["precision"] == "FP8-MX" and name.startswith(FP8_OUTPUT_PROJ.get(tag.rstrip(")"), ()))


# The Megatron-Core release line of each Megatron-Bridge pin whose rows hold a fact of framework.MCORE_RELEASE_FACTS
# that differs by release (megatron/core/package_info.py at the 3rdparty/Megatron-LM submodule: v0.5.0 d0b3b775 and
# v0.5.1 458c8d0e MINOR 18, v0.6.0 cd4afffa MINOR 19): strategy.megatron_core_version; other pins unstated
MCORE_BY_TAG = {"v0.5.0": "0.18", "v0.5.1": "0.18", "v0.6.0": "0.19"}


def mcore_version(r: dict[str, str]) -> str | None:
    """The row's Megatron-Core release line by its recipe's Megatron-Bridge tag (MCORE_BY_TAG), or None."""
    _, _, tag = r.get("recipe_config", "").partition(" (")
    return MCORE_BY_TAG.get(tag.rstrip(")"))


def fused_grouped_mlp(r: dict[str, str]) -> bool:
    """Whether the row's config sets cutedsl_fused_grouped_mlp (CUTEDSL_CONFIGS): its recipe_config is 'NAME (tag)'."""
    name, _, tag = r.get("recipe_config", "").partition(" (")
    return name in CUTEDSL_CONFIGS.get(tag.rstrip(")"), set())


def job(r: dict[str, str]) -> dict:
    """The row as a job, with what its release's recipe sets."""
    acc, net = SYSTEMS_26[r["system"]]
    precision, recipe = PRECISION[r["precision"]]
    pp = int(r["pp"])
    slots = r["model"] in PIPELINE_SLOTS and pp > 1
    modules = tuple(r["recompute_modules"].split())
    offload = int(r["activation_offload"])
    strategy = {
        "tp": int(r["tp"]), "pp": pp, "cp": int(r["cp"]), "ep": int(r["ep"]), "vpp": max(int(r["vpp"]), 1),
        "micro_batch": int(r["micro_batch"]), "recompute": "selective" if modules else "none",
        "recompute_modules": modules or None, "distributed_optimizer": r["fsdp"] != "1",
        "fsdp": "full" if r["fsdp"] == "1" else "none", "framework": "megatron-core",
        "pipeline_embedding_layer": slots, "pipeline_loss_layer": slots,
        "grad_reduce_in_fp32": False, "fp8_param_allgather": r["precision"] in ("FP8-CS", "FP8-MX"),
        "loss_impl": "te", "activation_offload": offload or False, "cuda_graphs": r["cuda_graphs"],
        "fp8_attention": r["fp8_attention"] == "1" or None,
        "cudnn_release": CUDNN_BY_RELEASE.get(r.get("release", ""), CUDNN_26) if r["system"] in BLACKWELL else None,
    }
    strategy |= recipe_layout(r["model"], pp, int(r["vpp"]))
    if fused_grouped_mlp(r):
        strategy["moe_fused_grouped_mlp"] = True
    if mcore_version(r):
        strategy["megatron_core_version"] = mcore_version(r)
    if fp8_output_proj(r):
        strategy["fp8_lm_head"] = True
    if r["moe_dispatcher"]:
        strategy |= {"moe_dispatcher": r["moe_dispatcher"], "moe_a2a_overlap": r["moe_a2a_overlap"] == "1",
                     "etp": ETP_RECIPE}
    return pretrain_job(r, MODELS[r["model"]], precision, recipe, acc, net, strategy)


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU)."""
    return row_cases(rows(), job)


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    return job_fits((r["id"], job(r)) for r in rows())


LAYOUT = ("system", "model", "precision", "gpu_count", "global_batch_seqs", "micro_batch", "seq_len", "fsdp", "tp", "pp",
          "cp", "vpp", "ep")


def release_pairs(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted 26.x / 25.11 throughput) for the rows the 25.11 table (perf_blackwell.py) lists at
    the same system, model, recipe, GPUs, batch and layout: what the newer release gained without a layout change,
    and how much of it the recipe options the rows state (CUDA graphs, a2a overlap, FP8 attention) explain."""
    def key(r: dict[str, str]) -> tuple:  # VP n/a is written 0 or 1
        return tuple(str(max(int(r[k]), 1)) if k == "vpp" else r[k] for k in LAYOUT)

    old = {key(r): r for r in csv.DictReader(OLD.open(encoding="utf-8"))}
    old_pred = {rid: p for rid, _, _, p in pb_cases()} if old else {}
    by = {r["id"]: r for r in rows()}
    out = []
    for rid, _, m, p in cs:
        twin = old.get(key(by[rid]))
        if twin:
            out.append((rid, m / float(twin["tokens_per_sec_per_gpu"]), p / old_pred[twin["id"]]))
    return out


LAYOUT_DEGREES = ("tp", "pp", "cp", "vpp", "micro_batch", "activation_offload")


def part_pairs(cs: list[tuple[str, str, float, float]], new: str = "GB300",
               old: str = "GB200") -> list[tuple[str, float, float, float, float]]:
    """(row, measured, predicted `new` / `old` throughput, the predicted ratio with the `new` row run at the `old`
    row's layout, the `new` step's attention share) for the dense rows listed on both parts at one release and
    precision, each at its own recipe's layout (GB300 runs the 405B at PP 8 where GB200 runs PP 16, the 70B at TP 1
    where GB200 runs TP 2, or offloads 20 layers' activations where GB200 offloads 40): whether the layouts or the
    attention (Blackwell Ultra's doubled SFU) carry the gap (docs/known-gaps.md 53 (h))."""
    by, pred = {r["id"]: r for r in rows()}, {rid: p for rid, _, _, p in cs}
    out = []
    for rid, system, m, p in cs:
        twin = rid.replace(f"_{new.lower()}_", f"_{old.lower()}_")
        if system != new or twin not in by or not by[rid]["model"].startswith("LLAMA"):
            continue
        moved = by[rid] | {k: by[twin][k] for k in LAYOUT_DEGREES}
        step, attn, _ = job_split(job(by[rid]))
        at_twin = job_split(job(moved))[0]
        out.append((rid, m / float(by[twin]["tokens_per_sec_per_gpu"]), p / pred[twin], p / pred[twin] * step / at_twin,
                    attn / step))
    return out


def group_mape(cs: list[tuple[str, str, float, float]], key) -> dict[str, tuple[int, float]]:
    """{group: (n, MAPE %)} over the rows, grouped by key(row id, system)."""
    groups: dict[str, list[float]] = {}
    for rid, system, m, p in cs:
        groups.setdefault(key(rid, system), []).append(abs(p - m) / m)
    return {g: (len(e), 100 * float(np.mean(e))) for g, e in groups.items()}


def print_keyed_groups(cs: list[tuple[str, str, float, float]], keys, width: int) -> None:
    """Print the MAPE per group for each (title, key(row id, system)) in `keys`, group names padded to `width`."""
    for title, key in keys:
        for g, (n, mape) in group_mape(cs, key).items():
            print(f"  {title:9s} {g:{width}s} n={n:2d} MAPE {mape:5.1f}%")


def print_groups(cs: list[tuple[str, str, float, float]], by: dict[str, dict[str, str]], columns: tuple[str, ...]) -> None:
    """Print the MAPE per value of each csv column (`system` is the case's own key), rows looked up by id in `by`."""
    keys = [(t, (lambda rid, s: s) if t == "system" else (lambda rid, s, t=t: by[rid][t])) for t in columns]
    print_keyed_groups(cs, keys, 16)


def print_missing_per_token_layer(cs: list[tuple[str, str, float, float]], by: dict[str, dict[str, str]],
                                  model: str = "GPT OSS 120B") -> None:
    """For one model's rows, the GPU time a run took beyond the prediction per token and decoder layer, in us:
    (1 / measured - 1 / predicted tokens/s/GPU) over the model's layers, the GPU-seconds a token costs beyond the
    estimate (docs/known-gaps.md 41): a cost the estimate lacks per token and layer keeps this figure across parts,
    layouts and releases, a per-step or per-layer one does not."""
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    mine = [(rid, m, p) for rid, _, m, p in cs if by[rid]["model"] == model]
    if not mine:
        return
    layers = resolve_job(job(by[mine[0][0]]), load_catalog()).model.layers
    print(f"{model}: GPU time beyond the prediction per token and layer (us; + = the run took longer):")
    for rid, m, p in mine:
        print(f"  {rid:56s} {1e6 * (1.0 / m - 1.0 / p) / layers:+.3f}")
    print(f"{model}: error as predicted and with the host terms off (the GPU side alone; docs/known-gaps.md 88):")
    for rid, err, gpu_side in host_free_errors(cs, by, model):
        print(f"  {rid:56s} {100 * err:+6.1f}% {100 * gpu_side:+6.1f}%")


def host_free_errors(cs: list[tuple[str, str, float, float]], by: dict[str, dict[str, str]],
                     model: str = "GPT OSS 120B") -> list[tuple[str, float, float]]:
    """(row, signed error, signed error with the estimate's host terms set to zero) for one model's rows: the
    per-layer-pass host floor (perf_constants.yaml host_s_per_layer_pass) and Megatron-Core's per-expert host launches
    after the MoE sync (moe_host_s_per_expert_kernel). A diagnostic, not an estimate: where the second figure of rows on
    different parts agrees while the first does not, the parts differ in the host time the estimate charges, not in a
    GPU cost (docs/known-gaps.md 88)."""
    import dataclasses

    from trainsizer.estimate.calibration import load_constants

    k = load_constants()
    host_free = dataclasses.replace(k, host_s_per_layer_pass=0.0,
                                    moe_host_s_per_expert_kernel=dict.fromkeys(k.moe_host_s_per_expert_kernel, 0.0))
    mine = [(rid, m, p) for rid, _, m, p in cs if by[rid]["model"] == model]
    free = dict(job_tokens_per_gpu(((rid, job(by[rid])) for rid, _, _ in mine), constants=host_free))
    return [(rid, (p - m) / m, (free[rid] - m) / m) for rid, m, p in mine]


def print_worst(cs: list[tuple[str, str, float, float]], count: int) -> None:
    """Print the `count` rows with the largest |error|, signed."""
    print("worst rows:")
    for rid, _, m, p in sorted(cs, key=lambda c: -abs(c[3] - c[2]) / c[2])[:count]:
        print(f"  {rid:56s} {100 * (p - m) / m:+7.1f}%")


def main() -> None:
    cs = cases()
    errs = print_cases(cs)
    print(f"\nMegatron-Bridge 26.04 / 26.06 (held out, nothing fitted): n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    print_groups(cs, {r["id"]: r for r in rows()}, ("release", "system", "precision", "model"))
    print("26.x over 25.11 at the same system, model, recipe, batch and layout (measured vs predicted):")
    for rid, meas, pred in release_pairs(cs):
        print(f"  {rid:56s} measured {meas:.3f} predicted {pred:.3f}")
    print("GB300 / GB200 at each part's own recipe layout (dense; measured vs predicted, predicted with GB300 at "
          "GB200's layout, GB300's attention share of its step):")
    for rid, meas, pr, same, share in part_pairs(cs):
        print(f"  {rid:56s} measured {meas:.3f} predicted {pr:.3f} at one layout {same:.3f} attention {share:.2f}")
    print_worst(cs, 6)
    print_missing_per_token_layer(cs, {r["id"]: r for r in rows()})
    print_fits(fits(), "Megatron-Bridge 26.04 / 26.06")


if __name__ == "__main__":
    main()
