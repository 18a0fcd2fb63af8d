"""Rules a parallel strategy must obey, as one vectorised table used two ways.

`valid_mask` returns a boolean array (one entry per strategy) for the search; `check_strategy` checks one
strategy and raises `StrategyError(rule, detail)` naming the first broken rule. Soft rules (a legal but
usually slow layout) come back from `check_strategy` as warnings.

Origins (one line each):
- TP must divide attention heads: Megatron-Core `TransformerConfig` (num_attention_heads % tp == 0), torchtitan's
  model configs. TP must divide the KV groups, or on a stack that sub-shards the QKV activations
  (framework.kv_subshard_frameworks: Megatron-Core core_v0.16.0+, "num_query_groups must be a multiple or
  divisor of tensor_model_parallel_size") be a multiple of them (`_kv_heads_rule`). Multi-query attention (one
  KV head) under the `megatron` style is also allowed: the BigCode Megatron-LM fork (--attention-head-type multiquery)
  keeps the single K/V projection whole on every TP rank; StarCoderBase 15.5B trained that way with TP 4 (Li
  et al. 2023, arXiv:2305.06161 s5.6). The replicated K/V GEMMs are not added to the time: 2 x 128 of a
  layer's ~10 x hidden columns per token, under 0.5% at StarCoder's width.
- TP must divide the MLP / expert intermediate size (column-parallel split): Megatron-LM `ColumnParallelLinear`.
- EP must divide the number of experts and DP x CP: Megatron-Core `parallel_state.initialize_model_parallel`.
- CP needs seq_len divisible by 2 * CP (causal load balancing): Megatron-Core / Transformer Engine
  context-parallel docs.
- Sequence parallelism needs each CP rank's sequence divisible by TP (rule sp_divides_seq): Megatron-Core's
  scatter to the sequence-parallel region (_split_along_first_dim), torchtitan's seq_len_divisor.
- Interleaved schedule: micro-batches divisible by pp: Megatron-LM arguments.py / schedules.py. Layers not
  divisible by pp (or pp * vpp) are a warning, not an error: Megatron-Core splits unevenly with
  --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers (Llama 3 405B: 126 layers on
  pp=16 with interleaving, one layer fewer on the first and the last stage; Llama 3 paper Sec. 3.3.2).
- ZeRO-2 and ZeRO-3 are not supported together with pipeline parallelism in DeepSpeed (PipelineEngine asserts
  zero stage < 2): DeepSpeed docs "Pipeline Parallelism"; ZeRO-2 by rule zero2_with_pp (ZERO2_PP_REFUSED:
  deepspeed), ZeRO-3 by zero3_with_pp, which names its frameworks (ZERO3_PP_REFUSED):
  DeepSpeed, the HF Trainer (its ZeRO-3 is DeepSpeed or FSDP1) and FSDP1-style stacks; torchtitan composes
  FSDP2 with torch.distributed.pipelining (its 3D/4D layouts, torchtitan docs/composability.md), and "auto"
  resolves such a strategy to torchtitan.
- Pipeline parallelism needs a stack with a pipeline schedule (PIPELINE_FRAMEWORKS): Megatron-LM / Megatron-Core
  (schedules.py), DeepSpeed's PipelineEngine (runtime/pipe), torch.distributed.pipelining under torchtitan,
  DualPipe. The HF Trainer / TRL / PEFT (DDP, DeepSpeed ZeRO or FSDP: the Trainer builds no PipelineModule),
  plain PyTorch FSDP stacks and torchtune (FSDP2 recipes, tensor parallel at most) have none. The interleaved
  schedule (vpp > 1) is Megatron's and torch.distributed.pipelining's (ScheduleInterleaved1F1B); DeepSpeed's
  pipe/schedule.py has TrainSchedule (1F1B) only (INTERLEAVED_FRAMEWORKS).
- pp * vpp model chunks may not exceed the decoder layers, except that Megatron-Core's
  account_for_embedding/loss_in_pipeline_split give the embedding and the loss a slot each (up to 2 more
  chunks; megatron/core/transformer/transformer_config.py); those options exist in the Megatron family and in
  DeepSpeed's pipeline partitioning (Megatron-DeepSpeed --pp-partition-method 'type:transformer|embedding').
- ZeRO-Offload needs ZeRO >= 1 and parameter offload needs ZeRO-3: DeepSpeed docs "ZeRO-Offload" /
  "ZeRO-Infinity".
- QLoRA keeps NF4 weights with bf16/fp16 compute; FP8 GEMMs are not supported on NF4 weights:
  bitsandbytes docs (Linear4bit compute_dtype).
- Partial full recompute (recompute_method uniform | block, recompute_num_layers N) is Megatron's (Megatron-LM
  --recompute-method, Megatron-Core TransformerConfig, NeMo activations_checkpoint_method); TransformerConfig asks
  for N "between 1 and num_layers_per_pipeline_rank" (block with 0 runs and checkpoints nothing).
- Optimizer in backward cannot accumulate gradients over micro-batches: torchtune recipes assert
  gradient_accumulation_steps == 1 with optimizer_in_bwd.
- TP across nodes is legal but communication-bound: Narayanan et al. 2021 (arXiv:2104.04473) Sec. 3.3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from trainsizer.errors import StrategyError
from trainsizer.estimate.framework import (
    AUTO_CHOICES,
    MCORE_RELEASE_FACTS,
    auto_index,
    kv_subshard_frameworks,
    mcore_has,
)
from trainsizer.estimate.inputs import (
    DEGREE_FIELDS,
    FLAG_FIELDS,
    MODE_FIELDS,
    OFFLOAD,
    RECOMPUTE,
    Strategy,
    System,
    Training,
)
from trainsizer.messages import Listing, msg
from trainsizer.models.arch import ModelArch
from trainsizer.names import FLEX_DISPATCHERS, MEGATRON_FSDP_ZERO, RECOMPUTE_METHODS, RECOMPUTE_MODULES

# Frameworks whose ZeRO-3 / full-shard path cannot run with pipeline parallelism (see module docstring).
ZERO3_PP_REFUSED = ("deepspeed", "hf", "fsdp")
# Frameworks whose ZeRO-2 cannot run with pipeline parallelism: DeepSpeed's PipelineEngine asserts
# zero_optimization_stage() < ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"
# (deepspeed/runtime/pipe/engine.py, since fbece50b2, PR 980, 2021-04-19; read at edaa7221, 2026-08)
ZERO2_PP_REFUSED = ("deepspeed",)
# Frameworks that run a pipeline schedule (pp > 1) and those with an interleaved one (vpp > 1); "auto" is judged as
# the stack it resolves to (_resolves_to). See the module docstring.
PIPELINE_FRAMEWORKS = ("megatron", "megatron-core", "deepseek-dualpipe", "deepspeed", "torchtitan")
INTERLEAVED_FRAMEWORKS = ("megatron", "megatron-core", "deepseek-dualpipe", "torchtitan")
# Frameworks with Megatron-Core's embedding / loss pipeline slots ("auto": the stack it resolves to, _resolves_to).
# DeepSpeed's PipelineModule counts them too under Megatron-DeepSpeed's --pp-partition-method
# 'type:transformer|embedding' (the tied embedding layers at both ends partitioned as layers: BLOOM-176B's 70 layers
# + 2 over PP 12, bigscience-workshop/bigscience train/tr11-176B-ml; GLM-130B's 9 x 8 - 2 = 70, arXiv:2210.02414 s3).
PIPELINE_SLOT_FRAMEWORKS = ("megatron-core", "megatron", "deepseek-dualpipe", "deepspeed")
# Frameworks where the first / last pipeline rank's decoder layers can be stated (strategy.pp_first_stage_layers /
# pp_last_stage_layers): Megatron-Core num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage and
# pipeline_model_parallel_layout (Megatron-Bridge's DeepSeek-V3 recipes), Megatron-LM's
# --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers; "auto" as above
STAGE_LAYERS_FRAMEWORKS = ("megatron-core", "megatron")
# Frameworks where every pipeline rank's decoder layers can be stated (strategy.pp_stage_layers): Megatron-Core's
# pipeline_model_parallel_layout (any per-rank counts), and the megatron style, which the nanotron rows take, with
# nanotron's compute-balanced build_model (models/base.py at 0e0a27ea); "auto" as above
STAGE_LAYER_LIST_FRAMEWORKS = ("megatron-core", "megatron")
# Frameworks with Megatron-Core's per-module selective recompute (TransformerConfig.recompute_modules).
RECOMPUTE_MODULE_FRAMEWORKS = ("megatron-core",)
# Frameworks with Megatron's partial full recompute (recompute_method / recompute_num_layers); "auto" as below
PARTIAL_RECOMPUTE_FRAMEWORKS = ("megatron-core", "megatron")
# fp8_transpose_cache false is Megatron-Core's disable_parameter_transpose_cache; "auto" as below
FP8_TRANSPOSE_CACHE_FRAMEWORKS = ("megatron-core",)
# compile_loss is torchtitan's CompileConfig components (the model and the loss compiled apart); "auto" as below
COMPILE_LOSS_FRAMEWORKS = ("torchtitan",)
# sac_saves_attention is torchtitan's per-op SAC save list (_op_sac_save_list: which SDPA backends it keeps); "auto" as
# below
SAC_SAVES_ATTENTION_FRAMEWORKS = ("torchtitan",)
# gradient_accumulation_fusion is Megatron's (Megatron-LM --no-gradient-accumulation-fusion, Megatron-Core
# ModelParallelConfig); nanotron's accumulate_grad_in_fp32 is run as the `megatron` style; "auto" as below
GRAD_ACCUM_FUSION_FRAMEWORKS = ("megatron-core", "megatron")
# ddp_impl (names.DDP_IMPLS) where a framework runs it: torch DDP under the HF Trainer / accelerate and nanotron
# (run as framework megatron); Megatron's contiguous gradient buffer under Megatron-LM and Megatron-Core. "auto" as
# below
DDP_IMPL_FRAMEWORKS = {"torch": ("hf", "megatron"), "megatron": ("megatron-core", "megatron")}
# activation_offload: N (a layer count, not true) is Megatron-Core's cpu_offloading_num_layers; "auto" is judged
# as the stack it resolves to (_resolves_to)
OFFLOAD_LAYERS_FRAMEWORKS = ("megatron-core",)
# moe_a2a_overlap is Megatron-Core's overlap_moe_expert_parallel_comm (combined 1F1B schedule); "auto" as above
MOE_A2A_OVERLAP_FRAMEWORKS = ("megatron-core",)
# Transformer Engine options Megatron-Core exposes: fp8_dot_product_attention, activation_func_fp8_input_store,
# enable_cuda_graph / cuda_graph_scope (names.CUDA_GRAPHS); "auto" as above
TE_GRAPH_FRAMEWORKS = ("megatron-core",)
# Transformer Engine registers its fused grouped MLP (ForwardGroupedMLP_CuTeGEMMSwiGLU_MXFP8) for MXFP8 on compute
# capability 10 only (transformer_engine/pytorch/ops/fused/forward_grouped_mlp.py is_supported, v2.15): these parts
FUSED_GROUPED_MLP_PARTS = ("b200", "b300", "gb200", "gb300")
# Stacks that run hybrid Mamba-2 / attention models as modelled (ModelArch.layer_pattern): Megatron-Core's MambaModel
# (Megatron-Bridge, NeMo) and transformers' NemotronH (modeling_nemotron_h.py, mamba_ssm kernels) under the HF Trainer
# or PyTorch FSDP; the torchtitan style as NeMo AutoModel runs it (FSDP2 + EP: components/models/nemotron_v3/layers.py
# at 36044ad3d, as at c0e4fe1bc: one mixer a pre-norm block, batch-first, trained through mamba_ssm's
# mamba_split_conv1d_scan_combined as Megatron-Core's MambaMixer; docs/known-gaps.md 259 (a)); torchtitan itself,
# torchtune, DeepSpeed's Megatron and the 2020-22 Megatron-LM have no Mamba-2 layer
HYBRID_FRAMEWORKS = ("megatron-core", "hf", "fsdp", "torchtitan")
# local_batch (one pipeline schedule per local batch, gradients accumulated across schedules): torchtitan's train
# loop (local_batch_size, gradient accumulation over pp_schedule.step calls) and NeMo AutoModel's (benchmark.py:
# ga_steps = global / (local_batch x dp) schedule steps), both on the torchtitan style; "auto" as above
LOCAL_BATCH_FRAMEWORKS = ("torchtitan",)
# PyTorch's own attention kernels (attention_kernel sdpa: torch scaled_dot_product_attention; flex:
# torch.nn.attention.flex_attention) and the stacks that call them: torchtitan, torchtune, transformers' sdpa /
# flex_attention attn_implementation under the HF Trainer, FSDP or DeepSpeed, and DualPipe's PyTorch modules.
# Megatron-Core (NeMo, Megatron-Bridge) and Megatron-LM call neither: their attention is Transformer Engine's
# DotProductAttention (flash-attn: fa2 / fa1; cuDNN fused or FA3: native; TE's unfused path) or Megatron's own
# unfused core attention (megatron/core/transformer/dot_product_attention.py, attention_backend flash / fused /
# unfused / local). "auto" as the stack it resolves to.
TORCH_ATTENTION_KERNELS = ("sdpa", "flex")
TORCH_ATTENTION_FRAMEWORKS = ("torchtitan", "torchtune", "hf", "fsdp", "deepspeed", "deepseek-dualpipe")
# fp8_lm_head: the LM head's GEMMs in MXFP8. Megatron-Core's fp8_output_proj (TELMHeadColumnParallelLinear under the
# MXFP8 autocast) and torchtitan's MXFP8LinearConverter, which converts every Linear, the output projection included,
# unless its fqns filter it (llama3_8b_mxfp8 lists none; known-gaps 57 (n)). Megatron-LM, DeepSpeed, the HF Trainer,
# FSDP and torchtune keep the head in 16 bit. "auto" as the stack it resolves to.
FP8_LM_HEAD_FRAMEWORKS = ("megatron-core", "torchtitan")
# fp8_recipe nvfp4-torchao: torchao's prototype NVFP4Linear (torchao/prototype/moe_training/nvfp4_training), a module
# swap a PyTorch-native stack makes: torchtitan's NVFP4LinearConverter (components/quantization/nvfp4.py at bcc09297a)
# or a plain FSDP2 script's. Megatron stacks, DeepSpeed and the HF Trainer run Transformer Engine's NVFP4 (fp8_recipe
# nvfp4) or none; torchtune has no NVFP4 converter.
TORCHAO_NVFP4_FRAMEWORKS = ("torchtitan", "fsdp")
# defer_embedding_wgrad: Megatron-Core's defer_embedding_wgrad_compute (the output layer's ColumnParallelLinear keeps
# its input and output gradient in embedding_activation_buffer / grad_output_buffer and the weight gradients run
# after the pipeline flush: core/tensor_parallel/layers.py, pipeline_parallel/schedules.py
# finish_embedding_wgrad_compute; NeMo 1's training_step drains them itself). No other stack defers them. "auto" as
# the stack it resolves to.
DEFER_WGRAD_FRAMEWORKS = ("megatron-core",)
# moe_eager_glue: whether torchtitan's MoE glue (MoE.forward, the EP dispatch / combine hooks) runs outside its compile;
# its bytes are counted from torchtitan's code (perf_constants.yaml gemm.moe_eager_glue_bytes), so torchtitan only
MOE_EAGER_GLUE_FRAMEWORKS = ("torchtitan",)
# moe_dispatcher flex (DeepEP / HybridEP) by the part's vendor: the stacks whose flex dispatcher runs there (None:
# every stack that has one). DeepEP and HybridEP are NVIDIA's kernels (NVSHMEM, IBGDA; deepseek-ai/DeepEP README).
# On AMD parts only Primus's Megatron-LM backend runs one: its use_turbo_deepep patch swaps Megatron-Core's
# MoEFlexTokenDispatcher for Primus-Turbo's DeepEP port and sets moe_token_dispatcher_type flex (AMD-AGI/Primus
# primus/backends/megatron/patches/turbo, 'megatron.turbo.moe_dispatcher'; Primus-Turbo primus_turbo/pytorch/
# deep_ep, 'derived from ROCm internal DeepEP', experimental; read 2026-12-04), timed as Megatron-Core's flex.
# torchtitan's and NeMo AutoModel's DeepEP import deep_ep, for which no ROCm build was read (Primus's torchtitan
# backend patches no dispatcher). Other vendors: none read. A part of unknown vendor ("") is not judged.
FLEX_DISPATCHER_VENDORS: dict[str, tuple[str, ...] | None] = {"nvidia": None, "amd": ("megatron-core",)}
# strategy.experts_implementation: transformers' own MoE modelling code runs the experts (its 4.x eager loop or v5's
# experts backends); the HF Trainer / TRL / PEFT / accelerate stack (hf) runs it. The other stacks run their own MoE
# modules (Megatron-Core TEGroupedMLP, torchtitan's grouped_mm, DeepSpeed-MoE). "auto" as the stack it resolves to.
EXPERTS_IMPLEMENTATION_FRAMEWORKS = ("hf",)
# Frameworks whose launcher fills a DeepSpeed config's "auto" bucket sizes from the model (HF Trainer / accelerate:
# strategy.zero3_bucket_sizes)
DEEPSPEED_AUTO_FRAMEWORKS = ("hf",)
# Frameworks whose ZeRO-3 runs on DeepSpeed's engine, where a model is built inside or outside deepspeed.zero.Init.
ZERO_INIT_FRAMEWORKS = ("hf", "deepspeed")
# Frameworks whose QLoRA quantises with torchao's to_nf4 on the GPU at model init (torchtune 0.1: estimate.nf4_init).
NF4_UNCHUNKED_FRAMEWORKS = ("torchtune",)
# Frameworks whose release strategy.megatron_core_version names (framework.MCORE_RELEASE_FACTS).
MCORE_VERSION_FRAMEWORKS = ("megatron-core",)
# Frameworks that run Megatron-FSDP (strategy.megatron_fsdp_sharding: Megatron-Core's use_megatron_fsdp).
MEGATRON_FSDP_FRAMEWORKS = ("megatron-core",)
# Frameworks that replicate a single KV head (multi-query attention) on every TP rank.
MQA_REPLICATED_KV_FRAMEWORKS = ("megatron",)

RULES = (
    "positive_degrees",
    "gpu_count",
    "tp_divides_heads",
    "tp_divides_kv_heads",
    "tp_divides_ffn",
    "pp_exceeds_layers",
    "vpp_needs_pp",
    "interleaved_microbatches",
    "ep_needs_moe",
    "ep_divides_experts",
    "ep_divides_dp_cp",
    "etp_ep_divide_gpus",
    "etp_divides_ffn",
    "etp_torchtitan",
    "cp_divides_seq",
    "sp_divides_seq",
    "cp_a2a_divides_heads",
    "batch_divisible",
    "local_batch_divides",
    "local_batch_framework",
    "zero_stage",
    "shard_group_divides_dp",
    "pipeline_framework",
    "interleaved_framework",
    "zero3_with_pp",
    "zero2_with_pp",
    "pipeline_slots_need_megatron",
    "pp_stage_layers_framework",
    "pp_stage_layers_pipelined",
    "pp_stage_layers_split",
    "pp_stage_list_framework",
    "pp_stage_list_split",
    "optimizer_in_backward_no_accumulation",
    "activation_offload_layers",
    "activation_offload_layers_framework",
    "activation_offload_layers_pp",
    "activation_offload_layers_recompute",
    "recompute_modules_framework",
    "recompute_num_layers_framework",
    "recompute_num_layers_range",
    "fp8_transpose_cache_framework",
    "compile_loss_framework",
    "sac_saves_attention_framework",
    "gradient_accumulation_fusion_framework",
    "ddp_impl_framework",
    "recompute_modules_model",
    "moe_a2a_overlap_framework",
    "moe_a2a_overlap_ep",
    "moe_a2a_overlap_recompute",
    "moe_a2a_overlap_vpp",
    "moe_a2a_overlap_precision",
    "moe_dispatcher_vendor",
    "fp8_attention_precision",
    "moe_fused_grouped_mlp_recipe",
    "fp8_lm_head_recipe",
    "te_options_framework",
    "experts_implementation_framework",
    "expert_weight_copies_eager",
    "zero3_expert_fetch_framework",
    "zero3_bucket_sizes_framework",
    "zero_init_framework",
    "nf4_quantize_unchunked_framework",
    "megatron_core_version_framework",
    "fp8_lm_head_framework",
    "fp8_recipe_torchao_framework",
    "defer_embedding_wgrad_framework",
    "defer_embedding_wgrad_pipelined",
    "fsdp_no_sync_fsdp",
    "fsdp_reshard_fsdp",
    "megatron_fsdp_sharding_framework",
    "megatron_fsdp_sharding_zero",
    "moe_eager_glue_framework",
    "attention_kernel_framework",
    "cudnn_release_part",
    "offload_needs_zero",
    "qlora_fp8",
    "nf4_dequant_dtype_method",
    "nf4_decode_method",
    "nf4_double_quant_method",
    "nf4_options_method",
    "lm_head_chunk_nf4_head",
    "recompute_code",
    "offload_code",
    "hybrid_framework",
    "tp_divides_ssm",
    "hybrid_cp",
    "hybrid_adapters",
)
WARNINGS = ("tp_across_nodes", "ep_across_domains", "pp_uneven_layers", "vpp_uneven_layers")


STRATEGY_FIELDS = (*DEGREE_FIELDS, *MODE_FIELDS, *FLAG_FIELDS)


def require_one_strategy(strategy: Strategy, estimator: str, batch_api: str) -> None:
    """SpecError when a field of `strategy` is an array: the scalar estimators explain one strategy and would
    otherwise answer for the first entry alone."""
    from trainsizer.errors import SpecError

    for name in STRATEGY_FIELDS:
        value = getattr(strategy, name)
        if np.ndim(value) != 0:
            raise SpecError(f"strategy.{name}", msg("one_strategy_only", estimator=estimator, batch_api=batch_api),
                            value=value)


def strategy_codes(strategy: Strategy) -> tuple[np.ndarray, np.ndarray]:
    """(recompute codes, offload codes) as float arrays; an unknown mode name raises SpecError."""
    from trainsizer.errors import unknown_name

    modes = (("strategy.recompute", "recompute mode", strategy.recompute, RECOMPUTE),
             ("strategy.offload", "offload mode", strategy.offload, OFFLOAD))
    for where, kind, value, allowed in modes:
        if isinstance(value, str) and value not in allowed:
            raise unknown_name(where, kind, value, allowed)
    for module in getattr(strategy, "recompute_modules", None) or ():
        if module not in RECOMPUTE_MODULES:
            raise unknown_name("strategy.recompute_modules", "recompute module", module, RECOMPUTE_MODULES)
    method = getattr(strategy, "recompute_method", None)
    if method is not None and method not in RECOMPUTE_METHODS:
        raise unknown_name("strategy.recompute_method", "recompute method", method, RECOMPUTE_METHODS)
    return np.asarray(strategy.recompute_code(), dtype=float), np.asarray(strategy.offload_code(), dtype=float)


def strategy_arrays(strategy: Strategy) -> dict[str, np.ndarray]:
    """Every per-strategy field (degrees, mode codes, flags as 0/1) as contiguous float arrays of one broadcast
    shape, keyed by field name: the one conversion the estimators, the rule table and the batch path share."""
    rec, off = strategy_codes(strategy)
    values = {f: np.asarray(getattr(strategy, f), dtype=float) for f in DEGREE_FIELDS}
    values["recompute"], values["offload"] = rec, off
    for f in FLAG_FIELDS:  # a duck-typed strategy may leave a flag out: the Strategy default then
        values[f] = np.asarray(getattr(strategy, f, _FLAG_DEFAULTS[f]), dtype=float)
    values["etp"] = expert_tp(strategy, values)
    shape = np.broadcast_shapes(*(v.shape for v in values.values()))
    # np.ascontiguousarray would turn one strategy (0-d) into shape (1,): keep 0-d as 0-d
    return {k: v if v.shape == shape and v.flags.c_contiguous
            else np.array(np.broadcast_to(v, shape), order="C") for k, v in values.items()}


# frameworks whose routed experts under EP are not tensor-parallel unless asked (expert TP 1 by default): torchtitan
# (torchtitan/config/job_config.py Parallelism.expert_tensor_parallel_degree = 1, "no effect when ep = 1": without EP
# its TP plan splits the experts as the dense MLP). The others split them as their dense layers: Megatron-Core's
# rule (megatron/training/arguments.py and core/parallel_state.py initialize_model_parallel:
# expert_tensor_parallel_size None -> tensor_model_parallel_size), and so far every other style (docs/known-gaps.md 45)
EXPERT_TP1_FRAMEWORKS = ("torchtitan",)


def expert_tp(strategy: Any, values: dict[str, np.ndarray]) -> np.ndarray:
    """The routed experts' tensor-parallel degree per strategy: `strategy.etp` where given, else the framework's
    default (`EXPERT_TP1_FRAMEWORKS`: 1 under EP, tp without; the rest: tp). "auto" takes the default of the stack
    each strategy resolves to (framework.auto_index; the pretraining flag only matters at tp 1, where both are 1)."""
    etp = getattr(strategy, "etp", None)
    if etp is not None:
        return np.asarray(etp, dtype=float)
    tp, ep = values["tp"], values["ep"]
    fw = getattr(strategy, "framework", "auto")
    if fw == "auto":
        idx = auto_index(tp, values["pp"], values["cp"], ep, values["distributed_optimizer"] > 0, values["zero"])
        tp1 = np.isin(np.asarray(AUTO_CHOICES)[np.asarray(idx)], EXPERT_TP1_FRAMEWORKS)
    else:
        tp1 = np.asarray(fw in EXPERT_TP1_FRAMEWORKS)
    return np.where(tp1 & (ep > 1), 1.0, tp)


def shard_groups(s: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(dense, routed-expert) ranks that ZeRO / FSDP shards a GPU's parameters over (`strategy_arrays` fields): the
    DP x CP ranks, or the hybrid-shard group (shard_group > 0); the experts over that group's ranks holding the same
    experts, the group x tp / (EP x expert TP), at least 1 (EP borrows from it: torchtitan's dp_shard_mod_ep, NeMo
    AutoModel's ep_shard mesh, dp x cp / ep, and under expert TP 1 the TP ranks too, torchtitan's dp_shard_in_ep x
    tp; Megatron's expert data-parallel group without hybrid sharding, world / (pp x ep x etp): core/parallel_state.py
    initialize_model_parallel expert_data_parallel_size)."""
    dpc = s["dp"] * s["cp"]
    sg = s["shard_group"]
    dense = np.where(sg > 0, np.minimum(sg, dpc), dpc)
    etp = s.get("etp", s["tp"])
    return dense, np.maximum(dense * s["tp"] / np.maximum(s["ep"] * etp, 1.0), 1.0)


_FLAG_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Strategy) if f.name in FLAG_FIELDS}

_Rules = dict[str, tuple[np.ndarray, Callable[[dict[str, Any]], str]]]


def _rule_table(
    model: ModelArch, training: Training, system: System, strategy: Strategy
) -> _Rules:
    """rule -> (ok mask, detail(values of one strategy) -> message)."""
    a = strategy_arrays(strategy)
    tp, pp, vpp, dp, cp, ep, zero, sg, mb = (a[n] for n in DEGREE_FIELDS)
    rec, off, emb, loss = a["recompute"], a["offload"], a["pipeline_embedding_layer"], a["pipeline_loss_layer"]
    fw = getattr(strategy, "framework", "auto")
    slots = (emb > 0).astype(float) + (loss > 0).astype(float)
    gpus = tp * pp * dp * cp
    B, s = training.global_batch_seqs, training.seq_len
    safe = lambda x: np.where(x > 0, x, 1)  # noqa: E731  (avoid division by zero in masks)
    etp = a["etp"]
    ffns = [model.ffn] if model.dense_layers or not model.is_moe or model.moe_every > 1 else []
    if model.is_moe:
        ffns += [model.expert_ffn] + ([model.shared_expert_ffn] if model.shared_expert_ffn else [])
    ffn_ok = np.ones(tp.shape, dtype=bool)
    for i, f_ in enumerate(ffns):
        # the routed experts split over the expert TP degree: checked here where it is tp, else by etp_divides_ffn
        routed = model.is_moe and i == len(ffns) - 1 - bool(model.shared_expert_ffn)
        ffn_ok &= ((f_ % safe(tp)) == 0) | (routed & (etp != tp))
    n_micro = B / safe(mb * dp)
    c = SimpleNamespace(model=model, training=training, system=system, strategy=strategy, tp=tp, pp=pp, vpp=vpp,
                        dp=dp, cp=cp, ep=ep, etp=etp, zero=zero, sg=sg, mb=mb, rec=rec, off=off, fw=fw,
                        slots=slots, gpus=gpus, B=B, s=s, safe=safe, ffns=ffns, ffn_ok=ffn_ok, n_micro=n_micro,
                        dist_opt=a["distributed_optimizer"], sp=a["sequence_parallel"],
                        pretraining=training.method in ("pretrain", "cpt"),
                        device_map=getattr(strategy, "device_map", None) is not None)
    # "auto": the stack each strategy resolves to, once for every rule that asks (_resolves_to)
    c.auto_idx = np.asarray(auto_index(tp, pp, cp, ep, c.dist_opt, zero, c.pretraining)) if fw == "auto" else None
    t = _shape_and_pipeline_rules(c) | _expert_sharding_and_stack_rules(c)
    t["_values"] = (None, lambda v: "")  # type: ignore[assignment]
    t["_arrays"] = dict(tp=tp, pp=pp, vpp=vpp, dp=dp, cp=cp, ep=ep, etp=etp, zero=zero, shard_group=sg,
                        micro_batch=mb, rec=rec, off=off, slots=slots,
                        dist_opt=a["distributed_optimizer"])  # type: ignore[assignment]
    return t



def _shape_and_pipeline_rules(c: SimpleNamespace) -> _Rules:
    """Degrees, GPU count, TP against the model's shapes, pipeline depth and interleaving."""
    model, system, B, safe = c.model, c.system, c.B, c.safe
    tp, pp, vpp, dp, cp, ep, mb, sg = c.tp, c.pp, c.vpp, c.dp, c.cp, c.ep, c.mb, c.sg
    gpus, ffns, ffn_ok, slots, n_micro = c.gpus, c.ffns, c.ffn_ok, c.slots, c.n_micro
    return {
        "positive_degrees": (
            (tp >= 1) & (pp >= 1) & (vpp >= 1) & (dp >= 1) & (cp >= 1) & (ep >= 1) & (mb >= 1) & (sg >= 0),
            lambda v: msg("rule_positive_degrees"),
        ),
        "gpu_count": (
            # device_map auto: the cards accelerate's split leaves without a decoder layer sit idle (estimate.device_map)
            (gpus == system.gpus) | (c.device_map & (gpus <= system.gpus)),
            lambda v: msg("rule_gpu_count", tp=v["tp"], pp=v["pp"], dp=v["dp"], cp=v["cp"],
                          product=v["tp"] * v["pp"] * v["dp"] * v["cp"], gpus=system.gpus),
        ),
        "tp_divides_heads": (
            model.heads % safe(tp) == 0,
            lambda v: msg("rule_tp_divides_heads", tp=v["tp"], heads=model.heads),
        ),
        "tp_divides_kv_heads": _kv_heads_rule(c),
        "tp_divides_ffn": (
            ffn_ok,
            lambda v: msg("rule_tp_divides_ffn", tp=v["tp"], sizes=", ".join(map(str, ffns))),
        ),
        "pp_exceeds_layers": (
            pp * np.maximum(vpp, 1) <= model.layers + np.where(pp > 1, slots, 0.0),
            lambda v: msg("rule_pp_exceeds_layers_slots" if v["slots"] else "rule_pp_exceeds_layers",
                          pp=v["pp"], vpp=v["vpp"], layers=model.layers, slots=v["slots"]),
        ),
        "vpp_needs_pp": (
            (vpp <= 1) | (pp > 1),
            lambda v: msg("rule_vpp_needs_pp", vpp=v["vpp"]),
        ),
        "interleaved_microbatches": (
            (vpp <= 1) | (np.mod(n_micro, safe(pp)) == 0),
            lambda v: msg("rule_interleaved_microbatches", batch=B, micro_batch=v["micro_batch"], dp=v["dp"],
                          pp=v["pp"]),
        ),
    }


def _expert_sharding_and_stack_rules(c: SimpleNamespace) -> _Rules:
    """Expert and context parallelism, batch split, ZeRO/FSDP and offload, and what each framework offers."""
    return (_sharding_rules(c) | _activation_offload_rules(c) | _stack_option_rules(c) | _moe_a2a_overlap_rules(c)
            | _partial_recompute_rules(c) | _te_option_rules(c) | _experts_implementation_rules(c) | _hybrid_rules(c) | _local_batch_rules(c)
            | _stage_layers_rules(c) | _stage_list_rules(c) | _defer_wgrad_rules(c) | _fsdp_no_sync_rule(c)
            | _megatron_fsdp_rules(c)
            | _cp_a2a_rule(c))


def sequence_splits_over_tp(seq_len: int, tp: Any, cp: Any) -> np.ndarray:
    """Where sequence parallelism can split each CP rank's sequence over the TP ranks (rule sp_divides_seq):
    seq_len divisible by tp x cp; the search turns sequence parallelism on only there."""
    tp, cp = np.asarray(tp, dtype=float), np.asarray(cp, dtype=float)
    return np.mod(seq_len, np.maximum(tp * cp, 1.0)) == 0


def _kv_heads_rule(c: SimpleNamespace) -> tuple[np.ndarray, Callable[[dict[str, Any]], str]]:
    """TP divides the K / V heads (query groups), as Megatron-Core's TransformerConfig asked before core_v0.16.0 and
    torchtitan's model configs refuse otherwise (update_from_config, pytorch/torchtitan fa8e6ccc9, PR 2577,
    2026-03-15; earlier its view(bs, seqlen, -1, head_dim) failed on a fraction of a head); or, on a stack that
    sub-shards the QKV activations (framework.kv_subshard_frameworks: Megatron-Core core_v0.16.0+), TP is a multiple
    of them; or multi-query attention under MQA_REPLICATED_KV_FRAMEWORKS. MLA's K / V split with the query heads."""
    model, tp, safe = c.model, c.tp, c.safe
    kv = max(model.kv_heads, 1)
    if model.attention == "mla" or (model.kv_heads == 1 and c.fw in MQA_REPLICATED_KV_FRAMEWORKS):
        return (np.ones(tp.shape, bool), lambda v: "")
    version = getattr(c.strategy, "megatron_core_version", None)
    stacks = kv_subshard_frameworks(version)
    ok = kv % safe(tp) == 0
    if np.any(tp > kv):  # above the heads: a multiple of them where the stack sub-shards
        ok = ok | (_resolves_to(c, stacks) & (np.mod(tp, kv) == 0))
    older = version is not None and not mcore_has("kv_head_subshard", version)
    return (ok, lambda v: msg("rule_tp_divides_kv_heads_release" if older else "rule_tp_divides_kv_heads", tp=v["tp"],
                              kv_heads=model.kv_heads, framework=_stack_named(c, v), allowed=", ".join(stacks),
                              version=version, release=MCORE_RELEASE_FACTS["kv_head_subshard"]))


def _cp_a2a_rule(c: SimpleNamespace) -> _Rules:
    """cp_comm_type a2a gives every CP rank whole query and K / V heads of its TP rank: Transformer Engine's
    AttnFuncWithCPAndQKVOA2A asserts q.shape[-2] % cp_size == 0 and k.shape[-2] % cp_size == 0. Where the job states
    strategy.repeat_kv, K / V reach the all-to-all at the query heads' width (xtuner's Ulysses dispatch repeats them
    first: xtuner/model/modules/dispatch/llama.py at 43ef6ab99), so the query heads alone bound CP."""
    model, tp, cp, safe = c.model, c.tp, c.cp, c.safe
    repeated = getattr(c.strategy, "repeat_kv", None) is True
    kv = model.heads if model.attention == "mla" or repeated else model.kv_heads
    whole = (np.mod(model.heads / safe(tp), safe(cp)) == 0) & (np.mod(kv / safe(tp), safe(cp)) == 0)
    on = getattr(c.strategy, "cp_comm_type", None) == "a2a"
    return {"cp_a2a_divides_heads": (
        np.full(tp.shape, not on) | whole,
        lambda v: msg("rule_cp_a2a_divides_heads", cp=v["cp"], tp=v["tp"], heads=model.heads, kv_heads=kv),
    )}


def _hybrid_rules(c: SimpleNamespace) -> _Rules:
    """A hybrid Mamba-2 / attention model: a stack that runs it (HYBRID_FRAMEWORKS); TP splits the mixer's heads and
    B / C groups (Megatron-Core MambaMixer asserts nheads % tp == 0 and ngroups % tp == 0); context parallelism splits
    the heads of each TP rank over CP too (`_mamba_cp_ok`); LoRA adapters on in_proj / out_proj are not modelled yet,
    so they are refused rather than estimated as a transformer."""
    model, tp, cp = c.model, c.tp, c.cp
    hybrid = model.is_hybrid
    heads, groups = max(model.ssm_heads, 1), max(model.ssm_groups, 1)
    ssm_ok = (heads % c.safe(tp) == 0) & (groups % c.safe(tp) == 0) if model.mamba_layers else np.ones(tp.shape, bool)
    adapters = c.training.method in ("lora", "qlora")
    return {
        "hybrid_framework": _stack_rule(c, not hybrid, HYBRID_FRAMEWORKS, "hybrid_framework"),
        "tp_divides_ssm": (
            ssm_ok,
            lambda v: msg("rule_tp_divides_ssm", tp=v["tp"], heads=model.ssm_heads, groups=model.ssm_groups),
        ),
        "hybrid_cp": (
            np.full(tp.shape, not hybrid) | (cp <= 1) | _mamba_cp_ok(model, tp, cp, c.safe),
            lambda v: msg("rule_hybrid_cp", cp=v["cp"], tp=v["tp"], heads=model.ssm_heads, groups=model.ssm_groups),
        ),
        "hybrid_adapters": (
            np.full(tp.shape, not (hybrid and adapters)),
            lambda v: msg("rule_hybrid_adapters", method=c.training.method),
        ),
    }


def _stage_layers_rules(c: SimpleNamespace) -> _Rules:
    """strategy.pp_first_stage_layers / pp_last_stage_layers (the end ranks' decoder layers, all their chunks): a
    Megatron stack (STAGE_LAYERS_FRAMEWORKS), pp > 1 and no embedding / loss slots (Megatron-Core's
    TransformerConfig refuses num_layers_in_first/last_pipeline_stage with account_for_*_in_pipeline_split), and the
    remaining layers split evenly over the middle ranks x vpp, none left without a middle rank (its "Mismatch:
    middle layers remaining" check). The end ranks' layers need not divide by vpp: a pipeline_model_parallel_layout
    gives a rank's chunks any counts (Megatron-Bridge's DeepSeek-V3 `Et*4|(t*4|)*14tmL`: 29 layers on the last of
    PP 2 x VP 8)."""
    first = getattr(c.strategy, "pp_first_stage_layers", None)
    last = getattr(c.strategy, "pp_last_stage_layers", None)
    # device_map auto's end cards are accelerate's split (estimate.device_map), not a Megatron layout to check
    if first is None and last is None or c.device_map:
        ok = np.ones(c.tp.shape, bool)
        return {k: (ok, lambda v: "") for k in ("pp_stage_layers_framework", "pp_stage_layers_pipelined",
                                                  "pp_stage_layers_split")}
    # a job states ints; the search states arrays, 0 where a layout splits evenly (search.space.end_stage_layers)
    f, la = (np.asarray(0.0 if n is None else n, float) for n in (first, last))
    has_f, has_l = f > 0, la > 0
    unstated = ~(has_f | has_l)
    pp, vpp = c.pp, np.maximum(c.vpp, 1)
    middle = pp - has_f - has_l
    rest = c.model.layers - f - la
    per = rest / c.safe(middle * vpp)
    split_ok = unstated | (rest >= 0) & np.where(middle > 0, (per >= 1) & (np.mod(per, 1.0) == 0), rest == 0)
    said = tuple(None if np.ndim(n) or not n else int(n) for n in (first, last))  # a job's own ints, for its text
    stated = _stated_layers_text(*said)
    return {
        "pp_stage_layers_framework": _stack_rule(c, unstated, STAGE_LAYERS_FRAMEWORKS, "pp_stage_layers_framework"),
        "pp_stage_layers_pipelined": (
            unstated | (pp > 1) & (c.slots == 0),
            lambda v: (msg("rule_pp_stage_layers_pipelined", stated=stated, pp=v["pp"]) if v["pp"] <= 1 else
                       msg("rule_pp_stage_layers_slots", stated=stated, slots=v["slots"])),
        ),
        "pp_stage_layers_split": (split_ok, lambda v: _stage_layers_split_text(c.model.layers, *said, v)),
    }


def _stage_list_rules(c: SimpleNamespace) -> _Rules:
    """strategy.pp_stage_layers (every pipeline rank's decoder layers): a stack that states them
    (STAGE_LAYER_LIST_FRAMEWORKS), one count a rank (pp of them), the model's layers in all, and no embedding / loss
    slots (a layout's E / L place those itself)."""
    counts = getattr(c.strategy, "pp_stage_layers", None)
    if counts is None or c.device_map:
        ok = np.ones(c.tp.shape, bool)
        return {k: (ok, lambda v: "") for k in ("pp_stage_list_framework", "pp_stage_list_split")}
    counts = tuple(int(n) for n in counts)
    split_ok = (c.pp == len(counts)) & (sum(counts) == c.model.layers) & (c.slots == 0)
    return {
        "pp_stage_list_framework": _stack_rule(c, np.zeros(c.tp.shape, bool), STAGE_LAYER_LIST_FRAMEWORKS,
                                               "pp_stage_list_framework"),
        "pp_stage_list_split": (
            np.asarray(split_ok, bool),
            lambda v: msg("rule_pp_stage_list_split", counts=list(counts), n=len(counts), total=sum(counts),
                          pp=v["pp"], layers=c.model.layers, slots=v["slots"]),
        ),
    }


def _stated_layers_text(first: int | None, last: int | None) -> str:
    """The stated end-rank fields as the job wrote them ("pp_last_stage_layers 13"), the unstated one left out."""
    return " / ".join(f"{name} {n}" for name, n in (("pp_first_stage_layers", first), ("pp_last_stage_layers", last))
                      if n is not None)


def _stage_layers_split_text(layers: int, first: int | None, last: int | None, v: dict[str, Any]) -> str:
    """Why stated end-rank layers do not split (rule_pp_stage_layers_split, or _exceed where they pass the model's
    layers), with the stated totals nearest the job's that leave each middle rank's chunks whole layers."""
    stated_sum, vpp = (first or 0) + (last or 0), max(int(v["vpp"]), 1)
    middle = int(v["pp"]) - (first is not None) - (last is not None)
    chunks = middle * vpp
    fits = [layers - k * chunks for k in range(1, layers // chunks + 1)] if chunks > 0 else [layers]
    nearest = " / ".join(str(n) for n in sorted(sorted((n for n in fits if n >= 1),
                                                       key=lambda n: abs(n - stated_sum))[:2])) or "-"
    stated = _stated_layers_text(first, last)
    if stated_sum > layers:
        return msg("rule_pp_stage_layers_exceed", stated=stated, stated_sum=stated_sum, layers=layers,
                   nearest=nearest)
    return msg("rule_pp_stage_layers_split", stated=stated, layers=layers, rest=layers - stated_sum, middle=middle,
               vpp=vpp, nearest=nearest)


def _local_batch_rules(c: SimpleNamespace) -> _Rules:
    """strategy.local_batch divides the sequences a data-parallel rank takes per step (global batch / dp: whole
    schedules, as torchtitan's and AutoModel's gradient-accumulation count global / (local x dp) must be), on the
    stacks that run one pipeline schedule per local batch (LOCAL_BATCH_FRAMEWORKS)."""
    lb = getattr(c.strategy, "local_batch", None)
    if lb is None:
        ok = np.ones(c.tp.shape, bool)
        return {"local_batch_divides": (ok, lambda v: ""), "local_batch_framework": (ok, lambda v: "")}
    per_rank = c.B / c.safe(c.dp)
    return {
        "local_batch_divides": (
            np.mod(per_rank, lb) == 0,
            lambda v: msg("rule_local_batch_divides", local_batch=lb, per_rank=f"{c.B / max(v['dp'], 1):g}",
                          batch=c.B, dp=v["dp"]),
        ),
        "local_batch_framework": _stack_rule(c, c.device_map, LOCAL_BATCH_FRAMEWORKS, "local_batch_framework"),
    }


def _experts_implementation_rules(c: SimpleNamespace) -> _Rules:
    """transformers' experts backend (strategy.experts_implementation) and how DeepSpeed ZeRO-3 gathers those experts
    (strategy.zero3_expert_fetch) are stated on a stack that runs transformers' MoE code
    (EXPERTS_IMPLEMENTATION_FRAMEWORKS); strategy.expert_weight_copies with experts_implementation eager only."""
    stated = getattr(c.strategy, "experts_implementation", None) is None
    fetch_free = getattr(c.strategy, "zero3_expert_fetch", None) is None
    copies = bool(getattr(c.strategy, "expert_weight_copies", None))
    impl = getattr(c.strategy, "experts_implementation", None)
    return {"experts_implementation_framework": _stack_rule(c, stated, EXPERTS_IMPLEMENTATION_FRAMEWORKS,
                                                            "experts_implementation_framework"),
            "zero3_expert_fetch_framework": _stack_rule(c, fetch_free, EXPERTS_IMPLEMENTATION_FRAMEWORKS,
                                                        "zero3_expert_fetch_framework"),
            "zero3_bucket_sizes_framework": _stack_rule(c, getattr(c.strategy, "zero3_bucket_sizes", None) is None,
                                                        DEEPSPEED_AUTO_FRAMEWORKS, "zero3_bucket_sizes_framework"),
            "zero_init_framework": _stack_rule(c, getattr(c.strategy, "zero_init", None) is None, ZERO_INIT_FRAMEWORKS,
                                               "zero_init_framework"),
            "nf4_quantize_unchunked_framework": _stack_rule(
                c, not getattr(c.strategy, "nf4_quantize_unchunked", None), NF4_UNCHUNKED_FRAMEWORKS,
                "nf4_quantize_unchunked_framework"),
            "megatron_core_version_framework": _stack_rule(
                c, getattr(c.strategy, "megatron_core_version", None) is None, MCORE_VERSION_FRAMEWORKS,
                "megatron_core_version_framework", version=getattr(c.strategy, "megatron_core_version", None)),
            # the copies are the eager loop's (transformers 4.55 / 4.56 GptOssExperts), not a grouped GEMM's
            "expert_weight_copies_eager": (np.full(c.tp.shape, not copies or impl == "eager"),
                                           lambda v: msg("rule_expert_weight_copies_eager", value=impl))}


def _defer_wgrad_rules(c: SimpleNamespace) -> _Rules:
    """defer_embedding_wgrad is Megatron-Core's (DEFER_WGRAD_FRAMEWORKS), and as its ModelParallelConfig
    __post_init__ refuses it otherwise ("Cannot defer embedding wgrad compute when pipeline model parallel is not
    used" / "... when gradient accumulation fusion is not used"), it needs pp > 1 and gradient_accumulation_fusion
    (true or the style's default)."""
    on = bool(getattr(c.strategy, "defer_embedding_wgrad", None))
    fusion = getattr(c.strategy, "gradient_accumulation_fusion", None)
    return {
        "defer_embedding_wgrad_framework": _stack_rule(c, not on, DEFER_WGRAD_FRAMEWORKS,
                                                       "defer_embedding_wgrad_framework"),
        "defer_embedding_wgrad_pipelined": (
            np.full(c.tp.shape, not on) | ((c.pp > 1) & (fusion is not False)),
            lambda v: msg("rule_defer_embedding_wgrad_pipelined", pp=v["pp"],
                          fusion="unset" if fusion is None else str(bool(fusion)).lower()),
        ),
    }


def _megatron_fsdp_rules(c: SimpleNamespace) -> _Rules:
    """strategy.megatron_fsdp_sharding is Megatron-FSDP's (MEGATRON_FSDP_FRAMEWORKS), and each of its strategies
    shards what one ZeRO stage does (names.MEGATRON_FSDP_ZERO): optim the job's zero 1, optim_grads zero 2,
    optim_grads_params zero 3 / fsdp full (megatron_fsdp/param_and_grad_buffer.py _init_each_parameter_group_buffers
    at NVIDIA/Megatron-LM 0d8e0714)."""
    sharding = getattr(c.strategy, "megatron_fsdp_sharding", None)
    stage = MEGATRON_FSDP_ZERO.get(sharding, -1) if sharding is not None else -1
    return {"megatron_fsdp_sharding_framework": _stack_rule(c, sharding is None, MEGATRON_FSDP_FRAMEWORKS,
                                                            "megatron_fsdp_sharding_framework", sharding=sharding),
            "megatron_fsdp_sharding_zero": (np.full(c.tp.shape, sharding is None) | (c.zero == stage),
                                            lambda v: msg("rule_megatron_fsdp_sharding_zero", sharding=sharding,
                                                          stage=stage, zero=v["zero"]))}


def _fsdp_no_sync_rule(c: SimpleNamespace) -> _Rules:
    """fsdp_no_sync is FSDP2's set_requires_gradient_sync(False) (torch distributed/fsdp/_fully_shard/_fully_shard.py
    FSDPModule) or FSDP1's no_sync (estimate/fsdp1_no_sync.py): it holds unsharded gradients only where the model is
    fully sharded (fsdp full / ZeRO-3, one rank included: KempnerForge wraps a TP-only run over a dp_shard of 1)."""
    on = bool(getattr(c.strategy, "fsdp_no_sync", None))
    stated = getattr(c.strategy, "fsdp_reshard", None) is not None  # FSDP2's reshard point: names.FSDP_RESHARDS
    return {"fsdp_no_sync_fsdp": (np.full(c.tp.shape, not on) | (c.zero >= 3),
                                  lambda v: msg("rule_fsdp_no_sync_fsdp", zero=v["zero"])),
            "fsdp_reshard_fsdp": (np.full(c.tp.shape, not stated) | (c.zero >= 3),
                                  lambda v: msg("rule_fsdp_reshard_fsdp", zero=v["zero"]))}


def _te_option_rules(c: SimpleNamespace) -> _Rules:
    """FP8 attention needs FP8 training (Transformer Engine runs fp8_dot_product_attention inside fp8_autocast
    only: DotProductAttention reads the autocast recipe); the MXFP8 LM head (fp8_lm_head) needs the MXFP8 recipe
    (Megatron-Core fp8_utils.is_mxfp8_output_proj_active); TE's fused grouped MLP needs MXFP8 on an SM100 part
    (FUSED_GROUPED_MLP_PARTS); FP8 attention, the FP8 SwiGLU input store, CUDA graphs, the fused grouped MLP, the
    device-side expert splits (moe_sync_free: Primus-Turbo on Megatron-LM), the padded token drop
    (moe_pad_to_capacity), the MoE permutation / router fusion
    (moe_permute_fusion / moe_router_fusion, stated either way), the router's aux loss (moe_aux_loss), the experts' grouped GEMM or SequentialMLP
    (moe_grouped_gemm, either way), the amax group (tp_only_amax_red, either way), the fused qkv RoPE and TE's op fuser (te_op_fuser) are Megatron-Core's (TE_GRAPH_FRAMEWORKS; "auto" as the stack it resolves to), the MXFP8 LM head
    Megatron-Core's and torchtitan's (FP8_LM_HEAD_FRAMEWORKS), PyTorch's attention kernels the PyTorch stacks'
    (TORCH_ATTENTION_FRAMEWORKS)."""
    s = c.strategy
    dpa = bool(getattr(s, "fp8_attention", None))
    release = getattr(s, "cudnn_release", None)
    named = [f for f, on in (("fp8_attention", dpa), ("fp8_activation_store", bool(getattr(s, "fp8_activation_store",
                                                                                              None))),
                             ("cuda_graphs", getattr(s, "cuda_graphs", None) not in (None, "none")),
                             ("cudnn_release", release not in (None, "9.13")),
                             ("moe_fused_grouped_mlp", bool(getattr(s, "moe_fused_grouped_mlp", None))),
                             ("moe_sync_free", bool(getattr(s, "moe_sync_free", None))),
                             ("moe_pad_to_capacity", bool(getattr(s, "moe_pad_to_capacity", None))),
                             ("moe_permute_fusion", getattr(s, "moe_permute_fusion", None) is not None),
                             ("moe_router_fusion", getattr(s, "moe_router_fusion", None) is not None),
                             ("moe_aux_loss", getattr(s, "moe_aux_loss", None) is not None),
                             ("moe_grouped_gemm", getattr(s, "moe_grouped_gemm", None) is not None),
                             ("tp_only_amax_red", getattr(s, "tp_only_amax_red", None) is not None),
                             ("fused_qkv_rope", bool(getattr(s, "fused_qkv_rope", None))),
                             ("te_op_fuser", bool(getattr(s, "te_op_fuser", None)))) if on]
    fused_mlp = bool(getattr(s, "moe_fused_grouped_mlp", None))
    head = bool(getattr(s, "fp8_lm_head", None))
    acc = str(c.system.accelerator).lower()
    recipe = getattr(c.training, "fp8_recipe", "auto")
    if (fused_mlp or head) and c.training.precision == "fp8":  # "auto": the part's default (calibration.fp8_recipe)
        from trainsizer.estimate.calibration import load_constants

        recipe = load_constants().fp8_recipe(acc, recipe)["name"]
    mlp_ok = not fused_mlp or (c.training.precision == "fp8" and recipe == "mxfp8"
                               and any(acc.startswith(part) for part in FUSED_GROUPED_MLP_PARTS))
    return _cudnn_release_rule(c, release) | {
        "fp8_attention_precision": (
            np.full(c.tp.shape, not dpa or c.training.precision == "fp8"),
            lambda v: msg("rule_fp8_attention_precision", precision=c.training.precision),
        ),
        "moe_fused_grouped_mlp_recipe": (
            np.full(c.tp.shape, mlp_ok),
            lambda v: msg("rule_moe_fused_grouped_mlp_recipe", precision=c.training.precision, recipe=recipe,
                          accelerator=c.system.accelerator, allowed=", ".join(FUSED_GROUPED_MLP_PARTS)),
        ),
        "fp8_lm_head_recipe": (
            np.full(c.tp.shape, not head or (c.training.precision == "fp8" and recipe == "mxfp8")),
            lambda v: msg("rule_fp8_lm_head_recipe", precision=c.training.precision, recipe=recipe),
        ),
        "te_options_framework": _stack_rule(c, not named, TE_GRAPH_FRAMEWORKS, "te_options_framework",
                                            options=", ".join(named)),
        "fp8_lm_head_framework": _stack_rule(c, not head, FP8_LM_HEAD_FRAMEWORKS, "fp8_lm_head_framework"),
        "fp8_recipe_torchao_framework": _stack_rule(
            c, c.training.precision != "fp8" or getattr(c.training, "fp8_recipe", "auto") != "nvfp4-torchao",
            TORCHAO_NVFP4_FRAMEWORKS, "fp8_recipe_torchao_framework"),
        "moe_eager_glue_framework": _stack_rule(c, getattr(s, "moe_eager_glue", None) is None,
                                                MOE_EAGER_GLUE_FRAMEWORKS, "moe_eager_glue_framework"),
        "attention_kernel_framework": _attention_kernel_rule(c),
    }


def _attention_kernel_rule(c: SimpleNamespace) -> tuple[np.ndarray, Callable[[dict[str, Any]], str]]:
    """A stated sdpa / flex kernel needs a stack that calls PyTorch's attention (TORCH_ATTENTION_FRAMEWORKS); the
    refusal says what a Megatron stack runs instead."""
    kernel = getattr(c.strategy, "attention_kernel", None)
    return _stack_rule(c, kernel not in TORCH_ATTENTION_KERNELS, TORCH_ATTENTION_FRAMEWORKS,
                       "attention_kernel_framework", kernel=kernel)


def _cudnn_release_rule(c: SimpleNamespace, release: str | None) -> _Rules:
    """A cuDNN release other than the base one needs a part whose family NVIDIA measured at it (perf_constants.yaml
    attention.cudnn_release_speedup: Blackwell) and the native (cuDNN) attention kernel."""
    from trainsizer.estimate.calibration import load_constants

    kernel = getattr(c.strategy, "attention_kernel", None)
    ok = release in (None, "9.13") or (load_constants().cudnn_release(c.system.accelerator, release) is not None
                                        and kernel in (None, "native"))
    measured = sorted(load_constants().cudnn_release_speedup.get(str(release), {}))
    return {"cudnn_release_part": (
        np.full(c.tp.shape, ok),
        lambda v: msg("rule_cudnn_release_part", release=release, accelerator=c.system.accelerator,
                      kernel=kernel or "native", families=", ".join(measured) or "-"),
    )}


def _partial_recompute_rules(c: SimpleNamespace) -> _Rules:
    """fp8_transpose_cache false: Megatron-Core's disable_parameter_transpose_cache (FP8_TRANSPOSE_CACHE_FRAMEWORKS).
    compile_loss (either value): torchtitan's CompileConfig components (COMPILE_LOSS_FRAMEWORKS).
    sac_saves_attention (either value): torchtitan's per-op SAC save list (SAC_SAVES_ATTENTION_FRAMEWORKS).
    gradient_accumulation_fusion (either value): Megatron's (GRAD_ACCUM_FUSION_FRAMEWORKS).
    ddp_impl: torch where torch DDP runs (HF, nanotron as megatron), megatron on Megatron (DDP_IMPL_FRAMEWORKS).
    recompute_method / recompute_num_layers N: Megatron's (PARTIAL_RECOMPUTE_FRAMEWORKS; "auto" as the stack it
    resolves to), with N from 1 (0 for block) to the layers of the largest pipeline stage, the range Megatron-Core's
    TransformerConfig states (num_layers_per_pipeline_rank); under interleaving each virtual stage checkpoints at
    most its own layers (partial_recompute.py)."""
    strategy, safe = c.strategy, c.safe
    method, n = getattr(strategy, "recompute_method", None), getattr(strategy, "recompute_num_layers", None)
    off = np.full(c.tp.shape, method is None and n is None)
    stage = np.ceil(c.model.layers / safe(c.pp))
    low = 1 if method == "uniform" else 0
    n_layers = np.asarray(0 if n is None else n, dtype=float)  # one N, or one per strategy (an array)
    no_cache = getattr(strategy, "fp8_transpose_cache", None) is False
    compile_loss_unset = getattr(strategy, "compile_loss", None) is None
    sac_unset = getattr(strategy, "sac_saves_attention", None) is None
    fusion_unset = getattr(strategy, "gradient_accumulation_fusion", None) is None
    ddp = getattr(strategy, "ddp_impl", None)
    ddp_frameworks = DDP_IMPL_FRAMEWORKS.get(str(ddp), ())
    return {
        "ddp_impl_framework": _stack_rule(c, ddp is None, ddp_frameworks, "ddp_impl_framework", impl=ddp),
        "gradient_accumulation_fusion_framework": _stack_rule(c, fusion_unset, GRAD_ACCUM_FUSION_FRAMEWORKS,
                                                              "gradient_accumulation_fusion_framework"),
        "fp8_transpose_cache_framework": _stack_rule(c, not no_cache, FP8_TRANSPOSE_CACHE_FRAMEWORKS,
                                                     "fp8_transpose_cache_framework"),
        "compile_loss_framework": _stack_rule(c, compile_loss_unset, COMPILE_LOSS_FRAMEWORKS,
                                              "compile_loss_framework"),
        "sac_saves_attention_framework": _stack_rule(c, sac_unset, SAC_SAVES_ATTENTION_FRAMEWORKS,
                                                     "sac_saves_attention_framework"),
        "recompute_num_layers_framework": _stack_rule(c, off, PARTIAL_RECOMPUTE_FRAMEWORKS,
                                                      "recompute_num_layers_framework"),
        "recompute_num_layers_range": (
            off | ((n is not None) & (c.rec == 2) & (low <= n_layers) & (n_layers <= stage)),
            lambda v: msg("rule_recompute_num_layers_range", n=n, stage=f"{np.ceil(c.model.layers / v['pp']):g}",
                          layers=c.model.layers, pp=f"{v['pp']:g}"),
        ),
    }


def _moe_a2a_overlap_rules(c: SimpleNamespace) -> _Rules:
    """What Megatron-Core's overlap_moe_expert_parallel_comm asserts (TransformerConfig.__post_init__, core_r0.15):
    expert parallelism, no full recompute, virtual pipeline stages when PP > 1, a bf16 / fp16 model."""
    on = bool(getattr(c.strategy, "moe_a2a_overlap", None))
    off = np.full(c.tp.shape, not on)
    precision = c.training.precision
    return {
        "moe_a2a_overlap_framework": _stack_rule(c, off, MOE_A2A_OVERLAP_FRAMEWORKS, "moe_a2a_overlap_framework"),
        "moe_a2a_overlap_ep": (
            off | ((c.ep > 1) & c.model.is_moe),
            lambda v: msg("rule_moe_a2a_overlap_ep", ep=v["ep"]),
        ),
        "moe_a2a_overlap_recompute": (
            off | (c.rec != 2),
            lambda v: msg("rule_moe_a2a_overlap_recompute"),
        ),
        "moe_a2a_overlap_vpp": (
            off | (c.pp <= 1) | (c.vpp > 1),
            lambda v: msg("rule_moe_a2a_overlap_vpp", pp=v["pp"], vpp=v["vpp"]),
        ),
        "moe_a2a_overlap_precision": (
            off | (precision != "fp32"),
            lambda v: msg("rule_moe_a2a_overlap_precision", precision=precision),
        ),
        "moe_dispatcher_vendor": _flex_vendor_rule(c),
    }


def _flex_vendor_rule(c: SimpleNamespace) -> tuple[np.ndarray, Callable[[dict[str, Any]], str]]:
    """moe_dispatcher flex on a part whose vendor has a flex dispatcher on this stack (FLEX_DISPATCHER_VENDORS)."""
    vendor = str(getattr(c.system, "vendor", "") or "")
    flex = getattr(c.strategy, "moe_dispatcher", "auto") in FLEX_DISPATCHERS and c.model.is_moe
    if not flex or not vendor or FLEX_DISPATCHER_VENDORS.get(vendor, ()) is None:
        return (np.full(c.tp.shape, True), lambda v: "")
    stacks = FLEX_DISPATCHER_VENDORS.get(vendor, ())
    assert stacks is not None
    if getattr(c.strategy, "moe_dispatcher", "auto") == "hybridep":
        stacks = ()  # HybridEP's TMA / DOCA GPUNetIO kernels: NVIDIA's only (Primus-Turbo ports DeepEP, not HybridEP)
    if not stacks:
        return (np.full(c.tp.shape, False),
                lambda v: msg("rule_moe_dispatcher_vendor_none", accelerator=c.system.accelerator, vendor=vendor))
    return _stack_rule(c, False, stacks, "moe_dispatcher_vendor", accelerator=c.system.accelerator, vendor=vendor)


def _sharding_rules(c: SimpleNamespace) -> _Rules:
    """Expert and context parallelism, the batch split and the ZeRO / FSDP shard group."""
    model, B, s, safe = c.model, c.B, c.s, c.safe
    dp, cp, ep, mb, sg, zero = c.dp, c.cp, c.ep, c.mb, c.sg, c.zero
    return {
        "ep_needs_moe": (
            (ep <= 1) | model.is_moe,
            lambda v: msg("rule_ep_needs_moe", ep=v["ep"], model=model.name),
        ),
        "ep_divides_experts": (
            (ep <= 1) | (max(model.experts, 1) % safe(ep) == 0),
            lambda v: msg("rule_ep_divides_experts", ep=v["ep"], experts=model.experts),
        ),
        "ep_divides_dp_cp": (
            (c.etp != c.tp) | (np.mod(dp * cp, safe(ep)) == 0),
            lambda v: msg("rule_ep_divides_dp_cp", ep=v["ep"], dp_cp=v["dp"] * v["cp"]),
        ),
        # expert TP other than TP: Megatron-Core's expert grid, world % (etp x ep x pp) == 0 (core/parallel_state.py
        # initialize_model_parallel raises RuntimeError otherwise), i.e. ep x etp divides tp x dp x cp
        "etp_ep_divide_gpus": (
            (c.etp == c.tp) | (np.mod(c.tp * dp * cp, safe(ep * c.etp)) == 0),
            lambda v: msg("rule_etp_ep_divide_gpus", ep=v["ep"], etp=v["etp"], tp_dp_cp=v["tp"] * v["dp"] * v["cp"]),
        ),
        "etp_divides_ffn": (
            (c.etp == c.tp) | ~np.asarray(c.model.is_moe) | (max(c.model.expert_ffn, 1) % safe(c.etp) == 0),
            lambda v: msg("rule_etp_divides_ffn", etp=v["etp"], size=c.model.expert_ffn),
        ),
        # torchtitan supports expert TP 1 or = tp only (job_config.py Parallelism.expert_tensor_parallel_degree)
        "etp_torchtitan": (
            (c.fw != "torchtitan") | (c.etp == 1) | (c.etp == c.tp),
            lambda v: msg("rule_etp_torchtitan", etp=v["etp"], tp=v["tp"]),
        ),
        "cp_divides_seq": (
            (cp <= 1) | (s % safe(2 * cp) == 0),
            lambda v: msg("rule_cp_divides_seq", seq_len=s, two_cp=2 * v["cp"]),
        ),
        # sequence parallelism splits each CP rank's sequence over the TP ranks: Megatron-Core tensor_parallel/
        # mappings.py _split_along_first_dim asserts dim_size % world_size == 0 (d98e8a64); torchtitan's
        # parallel_dims.py seq_len_divisor is tp x 2 x cp (b5bcd76c)
        "sp_divides_seq": (
            (c.tp <= 1) | (c.sp <= 0) | sequence_splits_over_tp(s, c.tp, cp),
            lambda v: msg("rule_sp_divides_seq", seq_len=s, tp=v["tp"], cp=v["cp"], tp_cp=v["tp"] * v["cp"]),
        ),
        "batch_divisible": (
            np.mod(B, safe(mb * dp)) == 0,
            lambda v: msg("rule_batch_divisible", batch=B, micro_batch=v["micro_batch"], dp=v["dp"]),
        ),
        "zero_stage": (
            np.isin(zero, (0, 1, 2, 3)),
            lambda v: msg("rule_zero_stage", zero=v["zero"]),
        ),
        "shard_group_divides_dp": (
            (sg <= 0) | ((sg <= dp * cp) & (np.mod(dp * cp, safe(sg)) == 0) & (zero >= 1)),
            lambda v: msg("rule_shard_group_divides_dp", shard_group=v["shard_group"], dp_cp=v["dp"] * v["cp"]),
        ),
    }


def _activation_offload_rules(c: SimpleNamespace) -> _Rules:
    """activation_offload: N is Megatron-Core's cpu_offloading_num_layers, with what its TransformerConfig
    (core_r0.15, the Megatron-Core of Megatron-Bridge 25.11) refuses: N >= the layers, pipeline parallelism, and
    any activation recomputation (recompute_granularity set)."""
    model, strategy, safe, pp = c.model, c.strategy, c.safe, c.pp
    n = np.full(c.tp.shape, _offloads_layer_count(strategy))
    recomputes = (c.rec != 0) | (getattr(strategy, "recompute_modules", None) is not None)
    asked = getattr(strategy, "activation_offload", 0)
    return {
        "activation_offload_layers": (
            _offload_layers_ok(strategy, model.layers / safe(pp * c.vpp)),
            lambda v: msg("rule_activation_offload_layers", n=asked,
                          chunk=f"{model.layers / (v['pp'] * v['vpp']):g}", layers=model.layers),
        ),
        "activation_offload_layers_framework": _stack_rule(c, ~n, OFFLOAD_LAYERS_FRAMEWORKS,
                                                           "activation_offload_layers_framework"),
        "activation_offload_layers_pp": (
            ~n | (pp <= 1),
            lambda v: msg("rule_activation_offload_layers_pp", n=asked, pp=v["pp"]),
        ),
        "activation_offload_layers_recompute": (
            ~n | ~recomputes,
            lambda v: msg("rule_activation_offload_layers_recompute", n=asked,
                          recompute=RECOMPUTE[int(v["rec"])] if 0 <= v["rec"] < len(RECOMPUTE) else v["rec"]),
        ),
    }


def _stack_option_rules(c: SimpleNamespace) -> _Rules:
    """What each framework offers: ZeRO-3 with PP, offload, recompute modules, pipeline slots, QLoRA FP8."""
    model, training, strategy, B = c.model, c.training, c.strategy, c.B
    tp, pp, zero, rec, off, fw, slots, n_micro = c.tp, c.pp, c.zero, c.rec, c.off, c.fw, c.slots, c.n_micro
    return {
        # device_map auto chains the cards without a pipeline schedule (estimate.device_map): transformers' own
        "pipeline_framework": _stack_rule(c, (pp <= 1) | c.device_map, PIPELINE_FRAMEWORKS, "pipeline_framework",
                                          "pp"),
        "interleaved_framework": _stack_rule(c, c.vpp <= 1, INTERLEAVED_FRAMEWORKS, "interleaved_framework", "vpp"),
        "zero3_with_pp": (
            (zero < 3) | (pp <= 1) | (fw not in ZERO3_PP_REFUSED),
            lambda v: msg("rule_zero3_with_pp", framework=repr(fw), refused=", ".join(ZERO3_PP_REFUSED)),
        ),
        "zero2_with_pp": (
            (zero != 2) | (pp <= 1) | (fw not in ZERO2_PP_REFUSED),
            lambda v: msg("rule_zero2_with_pp", framework=repr(fw), refused=", ".join(ZERO2_PP_REFUSED)),
        ),
        "optimizer_in_backward_no_accumulation": (
            np.full(tp.shape, not getattr(strategy, "optimizer_in_backward", False)) | (n_micro <= 1),
            lambda v: msg("rule_optimizer_in_backward", batch=B, micro_batch=v["micro_batch"], dp=v["dp"]),
        ),
        "recompute_modules_framework": _stack_rule(c, getattr(strategy, "recompute_modules", None) is None,
                                                   RECOMPUTE_MODULE_FRAMEWORKS, "recompute_modules_framework"),
        "recompute_modules_model": (
            np.full(tp.shape, _modules_misfit(model, strategy) is None),
            lambda v: msg("rule_recompute_modules_model", model=model.name, **_modules_misfit(model, strategy)),
        ),
        "pipeline_slots_need_megatron": _stack_rule(c, slots == 0, PIPELINE_SLOT_FRAMEWORKS,
                                                    "pipeline_slots_need_megatron"),
        "offload_needs_zero": (
            (off == 0) | ((off == 1) & (zero >= 1)) | ((off == 2) & (zero >= 3)),
            lambda v: msg("rule_offload_needs_zero", offload=OFFLOAD[int(v["off"])] if 0 <= v["off"] < 3
                          else v["off"], zero=v["zero"]),
        ),
        "qlora_fp8": (
            np.full(tp.shape, not (training.method == "qlora" and training.precision == "fp8")),
            lambda v: msg("rule_qlora_fp8"),
        ),
        "nf4_dequant_dtype_method": (
            np.full(tp.shape, getattr(strategy, "nf4_dequant_dtype", None) is None or training.method == "qlora"),
            lambda v: msg("rule_nf4_dequant_dtype_method", method=training.method),
        ),
        "nf4_decode_method": (
            np.full(tp.shape, getattr(strategy, "nf4_decode", None) is None or training.method == "qlora"),
            lambda v: msg("rule_nf4_decode_method", method=training.method),
        ),
        "nf4_double_quant_method": (
            np.full(tp.shape, getattr(strategy, "nf4_double_quant", None) is None or training.method == "qlora"),
            lambda v: msg("rule_nf4_double_quant_method", method=training.method),
        ),
        "nf4_options_method": (
            np.full(tp.shape, training.method == "qlora" or not _nf4_options_stated(strategy)),
            lambda v: msg("rule_nf4_options_method", method=training.method,
                          fields=", ".join(_nf4_options_stated(strategy))),
        ),
        "lm_head_chunk_nf4_head": (
            np.full(tp.shape, getattr(strategy, "lm_head_chunk", None) is None
                    or bool(getattr(strategy, "nf4_lm_head", None))),
            lambda v: msg("rule_lm_head_chunk_nf4_head", chunk=getattr(strategy, "lm_head_chunk", None)),
        ),
        "recompute_code": (
            np.isin(rec, (0, 1, 2)),
            lambda v: msg("rule_recompute_code", code=v["rec"]),
        ),
        "offload_code": (
            np.isin(off, (0, 1, 2)),
            lambda v: msg("rule_offload_code", code=v["off"]),
        ),
    }


def _mamba_cp_ok(model: ModelArch, tp: np.ndarray, cp: np.ndarray, safe: Any) -> np.ndarray:
    """Megatron-Core MambaContextParallel: every CP rank gets whole heads (nheads / tp divisible by cp) and whole or
    repeated groups (ngroups / tp divisible by cp, or cp by ngroups / tp). True without Mamba-2 layers."""
    if not model.mamba_layers:
        return np.ones(tp.shape, bool)
    heads_tp, groups_tp = model.ssm_heads / safe(tp), model.ssm_groups / safe(tp)
    whole = np.mod(heads_tp, safe(cp)) == 0
    groups = np.where(groups_tp >= cp, np.mod(groups_tp, safe(cp)) == 0, np.mod(cp, np.maximum(groups_tp, 1.0)) == 0)
    return whole & groups


def _nf4_options_stated(strategy: Any) -> list[str]:
    """The QLoRA bitsandbytes options a strategy sets true (nf4_saves_input, nf4_lm_head, bnb_compute_from_input):
    QLoRA only."""
    return [k for k in ("nf4_saves_input", "nf4_lm_head", "bnb_compute_from_input") if getattr(strategy, k, None)]


def _stack_rule(c: SimpleNamespace, free: Any, frameworks: tuple[str, ...], key: str, *values: str,
                **fields: Any) -> tuple[np.ndarray, Callable[[dict[str, Any]], str]]:
    """A rule that an option runs only on the stacks offering it: holds where `free` (the option unused) or the
    strategy's stack is one of `frameworks`; its refusal (message rule_<key>) names the stack and `frameworks`,
    with `fields` and the strategy's own `values` (e.g. "pp")."""
    return (np.asarray(free | _resolves_to(c, frameworks), bool),
            lambda v: msg(f"rule_{key}", framework=_stack_named(c, v), allowed=", ".join(frameworks), **fields,
                          **{name: v[name] for name in values}))


def _resolves_to(c: SimpleNamespace, frameworks: tuple[str, ...]) -> np.ndarray:
    """Where the strategy's framework is one of `frameworks`; "auto" is judged as the stack it resolves to for
    each strategy (framework.auto_index), not as the word "auto"."""
    if c.fw != "auto":
        return np.full(c.tp.shape, c.fw in frameworks)
    member = np.array([name in frameworks for name in AUTO_CHOICES])  # by AUTO_CHOICES index
    return np.asarray(member[c.auto_idx])


def _stack_named(c: SimpleNamespace, v: dict[str, Any]) -> str:
    """The framework as a refusal names it: "auto" says what it resolved to for this strategy."""
    if c.fw != "auto":
        return repr(c.fw)
    i = int(auto_index(v["tp"], v["pp"], v["cp"], v["ep"], v["dist_opt"], v["zero"], c.pretraining))
    return msg("part_auto_resolved", assumed=AUTO_CHOICES[i])


def _modules_misfit(model: ModelArch, strategy: Strategy) -> dict[str, str] | None:
    """The first listed recompute module the model lacks what it recomputes for, as Megatron-Core's
    TransformerConfig refuses it (mla_up_proj without multi-latent attention, moe_act without grouped MoE
    experts); None when every one applies."""
    modules = getattr(strategy, "recompute_modules", None) or ()
    if "mla_up_proj" in modules and model.attention != "mla":
        return {"module": "mla_up_proj", "needs": msg("part_mla")}
    if "moe_act" in modules and not model.is_moe:
        return {"module": "moe_act", "needs": msg("part_moe_experts")}
    return None


def _offloads_layer_count(strategy: Any) -> bool:
    """True when activation_offload names a number of layers rather than true / false."""
    return not isinstance(getattr(strategy, "activation_offload", False), (bool, np.bool_))


def offload_layers_asked(strategy: Any) -> float:
    """Decoder layers whose saved activations `strategy.activation_offload` sends to host memory: inf for true
    (every layer: torchtune enable_activation_offloading), N for a number (Megatron-Core
    cpu_offloading_num_layers), 0 for false."""
    asked = getattr(strategy, "activation_offload", False)
    if not _offloads_layer_count(strategy):
        return float("inf") if asked else 0.0
    return float(asked)


def _offload_layers_ok(strategy: Strategy, chunk_layers: np.ndarray) -> np.ndarray:
    """A number of offloaded layers (not true / false) must be below the decoder layers of a model chunk:
    Megatron-Core TransformerConfig refuses cpu_offloading_num_layers >= num_layers."""
    if not _offloads_layer_count(strategy):
        return np.ones(np.shape(chunk_layers), dtype=bool)
    return offload_layers_asked(strategy) < chunk_layers


def valid_mask(model: ModelArch, training: Training, system: System, strategy: Strategy) -> np.ndarray:
    """True where a strategy obeys every rule in RULES (numpy, one entry per strategy)."""
    table = _rule_table(model, training, system, strategy)
    mask = None
    for rule in RULES:
        ok = np.asarray(table[rule][0], dtype=bool)
        mask = ok if mask is None else (mask & ok)
    return mask


# strategy options that act on routed experts only (their dispatch, grouped GEMM and host sync), with the value that
# means "not stated"; moe_a2a_overlap is refused on a dense model (moe_a2a_overlap_ep)
MOE_ONLY_OPTIONS = (("moe_dispatcher", "auto"), ("moe_tp_token_split", None), ("moe_fused_grouped_mlp", None),
                    ("moe_torch_grouped_mm", None), ("moe_turbo_grouped_gemm", None), ("moe_eager_glue", None), ("moe_sync_free", None),
                    ("moe_pad_to_capacity", None),
                    ("moe_permute_fusion", None),
                    ("moe_router_fusion", None), ("moe_aux_loss", None), ("moe_grouped_gemm", None), ("experts_implementation", None),
                    ("zero3_expert_fetch", None))


def unused_moe_options(model: ModelArch, strategy: Strategy) -> list[str]:
    """The MoE-only options a strategy states for a model without routed experts (they change nothing there)."""
    if model.is_moe:
        return []
    return [name for name, unset in MOE_ONLY_OPTIONS if getattr(strategy, name, unset) not in (unset, None)]


def check_strategy(model: ModelArch, training: Training, system: System, strategy: Strategy) -> list[str]:
    """Raise StrategyError(rule, detail) for the first broken rule of one strategy; return warnings."""
    table = _rule_table(model, training, system, strategy)
    arrays = table["_arrays"]
    values = {k: (int(v.reshape(-1)[0]) if float(v.reshape(-1)[0]).is_integer() else float(v.reshape(-1)[0]))
              for k, v in arrays.items()}  # type: ignore[union-attr]
    for rule in RULES:
        ok, detail = table[rule]
        if not bool(np.asarray(ok).reshape(-1)[0]):
            raise StrategyError(rule, detail(values))
    warnings = []
    if values["tp"] > system.domain_gpus:
        warnings.append(msg("warn_tp_across_nodes", tp=values["tp"], domain=system.domain_gpus))
    # the EP group's ranks lie expert-TP apart (Megatron-Core's expert grid tp-ep-dp-pp, tp = the expert TP)
    if values["ep"] > 1 and values["etp"] * values["ep"] > system.domain_gpus:
        warnings.append(msg("warn_ep_across_domains", tp_ep=values["etp"] * values["ep"],
                            domain=system.domain_gpus))
    slots = values["slots"] if values["pp"] > 1 else 0
    split = model.layers + slots
    what = msg("warn_layers_and_slots", layers=model.layers, slots=slots) if slots else \
        msg("part_layers", n=model.layers)
    unused = unused_moe_options(model, strategy)
    if unused:
        warnings.append(msg("warn_moe_options_dense", options=Listing(unused), model=model.name))
    stated = (getattr(strategy, "pp_first_stage_layers", None), getattr(strategy, "pp_last_stage_layers", None))
    if any(n for n in stated if n is not None and np.ndim(n) == 0) or getattr(strategy, "pp_stage_layers", None):
        pass  # the end ranks' layers are stated, the middle ones even (_stage_layers_rules), or every rank's
    elif split % values["pp"]:
        warnings.append(msg("warn_pp_uneven_layers", what=what, pp=values["pp"]))
    elif values["vpp"] > 1 and split % (values["pp"] * values["vpp"]):
        warnings.append(msg("warn_vpp_uneven_layers", what=what, chunks=values["pp"] * values["vpp"]))
    return warnings
