"""Held-out check on MLPerf Training v6.0 (round logs of 2026-05; nothing is fitted on them): closed-division
submissions on NVIDIA's NeMo 26.04 implementation and AMD's, read from a public copy of the round's results
(github.com/Richardyu114/training_results_v6.0 at eabf23a0, its result logs, system files and configs; the official
mlcommons/training_results_v6.0 cannot be fetched here, so every row names the copy's path and commit).

Data: benchmarks/data/mlperf6.csv, one row per submitter, system and benchmark. Measured: the median of the
per-block train_step_time of result_0.txt (callback_logging.py logs block time / steps, evaluation excluded; the
first block, which holds the graph capture, left out). v6.0's logs print a per-step train_step_time only every 32nd
step (LOG_EVERY_N_STEPS 32), and those steps run 1-3% slower than the block around them (the logged step also reduces
the loss), so the per-block figure is the rate; v5.x rows took per-step figures where every step was logged
(perf_mlperf.py). Throughput = global batch x sequence / step time / GPUs, as perf_mlperf.py. The layout (TP, PP, CP,
VP, EP, micro-batch, global batch) comes from the config_*.sh the submission's README names and the log's
global_batch_size / max_sequence_length; the GPU and network from the system file. Where a config sources commons
the copy lacks, the row takes them from NVIDIA's v5.1 row of the same benchmark (or, GPT-OSS, Inventec's copy of the
v6.0 commons) and the `assumed` column says so. The partners' logs on the NeMo 26.04 image print Megatron-Bridge's
configuration summary (every setting that differs from Megatron-Core's default): their rows take the layout, recipe,
graph scope and recompute from it where the config is missing or disagrees (known-gaps 57). A row the estimator cannot
state is kept with its reason in `refused` (a part the catalog lacks, a precision no job can name).

Rows are built with the v5.x job builders, not copies: the Llama rows (builder nvidia-llama) with
perf_heldout26.mlperf_nvidia_job (perf_mlperf.job, the columns of nvidia_mlperf.csv), on Blackwell with the NeMo 26.04
image's cuDNN 9.17 attention (v5.1's 25.09 image ran 9.13.1, the base rate); the MoE rows (builder
mbridge-moe: DeepSeek-V3 671B and GPT-OSS 20B, both new in v6.0) with perf_mbridge26.job (the Megatron-Bridge 26.x
recipe job: megatron-core, distributed optimizer, flex / alltoall dispatcher, a2a overlap, cuDNN 9.17 attention on
Blackwell), with the row's FP8 weight all-gather, TP overlap and network; a model whose run trains another vocabulary than the
released checkpoint's (GPT-OSS 20B: the benchmark's Llama 3.1 tokenizer) is stated with it (RUN_VOCAB).

Printed beside the rows: perf_mlperf's step lines (step = a x micro-batches + b over the rows of one benchmark,
system and layout at several scales, with the predicted b split by term), which show where a strong-scaling series
loses its per-GPU rate.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_mlperf6.py
"""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path

import numpy as np

from harness import Fit, job_fits, job_tokens_per_gpu, layout_stage_layers
from perf_amd import job as amd_job
from perf_heldout26 import mlperf_nvidia_job
from perf_mbridge26 import CUDNN_26, print_keyed_groups
from perf_mbridge26 import job as mbridge_job
from trainsizer.errors import TrainsizerError

DATA = Path(__file__).resolve().parent / "data" / "mlperf6.csv"
BUILDERS = ("nvidia-llama", "mbridge-moe", "amd-primus")
# Blackwell parts whose Llama rows run the NeMo 26.04 image's cuDNN (>= 9.17, as perf_mbridge26.CUDNN_26 states for the
# Megatron-Bridge 26.x images and this file's MoE rows): every NVIDIA-implementation row of the round names an
# ngc26.04 NeMo system or submits that implementation (docs/known-gaps.md 40, item (c))
BLACKWELL_PARTS = ("gb300", "gb200", "b300", "b200")
# the csv's cuda_graph column as perf_mbridge26's cuda_graphs (strategy.cuda_graphs)
GRAPHS = {"none": "none", "mcore": "layer", "full-iteration": "full_iteration"}
# the Megatron-Bridge table's system / precision keys perf_mbridge26.job reads
MB_SYSTEM = {"gb300": "GB300", "gb200": "GB200", "b300": "B300", "b200": "B200", "h100-sxm-80gb": "H100"}
MB_PRECISION = {("fp8", "mxfp8"): "FP8-MX", ("fp8", "tensorwise"): "FP8-CS", ("fp8", "nvfp4"): "NVFP4",
                ("bf16", ""): "BF16",
                # per-tensor FP8 GEMMs as the table's FP8-CS; moe_job then states the row's own scaling recipe
                ("fp8", "delayed"): "FP8-CS"}


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


# The vocabulary a row's run trains with where it is not the preset's released checkpoint's. MLPerf's GPT-OSS 20B trains
# gpt-oss-20b's layers on C4 with the benchmark's Llama 3.1 tokenizer: vocab_size 128,256 (NVIDIA/benchmarks/gpt_oss_20b/
# implementations/nemo/pretrain.py get_model, GPTModelProvider(vocab_size=128256), in the copy at eabf23a0), not the
# released checkpoint's 201,088 (config.json): its embedding, LM head, loss and their gradients and optimizer state.
RUN_VOCAB = {"gpt-oss-20b": 128256}

# Megatron-Core options a row's benchmark code sets apart from the Megatron-Bridge recipe job. GPT-OSS 20B (NVIDIA's
# v6.0 implementation, NeMo 26.04 with Megatron-Core 26.04-alpha.rc2 and Transformer Engine v2.15, its Dockerfile):
# every readable config of the round (NVIDIA's 512-GPU config_GB300_128x4x1xtp2pp1cp4ep8.sh, CoreWeave's, Dell's
# XE9780 and Inventec's EP 1 configs) sets USE_TE_OPS True and NVTE_CUTEDSL_FUSED_GROUPED_MLP 1, and pretrain.py then
# sets moe_mlp_glu_interleave_size 32, so TEGroupedMLP._is_fused_impl_supported holds (quick_gelu with its clamp via
# TE 2.15's ScaledClampedQGeGLU, expert TP 1) and the experts run TE's fused grouped MLP (the full-iteration graphs
# need it: the unfused GroupedLinear takes host split sizes); config_common.sh sets FUSED_QKV_ROPE True
# (fused_single_qkv_rope); conf/gpt_oss.yaml's cp_comm_type defaults to a2a and no config sets CP_COMM_TYPE.
# Expert TP 1 on every MoE row (strategy.etp; the TP 2 rows differ from Megatron-Core's default etp = tp): DeepSeek-V3,
# NVIDIA's and Google's GB200 configs (config_GB200_*xtp2pp4ep32cp1_mxfp8_full_cg.sh) set no EXPERT_TENSOR_PARALLEL,
# conf/model/671b.yaml defaults it to 1 and pretrain.py create_config sets model_cfg.expert_tensor_parallel_size
# from it; GPT-OSS 20B, pretrain.py get_model sets etp = 1 whatever the config (conf/gpt_oss.yaml's
# EXPERT_TENSOR_PARALLEL unused), NVIDIA's GB300 512-GPU TP 2 row included. The csv's fused_grouped_mlp column says
# where a config leaves the fused grouped MLP off: 0 where the commons' USE_TE_OPS False stands (Dell's GB300 EP 2
# config sets neither option; Cisco's H100 config sets NVTE_CUTEDSL_FUSED_GROUPED_MLP 0 and USE_TE_OPS False);
# blank or 1 as every other readable config of the round.
# Megatron-Core 26.04-alpha.rc2 is the 0.17 release line (core_v0.17.0 tagged 2026-04-14, 0.18.0 2026-06-22):
# strategy.megatron_core_version, before fc2's scaled expert bias in the fused grouped MLP (0.19; known-gaps 344 (a)).
RUN_STRATEGY = {"gpt-oss-20b": {"moe_fused_grouped_mlp": True, "fused_qkv_rope": True, "cp_comm_type": "a2a", "etp": 1,
                                "megatron_core_version": "0.17"},
                "deepseek-v3": {"etp": 1}}


def model(name: str) -> str | dict:
    """The row's model preset by name, or its config.json with the vocabulary its run trains (RUN_VOCAB)."""
    if name not in RUN_VOCAB:
        return name
    path = resources.files("trainsizer.models").joinpath("presets", f"{name}.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    return raw | {"vocab_size": RUN_VOCAB[name]}


# the pipeline layout each MLPerf v6.0 config states (PIPELINE_LAYOUT, e.g. NVIDIA's and CoreWeave's
# config_GB300_*xtp1pp4ep32cp1_mxfp8_full_cg.sh, Google's config_GB200_64x4x480xtp2pp4ep32cp1_mxfp8_full_cg.sh): 16 / 16 /
# 16 / 13 decoder layers a rank, the MTP layer and the loss on the last; the GPT-OSS configs run PP 1
PIPELINE_LAYOUT = {"deepseek-v3": "Et*4|(t*4|)*14tmL"}
# the configs that set FP8_OUTPUT_PROJ (Megatron-Core fp8_output_proj: the LM head under the MXFP8 autocast), by model
# and part: the DeepSeek-V3 GB300 ones (NVIDIA's theia and CoreWeave's config_GB300_*.sh); the GB200 ones (NVIDIA's
# tyche, Google's) leave it unset (each row's `assumed` column)
FP8_OUTPUT_PROJ = {("deepseek-v3", "gb300")}


def moe_job(r: dict[str, str]) -> dict:
    """A MoE row as perf_mbridge26.job builds a Megatron-Bridge 26.x recipe row, then the row's own model preset,
    network, FP8 weight all-gather and TP overlap (the MLPerf configs set them apart from the recipes), and its
    benchmark code's Megatron-Core options (RUN_STRATEGY)."""
    mb = {"system": MB_SYSTEM[r["accelerator"]], "model": "DeepSeekV3",  # any preset of perf_blackwell.MODELS without
          # pipeline slots; the row's own preset replaces it below
          "precision": MB_PRECISION[(r["precision"], r["fp8_recipe"])], "fsdp": "0", "activation_offload": "0",
          "cuda_graphs": GRAPHS[r["cuda_graph"]]}
    mb |= {k: r[k] for k in ("gpu_count", "global_batch_seqs", "micro_batch", "seq_len", "tp", "pp", "cp", "vpp", "ep",
                             "recompute_modules", "moe_dispatcher", "moe_a2a_overlap", "fp8_attention")}
    job = mbridge_job(mb)
    job["model"] = model(r["model"])
    job["fp8_recipe"] = r["fp8_recipe"] or job["fp8_recipe"]
    if r["network"]:
        job["hardware"]["network"] = r["network"]
    else:  # one node, data parallel inside it: no network carries anything (as the Llama rows)
        del job["hardware"]["network"]
    job["strategy"]["fp8_param_allgather"] = r["fp8_params"] == "1"
    job["strategy"]["tp_comm_overlap"] = r["tp_comm_overlap"] == "1"
    job["strategy"] |= RUN_STRATEGY.get(r["model"], {})
    if r.get("fused_grouped_mlp") == "0":  # the config leaves USE_TE_OPS / NVTE_CUTEDSL_FUSED_GROUPED_MLP off
        job["strategy"]["moe_fused_grouped_mlp"] = False
    for key in ("pp_first_stage_layers", "pp_last_stage_layers"):  # the config's layout, not the recipe's
        job["strategy"].pop(key, None)
    if r["model"] in PIPELINE_LAYOUT:
        job["strategy"] |= layout_stage_layers(PIPELINE_LAYOUT[r["model"]], int(r["pp"]))
    job["strategy"]["fp8_lm_head"] = (r["model"], r["accelerator"]) in FP8_OUTPUT_PROJ
    return job


def job(r: dict[str, str]) -> dict:
    """The row as a job file, through the v5.x builder its `builder` column names."""
    if r["builder"] == "nvidia-llama":
        j = mlperf_nvidia_job(r)
        if r["accelerator"].startswith(BLACKWELL_PARTS):  # the 26.04 image's attention, as the MoE rows'
            j["strategy"]["cudnn_release"] = CUDNN_26
        if not r["network"]:  # one node, data parallel 1: no network carries anything (Krai's 4 GH200)
            del j["hardware"]["network"]
        return j
    if r["builder"] == "mbridge-moe":
        return moe_job(r)
    if r["builder"] == "amd-primus":  # perf_amd's MLPerf v5.1 AMD rows (Megatron-Core on ROCm), no recompute
        return amd_job(r | {"recompute": "none", "recompute_method": "", "recompute_num_layers": ""})
    raise ValueError(f"{r['id']}: builder {r['builder']!r} is not one of {', '.join(BUILDERS)}")


def _estimate(r: dict[str, str], job_of=None) -> tuple[float | None, str]:
    """(predicted tokens/s/GPU, "") or (None, why the row is refused): the csv's stated reason, else the
    estimator's own error on resolving the job (`job_of`: the row's job builder, this file's `job` by default)."""
    if r["refused"]:
        return None, r["refused"]
    try:
        return job_tokens_per_gpu([(r["id"], (job_of or job)(r))])[0][1], ""
    except TrainsizerError as e:
        return None, f"estimator: {e}"


def results(rows_of=None, job_of=None) -> list[tuple[dict[str, str], float | None, str]]:
    """(row, predicted tokens/s/GPU or None, refusal reason) for every row of the csv (or of `rows_of()`, a file
    in this csv's columns, with its own job builder: perf_heldout42)."""
    return [(r, *_estimate(r, job_of)) for r in (rows_of or rows)()]


def cases(rows_of=None, job_of=None) -> list[tuple[str, str, float, float]]:
    """(row id, submitter, measured, predicted tokens/s/GPU) of the estimated rows."""
    return [(r["id"], r["submitter"], float(r["tokens_per_sec_per_gpu"]), p)
            for r, p, _ in results(rows_of, job_of) if p is not None]


def refused() -> list[tuple[str, str]]:
    """(row id, reason) of the rows the estimator cannot state."""
    return [(r["id"], why) for r, p, why in results() if p is None]


def fits() -> list[Fit]:
    """Each estimated row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    est = {rid for rid, _, _, _ in cases()}
    return job_fits((r["id"], job(r)) for r in rows() if r["id"] in est)


# The logged evaluation of the GPT-OSS 20B rows (validation_time: the whole evaluation, a forward and the loss over
# eval_steps global batches of the training one's size under the run's graphs, no backward, no gradient collective;
# callback_logging.py), read from the result logs of the copy; eval_steps = ceil(VAL_SAMPLES 1,024 / global batch)
# (config_common.sh; Lambda's log prints eval_iters 29 at global batch 36). It checks the layer apart from the DP terms
# (docs/known-gaps.md 77).
EVAL = DATA.parent / "mlperf6_gpt_oss_eval.csv"


def eval_rows() -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in csv.DictReader(EVAL.open(encoding="utf-8"))}


def _cp_forward_share(q_dim: float, kv_dim: float) -> float:
    """The forward's part of Transformer Engine's all-to-all CP by the elements it moves (AttnFuncWithCPAndQKVOA2A at
    v2.15: q, k, v and the output forward; the output, its gradient, dq, dk and dv backward; as
    step_time._cp_te_a2a counts them)."""
    return (2.0 * q_dim + 2.0 * kv_dim) / (5.0 * q_dim + 4.0 * kv_dim)


def _forward_rows(rs: list[dict[str, str]],
                  job_of=None) -> list[tuple[dict[str, str], float, float, dict[str, float], float]]:
    """(row, logged evaluation step s, the estimate's forward of one global batch s, the estimate's step_time_arrays
    outputs, decoder layers x micro-batches) for the rows of `rs` with a logged evaluation (eval_rows); the forward as
    forward_check states it; `job_of`: the row's job builder, this file's `job` by default."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.step_time import step_time_arrays
    from trainsizer.scenario import resolve_job

    ev, cat, out = eval_rows(), load_catalog(), []
    for r in rs:
        if r["id"] not in ev:
            continue
        sc = resolve_job((job_of or job)(r), cat)
        o = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in
             step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()}
        fwd = o["forward_compute"] + 0.5 * (o["ep_comm"] + o["tp_comm"]) + o["cp_comm"] * _cp_forward_share(
            sc.model.q_dim, sc.model.kv_dim)
        logged = float(ev[r["id"]]["validation_time_s"]) / int(ev[r["id"]]["eval_steps"])
        out.append((r, logged, fwd, o, sc.model.layers * o["micro_batches"]))
    return out


def forward_check(rs: list[dict[str, str]]) -> list[tuple[str, float, float, float]]:
    """(row, logged evaluation step s, the estimate's forward of one global batch s, their difference per decoder layer
    and micro-batch s) for the rows of `rs` with a logged evaluation (eval_rows). The estimate's forward: its forward
    compute (step_time 'forward_compute': the layers and the LM head with the loss) plus the forward's share of the
    layer collectives it charges: half the EP all-to-all (dispatch and combine of its four calls), half the TP
    collectives and the CP all-to-alls' forward share (_cp_forward_share)."""
    return [(r["id"], logged, fwd, (logged - fwd) / lm) for r, logged, fwd, _, lm in _forward_rows(rs)]


def pass_split_check(rs: list[dict[str, str]], job_of=None) -> list[tuple[str, str, float, float]]:
    """(row, part, the forward's miss, the rest of the step's miss), s per decoder layer and micro-batch, + = measured
    slower, for the rows of `rs` with a logged evaluation: the forward as forward_check; the rest is the measured
    training step less the logged evaluation step against the estimate's step less its forward (the backward, the
    optimizer step, the exposed DP collectives and what a training forward does beyond an evaluation one: the
    activations' columnwise MXFP8 copies it keeps for the weight gradients). docs/known-gaps.md 166."""
    return [(r["id"], r["accelerator"], (logged - fwd) / lm,
             ((float(r["step_s"]) - logged) - (o["step_s"] - fwd)) / lm)
            for r, logged, fwd, o, lm in _forward_rows(rs, job_of)]


def pass_split_groups(split: list[tuple[str, str, float, float]],
                      rs: list[dict[str, str]]) -> dict[tuple[str, str], tuple[int, float, float]]:
    """{(layout group, part): (rows, median forward miss, median rest miss)} of pass_split_check's rows, s a decoder
    layer and micro-batch. Groups: "ep1_cp1" (no all-to-all in the layer) and "a2a" (EP > 1 or CP > 1: HybridEP's
    dispatch / combine or TE's all-to-all CP in every layer), whatever the fabric (docs/known-gaps.md 166, 189)."""
    by, acc = {r["id"]: r for r in rs}, {}
    for rid, part, f, b in split:
        r = by[rid]
        group = "ep1_cp1" if r["ep"] in ("", "1") and r["cp"] in ("", "1") else "a2a"
        acc.setdefault((group, part), []).append((f, b))
    return {k: (len(v), float(np.median([f for f, _ in v])), float(np.median([b for _, b in v])))
            for k, v in sorted(acc.items())}


def print_pass_split(rs: list[dict[str, str]]) -> None:
    """pass_split_check's rows, then the median of each miss by layout group and part (pass_split_groups)."""
    split = pass_split_check(rs)
    print("the step split at the logged evaluation (GPT-OSS): ms missing a decoder layer and micro-batch, forward | the "
          "rest of the step (backward, optimizer, exposed DP):")
    for rid, part, f, b in split:
        print(f"  {rid:52s} {part:6s} forward {1e3 * f:+5.2f} | rest {1e3 * b:+5.2f}")
    labels = {"ep1_cp1": "the EP 1 / CP 1 rows (no all-to-all in the layer)",
              "a2a": "the EP > 1 or CP > 1 rows (HybridEP / TE all-to-all CP in every layer, NVL72 or one HGX node)"}
    groups = pass_split_groups(split, rs)
    for group, label in labels.items():
        print(f"  by part, {label}:")
        for (g, part), (n, f, b) in groups.items():
            if g == group:
                print(f"  {part:6s} n={n} median forward {1e3 * f:+5.2f} | rest {1e3 * b:+5.2f}")


def print_forward_check(rs: list[dict[str, str]]) -> None:
    print("forward only (GPT-OSS): the logs' evaluation step (validation_time / steps: a forward and the loss of one "
          "global batch under the run's graphs) against the estimate's forward with its collectives' forward share, ms:")
    for rid, logged, fwd, per_layer in forward_check(rs):
        print(f"  {rid:50s} logged {1e3 * logged:6.1f} estimate {1e3 * fwd:6.1f} ({100 * (fwd - logged) / logged:+5.1f}%)"
              f"  missing a layer and micro-batch {1e3 * per_layer:+5.2f}")



# The busiest EP rank's load (docs/known-gaps.md 193). The GPT-OSS 20B runs train their router unbalanced: conf/gpt_oss.yaml
# moe_router_load_balancing_type none and moe_router_force_load_balancing False, which no config_common*.sh or layout config
# of the copy overrides (NVIDIA/benchmarks/gpt_oss_20b/implementations/nemo/conf/gpt_oss.yaml; pretrain.py get_model passes
# both to GPTModelProvider), so each EP rank receives what the router sends its experts and the HybridEP all-to-alls of
# every layer wait for the busiest. Under full-iteration graphs the configs state a static budget of received tokens a
# rank (Megatron-Core moe_expert_rank_capacity_factor: tokens x top-k x the factor, token_dispatcher.py
# _HybridEPManager.setup_metadata at Megatron-LM d98e8a64; a step in which any rank goes over it is run again without it,
# paged_stash.py PagedStashRunner), so the budget bounds the busiest rank's load: config_common_cg.sh sets 2 ("Setting
# default value for padding here. Configs can override."), the CP 2 x EP 4 configs 5 ("5x oversized activation for CG":
# Lambda's copy of config_GB300_18x4x1xtp1pp1cp2ep4_mxfp8.sh, whose name NVIDIA's and Supermicro's rows cite; CoreWeave's
# config_DGXB200_8x8x1xtp1pp1cp2ep4_mxfp8.sh), NVIDIA's TP 2 x CP 4 x EP 8 config 7 ("oversized activation for CG").
RANK_BUDGET = {"config_GB300_18x4x1xtp1pp1cp2ep4_mxfp8.sh": 5.0, "config_DGXB200_8x8x1xtp1pp1cp2ep4_mxfp8.sh": 5.0,
               "config_GB300_128x4x1xtp2pp1cp4ep8.sh": 7.0}


def rank_budget(r: dict[str, str]) -> float | None:
    """The static received-token budget a rank (RANK_BUDGET) of the layout config the row names, None where it states
    none (EP 1 configs, eager or per-layer graphs)."""
    return next((b for name, b in RANK_BUDGET.items() if name in r["source_locator"]), None)


def implied_rank_load(j: dict, step_s: float, catalog=None) -> float:
    """The busiest EP rank's token load over the balanced share (Training.moe_capacity_factor: that rank's expert GEMMs,
    permutation and received all-to-all bytes scale with it) at which the estimate's step of job `j` is `step_s`:
    secant steps from loads 1 and 2 on the estimate's step, which rises with the load; below 1 where the estimate at a
    balanced router is already slower than `step_s`. A diagnostic: no row states a load."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.step_time import step_time_arrays
    from trainsizer.scenario import resolve_job

    cat = catalog or load_catalog()

    def miss(load: float) -> float:
        sc = resolve_job(j | {"moe_capacity_factor": load}, cat)
        out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
        return float(np.asarray(out["step_s"]).reshape(-1)[0]) - step_s

    a, b = 1.0, 2.0
    fa, fb = miss(a), miss(b)
    for _ in range(8):
        if abs(fb) < 1e-5 * step_s or fb == fa:
            break
        a, b, fa = b, min(max(b - fb * (b - a) / (fb - fa), 0.05), 16.0), fb
        fb = miss(b)
    return b


def rank_load_check(rs: list[dict[str, str]]) -> list[tuple[str, str, int, float, float | None, float]]:
    """(row, part, EP, local experts a rank, the config's rank budget or None, implied_rank_load) for the estimated
    GPT-OSS rows of `rs`, EP 1 ones included: one rank holds every expert there, so no rank can be the busiest and their
    implied load is what the rest of the estimate misses."""
    from trainsizer.catalog import load_catalog

    cat, out = load_catalog(), []
    for r in rs:
        if r["model"] != "gpt-oss-20b" or r["refused"]:
            continue
        j, ep = job(r), int(r["ep"] or 1)
        local = (j["model"]["num_local_experts"] if isinstance(j["model"], dict) else 0) / ep
        out.append((r["id"], r["accelerator"], ep, local, rank_budget(r), implied_rank_load(j, float(r["step_s"]), cat)))
    return out


def print_rank_load(rs: list[dict[str, str]]) -> None:
    """rank_load_check's rows, by EP degree, then each row's evaluation split (pass_split_check) at a balanced router
    and at its implied load: where the busiest rank is what the step misses, its forward closes with the step."""
    print("the busiest EP rank's load that closes each GPT-OSS row (Training.moe_capacity_factor; the runs train the router"
          " unbalanced; budget: the config's static received-token budget a rank, which bounds it):")
    checked = rank_load_check(rs)
    for rid, part, ep, local, budget, load in sorted(checked, key=lambda c: (c[2], c[0])):
        cap = f"{budget:.0f}" if budget else "-"
        print(f"  {rid:52s} {part:13s} EP {ep} ({local:.0f} experts a rank) budget {cap:>2s}  load {load:5.2f}")
    loads = {c[0]: c[5] for c in checked}
    at_load = {c[0]: c for c in pass_split_check(rs, lambda r: job(r) | {"moe_capacity_factor": loads.get(r["id"], 1.0)})}
    print("  the logged evaluation's split (pass_split_check) at a balanced router and at that load, ms a layer and "
          "micro-batch (the load is solved on the whole step, not on the split):")
    for rid, _, f, b in pass_split_check(rs):
        f2, b2 = at_load[rid][2], at_load[rid][3]
        print(f"  {rid:52s} forward {1e3 * f:+5.2f} -> {1e3 * f2:+5.2f} | rest {1e3 * b:+5.2f} -> {1e3 * b2:+5.2f}")

# The first training step after an evaluation against its block's other logged steps (train_step_time at every 32nd
# step; the one 0.8-0.9 s step at samples_count 192,000 of each log left out), read from the EP 1 GPT-OSS rows' logs: the
# evaluation gathers the parameters for its own forward, so the step after it skips part of the step's parameter sync
# (docs/known-gaps.md 166 (d)).
POST_EVAL = DATA.parent / "mlperf6_gpt_oss_post_eval.csv"


def post_eval_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(POST_EVAL.open(encoding="utf-8")))


def print_post_eval(rs: list[dict[str, str]]) -> None:
    """Each post_eval_rows row beside its part and FP8 weight all-gather (the row's fp8_params): how much faster the
    step after an evaluation runs, ms."""
    by = {r["id"]: r for r in rs}
    print("the first step after an evaluation against the block's other logged steps (GPT-OSS, EP 1), ms:")
    for e in post_eval_rows():
        r = by[e["id"]]
        gain = 1e3 * (float(e["block_logged_median_s"]) - float(e["first_step_s"]))
        print(f"  {e['id']:52s} {r['accelerator']:6s} fp8 weights {r['fp8_params'] or '0'}  "
              f"{1e3 * float(e['first_step_s']):6.1f} against {1e3 * float(e['block_logged_median_s']):6.1f}: "
              f"{gain:4.1f} faster")


def main() -> None:
    from harness import print_fits
    from perf_mlperf import print_step_lines

    res = results()
    print(f"{'row':52s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for r, p, _ in res:
        if p is not None:
            m = float(r["tokens_per_sec_per_gpu"])
            print(f"{r['id']:52s} {m:9.0f} {p:9.0f} {100 * (p - m) / m:+7.1f}")
    cs = cases()
    errs = np.array([abs(p - m) / m for _, _, m, p in cs])
    ref = refused()
    print(f"\nMLPerf Training v6.0 (held out, nothing fitted): n={len(cs)} MAPE {100 * errs.mean():.1f}%, "
          f"{len(ref)} refused")
    by = {r["id"]: r for r in rows()}
    print_keyed_groups(cs, (("submitter", lambda rid, s: s), ("benchmark", lambda rid, s: by[rid]["benchmark"]),
                            ("system", lambda rid, s: by[rid]["accelerator"])), 28)
    print("worst rows:")
    for rid, _, m, p in sorted(cs, key=lambda c: -abs(c[3] - c[2]) / c[2])[:6]:
        print(f"  {rid:52s} {100 * (p - m) / m:+7.1f}%")
    est = {rid for rid, _, _, _ in cs}
    print_step_lines([r for r in rows() if r["id"] in est], {rid: (m, p) for rid, _, m, p in cs}, job_of=job)
    print_forward_check(rows())
    print_rank_load(rows())
    print("refused rows:")
    for rid, why in ref:
        print(f"  {rid}: {why}")
    print_fits(fits(), "MLPerf Training v6.0")


if __name__ == "__main__":
    main()
