"""Held-out check on published runs added 2026-12-02 (second batch; nothing is fitted on them):

- Megatron-Bridge 26.02.01, 26.04.01 and 26.06.01 pre-training tables (benchmarks/data/heldout_2026c_mbridge.csv):
  every line of those NeMo Container sections of docs/performance-summary-archive.md at Megatron-Bridge commit
  067f987d whose model has a preset and whose layout a config of its release states -- Llama 3 70B, Llama 3.1 405B,
  DeepSeek-V3, GPT-OSS 120B, Qwen3 30B-A3B / 235B-A22B on DGX-GB300, -GB200, -B300, -B200 and -H100 (66 rows). Kimi-K2
  (its runs use the Muon optimizer, which no job option states), Nemotron 3 Super (no preset) and Nemotron 3 Nano
  (perf_hybrid.py holds it) are left out. Each row is stated from the workload base config its release's performance
  scripts load (the V2 variant, else V1, as utils.get_workload_base_config picks), at the release branch's state when
  the table was committed: 26.02.01 from the r0.3.0 branch at 904597bd3 (2026-03-21, the GPT-OSS B300 / B200 config
  update committed 42 s before the table at cfeddcd94; v0.3.1, tagged the day before, lacks it), 26.04.01 from r0.4.0 at
  c5d4ab462 (2026-05-15, the last change to scripts/performance before the table's commit 17a381f95 on 2026-05-16;
  v0.4.0's configs match only 31 of its 33 lines, DeepSeek-V3 on B300 / B200 having moved to PP 8), 26.06.01 from
  v0.5.1 (tagged 2026-07-20, the table committed at 381d0b825 the next day). Every kept row's layout, batch and GPU
  count equals its config's; 6 of the 31 preset lines of 26.02.01 match no config of the branch or of any tag around it
  and are left out (GB300 Llama 3 70B NVFP4 at MBS 2 without PP and MXFP8 at MBS 2, PP 4 without VP; GB200 405B NVFP4
  at VP 4, GB300 405B FP8 at TP 2 CP 2; H100 Qwen3 30B-A3B at PP 2 VP 12 EP 8; B300 Qwen3 235B-A22B at VP 4). The
  columns read the config exactly as perf_mbridge26.py's 26.04 / 26.06 rows and perf_heldout26's 26.02 rows do (its
  `job` builds these rows; the reading reproduces every derived column of the rows those benchmarks hold at an
  unchanged config): Megatron-FSDP and cpu_offloading_num_layers, recompute_modules, CUDA graphs (full_iteration where
  the config captures the whole iteration; Transformer Engine graphs of parts of a layer written none), the MoE
  dispatcher (from 26.04: flex where moe_flex_dispatcher_backend is set, else alltoall, utils/overrides.py
  set_workload_base_configs; at r0.3.0 each model's perf function sets it: DeepSeek-V3 and Qwen3 30B-A3B flex, Qwen3
  235B-A22B flex on GB300 / GB200 and alltoall elsewhere, GPT-OSS the recipe's alltoall), moe_a2a_overlap and
  fp8_dot_product_attention, and TE's fused grouped MLP where the config sets cutedsl_fused_grouped_mlp
  (perf_mbridge26.CUTEDSL_CONFIGS). What the rows cannot state is in the `assumed` column (partial CUDA graphs,
  DeepSeek-V3's pp_layout, the CuTe DSL kernels' rate, 405B NVFP4's parameter-gather overlap switched off on GB200 under
  26.04.01, MXFP8's fp8_output_proj under v0.5.1, the DGX-B300 network); the two 26.06.01 GPT-OSS lines carry the
  table's own footnote that they are a known regression (cudnn-frontend issue 256, the CuTe DSL grouped MLP's dGLU
  backward; not modelled: they are the 26.06 lines' jobs, docs/known-gaps.md 41 (6)).
  Added 2026-12-03: the 25.11 table's four GPT-OSS 120B lines (BF16; the release's other models are perf_blackwell's
  development rows), each from the config that states its layout, read as above: GB300 (MBS 2) and GB200 (MBS 1) at
  8,192 tokens and global batch 1,280 from branch gaod/r0.2.0_test at 4a82e1651 (2025-12-06, the only config state
  with that layout: seq_length 8192 set in gpt_oss_llm_pretrain.py, GB200 on HybridEP, three days before those lines
  replaced the table's 4K ones), B200 and H100 at 4,096 tokens and global batch 512 from the v0.2.0 tag, where the
  table prints EP 8 for B200 (every config sets 64; its rate is 26.02's EP 64 line's) and MBS 4 / GA 2 for H100 (no
  layout at PP 4; the config's MBS 1): the `assumed` column gives the table's reading's figure. The v0.2.0 image is
  pytorch:25.09-py3, cuDNN 9.13.1 (perf_mbridge26.CUDNN_BY_RELEASE). docs/known-gaps.md 41 (9).
- MLPerf Training v5.1 closed submissions on NVIDIA's implementation by other submitters, not in perf_mlperf.py or
  perf_heldout26.py (benchmarks/data/heldout_2026c_mlperf_nvidia.csv, 25 v5.1 rows and 8 v5.0 rows below, the columns of
  heldout_2026b_mlperf_nvidia.csv, built by perf_heldout26.mlperf_nvidia_job): Llama 2 70B LoRA FP8 by University of
  Florida on 16, 32 and 128 B200 (its 8- and 64-GPU runs are perf_mlperf's), Nebius on 32 B200, Dell on 16 B200 and 8
  H200 (TP 2), Lambda and Supermicro on 72 GB300, Wiwynn on 72 and 576 GB200; Llama 3.1 8B FP8 by Oracle on 64 B200,
  Lambda on 72 GB300, Dell on 16 B200 (two systems) and 8 B300, Supermicro on 8 B200, HPE on 64 H200; Llama 3.1 8B
  NVFP4 by Oracle, Dell, Supermicro (two systems) and Nebius on 8 B200, Nebius on 16 / 32 B200 and 8 B300. Each row is
  the median of the result logs' train_step_time as perf_mlperf's rows take it (per step for the 8B, the first of each
  log and the first after each evaluation left out; per block for LoRA), each column copied from the perf_mlperf row of
  the same code and layout and then checked against the resolved config the logs print (micro-batch, TP / CP, FP8 / FP4
  recipe, FP8 attention, FP8 SwiGLU input, CUDA graph scope, global batch): where a log and the submission's config file
  disagree (Nebius's NVFP4 runs print full-iteration graphs, their files set FULL_CUDA_GRAPH 0; Nebius's 32-GPU LoRA
  run prints CP 4 under a cp1 system name) the log is taken, and the `assumed` column says so. Networks from the
  system files; where one is not stated (Dell) or its speed is not (Oracle RoCE, Supermicro) 400 Gb/s per GPU is
  assumed. Left out: Nebius's LoRA NVFP4 runs (FP4 with healing, as perf_mlperf leaves NVIDIA's out), Cisco's hpf
  runs (an older NeMo code on H100, PyTorch 23.09), Krai's and Cisco's v5.0-code LoRA runs (no per-step times; left for
  later), GigaComputing (no train_step_time in its logs), Verda (its system file's '100GbE InfiniBand' states no
  usable rate) and the remaining 8-GPU B200 LoRA systems. MLPerf Training v5.0 (8 rows, Llama 2 70B LoRA on NVIDIA's
  NeMo 25.04 code): Oracle on 4, 8 and 72 GB200 and 8 / 64 B200, Supermicro on 72 GB200 and 8 B200, Lambda on 8 B200,
  each from perf_mlperf's NVIDIA v5.0 row of the same layout after resolving the submission's config_*.sh with its
  config_common.sh (v5.0 logs print no config): the same environment as NVIDIA's config of that name, or the
  differences said in `assumed` (Oracle's 4 GB200: CP 2, 4 micro-batches; 64 B200: CP 8 with per-layer graphs).
  Left out of v5.0: Dell's GB200 runs and Supermicro's 16-B200 run (their configs are not in the submission).
- H200 runs of NVIDIA's v4.1 LoRA code (the ft-llm code perf_heldout26's Oracle / Dell / Cisco rows ran; 6 rows, each
  the median of the logs' per-block throughput, samples/s, the layout and options read from the hydra config each log
  prints, every column else as perf_heldout26's Oracle 512-GPU row): HPE's v5.0 runs on 1, 2 and 4 nodes (TP 2, 4, 4;
  FP8 attention and FP8 SwiGLU input) and Krai's v5.1 runs of the same code on 2, 4 and 8 nodes (TP 2, 4, 4; FP8
  attention), each node 8 x NDR 400 Gb/s InfiniBand. Left out: Lenovo's 4-node and Dell's 2-node H200 runs (their logs
  print no config).

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout27.py
"""

from __future__ import annotations

import csv
import math
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from harness import Fit, job_fits, job_tokens_per_gpu, print_cases, print_fits, row_cases
from perf_heldout26 import mlperf_nvidia_job
from perf_mbridge26 import (
    host_free_errors,
    print_groups,
    print_keyed_groups,
    print_missing_per_token_layer,
    print_worst,
)
from perf_mbridge26 import job as mbridge_job
from perf_mbridge26 import rows as mbridge_rows

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026c_mbridge.csv"
MLPERF = Path(__file__).resolve().parent / "data" / "heldout_2026c_mlperf_nvidia.csv"
BASE_MLPERF = Path(__file__).resolve().parent / "data" / "nvidia_mlperf.csv"
PR3561 = Path(__file__).resolve().parent / "data" / "mbridge_pr3561_dispatcher.csv"
# per-GPU rate along one submitter's scale (series name, the smallest run of that code and layout family: a row of this
# file or of perf_mlperf's nvidia_mlperf.csv, then the larger runs)
SCALE_SERIES = (
    ("University of Florida B200 LoRA", "mlperf5.1_b200_llama2_70b_lora_fp8_8gpu",
     ("mlperf5.1_uf_b200_llama2_70b_lora_fp8_16gpu", "mlperf5.1_uf_b200_llama2_70b_lora_fp8_32gpu",
      "mlperf5.1_b200_llama2_70b_lora_fp8_64gpu", "mlperf5.1_uf_b200_llama2_70b_lora_fp8_128gpu")),
    ("Nebius B200 8B NVFP4", "mlperf5.1_nebius_b200_llama31_8b_nvfp4_8gpu",
     ("mlperf5.1_nebius_b200_llama31_8b_nvfp4_16gpu", "mlperf5.1_nebius_b200_llama31_8b_nvfp4_32gpu")),
    ("Wiwynn GB200 LoRA", "mlperf5.1_wiwynn_gb200_llama2_70b_lora_fp8_72gpu", ("mlperf5.1_wiwynn_gb200_llama2_70b_lora_fp8_576gpu",)),
    ("Oracle GB200 LoRA (v5.0)", "mlperf5.0_oracle_gb200_llama2_70b_lora_fp8_4gpu",
     ("mlperf5.0_oracle_gb200_llama2_70b_lora_fp8_8gpu", "mlperf5.0_oracle_gb200_llama2_70b_lora_fp8_72gpu")),
    ("Oracle B200 LoRA (v5.0)", "mlperf5.0_oracle_b200_llama2_70b_lora_fp8_8gpu", ("mlperf5.0_oracle_b200_llama2_70b_lora_fp8_64gpu",)),
    ("HPE H200 LoRA (v4.1 code)", "mlperf5.0_hpe_h200_llama2_70b_lora_fp8_8gpu",
     ("mlperf5.0_hpe_h200_llama2_70b_lora_fp8_16gpu", "mlperf5.0_hpe_h200_llama2_70b_lora_fp8_32gpu")),
    ("Krai H200 LoRA (v4.1 code)", "mlperf5.1_krai_h200_llama2_70b_lora_fp8_16gpu",
     ("mlperf5.1_krai_h200_llama2_70b_lora_fp8_32gpu", "mlperf5.1_krai_h200_llama2_70b_lora_fp8_64gpu")),
)

# cudnn-frontend's grouped GEMM + dGLU kernel with the fc1 bias gradient (grouped_gemm_dglu_wrapper_sm100, generate_dbias),
# which TE's fused grouped MLP runs for biased experts (GPT-OSS; DeepSeek-V3 and Qwen3 have none): "10x slower" from
# cudnn-frontend 1.24.0 (NVIDIA/cudnn-frontend issue 256, 2026-05-27); PR 322 (2026-06-23, CUTLASS DSL 4.5.0, SM100,
# the shape) times it at 1,362.768 us regressed, 155.632 us fixed (139.392 us without dbias). Megatron-Bridge
# v0.5.1 (the 26.06.01 lines) pins cudnn-frontend 1.24.0 and nvidia-cutlass-dsl 4.5.0 where v0.5.0 (26.06) pinned
# 1.23.0 / 4.4.1 (pyproject.toml, docker/Dockerfile.ci); its GPT-OSS configs are unchanged (docs/known-gaps.md 124 (a)).
# the fixed kernel's time is perf_constants.yaml gemm.fused_dglu_us with_dbias (charged, step_time._fused_dglu_dbias_time)
DGLU_REGRESSED_US = 1362.768
# a line's twin in perf_mbridge26: the same job one release earlier (the columns that state it must agree)
TWIN_COLUMNS = ("system", "model", "precision", "gpu_count", "global_batch_seqs", "micro_batch", "seq_len", "tp", "pp",
                "cp", "ep", "cuda_graphs", "moe_dispatcher", "moe_a2a_overlap", "fp8_attention")


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def dispatcher_pair_rows() -> list[dict[str, str]]:
    """Megatron-Bridge PR 3561's four GPT-OSS 120B runs on 64 GB200 (PR3561: TFLOP/s a GPU of one layout under the
    alltoall and HybridEP dispatchers, BF16 and MXFP8), each on the 26.04.01 table line whose config is the PR's."""
    return list(csv.DictReader(PR3561.open(encoding="utf-8")))


def dispatcher_pairs() -> list[tuple[str, float, float]]:
    """(pair, measured ratio, predicted ratio) of PR 3561's A/B runs: alltoall over HybridEP in each precision and
    MXFP8 over BF16 under each dispatcher. The jobs are the 26.04.01 GB200 GPT-OSS line's (its V2 config is the PR's:
    EP 64, MBS 4, GBS 1,280, 4,096 tokens, recompute layernorm + moe_act, moe_a2a_overlap) with the run's dispatcher and
    precision (FP8_MX_V2 is an alias of the BF16 V2 config at r0.4.0; bf16_with_mxfp8_mixed sets fp8_param_gather, as
    perf_mbridge26.job states for FP8). Ratios of one layout, so the model FLOPs cancel: a check on what the estimate
    gives the dispatcher and the precision on GPT-OSS, not a scored row (docs/known-gaps.md 208 (b))."""
    base = {r["id"]: r for r in rows()}
    runs = dispatcher_pair_rows()
    jobs = []
    for r in runs:
        job = mbridge_job(base[r["base_row"]] | {"precision": r["precision"]})
        job["strategy"]["moe_dispatcher"] = r["moe_dispatcher"]
        jobs.append((r["id"], job))
    pred = dict(job_tokens_per_gpu(jobs))
    meas = {r["id"]: float(r["model_tflops_per_gpu"]) for r in runs}
    pairs = (("BF16 alltoall / hybridep", "pr3561_bf16_alltoall", "pr3561_bf16_hybridep"),
             ("MXFP8 alltoall / hybridep", "pr3561_fp8mx_alltoall", "pr3561_fp8mx_hybridep"),
             ("alltoall MXFP8 / BF16", "pr3561_fp8mx_alltoall", "pr3561_bf16_alltoall"),
             ("hybridep MXFP8 / BF16", "pr3561_fp8mx_hybridep", "pr3561_bf16_hybridep"))
    return [(name, meas[a] / meas[b], pred[a] / pred[b]) for name, a, b in pairs]


def _pair_steps(dispatcher: str, constants=None) -> tuple[float, float, float, float, float]:
    """(BF16 step s, MXFP8 step s, BF16 host excess s, MXFP8 host excess s, decoder layers x micro-batches a GPU runs a
    step) the estimate gives PR 3561's `dispatcher` pair (the 26.04.01 GB200 line's job at each precision), at
    `constants` (None: the shipped ones)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.step_time import step_time_arrays
    from trainsizer.scenario import resolve_job

    base = {r["id"]: r for r in rows()}
    runs = {r["precision"]: r for r in dispatcher_pair_rows() if r["moe_dispatcher"] == dispatcher}
    out: list[float] = []
    for precision in ("BF16", "FP8-MX"):
        job = mbridge_job(base[runs[precision]["base_row"]] | {"precision": precision})
        job["strategy"]["moe_dispatcher"] = dispatcher
        sc = resolve_job(job, load_catalog())
        a = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, constants=constants)
        out += [float(np.asarray(a[k]).reshape(-1)[0]) for k in ("step_s", "host_excess", "micro_batches")]
        layers = sc.model.layers // max(int(sc.strategy.pp), 1)
    return out[0], out[3], out[1], out[4], out[2] * layers


def _mxfp8_constants(cast_scale: float = 1.0, gemm_ratio: float | None = None):
    """The shipped constants with MXFP8's cast bytes and kernels x `cast_scale` and, where given, its GEMM share of the
    FP8 peak over the BF16 share (fp8.recipes.mxfp8 gemm_efficiency_ratio; 0.5 = the BF16 rate on parts whose FP8 peak
    is twice it): the counterfactuals of mxfp8_saving_terms / mxfp8_closing."""
    import dataclasses

    from trainsizer.estimate.calibration import load_constants

    k = load_constants()
    mx = dict(k.fp8_recipes["mxfp8"])
    mx["cast_bytes_per_element"] *= cast_scale
    mx["cast_kernels_per_tensor"] *= cast_scale
    if gemm_ratio is not None:
        mx["gemm_efficiency_ratio"] = gemm_ratio
    return dataclasses.replace(k, fp8_recipes={**k.fp8_recipes, "mxfp8": mx})


def mxfp8_saving_terms(dispatcher: str = "alltoall") -> dict[str, float]:
    """Milliseconds a decoder layer and micro-batch that MXFP8 saves over BF16 on PR 3561's GPT-OSS job under
    `dispatcher`: measured (the PR's BF16 run's step, the 26.04.01 line's measured step x the line's TFLOP/s over the
    PR's, and its MXFP8 / BF16 TFLOP/s ratio) and predicted, the prediction split into what its MXFP8 GEMMs gain over
    running at the BF16 rate, what its casts cost on the GPU (casts free against as charged), the host excess (the
    casts' launches) and the rest (the FP8 padding copies of step_time._fp8_expert_padding_time, alltoall only). A
    diagnostic (docs/known-gaps.md 218 (a)); nothing is fitted."""
    base = {r["id"]: r for r in rows()}
    runs = {r["precision"]: r for r in dispatcher_pair_rows() if r["moe_dispatcher"] == dispatcher}
    line = base[runs["BF16"]["base_row"]]
    gpus, seqs, seq = int(line["gpu_count"]), int(line["global_batch_seqs"]), int(line["seq_len"])
    line_step = seqs * seq / (gpus * float(line["tokens_per_sec_per_gpu"]))
    bf16_tf, mx_tf = (float(runs[p]["model_tflops_per_gpu"]) for p in ("BF16", "FP8-MX"))
    meas_b = line_step * float(line["model_tflops_per_gpu"]) / bf16_tf
    p_b, p_m, h_b, h_m, passes = _pair_steps(dispatcher)
    gemm16 = _pair_steps(dispatcher, _mxfp8_constants(gemm_ratio=0.5))[1::2]
    free = _pair_steps(dispatcher, _mxfp8_constants(cast_scale=0.0))[1::2]
    ms = 1e3 / passes
    terms = {"measured": (meas_b - meas_b * bf16_tf / mx_tf) * ms, "predicted": (p_b - p_m) * ms,
             "gemms": (gemm16[0] - p_m) * ms, "casts": -((p_m - h_m) - (free[0] - free[1])) * ms,
             "host": -(h_m - h_b) * ms}
    terms["rest"] = terms["predicted"] - terms["gemms"] - terms["casts"] - terms["host"]
    return terms


HYBRIDEP_KERNELS = Path(__file__).resolve().parent / "data" / "hybridep_kernels.csv"
# the alltoall per-expert host figure refitted under the counterfactual: each of perf_blackwell's three fitted DGX-B200
# rows keeps its prediction at 3.15 / 3.19 / 3.14e-5 s a kernel with the dispatcher's own copies charged (their mean;
# rederived after the shipped figure's refit, docs/known-gaps.md 297 (b))
COUNTERFACTUAL_ALLTOALL_HOST_S = 3.16e-5


def hybridep_link_shares(sms: int = 32) -> tuple[list[float], list[float]]:
    """(EP ranks, share of the GB200 link per direction) HybridEP's intranode kernels reach alone at `sms` SMs (NVIDIA's
    table, benchmarks/data/hybridep_kernels.csv): the received copies' rate x (n - 1) / n over NVLink 5's 900 GB/s, the
    dispatch and the combine by their harmonic mean (a layer runs both alike). 32 SMs: Megatron-Core's
    moe_hybridep_num_sms None takes HybridEpBuffer's default (deepseek-ai/DeepEP hybrid-ep deep_ep/hybrid_ep_buffer.py
    at 017a5202)."""
    rates: dict[int, dict[str, float]] = {}
    for r in csv.DictReader(HYBRIDEP_KERNELS.open(encoding="utf-8")):
        if r["accelerator"] == "gb200" and r["api"] == "kernel" and int(r["sms"]) == sms:
            rates.setdefault(int(r["ep"]), {})[r["pass"]] = float(r["logical_gb_s"])
    ranks = sorted(rates)
    shares = [2.0 / sum(900.0 / (v * (n - 1) / n) for v in rates[n].values()) for n in ranks]
    return [float(n) for n in ranks], shares


def _code_copy_delta(x) -> object:
    """Seconds per average layer and micro-batch by which the permutation copies Megatron-LM's dispatchers make
    (token_dispatcher.py at 0d8e0714 / b0cc2706 / b20c1b25: alltoall permute, sort_chunks_by_idxs after the dispatch and
    before the combine with more than one local expert, unpermute; flex one permute and one unpermute beside DeepEP's
    or HybridEP's transport, HybridEP's as kernels of their own, executor.cu permute_launcher / unpermute_launcher) and
    their backward (one copy a copy: TE's permute / unpermute / sort by the inverse map) differ from the two a forward
    and four a backward compute._moe_layer charges; each a read and a write of a hidden-wide row a routed slot this GPU's
    experts take, the forward's again where the MoE block re-runs (docs/known-gaps.md 232 (a))."""
    from trainsizer.estimate import compute
    from trainsizer.estimate.step_time import moe_alltoall

    m = x.model
    mcore = np.asarray(x.fw.moe_host_sync, bool)
    if not m.is_moe or not np.any(mcore):
        return 0.0
    sort = moe_alltoall(x.strategy_dispatcher, x.system, x.e, x.t) & (m.experts / np.maximum(x.e, 1.0) > 1.0)
    per_pass = np.where(sort, 4.0, 2.0)
    copies = (per_pass - 2.0) * (1.0 + x.moe_rerun) + (per_pass - 4.0)
    split = np.where(np.asarray(x.fw.moe_tp_token_split, bool), x.et / x.t, 1.0)
    nbytes = 2.0 * copies * x.routed_slots * split * m.hidden * x.r.act_bytes
    share = m.moe_layer_count / m.layers
    return np.where(mcore, compute.stream_time(nbytes, x.r, kernels=copies * share), 0.0)


def _kernel_rate_ep_comm(ep_comm):
    """step_time._ep_comm with Megatron-Core's flex at its transport's measured kernel rates instead of the collectives'
    (the latencies as charged): HybridEP inside a multi-host NVLink domain (hybridep_link_shares, held at the last
    measured rank count beyond it), DeepEP elsewhere (perf_constants.yaml comm.deepep_normal_kernels, the rates the
    PyTorch-native stacks' DeepEP is charged at: step_time.deepep_rates)."""
    import dataclasses

    from trainsizer.estimate import comm
    from trainsizer.estimate.step_time import _ep_group, deepep_rates

    def charged(x, like):
        if not x.model.is_moe:
            return ep_comm(x, like)
        flex, _, n_ep, stride = _ep_group(x)
        mcore = flex & np.asarray(x.fw.moe_host_sync, bool)
        if not np.any(mcore):
            return ep_comm(x, like)
        k_ep = comm.ranks_per_domain(n_ep, stride, x.domain)
        hybrid = mcore & (n_ep <= k_ep) & (x.system.scaleup_domain > x.system.gpus_per_node)
        ranks, shares = hybridep_link_shares()
        share = np.interp(np.asarray(n_ep, float), ranks, shares)
        hybrid_r = dataclasses.replace(x.r, intra_busbw=x.system.intra_node_gb_s * 1e9 * share)
        out = np.where(hybrid, ep_comm(dataclasses.replace(x, r=hybrid_r), like), ep_comm(x, like))
        deepep = mcore & ~hybrid
        if np.any(deepep):
            out = np.where(deepep, ep_comm(dataclasses.replace(x, r=deepep_rates(x.r, x.system, x.k)), like), out)
        return out

    return charged


@contextmanager
def dispatcher_counterfactual(rates: bool = False):
    """Inside, the estimate charges the dispatchers' own permutation copies (_code_copy_delta) with the alltoall host
    figure refitted on its rows (COUNTERFACTUAL_ALLTOALL_HOST_S) and, with `rates`, Megatron-Core's flex transport at
    its kernels' measured rates, HybridEP's or DeepEP's (_kernel_rate_ep_comm). A counterfactual the estimate does not
    ship (docs/known-gaps.md 232): e.g. `with dispatcher_counterfactual(True): accuracy_bands.compute()`."""
    from trainsizer.estimate import step_time
    from trainsizer.estimate.calibration import load_constants

    host = load_constants().moe_host_s_per_expert_kernel
    saved = (step_time._fp8_expert_padding_time, step_time._ep_comm, host["alltoall"])
    padding, ep_comm = saved[0], saved[1]
    step_time._fp8_expert_padding_time = lambda x: padding(x) + _code_copy_delta(x)
    if rates:
        step_time._ep_comm = _kernel_rate_ep_comm(ep_comm)
    host["alltoall"] = COUNTERFACTUAL_ALLTOALL_HOST_S
    try:
        yield
    finally:
        step_time._fp8_expert_padding_time, step_time._ep_comm, host["alltoall"] = saved


def dispatcher_counterfactual_pairs() -> list[tuple[str, float, float, float, float]]:
    """(pair, measured, shipped, with the dispatchers' own copies, and with the flex transport's kernel rates too) for
    PR 3561's alltoall-over-HybridEP pairs (dispatcher_pairs; docs/known-gaps.md 232)."""
    shipped = {n: (m, p) for n, m, p in dispatcher_pairs()}
    with dispatcher_counterfactual():
        copies = {n: p for n, _, p in dispatcher_pairs()}
    with dispatcher_counterfactual(rates=True):
        both = {n: p for n, _, p in dispatcher_pairs()}
    names = ("BF16 alltoall / hybridep", "MXFP8 alltoall / hybridep")
    return [(n, shipped[n][0], shipped[n][1], copies[n], both[n]) for n in names]


def _bisect(f, lo: float, hi: float, steps: int = 30) -> float:
    """x in [lo, hi] where the increasing-or-decreasing f changes sign (f(lo) and f(hi) of opposite signs), else nan."""
    f_lo = f(lo)
    if f_lo * f(hi) > 0:
        return float("nan")
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if f(mid) * f_lo > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def mxfp8_closing(dispatcher: str = "alltoall") -> tuple[float, float]:
    """(MXFP8 GEMM ratio, MXFP8 cast multiple) that alone would make the predicted MXFP8 / BF16 throughput ratio of PR
    3561's `dispatcher` pair the measured one: fp8.recipes.mxfp8 gemm_efficiency_ratio (shipped 0.81; 0.5 = the BF16
    rate) with the casts as charged, or the casts' bytes and kernels x the multiple at the shipped ratio. nan where the
    range (0.3-0.81; 1-40) cannot reach it. Sizes for docs/known-gaps.md 218 (a), not a fit."""
    runs = {r["precision"]: float(r["model_tflops_per_gpu"]) for r in dispatcher_pair_rows()
            if r["moe_dispatcher"] == dispatcher}
    target = runs["FP8-MX"] / runs["BF16"]

    def gap(constants) -> float:
        p_b, p_m = _pair_steps(dispatcher, constants)[:2]
        return p_b / p_m - target

    ratio = _bisect(lambda r: gap(_mxfp8_constants(gemm_ratio=r)), 0.3, 0.81, 16)
    casts = _bisect(lambda m: gap(_mxfp8_constants(cast_scale=m)), 1.0, 40.0, 16)
    return ratio, casts


def dglu_regression(release: str = "26.06.01", before: str = "26.06") -> list[tuple[str, float, float]]:
    """(row, measured seconds a decoder layer and micro-batch above its twin, the regressed dGLU kernel's excess) for
    each GPT-OSS line of `release` with a twin of `before` in perf_mbridge26 (TWIN_COLUMNS equal). The excess is PR 322's
    measured ratio (DGLU_REGRESSED_US over the fixed kernel, perf_constants.yaml gemm.fused_dglu_us with_dbias) less one,
    times the estimate's time for that kernel's GEMM (fc2's data gradient over
    the routed slots of one micro-batch, balanced routing, on the row's MXFP8 rate): what the kernel's own slowdown
    explains, if it scales with its GEMM. A diagnostic (docs/known-gaps.md 124 (a)): the fixed kernel's bias gradient
    is charged (step_time._fused_dglu_dbias_time, known-gaps 208 (f)), the regression is not."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate import calibration, compute
    from trainsizer.scenario import resolve_job

    twins = {tuple(r[c] for c in TWIN_COLUMNS): r for r in mbridge_rows() if r["release"] == before}
    ratio = DGLU_REGRESSED_US / calibration.load_constants().fused_dglu_us["with_dbias"]
    cat = load_catalog()
    out = []
    for r in rows():
        twin = twins.get(tuple(r[c] for c in TWIN_COLUMNS))
        if r["release"] != release or "gpt_oss" not in r["id"] or twin is None:
            continue
        sc = resolve_job(mbridge_job(r), cat)
        m, gpus = sc.model, int(r["gpu_count"])
        tp, pp, cp = int(r["tp"]), int(r["pp"]), int(r["cp"])
        mb, seq, gbs = int(r["micro_batch"]), int(r["seq_len"]), int(r["global_batch_seqs"])
        passes = gbs // (gpus // (tp * pp * cp) * mb) * (m.layers // pp)  # micro-batches x layers a GPU
        tokens = gbs * seq / gpus  # a GPU's tokens a step
        extra = tokens * (1.0 / float(r["tokens_per_sec_per_gpu"]) - 1.0 / float(twin["tokens_per_sec_per_gpu"])) / passes
        rt = calibration.rates(sc.system, sc.training.precision, fp8_recipe=sc.training.fp8_recipe)
        slots = mb * seq / (tp * cp) * m.experts_per_token
        gemm = float(compute.gemm_time(slots, m.expert_ffn, m.hidden, rt))
        out.append((r["id"], extra, (ratio - 1.0) * gemm))
    return out


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU)."""
    return row_cases(rows(), mbridge_job)


def gpu_side_by_local_experts(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, str, int, str, float, float]]:
    """(row, model, local experts, CUDA graphs, error, error with the host terms off) of every MoE line
    (perf_mbridge26.host_free_errors per model): the eager lines' GPU side alone against the experts a rank holds,
    beside the full-iteration-graph lines, which carry no host term (docs/known-gaps.md 208 (c))."""
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    by = {r["id"]: r for r in rows()}
    cat = load_catalog()
    out = []
    for model in sorted({r["model"] for r in by.values()}):
        m = resolve_job(mbridge_job(next(r for r in by.values() if r["model"] == model)), cat).model
        if not m.is_moe:
            continue
        for rid, err, free in host_free_errors(cs, by, model):
            out.append((rid, model, m.experts // int(by[rid]["ep"]), by[rid]["cuda_graphs"], err, free))
    return out


def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals]: the integral of x n phi(x) Phi(x)^(n-1) on a fine grid (1 for n < 2
    gives 0)."""
    if n < 2:
        return 0.0
    x = np.linspace(-8.0, 8.0, 16001)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return float(np.sum(x * n * pdf * cdf ** (n - 1)) * (x[1] - x[0]))


def forced_balance_load(tokens_per_rank: float, topk: int, experts: int, ep: int) -> float:
    """Expected routed slots of the busiest EP rank over the balanced share under Megatron-Core's forced load balance
    (moe_router_force_load_balancing: RandomSTE replaces the router logits by standard normals from a per-rank
    generator, seed 42 + global rank; megatron/core/transformer/moe/moe_utils.py at core_v0.14.0 and d98e8a64), which
    makes each token's top-k a uniform k-subset of the experts. A rank's count over the EP group's ep x tokens_per_rank
    tokens is a sum of hypergeometric draws (its experts / experts of each token's k), mean tokens_per_rank x topk,
    variance N k q (1 - q) (E - k) / (E - 1) with q = 1 / ep; the ranks' counts sum to a constant (correlation
    -1 / (ep - 1)), so the busiest is the mean plus sigma x E[max of ep normals] x sqrt(ep / (ep - 1)). Every layer's
    dispatch, expert GEMMs and combine wait for that rank. A bound for docs/known-gaps.md 208 (a), not charged."""
    if ep < 2:
        return 1.0
    n, q = ep * tokens_per_rank, 1.0 / ep
    mean = tokens_per_rank * topk
    sigma = math.sqrt(n * topk * q * (1.0 - q) * (experts - topk) / (experts - 1))
    return 1.0 + sigma * expected_max_normal(ep) * math.sqrt(ep / (ep - 1)) / mean


def forced_balance_loads() -> list[tuple[str, int, float]]:
    """(row, EP, busiest rank's expected load) of each MoE line (every Megatron-Bridge performance config forces the
    balance: set_*_common_configs moe_router_force_load_balancing True, r0.3.0 / r0.4.0 / v0.5.1)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    cat = load_catalog()
    out = []
    for r in rows():
        m = resolve_job(mbridge_job(r), cat).model
        if not m.is_moe:
            continue
        tokens = int(r["micro_batch"]) * int(r["seq_len"]) / (int(r["tp"]) * int(r["cp"]))
        out.append((r["id"], int(r["ep"]), forced_balance_load(tokens, m.experts_per_token, m.experts, int(r["ep"]))))
    return out


def mlperf_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(MLPERF.open(encoding="utf-8")))


def mlperf_cases() -> list[tuple[str, str, float, float]]:
    """(row id, submitter, measured, predicted tokens/s/GPU) of the MLPerf rows."""
    rs = mlperf_rows()
    predicted = job_tokens_per_gpu((r["id"], mlperf_nvidia_job(r)) for r in rs)
    return [(r["id"], r["source"].split(", ")[1].split(" closed-division")[0],
             float(r["tokens_per_sec_per_gpu"]), p) for r, (_, p) in zip(rs, predicted, strict=True)]


def scale_ratios(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, str, float, float]]:
    """(series, row, measured, predicted per-GPU rate over the series' smallest run) along each SCALE_SERIES."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    base_rows = [r for r in csv.DictReader(BASE_MLPERF.open(encoding="utf-8")) if r["id"] not in by]
    wanted = {base for _, base, _ in SCALE_SERIES} | {rid for _, _, rest in SCALE_SERIES for rid in rest}
    base_rows = [r | {"fp8_transpose_cache": ""} for r in base_rows if r["id"] in wanted]
    for r, (_, p) in zip(base_rows, job_tokens_per_gpu((r["id"], mlperf_nvidia_job(r)) for r in base_rows), strict=True):
        by[r["id"]] = (float(r["tokens_per_sec_per_gpu"]), p)
    out = []
    for name, base, rest in SCALE_SERIES:
        m0, p0 = by[base]
        out += [(name, rid, by[rid][0] / m0, by[rid][1] / p0) for rid in rest]
    return out


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    jobs = [(r["id"], mbridge_job(r)) for r in rows()]
    return job_fits(jobs + [(r["id"], mlperf_nvidia_job(r)) for r in mlperf_rows()])


def main() -> None:
    cs = cases()
    errs = print_cases(cs)
    print(f"\nMegatron-Bridge 26.02.01 / 26.04.01 / 26.06.01, 25.11 GPT-OSS (held out, nothing fitted): n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    rest = [e for (rid, _, _, _), e in zip(cs, errs, strict=True) if "gpt_oss" not in rid]
    print(f"  without GPT-OSS 120B: n={len(rest)} MAPE {100 * sum(rest) / len(rest):.1f}%")
    print_groups(cs, {r["id"]: r for r in rows()}, ("release", "system", "precision", "model"))
    print_worst(cs, 8)
    print_missing_per_token_layer(cs, {r["id"]: r for r in rows()})
    print("26.06.01 GPT-OSS lines over their 26.06 twins, ms a layer and micro-batch: measured, and cudnn-frontend 1.24's "
          "dGLU-dbias regression at PR 322's ratio (known-gaps 124 (a)):")
    for rid, extra, charge in dglu_regression():
        print(f"  {rid:54s} measured {1e3 * extra:6.2f}  kernel ratio {1e3 * charge:5.2f}")
    print("Megatron-Bridge PR 3561, GPT-OSS 120B on 64 GB200 (EP 64, MBS 4), one layout under two dispatchers and two "
          "precisions (known-gaps 208 (b)):")
    for name, meas, pred in dispatcher_pairs():
        print(f"  {name:28s} measured {meas:.3f} predicted {pred:.3f}")
    print("  MXFP8's saving over BF16 there, ms a layer and micro-batch, and what alone would close it (known-gaps 218 "
          "(a); rest = the FP8 padding copies, alltoall only):")
    for dispatcher in ("alltoall", "flex"):
        t = mxfp8_saving_terms(dispatcher)
        ratio, casts = mxfp8_closing(dispatcher)
        print(f"  {dispatcher:8s} measured {t['measured']:.2f} predicted {t['predicted']:.2f} = GEMMs {t['gemms']:+.2f} "
              f"casts {t['casts']:+.2f} host {t['host']:+.2f} rest {t['rest']:+.2f}; closed by an MXFP8 GEMM ratio of "
              f"{ratio:.2f} (shipped 0.81) or casts x {casts:.2f}")
    print("  alltoall over HybridEP with each dispatcher's own permutation copies as Megatron-LM's code runs them, then "
          "the flex transport's measured kernel rates too (a counterfactual, not shipped; known-gaps 232):")
    for name, meas, shipped, copies, both in dispatcher_counterfactual_pairs():
        print(f"  {name:28s} measured {meas:.3f} shipped {shipped:.3f} copies {copies:.3f} copies + kernel rates "
              f"{both:.3f}")
    print("MoE lines by the experts a rank holds: median error as predicted / with the host terms off (the GPU side "
          "alone; known-gaps 208 (c)):")
    groups: dict[tuple[str, str, str, int], list[tuple[float, float]]] = {}
    for rid, model, local, graphs, err, free in gpu_side_by_local_experts(cs):
        part = "H100" if "_h100_" in rid else "Blackwell"
        path = "full graph" if graphs == "full_iteration" else "eager"
        groups.setdefault((model, part, path, local), []).append((err, free))
    for (model, part, path, local), es in sorted(groups.items()):
        print(f"  {model:16s} {part:9s} {path:10s} {local:3d} local experts n={len(es):2d} "
              f"{100 * np.median([e for e, _ in es]):+6.1f}% / {100 * np.median([f for _, f in es]):+6.1f}%")
    loads = forced_balance_loads()
    print("busiest EP rank's expected routed slots over the balanced share under the configs' forced balance "
          f"(random top-k; known-gaps 208 (a)): {min(v for _, _, v in loads):.4f}-{max(v for _, _, v in loads):.4f} "
          f"over {len(loads)} MoE lines")
    for ep in sorted({e for _, e, _ in loads}):
        vals = [v for _, e, v in loads if e == ep]
        print(f"  EP {ep:3d}: n={len(vals):2d} {min(vals):.4f}-{max(vals):.4f}")
    mc = mlperf_cases()
    errs = print_cases(mc, blank_line=True)
    print(f"\nMLPerf v5.0 / v5.1 other submitters, NVIDIA's implementation (held out, nothing fitted): n={len(mc)} MAPE "
          f"{100 * errs.mean():.1f}%")
    keys = (("round", lambda rid, s: rid.split("_")[0]),
            ("task", lambda rid, s: "LoRA" if "_lora_" in rid else ("8B NVFP4" if "_nvfp4_" in rid else "8B FP8")),
            ("submitter", lambda rid, s: s))
    print_keyed_groups(mc, keys, 22)
    print_worst(mc, 8)
    print("per-GPU rate over the smallest run of the same submitter, code and layout family (measured vs predicted):")
    for name, rid, meas, pred in scale_ratios(mc):
        print(f"  {name:28s} {rid:54s} measured {meas:.3f} predicted {pred:.3f}")
    print_fits(fits(), "perf_heldout27")


if __name__ == "__main__":
    main()
